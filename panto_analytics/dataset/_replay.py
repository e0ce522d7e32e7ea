"""``replay`` (with the cost and the loss when asked) over a dataset, bucket by bucket: :func:`replay_dataset`.

Sessions are independent under replay, so each task replays (bills, and
measures the loss of) its own whole sessions and returns their per-event and
per-session rows; the rows of every task are concatenated, in bucket order
(the order in which :func:`~panto_analytics.dataset.dataset_corpus` reads
the dataset; on Ray, in the order the tasks finish), and put policy after
policy, so the result equals the in-memory replay of the same dataset bit
for bit (here; on Ray the same rows in another order), and the per-budget
table is computed from it by the same function as in memory. The rows given
to ``on_rows`` (the files of ``replay --sessions/--events``) come task by
task instead: within a policy in bucket order, several policies interleaved
task by task, and on Ray in the order the tasks finish. The price table is
loaded once, not in every task. Each task's unpriced recorded calls are summed
per model, so the unpriced-model warnings are those of the in-memory replay.
The summary size is the corpus's (the median of
the recorded summaries, read from the dataset first). Memory holds one
task's messages (in a worker process on a large dataset:
:mod:`~panto_analytics.dataset.engines`) plus the rows kept: the per-session
rows (one per policy, session and budget) and the per-event rows grow with
the sessions, the messages do not.

:func:`replay_table_dataset` (what ``replay`` prints of a dataset) keeps no
rows in memory: the columns its table reads go to Parquet in a temporary
folder as the tasks give them (:class:`~panto_analytics.dataset.spill.Spill`)
and the table is computed from those files one column at a time
(:mod:`~panto_analytics.outcomes.group_tables`: every figure of the table is
order-free, dollars summed as whole picodollars), equal to the in-memory
table to the last bit.
"""
from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import polars as pl

from ..analysis.choose.from_replay import OUTCOME_COLUMNS, replay_outcomes, session_outcomes
from ..analysis.cost_table import COMPACTION_COST_INPUTS
from ..budgets import as_budgets
from ..errors import InputError
from ..ingest.versions import reads_agent_versions
from ..outcomes.cost import warn_unpriced
from ..outcomes.orphan_loss import DEFAULT_HORIZON
from ..policy.compaction.any_policy import replay
from ..policy.compaction.engine import Replay, summary_size, validate_parameters
from ..policy.compaction.priced import resolve_prices
from .engines import gather, map_buckets
from .spill import Spill
from .store import collect, scan_parts

__all__ = ["REPLAY_TASK_ROWS", "SESSION_OUTCOME_COLUMNS", "DatasetOutcomes", "DatasetReplay", "DatasetReplayTable", "RowSink",
           "replay_dataset",
           "replay_table_dataset", "session_outcomes_dataset"]

_EVENTS, _SESSIONS, _META, _UNPRICED = "e:", "s:", "m:", "u:"

#: Messages a replay task aims at (:func:`~panto_analytics.dataset.bucket_groups`), a quarter of
#: :data:`~panto_analytics.dataset.TASK_ROWS`: a replay holds several rows per message (billed calls, the
#: loss's references and windows), so its tasks are smaller than the sweep's. Measured on 2.3M synthetic
#: messages, peak RSS 684 MiB with tasks of 1M messages against 431 MiB with 300k, in the same time (36-37 s).
REPLAY_TASK_ROWS = 250_000

#: What receives each task's rows: ``on_rows(events, sessions)``.
RowSink = Callable[[pl.DataFrame, pl.DataFrame], None]


@dataclass(frozen=True)
class DatasetReplay:
    """What :func:`replay_dataset` returns: the :class:`~panto_analytics.policy.compaction.engine.Replay` of every
    session, with the loss columns when ``with_loss`` (then ``loss_events`` holds the events of
    :func:`~panto_analytics.outcomes.orphan_loss.loss`)."""

    replay: Replay
    loss_events: pl.DataFrame | None


@dataclass(frozen=True)
class DatasetReplayTable:
    """What :func:`replay_table_dataset` returns: the per-budget table (``replay``'s), the summary size and its
    source, the price source and the unpriced recorded calls per model (None when nothing was billed)."""

    table: pl.DataFrame
    summary_tokens: int
    summary_source: str
    price_source: str | None
    unpriced: pl.DataFrame | None


@dataclass(frozen=True)
class DatasetOutcomes:
    """What :func:`session_outcomes_dataset` returns: the rows, the summary size and its source, the price
    source and the unpriced recorded calls per model (None when nothing was billed)."""

    sessions: pl.DataFrame | pl.LazyFrame
    summary_tokens: int
    summary_source: str
    price_source: str | None
    unpriced: pl.DataFrame | None
    #: The replay's per-event rows, when asked for (``events=`` of :func:`session_outcomes_dataset`), else None.
    events: pl.DataFrame | pl.LazyFrame | None = None


