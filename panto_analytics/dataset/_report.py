"""``report`` over a dataset, bucket by bucket: :func:`report_dataset`.

Each section of the report that a dataset gives in memory that does not grow
with its sessions is computed here bucket by bucket, here or on Ray, equal to
the same section of the report of the same corpus in memory
(:func:`~panto_analytics.analysis.report.build_report`):

- the corpus at a glance and the breakdowns: each task reduces its whole sessions to
  :class:`~panto_analytics.analysis.report.overview.OverviewParts` (counts and value counts), merged;
- the budget table (the sweep's histograms, :mod:`~panto_analytics.dataset._budget_histograms`, counted in the
  pass that counts the plots', :func:`~panto_analytics.dataset._report_plots.report_splits_dataset`);
- the recommendation: without a window :func:`~panto_analytics.dataset._streaming.recommend_dataset`, under
  one the decision :func:`~panto_analytics.dataset._decision.decision_dataset` (every session replayed, billed
  and its loss measured, task by task; the rows its table and its bootstrap read spilled to Parquet), with the
  frontier's figure and table drawn from its per-(policy, budget) table and the agents' recorded points
  (:func:`~panto_analytics.analysis.choose.from_replay.points_of`: the loss at each recorded compaction, a row
  per compaction from each task in bucket order, beside the decision's spilled rows of those sessions);
- ``splits.parquet``, written group of buckets after group of buckets
  (:func:`~panto_analytics.dataset._streaming.write_splits`), not held;
- the plots of the splits and turns, of all sessions and by each ``--by`` segment, from each task's exact value
  counts, merged, and under a window what compaction costs, from the decision's spilled rows
  (:mod:`~panto_analytics.dataset._report_plots`);
- the replay's section, the policies' comparison and the timelines of the sessions served worst, from the
  decision's spilled rows (:mod:`~panto_analytics.dataset._report_replay`), and the recorded compactions
  and their loss per cut, a few rows per compaction from each task
  (:mod:`~panto_analytics.dataset._report_recorded`).

The replay's rows as Parquet (they grow with the sessions) are left out, named in the report
(:attr:`~panto_analytics.analysis.report.Report.omitted`)
with the command that gives it on a dataset, or the in-memory report, where
one exists.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from ..analysis.choose.bootstrap import RESAMPLES, SEED
from ..analysis.choose.choice import Choice
from ..analysis.choose.from_replay import POINT_COLUMNS, points_of, recorded_loss
from ..analysis.choose.rule import Rule
from ..analysis.report.build import beside, frontier_figures, report_figures, with_pngs
from ..analysis.report.model import Report
from ..analysis.report.overview import BREAKDOWNS, OverviewParts, breakdown_table, overview_parts, overview_table
from ..budgets import as_budgets
from ..errors import IngestReport
from ..frame.schema import SESSION
from ..policy import splits as compute_splits
from ..policy import turns as compute_turns
from ..policy.compaction.engine import DEFAULT_RESERVE
from ._replay import DatasetOutcomes
from ._report_replay import REPLAY_ALSO, HeldReplay, hold_replay, replay_section, sections_dataset
from .engines import map_buckets
from .info import read_info
from .store import TASK_ROWS, collect, scan_parts

__all__ = ["OMITTED", "overview_dataset", "recorded_loss_of", "report_dataset"]

#: What a dataset's report leaves out, and where to find it.
OMITTED = [
    "the replay's rows as Parquet (replay_events, replay_sessions, policy_events, policy_sessions .parquet): they "
    "grow with the sessions; `panto-analytics replay DS -w W --events FILE --sessions FILE` writes them",
]


def _overview_task(root: str, parts: list[str], *, budget: int) -> OverviewParts:
    """One group of buckets' :class:`OverviewParts` (its splits at the smallest budget only)."""
    messages = collect(scan_parts(root, "messages", parts), root)
    sessions = collect(scan_parts(root, "sessions", parts), root)
    compactions = collect(scan_parts(root, "compactions", parts), root)
    return overview_parts(messages, compute_turns(messages), compute_splits(messages, [budget], sessions=sessions),
                          sessions=sessions, compactions=compactions)


def overview_dataset(root: str | Path, budget: int, *, engine: str = "local", address: str | None = None,
                     task_rows: int = TASK_ROWS) -> OverviewParts:
    """The merged :class:`OverviewParts` of the dataset at ``root`` (``budget``: the report's smallest one),
    task by task, here or on Ray.

    >>> import tempfile, pathlib
    >>> from panto_analytics.dataset import write_dataset
    >>> root = pathlib.Path(tempfile.mkdtemp()) / "ds"
    >>> _ = write_dataset(["data/"], root, buckets=4, cache=False)
    >>> overview_dataset(root, 0).counts["split_sessions"] == read_info(root).sessions
    True
    """
    task = functools.partial(_overview_task, budget=budget)
    found = list(map_buckets(root, task, engine=engine, address=address, rows=task_rows))
    return OverviewParts.merge(found) if found else _overview_task(str(root), [], budget=budget)


def _loss_task(root: str, parts: list[str], *, horizon: int | None) -> tuple[str, pl.DataFrame | None]:
    """One group of buckets' :func:`recorded_loss` (reading the messages of its sessions with a recorded
    compaction only), beside the group's first part, which orders the groups."""
    compactions = collect(scan_parts(root, "compactions", parts), root)
    ids = compactions[SESSION].cast(pl.String).unique().implode()
    sessions = collect(scan_parts(root, "sessions", parts).filter(pl.col(SESSION).cast(pl.String).is_in(ids)), root)
    messages = collect(scan_parts(root, "messages", parts).filter(pl.col(SESSION).cast(pl.String).is_in(ids)), root)
    return (parts[0] if parts else ""), recorded_loss(messages, compactions, sessions, horizon=horizon)


