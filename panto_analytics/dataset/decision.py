"""The decision under a window over a dataset, bucket by bucket: :func:`decision_dataset`.

Each task replays, bills and measures the loss of whole sessions (the task
of :func:`~panto_analytics.dataset.replay.replay_dataset`, what
:func:`~panto_analytics.analysis.decision.replay_outcomes` does in memory) and
returns their :func:`~panto_analytics.analysis.decision.session_outcomes`
rows, one per (policy, session, budget); only those rows are kept and
concatenated (:func:`~panto_analytics.dataset.replay.session_outcomes_dataset`), then
reduced as in memory (:func:`~panto_analytics.analysis.decision.table_from_sessions`
orders them first), so the table equals the in-memory one to the last bit.
Memory holds one task's messages (in a worker process on a large dataset:
:mod:`~panto_analytics.dataset.engines`) plus those rows, only the columns the
table reads (:data:`~panto_analytics.analysis.decision.OUTCOME_COLUMNS`): they
grow with sessions x budgets x policies (the quantiles of cost per session
need every session's figure, and the sums are taken in session order).
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ..analysis.decision import Decision, DecisionRule, decide, table_from_sessions
from ..analysis.formatting import format_tokens
from ..errors import InputError
from ..outcomes.orphan_loss import DEFAULT_HORIZON
from .replay import REPLAY_TASK_ROWS, session_outcomes_dataset

__all__ = ["decision_dataset"]


def decision_dataset(root: str | Path, budgets: Any, rule: DecisionRule | None = None, *, window: int,
                     reserve: int, summary_tokens: int | None = None, policy: list[str] | None = None,
                     prices: Any = True, summarizer: str | None = None, horizon: int | None = None,
                     engine: str = "local", address: str | None = None, task_rows: int = REPLAY_TASK_ROWS) -> Decision:
    """:func:`decision_from_replay` of :func:`replay_outcomes` over a dataset (``ingest --dataset``), bucket by
    bucket, here or on Ray (``engine="ray"``), with the same result (and the same unpriced-model warnings) as
    in memory.

    Each task replays, bills and measures whole sessions and returns their :func:`session_outcomes` rows (one
    per policy, session and budget; :func:`~panto_analytics.dataset.replay.session_outcomes_dataset`, the task of
    ``replay_dataset``); only those rows are kept and concatenated, so memory holds the messages of one task
    plus those rows, not the corpus. The summary size is the corpus's (the median of the recorded summaries,
    read from the dataset first), as in memory.
    """
    rule = dataclasses.replace((rule or DecisionRule()).or_default(), window=window)
    out = session_outcomes_dataset(root, budgets, window=window, reserve=reserve, summary_tokens=summary_tokens,
                                   policy=policy, prices=prices, summarizer=summarizer,
                                   horizon=horizon or DEFAULT_HORIZON, engine=engine, address=address,
                                   task_rows=task_rows)
    if not out.sessions.height:
        raise InputError(root, None, "no sessions with messages", skippable=False)
    table = table_from_sessions(out.sessions, window=window, reserve=reserve,
                                min_kept_turns=rule.min_kept_turns or 2, limit=rule.limit)
    dec = decide(table, rule, window=window, reserve=reserve)
    dec.reasons.append(f"replayed under a {format_tokens(window)} window (summary {format_tokens(out.summary_tokens)} "
                       f"tokens, {out.summary_source}), bucket by bucket; figures per session are over the sessions "
                       "that reach the trigger")
    return dec
