"""The sections of a dataset's report under a window drawn from the decision's replay: :func:`replay_section`
(libpanto's table and plots over the sessions' life), :func:`timelines_section` (the sessions the chosen
budget serves worst) and :func:`policies_section` (the policies under the same window).

The decision over a dataset (:func:`~panto_analytics.dataset._decision.decision_dataset`) replays, bills and
measures every session task by task and spills its per-session rows to Parquet; asked with
:data:`REPLAY_ALSO`, it spills beside them the columns of the events and of the session rows the replay's
section reads. That section is computed from those files one column at a time
(:func:`~panto_analytics.policy.compaction.summary.summarize_replay` and
:func:`~panto_analytics.analysis.plot_data.replay_stats` with ``column_at_a_time``: every figure order-free),
so it equals the in-memory section to the last bit, here and on Ray, and memory holds a column, not the rows.
The worst sessions are found over the same rows (a top-k of a lazy scan); only those sessions are then read
from the dataset (their buckets, filtered by id) and drawn by the same timeline function as in memory.
The policies' comparison replays the dataset at the recommended budget under each policy
(:func:`~panto_analytics.dataset._replay.replay_table_dataset`), as the in-memory report replays its corpus.

The replay's own rows (``replay_events.parquet``, ``policy_events.parquet``, ...) are not written: they grow
with the sessions (``replay DS -w W --events F --sessions F`` writes them).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from ..analysis.choose.choice import Choice
from ..analysis.plot_data import replay_stats
from ..analysis.report.build import (
    cut_policies,
    loss_section,
    loss_summary_section,
    policy_budget,
    policy_cuts_section,
    policy_section,
    recorded_section,
    replay_figures,
    replay_table,
    timeline_figure,
    timeline_point,
    worst_sessions,
)
from ..analysis.report.model import Report
from ..frame.schema import BUDGET, SESSION
from ..outcomes.orphan_loss import DEFAULT_HORIZON
from ..policy import Replay, summarize_replay
from ._replay import DatasetOutcomes, replay_table_dataset
from ._report_recorded import recorded_dataset
from .buckets import session_buckets
from .info import read_info
from .store import TASK_ROWS, collect, scan_dataset

__all__ = ["REPLAY_ALSO", "HeldReplay", "hold_replay", "policies_section", "replay_section", "sections_dataset",
           "timelines_section"]

#: What the decision spills beside the rows it reads, for the replay's section: the events' columns
#: (:func:`summarize_replay`'s and the kept turns' plot) and the session rows' (:func:`summarize_replay`'s).
REPLAY_ALSO: tuple[tuple[str, ...], tuple[str, ...]] = (
    ("policy", BUDGET, "kept_turns", "kept_tokens", "request_bytes"),
    ("overflow", "ineffective", "summarizer_cost_usd"),
)


@dataclass(frozen=True)
class HeldReplay:
    """What a dataset's report keeps of the decision's replay once its spilled rows are gone: the replay's
    parameters (a :class:`~panto_analytics.policy.Replay` without rows), libpanto's per-budget table and the
    statistics its plots draw (a row per budget each), and the worst sessions (policy, budget, ids)."""

    replay: Replay
    table: pl.DataFrame
    stats: dict[str, pl.DataFrame]
    worst: tuple[str, int, list[str]] | None


def _libpanto(rows: pl.LazyFrame) -> pl.LazyFrame:
    """libpanto's rows (all, without a ``policy`` column: a replay of libpanto alone)."""
    if "policy" not in rows.collect_schema().names():
        return rows
    return rows.filter(pl.col("policy").cast(pl.String).str.split(":").list.first() == "libpanto")


def hold_replay(choice: Choice, out: DatasetOutcomes, *, window: int, reserve: int) -> HeldReplay:
    """From the decision's spilled rows (``out``, asked with :data:`REPLAY_ALSO`, while they last): what the
    replay's section and the timelines need, a few rows per budget, not per session.

    >>> import tempfile, pathlib
    >>> from panto_analytics.dataset import write_dataset
    >>> from panto_analytics.dataset._decision import decision_dataset
    >>> root = pathlib.Path(tempfile.mkdtemp()) / "ds"
    >>> _ = write_dataset(["data/"], root, buckets=4, cache=False)
    >>> held = []
    >>> _ = decision_dataset(root, [0, 20_000], window=32_000, reserve=16_384, prices="docs/synth-prices.json",
    ...                      resamples=0, also=REPLAY_ALSO, on_outcomes=lambda c, o: held.append(hold_replay(
    ...                          c, o, window=32_000, reserve=16_384)))
    >>> held[0].table["budget"].to_list(), held[0].replay.events.height
    ([0, 20000], 0)
    """
    assert out.events is not None, "the decision was not asked for the events (also=REPLAY_ALSO)"
    events, sessions = _libpanto(out.events.lazy()), _libpanto(out.sessions.lazy())
    replay = Replay(events=pl.DataFrame(), sessions=pl.DataFrame(), window=window, reserve=reserve,
                    summary_tokens=out.summary_tokens, summary_source=out.summary_source,
                    price_source=out.price_source, unpriced=out.unpriced)
    point = timeline_point(choice)
    return HeldReplay(replay, summarize_replay(events, sessions, column_at_a_time=True),
                      replay_stats(events, sessions, column_at_a_time=True),
                      None if point is None else (*point, worst_sessions(out.sessions, *point)))


