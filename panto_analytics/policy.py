"""libpanto's ``computeSplit`` over whole corpora, as Polars frame functions.

Each function takes a message frame (``DataFrame`` or ``LazyFrame``) and
returns the same kind. Nothing loops in Python: turns come from window
expressions over sessions, turn costs from a group-by, and the split for every
budget from one as-of join of budgets against suffix sums of turn costs.

>>> import polars as pl
>>> from panto_analytics.ingest import read_sessions
>>> msgs = pl.DataFrame({
...     "session_id": ["s"] * 4, "seq": [0, 1, 2, 3],
...     "role": ["user", "assistant", "user", "assistant"], "words": [1] * 4,
...     "has_tool_result": [False] * 4, "has_summary": [False] * 4,
...     "input": [0, 100, 0, 300], "output": [0, 100, 0, 100],
...     "cache_read": [0] * 4, "cache_write": [0] * 4})
>>> splits(msgs, [200]).select("prefix_end", "kept_turns", "kept_tokens").rows()
[(2, 1, 200)]
"""
from __future__ import annotations

from typing import Iterable, TypeVar

import polars as pl

from . import expressions as ex
from .schema import SPLIT_SCHEMA, TURN_SCHEMA

Frame = TypeVar("Frame", pl.DataFrame, pl.LazyFrame)
S = ex.SESSION


def _cast(lf: pl.LazyFrame, schema: dict) -> pl.LazyFrame:
    """Cast to ``schema`` and order its columns; ``session_id`` keeps the caller's dtype."""
    return lf.cast({k: v for k, v in schema.items() if k != S}).select(list(schema))


def _same_kind(result: pl.LazyFrame, like: Frame) -> Frame:
    return result.collect() if isinstance(like, pl.DataFrame) else result


def annotate(messages: Frame) -> Frame:
    """The message frame plus the policy's per-message columns.

    Adds ``turn`` (0-based index of the turn the message belongs to, null
    before the first turn), ``is_turn_start``, ``message_tokens``,
    ``assistant_cumulative`` and ``prior_cumulative``.
    """
    lf = messages.lazy().with_columns(
        ex.is_counted_turn_start().alias("is_turn_start"),
        ex.message_tokens(),
        ex.assistant_cumulative().alias("assistant_cumulative"),
        ex.prior_assistant_cumulative(),
    ).with_columns(
        turn=(pl.col("is_turn_start").cum_sum().over(S).cast(pl.Int64) - 1)
        .pipe(lambda t: pl.when(t >= 0).then(t)).cast(pl.UInt32),
    )
    return _same_kind(lf, messages)


def session_frames(messages: Frame) -> Frame:
    """One row per session: ``n_messages``, ``first_turn_seq``, ``n_turn_starts`` (uncounted cap)."""
    lf = messages.lazy().group_by(S, maintain_order=True).agg(
        n_messages=pl.len().cast(pl.UInt32),
        first_turn_seq=ex.first_turn_seq().first().cast(pl.UInt32),
        n_turn_starts=ex.is_turn_start().sum().cast(pl.UInt32),
    )
    return _same_kind(lf, messages)


def turns(messages: Frame) -> Frame:
    """One row per turn libpanto sees, with its token cost.

    ``end_seq`` is exclusive (the next turn's start, or the message count).
    ``token_source`` is ``usage`` when the cost is the cumulative-usage delta
    between final assistants, and ``words`` when it falls back to per-message
    estimates (a message's own usage total, else ``ceil(words * 1.3)``).
    """
    after = pl.col("assistant_cumulative").drop_nulls().last()
    before = pl.col("prior_cumulative").first().fill_null(0)
    lf = (
        annotate(messages.lazy())
        .filter(pl.col("turn").is_not_null())
        .group_by(S, "turn", maintain_order=True)
        .agg(
            start_seq=pl.col("seq").first(),
            end_seq=pl.col("seq").last() + 1,
            n_messages=pl.len(),
            tokens=pl.when(after.is_null()).then(pl.col("message_tokens").sum())
            # Saturating subtraction, as libpanto's turnTokenEstimate.
            .when(after > before).then(after - before).otherwise(0),
            token_source=pl.when(after.is_null()).then(pl.lit("words")).otherwise(pl.lit("usage")),
        )
        .pipe(_cast, TURN_SCHEMA)
    )
    return _same_kind(lf, messages)


def budget_frame(budgets: Iterable[int]) -> pl.LazyFrame:
    """Budgets as a one-column lazy frame (UInt64, sorted, unique)."""
    values = sorted({int(b) for b in budgets})
    if values and values[0] < 0:
        raise ValueError(f"budgets must be non-negative, got {values[0]}")
    return pl.LazyFrame({"budget": values}, schema={"budget": pl.UInt64})


def splits(messages: Frame, budgets: Iterable[int], *, turn_frame: Frame | None = None) -> Frame:
    """One row per (session, budget): libpanto's split and what it keeps.

    ``prefix_end`` and ``kept_turns`` equal ``computeSplit(messages, usages,
    budget)``. Walking turns backward, libpanto keeps turns while the running
    total stays within the budget; since turn costs are non-negative, the
    kept turns are exactly those whose suffix sum (the turn and every later
    one) is ``<= budget``. So the split is the turn with the largest suffix
    sum not above the budget: one backward as-of join per session.

    Pass ``turn_frame`` (the result of :func:`turns`) to reuse it.
    """
    lf = messages.lazy()
    tf = (turn_frame if turn_frame is not None else turns(lf)).lazy()
    tf = tf.with_columns(
        suffix=pl.col("tokens").cum_sum(reverse=True).over(S),
        n_turns=pl.len().over(S).cast(pl.UInt32),
    )
    # Equal suffix sums (zero-cost turns) keep the earliest turn: libpanto
    # keeps walking while the total does not grow past the budget.
    candidates = (
        tf.filter((pl.col("turn") == 0) | (pl.col("suffix") != pl.col("suffix").shift(1).over(S)))
        .select(S, "suffix", kept=(pl.col("n_turns") - pl.col("turn")).cast(pl.UInt32), kept_start=pl.col("start_seq"))
        .sort("suffix")
    )
    totals = tf.group_by(S).agg(active_tokens=pl.col("tokens").sum(), n_turns=pl.len().cast(pl.UInt32))
    per_session = (
        session_frames(lf)
        .join(totals, on=S, how="left")
        .with_columns(pl.col("n_turns").fill_null(0), pl.col("active_tokens").fill_null(0))
    )
    grid = per_session.join(budget_frame(budgets), how="cross").sort("budget")
    joined = grid.join_asof(candidates, left_on="budget", right_on="suffix", by=S,
                            strategy="backward", check_sortedness=False)
    kept = pl.col("kept").fill_null(0)
    out = joined.with_columns(
        kept_turns=kept,
        kept_tokens=pl.col("suffix").fill_null(0),
        prefix_end=pl.when(pl.col("n_turns") == 0).then(pl.col("n_messages"))
        .when(kept == pl.col("n_turns")).then(pl.col("first_turn_seq"))  # everything fits
        .when(kept == 0).then(pl.col("n_messages"))
        .otherwise(pl.col("kept_start")),
    ).with_columns(
        summarized_tokens=pl.col("active_tokens") - pl.col("kept_tokens"),
        noop=pl.col("kept_turns") == pl.col("n_turns"),
        capped=pl.col("n_turn_starts") > ex.MAX_TURNS,
    )
    result = _cast(out, SPLIT_SCHEMA).sort(S, "budget", maintain_order=True)
    return _same_kind(result, messages)