#: The columns a task keeps of its session outcomes: what the decision's table and bootstrap read
#: (OUTCOME_COLUMNS), and what a report's "What compaction costs" reads (COMPACTION_COST_INPUTS).
SESSION_OUTCOME_COLUMNS = tuple(dict.fromkeys([*OUTCOME_COLUMNS, *COMPACTION_COST_INPUTS]))

def _replay_task(root: str, parts: list[str], *, budgets: list[int], window: int, reserve: int, summary_tokens: int,
                 policy: list[str] | None, prices: Any, summarizer: str | None, horizon: int | None,
                 per_session: bool = False, keep: tuple[Sequence[str], Sequence[str]] | None = None,
                 plain_ids: bool = False) -> dict[str, pl.DataFrame]:
    """One group of buckets' replay rows, by tag (the per-bucket function both engines run); ``per_session``:
    only their :func:`~panto_analytics.analysis.choose.from_replay.session_outcomes` rows (what the decision reads);
    ``keep``: only those columns of the events and the sessions; ``plain_ids``: Categorical columns (the
    session ids) as plain strings, so that the process that takes the rows interns none of them (a
    Categorical's strings stay for the life of the process)."""
    # A claude-code replay reads the version each message was recorded by, stored beside the frame.
    messages = collect(scan_parts(root, "messages", parts, beside=reads_agent_versions(policy)), root)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unpriced models: the caller warns once, over the dataset
        if horizon is None:
            r = replay(messages, budgets, window=window, reserve=reserve, summary_tokens=summary_tokens,
                       policy=policy, prices=prices, summarizer=summarizer)
        else:  # the in-memory decision's replay, the loss's events and sessions in place of the replay's
            r = replay_outcomes(messages, budgets, window=window, reserve=reserve, summary_tokens=summary_tokens,
                                policy=policy, prices=prices, summarizer=summarizer, horizon=horizon,
                                loss_events=True)
    frames = {_EVENTS: r.events, _SESSIONS: r.sessions}
    if per_session:  # the columns the decision's table and a report's costs read (and what ``keep`` asks for)
        keep = keep or ((), SESSION_OUTCOME_COLUMNS)
        outcomes = session_outcomes(frames[_EVENTS], frames[_SESSIONS])
        frames = {**({_EVENTS: frames[_EVENTS]} if keep[0] else {}), _SESSIONS: outcomes}
    for tag, frame in list(frames.items()):
        if keep is not None:
            frame = frame.select(c for c in frame.columns if c in keep[tag == _SESSIONS])
        if plain_ids:
            frame = frame.with_columns(pl.col(pl.Categorical).cast(pl.String))
        frames[tag] = frame
    frames[_META] = pl.DataFrame({"price_source": [r.price_source]}, schema={"price_source": pl.String})
    if r.unpriced is not None:
        frames[_UNPRICED] = r.unpriced
    return frames


def _recorded_summaries(messages: pl.LazyFrame) -> pl.LazyFrame:
    """The recorded summaries' sizes (a module-level function: :func:`gather` can run it in a worker process)."""
    return messages.filter("has_summary").select("words", "has_summary")


@dataclass(frozen=True)
class _Streamed:
    """The rows of every task and what the replay assumed."""

    events: pl.DataFrame | pl.LazyFrame
    sessions: pl.DataFrame | pl.LazyFrame
    summary_tokens: int
    summary_source: str
    price_source: str | None
    unpriced: pl.DataFrame | None


