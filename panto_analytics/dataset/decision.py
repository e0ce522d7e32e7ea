"""The decision under a window over a dataset, bucket by bucket: :func:`decision_dataset`.

Each task replays, bills and measures the loss of whole sessions
(:func:`~panto_analytics.analysis.decision.replay_outcomes`) and returns their
:func:`~panto_analytics.analysis.decision.session_outcomes` rows, one per
(policy, session, budget); only those rows are kept and concatenated, then
reduced as in memory (:func:`~panto_analytics.analysis.decision.table_from_sessions`
orders them first), so the table equals the in-memory one to the last bit.
Memory holds one task's messages plus those rows: they grow with sessions x
budgets x policies, so this is bounded by the corpus's session count, not
flat (the quantiles of cost per session need every session's figure).
"""
from __future__ import annotations

import dataclasses
import functools
import warnings
from pathlib import Path
from typing import Any

import polars as pl

from ..analysis.decision import Decision, DecisionRule, decide, replay_outcomes, session_outcomes, table_from_sessions
from ..analysis.formatting import format_tokens
from ..budgets import as_budgets
from ..policy.replay import summary_size, validate_parameters
from .engines import map_buckets
from .store import collect, scan_dataset, scan_parts

__all__ = ["decision_dataset"]


def _outcomes_task(root: str, parts: list[str], *, budgets: list[int], window: int, reserve: int,
                   summary_tokens: int, policy: list[str] | None, prices: Any, summarizer: str | None,
                   horizon: int | None) -> pl.DataFrame:
    """One group of buckets' :func:`session_outcomes` (the per-bucket function both engines run)."""
    messages = collect(scan_parts(root, "messages", parts), root)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unpriced models: the decision's own warning counts their sessions
        r = replay_outcomes(messages, budgets, window=window, reserve=reserve, summary_tokens=summary_tokens,
                            policy=policy, prices=prices, summarizer=summarizer, horizon=horizon)
    return session_outcomes(r.events, r.sessions)


def decision_dataset(root: str | Path, budgets: Any, rule: DecisionRule | None = None, *, window: int,
                     reserve: int, summary_tokens: int | None = None, policy: list[str] | None = None,
                     prices: Any = True, summarizer: str | None = None, horizon: int | None = None,
                     engine: str = "local", address: str | None = None) -> Decision:
    """:func:`decision_from_replay` of :func:`replay_outcomes` over a dataset (``ingest --dataset``), bucket by
    bucket, here or on Ray (``engine="ray"``), with the same result as in memory.

    Each task replays, bills and measures whole sessions and returns their :func:`session_outcomes` rows (one
    per policy, session and budget); only those rows are kept and concatenated, so memory holds the messages of
    one task plus those rows, not the corpus. The summary size is the corpus's (the median of the recorded
    summaries, read from the dataset first), as in memory.
    """
    rule = dataclasses.replace((rule or DecisionRule()).or_default(), window=window)
    source = "given"
    if summary_tokens is None:
        recorded = collect(scan_dataset(root).filter("has_summary").select("words", "has_summary"), root)
        summary_tokens, source = summary_size(recorded)
    validate_parameters(window, reserve, summary_tokens)
    task = functools.partial(_outcomes_task, budgets=as_budgets(budgets), window=window, reserve=reserve,
                             summary_tokens=summary_tokens, policy=policy, prices=prices, summarizer=summarizer,
                             horizon=horizon)
    rows = [f for f in map_buckets(root, task, engine=engine, address=address) if f.height]
    if not rows:
        raise ValueError(f"{root}: no sessions with messages")
    ses = pl.concat(rows, how="diagonal_relaxed")
    table = table_from_sessions(ses, window=window, reserve=reserve, min_kept_turns=rule.min_kept_turns or 2,
                                limit=rule.limit)
    dec = decide(table, rule, window=window, reserve=reserve)
    dec.reasons.append(f"replayed under a {format_tokens(window)} window (summary {format_tokens(summary_tokens)} "
                       f"tokens, {source}), bucket by bucket; figures per session are over the sessions that reach "
                       "the trigger")
    return dec