def recorded_loss_of(root: str | Path, *, horizon: int | None = None, engine: str = "local",
                     address: str | None = None, task_rows: int = TASK_ROWS) -> pl.DataFrame | None:
    """:func:`~panto_analytics.analysis.choose.from_replay.recorded_loss` of the dataset at ``root``, task by task,
    the tasks' rows in bucket order (as the dataset reads in memory, on Ray too); None without a recorded
    compaction."""
    task = functools.partial(_loss_task, horizon=horizon)
    found = sorted(map_buckets(root, task, engine=engine, address=address, rows=task_rows), key=lambda r: r[0])
    rows = [lost for _, lost in found if lost is not None]
    return pl.concat(rows) if rows else None


def report_dataset(root: str | Path, budgets: Any, *, splits_to: Path, rule: Rule | None = None,
                   segment_by: Sequence[str] = (), title: str | None = None, inputs: Sequence[str] = (), window: int | None = None,
                   reserve: int = DEFAULT_RESERVE, summary_tokens: int | None = None, policies: Sequence[str] = (),
                   prices: Any = True, horizon: int | None = None, resamples: int = RESAMPLES, seed: int = SEED,
                   engine: str = "local", address: str | None = None, task_rows: int | None = None) -> Report:
    """The :class:`~panto_analytics.analysis.report.Report` of the dataset at ``root`` (see the module docstring),
    its splits written to the Parquet file ``splits_to`` (which :func:`~panto_analytics.analysis.report.write_report`
    moves into the report's folder). ``policies``: replayed beside libpanto in the decision under ``window``;
    ``task_rows``: the messages a task holds (None: each section's default); ``segment_by``: the plots by
    segment too (:mod:`~panto_analytics.dataset._report_plots`, as the plots of all sessions)."""
    from ..policy.compaction.priced import resolve_prices
    from ._budget_histograms import sweep_from
    from ._decision import decision_dataset
    from ._report_plots import costs_of_rows, report_splits_dataset
    from ._streaming import recommend_dataset, write_splits

    budgets = as_budgets(budgets)
    where: dict[str, Any] = {"engine": engine, "address": address}
    if task_rows is not None:
        where["task_rows"] = task_rows
    parts = overview_dataset(root, min(budgets), **where)
    every = report_splits_dataset(root, budgets, segment_by=segment_by, **where)  # the plots' counts, the sweep's
    points: list[pl.DataFrame] = []  # under a window: the agents' recorded points, computed beside the decision
    costs: list[Any] = []  # under a window: "What compaction costs", from the decision's spilled rows
    held: list[HeldReplay] = []  # and what the replay's section and the timelines read of them
    if window is None:
        rec = recommend_dataset(root, budgets, rule, resamples=resamples, seed=seed, **where)
    else:
        named = ["libpanto", *[p for p in policies if str(p).split(":")[0] != "libpanto"]] if policies else None
        lost = recorded_loss_of(root, horizon=horizon, **where)

        def recorded(choice: Choice, out: DatasetOutcomes) -> None:  # the agents' points, over the spilled rows
            rows = out.sessions.lazy()
            held.append(hold_replay(choice, out, window=window, reserve=reserve))
            costs.extend(costs_of_rows(rows, choice.budget))
            if lost is not None:
                read = [c for c in POINT_COLUMNS if c in rows.collect_schema().names()]  # not every spilled column
                mine = rows.select(read).join(lost.lazy().select(pl.col(SESSION).unique()), on=SESSION,
                                              how="semi").collect()
                points.append(points_of(lost, mine, budget=beside(choice), resamples=resamples, seed=seed))

        rec = decision_dataset(root, budgets, rule, window=window, reserve=reserve, summary_tokens=summary_tokens,
                               policy=named, prices=resolve_prices(prices), horizon=horizon, resamples=resamples,
                               seed=seed, on_outcomes=recorded, also=REPLAY_ALSO, **where)
    splits_to.parent.mkdir(parents=True, exist_ok=True)
    write_splits(root, budgets, splits_to, task_rows=TASK_ROWS if task_rows is None else task_rows)
    info = read_info(root)
    n = parts.counts["split_sessions"] or 0
    report = Report(
        title=title or f"What keep_verbatim does to {n:,} session{'s' if n != 1 else ''}",
        inputs=[str(p) for p in inputs], budgets=budgets, splits=splits_to,
        sweep=sweep_from(every.histograms), recommendation=rec,
        overview=overview_table(parts, ingest=IngestReport(files=info.files, sessions=info.sessions,
                                                           messages=info.messages)),
        breakdowns={name: breakdown_table(parts.breakdowns[c], c) for name, c in BREAKDOWNS.items()},
        omitted=list(OMITTED))
    report.figures = report_figures(every.counts, highlight=rec.budget)
    if rec.replayed:
        frontier_figures(report, rec, points[0] if points else None)
    if held:
        replay_section(report, held[0])
    for table, figure in costs:
        report.costs = table
        report.figures.append(figure)
    sections_dataset(report, root, held[0] if held else None, window=window, reserve=reserve, policies=policies,
                     summary_tokens=summary_tokens, prices=prices, horizon=horizon,
                     rows_to=splits_to.with_name(splits_to.name + ".recorded"), **where)
    return with_pngs(report)