def _stream(root: str | Path, budgets: Any, *, window: int, reserve: int, summary_tokens: int | None,
            policy: list[str] | None, prices: Any, summarizer: str | None, horizon: int | None, per_session: bool,
            engine: str, address: str | None, task_rows: int, on_rows: RowSink | None = None,
            keep: tuple[Sequence[str], Sequence[str]] | None = None, spill: Spill | None = None,
            plain_ids: bool = False) -> _Streamed:
    """:func:`_replay_task` over every group of buckets, with the price table loaded once: each task's rows to
    ``on_rows`` as they come, then only the ``keep`` columns of them (events', sessions'; all when None) kept
    (in memory, or written to ``spill`` and scanned back: then the events and sessions are lazy frames);
    the unpriced-model warnings of the whole dataset."""
    source = "given"
    if summary_tokens is None:
        recorded = gather(root, "messages", _recorded_summaries)
        summary_tokens, source = summary_size(recorded)
    validate_parameters(window, reserve, summary_tokens)
    if prices is not None:  # loaded once here, not in every task (a Prices is passed on as it is)
        prices = resolve_prices(prices)
    task = functools.partial(_replay_task, budgets=as_budgets(budgets), window=window, reserve=reserve,
                             summary_tokens=summary_tokens, policy=policy, prices=prices, summarizer=summarizer,
                             horizon=horizon, per_session=per_session, plain_ids=plain_ids,
                             keep=keep if on_rows is None else None)  # without on_rows, only those columns travel
    kept: dict[str, list[pl.DataFrame]] = {_EVENTS: [], _SESSIONS: [], _META: [], _UNPRICED: []}
    for frames in map_buckets(root, task, engine=engine, address=address, rows=task_rows):  # one per task
        if on_rows is not None:
            on_rows(frames[_EVENTS], frames[_SESSIONS])
        for tag, frame in frames.items():
            wanted = None if keep is None or tag not in (_EVENTS, _SESSIONS) else keep[tag == _SESSIONS]
            frame = frame if wanted is None else frame.select(c for c in frame.columns if c in wanted)
            if spill is not None and tag in (_EVENTS, _SESSIONS):
                spill.append(tag, frame)
            else:
                kept[tag].append(frame)
        del frames
    if not (kept[_SESSIONS] or (spill is not None and _SESSIONS in spill.names())):
        raise InputError(root, None, "no sessions", skippable=False)
    events: pl.DataFrame | pl.LazyFrame
    sessions: pl.DataFrame | pl.LazyFrame
    if spill is not None:
        events, sessions = (spill.scan(t) if t in spill.names() else pl.LazyFrame() for t in (_EVENTS, _SESSIONS))
    else:
        events, sessions = (pl.concat(kept[t], how="vertical_relaxed") if kept[t] else pl.DataFrame()
                            for t in (_EVENTS, _SESSIONS))
    price_source = pl.concat(kept[_META])["price_source"].drop_nulls()
    unpriced = None
    if price_source.len() and kept[_UNPRICED]:  # billed: the unpriced recorded calls of every task, summed per model
        unpriced = (pl.concat(kept[_UNPRICED]).group_by("model").agg(pl.col("api_calls").sum(), pl.col("tokens").sum())
                    .sort("model"))
        warn_unpriced(unpriced, replay=True)
    return _Streamed(events, sessions, summary_tokens, source, price_source[0] if price_source.len() else None,
                     unpriced)


def replay_dataset(root: str | Path, budgets: Any, *, window: int, reserve: int, summary_tokens: int | None = None,
                   policy: list[str] | None = None, prices: Any = None, summarizer: str | None = None,
                   with_loss: bool = False, horizon: int = DEFAULT_HORIZON, engine: str = "local",
                   address: str | None = None, task_rows: int = REPLAY_TASK_ROWS, on_rows: RowSink | None = None,
                   keep: tuple[Sequence[str], Sequence[str]] | None = None) -> DatasetReplay:
    """:func:`~panto_analytics.replay` (and :func:`~panto_analytics.outcomes.orphan_loss.loss` when
    ``with_loss``) of the dataset at ``root``, bucket by bucket, here or on Ray (``engine="ray"``); the rows
    returned are those of the in-memory replay over :func:`~panto_analytics.dataset.dataset_corpus`, in the
    same order here (on Ray, policy after policy, each in the order the tasks finish).

    ``on_rows(events, sessions)`` receives each task's rows as they come (to write them to files): the same
    rows, in another order: task by task (in bucket order here, in the order the tasks finish on Ray), so
    with several policies they come interleaved task by task, not policy after policy; and ``keep`` (the
    events' and the sessions' columns) keeps only those columns of them (those
    the per-budget table reads, :data:`~panto_analytics.policy.compaction.summary.TABLE_COLUMNS`), so that what
    is held for the table is a few numbers per session, not the whole rows."""
    s = _stream(root, budgets, window=window, reserve=reserve, summary_tokens=summary_tokens, policy=policy,
                prices=prices, summarizer=summarizer, horizon=horizon if with_loss else None, per_session=False,
                engine=engine, address=address, task_rows=task_rows, on_rows=on_rows, keep=keep)
    events, sessions = cast(pl.DataFrame, s.events), cast(pl.DataFrame, s.sessions)
    # In memory the rows come policy after policy, each in corpus order. Each task gives a row per (policy,
    # session, budget), policies in the same order: their first appearance. One policy: in order already.
    order = ({p: i for i, p in enumerate(sessions["policy"].unique(maintain_order=True).cast(pl.String).to_list())}
             if "policy" in sessions.columns else {})
    if len(order) > 1:
        events, sessions = (f.sort(pl.col("policy").cast(pl.String).replace_strict(order, return_dtype=pl.UInt32),
                                   maintain_order=True) if "policy" in f.columns else f for f in (events, sessions))
    r = Replay(events=events, sessions=sessions, window=window, reserve=reserve, summary_tokens=s.summary_tokens,
               summary_source=s.summary_source, price_source=s.price_source, unpriced=s.unpriced)
    return DatasetReplay(r, events if with_loss else None)


