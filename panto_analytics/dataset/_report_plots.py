"""The plots of a dataset's report that are drawn from every session's splits and turns, bucket by bucket:
:func:`report_splits_dataset`.

Each task computes its whole sessions' splits (at every budget of the report) once, and reduces them to the
sweep's histograms (:mod:`~panto_analytics.dataset._budget_histograms`, the budget table) and, with its turns, to
the exact value counts the plots are drawn from (:func:`~panto_analytics.analysis.plot_data.report_plot_counts`: of all sessions, and by
each kind of ``--by`` segment, raw); the counts of disjoint sessions add up
(:meth:`~panto_analytics.analysis.plot_data.PlotCounts.merge`), merged as the tasks come, and the merged counts
are finished (the rare segments lumped into ``other`` by the whole corpus's ranking) and drawn by the same
function as the report in memory (:func:`~panto_analytics.analysis.report.build.report_figures`), so every
number behind every plot equals the in-memory one, on Ray too. Memory holds one task's messages and the counts,
which grow with the distinct values (kept tokens and turns per budget, per-session summarized shares, turn sizes)
and segments, not with the sessions.

Under a window, "What compaction costs" (:func:`costs_of_rows`) is drawn from the decision's rows the tasks
spilled to Parquet, by the same function as in memory (the totals in whole picodollars, order-free; the plot's
quantiles group by group; the recorded median over one value a session).
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from ..analysis.plot_data import PlotCounts, finish_plot_counts, report_plot_counts
from ..analysis.report.build import cost_parts
from ..analysis.report.model import ReportFigure, Table
from ..budgets import as_budgets
from ..policy import splits as compute_splits
from ..policy import turns as compute_turns
from ._budget_histograms import histograms, merge
from .engines import map_buckets
from .store import TASK_ROWS, collect, scan_parts

__all__ = ["ReportSplits", "costs_of_rows", "plot_counts_dataset", "report_splits_dataset"]


@dataclass(frozen=True)
class ReportSplits:
    """What a dataset's report draws from every session's splits, in one pass (:func:`report_splits_dataset`):
    the finished plot counts (key None: all sessions; each kind of ``--by``: by that segment) and the sweep's
    merged histogram table (:mod:`~panto_analytics.dataset._budget_histograms`)."""

    counts: dict[str | None, PlotCounts]
    histograms: pl.DataFrame


def _splits_task(root: str, parts: list[str], *, budgets: list[int],
                 segment_by: Sequence[str]) -> tuple[dict[str | None, PlotCounts], pl.DataFrame]:
    """One group of buckets' plot counts and sweep histograms, from one computation of its splits (the
    per-bucket function both engines run)."""
    messages = collect(scan_parts(root, "messages", parts), root)
    sessions = collect(scan_parts(root, "sessions", parts), root)
    splits = compute_splits(messages, budgets, sessions=sessions)
    counts = report_plot_counts(messages, splits, compute_turns(messages), segment_by=segment_by, sessions=sessions)
    return counts, histograms(splits)


def report_splits_dataset(root: str | Path, budgets: Any, *, segment_by: Sequence[str] = (), engine: str = "local",
                          address: str | None = None, task_rows: int = TASK_ROWS) -> ReportSplits:
    """The :class:`ReportSplits` of the dataset at ``root``, task by task, here or on Ray: every session's splits
    computed once, for the plots and the budget table alike.

    >>> import tempfile, pathlib
    >>> from panto_analytics.dataset import write_dataset
    >>> from panto_analytics.dataset._budget_histograms import sweep_from
    >>> root = pathlib.Path(tempfile.mkdtemp()) / "ds"
    >>> _ = write_dataset(["data/"], root, buckets=4, cache=False)
    >>> found = report_splits_dataset(root, [0, 5_000], segment_by=["length"])
    >>> sweep_from(found.histograms)["budget"].to_list(), found.counts["length"].segmented
    ([0, 5000], True)
    """
    task = functools.partial(_splits_task, budgets=as_budgets(budgets), segment_by=list(segment_by))
    counts: dict[str | None, PlotCounts] | None = None
    tables: list[pl.DataFrame] = []
    for found, hist in map_buckets(root, task, engine=engine, address=address, rows=task_rows):
        counts = found if counts is None else {kind: PlotCounts.merge([counts[kind], c]) for kind, c in found.items()}
        tables = [merge([*tables, hist])]
    if counts is None:
        counts, hist = task(str(root), [])
        tables = [hist]
    return ReportSplits(finish_plot_counts(counts), merge(tables))


def plot_counts_dataset(root: str | Path, budgets: Any, *, segment_by: Sequence[str] = (), engine: str = "local",
                        address: str | None = None, task_rows: int = TASK_ROWS) -> dict[str | None, PlotCounts]:
    """The finished :class:`~panto_analytics.analysis.plot_data.PlotCounts` of the dataset at ``root``
    (:func:`report_splits_dataset`'s)."""
    return report_splits_dataset(root, budgets, segment_by=segment_by, engine=engine, address=address,
                                 task_rows=task_rows).counts


def costs_of_rows(rows: pl.LazyFrame, chosen: int | None) -> list[tuple[Table, ReportFigure]]:
    """"What compaction costs" (:func:`~panto_analytics.analysis.report.build.cost_parts`: its table and plot) of
    the decision's rows a dataset's tasks spilled (every policy and budget, billed; read a few columns at a time),
    the chosen budget marked; none where the rows are not billed. The report in memory draws the same from its
    replay's session rows."""
    return [cost_parts(rows, chosen)] if "total_cost_usd" in rows.collect_schema().names() else []