def replay_section(report: Report, held: HeldReplay) -> None:
    """"Compaction over the sessions' life": libpanto's per-budget table and its three plots, as in memory."""
    chosen = report.recommendation.budget
    report.replay = held.replay
    report.replay_table = replay_table(held.replay, chosen, held.table)
    report.figures += replay_figures(held.replay, highlight=chosen, stats=held.stats)


def sessions_of(root: str | Path, ids: Sequence[str]) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """The messages, sessions and compactions of the sessions ``ids`` only, read from their buckets."""
    buckets = session_buckets(pl.Series(SESSION, list(ids), dtype=pl.String), read_info(root).buckets)
    wanted = pl.col(SESSION).cast(pl.String).is_in(pl.Series(list(ids), dtype=pl.String).implode())
    messages, sessions, compactions = (
        collect(scan_dataset(root, table, buckets=buckets.unique().to_list()).filter(wanted), root)
        for table in ("messages", "sessions", "compactions"))
    return messages, sessions, compactions


def timelines_section(report: Report, root: str | Path, held: HeldReplay, *, window: int, reserve: int,
                      prices: Any, horizon: int | None) -> None:
    """The timelines of the sessions the chosen policy and budget serve worst (found over the decision's rows),
    those sessions alone read from the dataset, drawn as in memory."""
    if held.worst is None or not held.worst[2]:
        return
    policy, budget, ids = held.worst
    messages, sessions, compactions = sessions_of(root, ids)
    for sid in ids:  # a couple of figures, not the engine
        timeline_figure(report, messages, sid, compactions=compactions, sessions=sessions, window=window,
                        policy=policy, budget=budget, reserve=reserve, summary_tokens=held.replay.summary_tokens,
                        prices=prices, horizon=horizon)


def policies_section(report: Report, root: str | Path, policies: Sequence[str], *, window: int, reserve: int,
                     summary_tokens: int | None, engine: str, address: str | None, task_rows: int | None) -> None:
    """"Policies under the same window": each policy replayed over the dataset at the recommended budget, task
    by task (:func:`~panto_analytics.dataset._replay.replay_table_dataset`: the comparison from spilled rows,
    one column at a time), its table and plot as in memory."""
    where: dict[str, Any] = {"engine": engine, "address": address}
    if task_rows is not None:
        where["task_rows"] = task_rows
    got = replay_table_dataset(root, [policy_budget(report)], window=window, reserve=reserve,
                               summary_tokens=summary_tokens, policy=list(policies), **where)
    result = Replay(events=pl.DataFrame(), sessions=pl.DataFrame(), window=window, reserve=reserve,
                    summary_tokens=got.summary_tokens, summary_source=got.summary_source)
    policy_section(report, result, got.table)


def sections_dataset(report: Report, root: str | Path, held: HeldReplay | None, *, window: int | None, reserve: int,
                     policies: Sequence[str], summary_tokens: int | None, prices: Any, horizon: int | None,
                     engine: str = "local", address: str | None = None, task_rows: int | None = None,
                     rows_to: Path | None = None) -> None:
    """The sections of the dataset's report that follow the replay's and the costs, in the in-memory report's
    order: the recorded compactions and their loss per cut (:mod:`~panto_analytics.dataset._report_recorded`;
    ``rows_to``: the file every row of what the agents kept is written to, the report's
    ``recorded_compactions.parquet``),
    the policies' comparison (under a window, with ``policies``), the timelines of the worst-served sessions
    (``held``: under a window)."""
    where: dict[str, Any] = {"engine": engine, "address": address}
    found = recorded_dataset(root, report.budgets, horizon=DEFAULT_HORIZON if horizon is None else horizon,
                             policies=cut_policies(policies) if policies and window is not None else (),
                             task_rows=TASK_ROWS if task_rows is None else task_rows, rows_to=rows_to, **where)
    if found.agent_counts is not None:
        recorded_section(report, found.agent_rows, found.agent_counts)
        report.recorded_rows = found.agent_file
    if found.cuts is not None and found.curve is not None:
        loss_section(report, found.cuts, found.curve, horizon=DEFAULT_HORIZON if horizon is None else horizon)
    elif found.loss is not None:  # past RECORDED_ROWS cuts: their summary, merged task by task
        loss_summary_section(report, found.loss, horizon=DEFAULT_HORIZON if horizon is None else horizon)
    if policies and window is not None:
        policies_section(report, root, policies, window=window, reserve=reserve, summary_tokens=summary_tokens,
                         task_rows=task_rows, **where)
        if found.policy_counts is not None:
            policy_cuts_section(report, found.policy_rows, found.policy_counts)
    if held is not None and window is not None:
        timelines_section(report, root, held, window=window, reserve=reserve, prices=prices, horizon=horizon)