def replay_table_dataset(root: str | Path, budgets: Any, *, window: int, reserve: int,
                         summary_tokens: int | None = None, policy: list[str] | None = None, prices: Any = None,
                         summarizer: str | None = None, with_loss: bool = False, horizon: int = DEFAULT_HORIZON,
                         engine: str = "local", address: str | None = None, task_rows: int = REPLAY_TASK_ROWS,
                         on_rows: RowSink | None = None, spill_dir: str | Path | None = None) -> DatasetReplayTable:
    """``replay``'s per-budget table of the dataset at ``root`` (:func:`~panto_analytics.policy.compaction.summary.
    summarize_replay`, or :func:`~panto_analytics.policy.compaction.summary.compare_policies` when ``policy`` is
    given; with the loss columns when ``with_loss``), equal to the in-memory one to the last bit, in memory
    that does not grow with the sessions: each task's rows go to ``on_rows`` (as in :func:`replay_dataset`),
    the columns the table reads (:data:`~panto_analytics.policy.compaction.summary.TABLE_COLUMNS`) to Parquet in a
    temporary folder (in ``spill_dir``; :class:`~panto_analytics.dataset.spill.Spill`), and the table is
    computed from those files one column at a time (its figures are order-free, so the order the tasks come
    in, on Ray too, changes nothing)."""
    from ..outcomes.orphan_loss import with_loss_columns
    from ..policy.compaction.summary import TABLE_COLUMNS, compare_policies, summarize_replay

    with Spill(spill_dir) as spill:
        s = _stream(root, budgets, window=window, reserve=reserve, summary_tokens=summary_tokens, policy=policy,
                    prices=prices, summarizer=summarizer, horizon=horizon if with_loss else None, per_session=False,
                    engine=engine, address=address, task_rows=task_rows, on_rows=on_rows, keep=TABLE_COLUMNS,
                    spill=spill, plain_ids=True)
        if policy is not None:
            table = compare_policies(s.events, s.sessions, column_at_a_time=True)
        else:
            table = summarize_replay(s.events, s.sessions, column_at_a_time=True)
        if with_loss:
            table = with_loss_columns(table, s.events, column_at_a_time=True)
    return DatasetReplayTable(table, s.summary_tokens, s.summary_source, s.price_source, s.unpriced)


def session_outcomes_dataset(root: str | Path, budgets: Any, *, window: int, reserve: int,
                             summary_tokens: int | None = None, policy: list[str] | None = None, prices: Any = True,
                             summarizer: str | None = None, horizon: int = DEFAULT_HORIZON, engine: str = "local",
                             address: str | None = None, task_rows: int = REPLAY_TASK_ROWS,
                             spill: Spill | None = None,
                             also: tuple[Sequence[str], Sequence[str]] = ((), ())) -> DatasetOutcomes:
    """:func:`~panto_analytics.analysis.choose.from_replay.session_outcomes` of the billed replay, with the loss, of the
    dataset at ``root`` (what :func:`~panto_analytics.analysis.choose.from_replay.replay_outcomes` gives in memory), task
    by task through the same task as :func:`replay_dataset`: each task keeps only those rows, one per policy,
    session and budget, concatenated in bucket order (on Ray, in the order the tasks finish). With ``spill``,
    the rows (what the decision's table and its bootstrap read) go to its Parquet files and come back
    as a lazy frame over them, so memory does not grow with the sessions. ``also``: the columns of the replay's
    events (its per-event rows, the loss's, returned as ``events``; none: no events) and of its session rows kept
    beside those the decision and the costs read (what a dataset's report draws of the replay,
    :mod:`panto_analytics.dataset._report_replay`)."""
    keep = None if spill is None else (list(also[0]), [*SESSION_OUTCOME_COLUMNS, *also[1]])
    s = _stream(root, budgets, window=window, reserve=reserve, summary_tokens=summary_tokens, policy=policy,
                prices=prices, summarizer=summarizer, horizon=horizon, per_session=True, engine=engine,
                address=address, task_rows=task_rows, keep=keep, spill=spill, plain_ids=spill is not None)
    return DatasetOutcomes(s.sessions, s.summary_tokens, s.summary_source, s.price_source, s.unpriced,
                           events=s.events if also[0] else None)
