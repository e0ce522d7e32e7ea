"""The plots of a dataset's report that are drawn from every session's splits and turns, bucket by bucket:
:func:`plot_counts_dataset`.

Each task reduces its whole sessions' splits (at every budget of the report) and turns to the exact value counts
the plots are drawn from (:func:`~panto_analytics.analysis.plot_data.report_plot_counts`: of all sessions, and by
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
from pathlib import Path
from typing import Any

import polars as pl

from ..analysis.plot_data import PlotCounts, finish_plot_counts, report_plot_counts
from ..analysis.report.build import cost_parts, report_figures
from ..analysis.report.model import ReportFigure, Table
from ..budgets import as_budgets
from ..policy import splits as compute_splits
from ..policy import turns as compute_turns
from .engines import map_buckets
from .store import TASK_ROWS, collect, scan_parts

__all__ = ["costs_of_rows", "plot_counts_dataset", "plot_figures_dataset"]


def _plots_task(root: str, parts: list[str], *, budgets: list[int],
                segment_by: Sequence[str]) -> dict[str | None, PlotCounts]:
    """One group of buckets' counts (the per-bucket function both engines run)."""
    messages = collect(scan_parts(root, "messages", parts), root)
    sessions = collect(scan_parts(root, "sessions", parts), root)
    return report_plot_counts(messages, compute_splits(messages, budgets, sessions=sessions),
                              compute_turns(messages), segment_by=segment_by, sessions=sessions)


def plot_counts_dataset(root: str | Path, budgets: Any, *, segment_by: Sequence[str] = (), engine: str = "local",
                        address: str | None = None, task_rows: int = TASK_ROWS) -> dict[str | None, PlotCounts]:
    """The finished :class:`~panto_analytics.analysis.plot_data.PlotCounts` of the dataset at ``root``
    (key None: all sessions; each kind of ``segment_by``: by that segment), task by task, here or on Ray.

    >>> import tempfile, pathlib
    >>> from panto_analytics.dataset import write_dataset
    >>> from panto_analytics.analysis.plot_data import kept_turns_stats
    >>> root = pathlib.Path(tempfile.mkdtemp()) / "ds"
    >>> _ = write_dataset(["data/"], root, buckets=4, cache=False)
    >>> counts = plot_counts_dataset(root, [0, 5_000], segment_by=["length"])
    >>> kept_turns_stats(counts[None])["budget"].to_list(), counts["length"].segmented
    ([0, 5000], True)
    """
    budgets = as_budgets(budgets)
    task = functools.partial(_plots_task, budgets=budgets, segment_by=list(segment_by))
    merged: dict[str | None, PlotCounts] | None = None
    for found in map_buckets(root, task, engine=engine, address=address, rows=task_rows):
        merged = found if merged is None else {kind: PlotCounts.merge([merged[kind], c]) for kind, c in found.items()}
    return finish_plot_counts(merged if merged is not None else task(str(root), []))


def plot_figures_dataset(root: str | Path, budgets: Any, *, highlight: int | None = None,
                         segment_by: Sequence[str] = (), engine: str = "local", address: str | None = None,
                         task_rows: int = TASK_ROWS) -> list[ReportFigure]:
    """The report's plots of the splits and turns (:func:`~panto_analytics.analysis.report.build.report_figures`)
    over the dataset at ``root``, from :func:`plot_counts_dataset`."""
    counts = plot_counts_dataset(root, budgets, segment_by=segment_by, engine=engine, address=address,
                                 task_rows=task_rows)
    return report_figures(counts, highlight=highlight)


def costs_of_rows(rows: pl.LazyFrame, chosen: int | None) -> list[tuple[Table, ReportFigure]]:
    """"What compaction costs" (:func:`~panto_analytics.analysis.report.build.cost_parts`: its table and plot) of
    the decision's rows a dataset's tasks spilled (every policy and budget, billed; read a few columns at a time),
    the chosen budget marked; none where the rows are not billed. The report in memory draws the same from its
    replay's session rows."""
    return [cost_parts(rows, chosen)] if "total_cost_usd" in rows.collect_schema().names() else []
