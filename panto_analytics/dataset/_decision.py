"""The decision under a window over a dataset, bucket by bucket: :func:`decision_dataset`.

Each task replays, bills and measures the loss of whole sessions (the task
of :func:`~panto_analytics.dataset._replay.replay_dataset`, what
:func:`~panto_analytics.analysis.choose.from_replay.replay_outcomes` does in memory) and
returns their :func:`~panto_analytics.analysis.choose.from_replay.session_outcomes`
rows, one per (policy, session, budget); only the columns the table reads
(:data:`~panto_analytics.analysis.choose.from_replay.OUTCOME_COLUMNS`, without the
session ids) are kept, written to Parquet in a temporary folder as they come
(:class:`~panto_analytics.dataset.spill.Spill`), and the table is computed
from those files one column at a time
(:func:`~panto_analytics.analysis.choose.from_replay.table_from_sessions` with
``column_at_a_time``). Every figure of the table is order-free (counts, sums
of integers, dollars summed as whole picodollars, quantiles), so it equals the
in-memory one to the last bit, whatever order the tasks come in (on Ray too).
Memory holds one task's messages (in a worker process on a large dataset:
:mod:`~panto_analytics.dataset.engines`), one task's rows and one column of
the rows (8 bytes a row: 8 MB at 1M sessions and one budget), not the rows.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..analysis.choose.bootstrap import RESAMPLES, SEED
from ..analysis.choose.choice import Choice
from ..analysis.choose.from_replay import choose_from_outcomes, table_from_sessions, with_intervals
from ..analysis.choose.rule import Rule
from ..analysis.formatting import format_tokens
from ..errors import InputError
from ..outcomes.orphan_loss import DEFAULT_HORIZON
from ._replay import REPLAY_TASK_ROWS, DatasetOutcomes, session_outcomes_dataset
from .spill import Spill

__all__ = ["decision_dataset"]


def decision_dataset(root: str | Path, budgets: Any, rule: Rule | None = None, *, window: int,
                     reserve: int, summary_tokens: int | None = None, policy: list[str] | None = None,
                     prices: Any = True, summarizer: str | None = None, horizon: int | None = None,
                     engine: str = "local", address: str | None = None, task_rows: int = REPLAY_TASK_ROWS,
                     spill_dir: str | Path | None = None, resamples: int = RESAMPLES, seed: int = SEED,
                     on_outcomes: Callable[[Choice, DatasetOutcomes], None] | None = None,
                     also: tuple[Sequence[str], Sequence[str]] = ((), ())) -> Choice:
    """:func:`~panto_analytics.analysis.choose.from_replay.choose_from_replay` of
    :func:`~panto_analytics.analysis.choose.from_replay.replay_outcomes` over a dataset (``ingest --dataset``), bucket by
    bucket, here or on Ray (``engine="ray"``), with the same result (and the same unpriced-model warnings) as
    in memory.

    Each task replays, bills and measures whole sessions and returns their :func:`session_outcomes` rows (one
    per policy, session and budget; :func:`~panto_analytics.dataset._replay.session_outcomes_dataset`, the task of
    ``replay_dataset``); only those rows are kept and concatenated, so memory holds the messages of one task
    plus those rows, not the corpus. The summary size is the corpus's (the median of the recorded summaries,
    read from the dataset first), as in memory. ``on_outcomes(choice, outcomes)``: called with the choice and
    those rows (:class:`~panto_analytics.dataset._replay.DatasetOutcomes`, lazy, over the spilled files, which
    last as long as the call), for what else is read of them (the agents' recorded points of a report, its
    replay's section); ``also``: the columns of the events and of the session rows kept beside those the
    decision reads (:func:`~panto_analytics.dataset._replay.session_outcomes_dataset`).
    """
    rule = (rule or Rule()).under(window)
    with Spill(spill_dir) as spill:
        out = session_outcomes_dataset(root, budgets, window=window, reserve=reserve, summary_tokens=summary_tokens,
                                       policy=policy, prices=prices, summarizer=summarizer,
                                       horizon=horizon or DEFAULT_HORIZON, engine=engine, address=address,
                                       task_rows=task_rows, spill=spill, also=also)
        table = table_from_sessions(out.sessions, window=window, reserve=reserve,
                                    min_kept_turns=rule.min_kept_turns or 2, limit=rule.limit, column_at_a_time=True)
        if not table.height:
            raise InputError(root, None, "no sessions with messages", skippable=False)
        dec = with_intervals(choose_from_outcomes(table, rule, window=window, reserve=reserve), out.sessions,
                             resamples=resamples, seed=seed)
        dec.reasons.append(f"replayed under a {format_tokens(window)} window (summary "
                           f"{format_tokens(out.summary_tokens)} tokens, {out.summary_source}), bucket by bucket; "
                           "figures per session are over the sessions that reach the trigger")
        if on_outcomes is not None:
            on_outcomes(dec, out)
    return dec
