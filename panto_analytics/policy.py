"""libpanto's ``computeSplit`` over whole corpora, as Polars frame functions.

Each function takes a message frame (``DataFrame`` or ``LazyFrame``, rows
ordered by ``(session_id, seq)`` with each session contiguous, as
:func:`~panto_analytics.read_sessions` returns them) and returns the same
kind. Nothing loops in Python: turns come from scans over sessions (see
:mod:`panto_analytics.expressions`), turn costs from a group-by, and the split
for every budget from one as-of join of budgets against suffix sums of turn
costs.

>>> import polars as pl
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

    Adds ``is_turn_start`` (a turn start libpanto records), ``turn_ordinal``
    (turn starts so far in the session, past the 4096 cap too), ``turn``
    (0-based index of the turn the message belongs to, null outside turns),
    ``is_first_turn_message``, ``message_tokens``, ``assistant_cumulative`` and
    ``prior_cumulative``.
    """
    lf = (
        messages.lazy()
        .with_columns(
            ex.is_turn_start().alias("_any_start"),
            ex.is_first_turn_message(),
            ex.message_tokens(),
            ex.assistant_cumulative(),
            ex.prior_assistant_cumulative(),
        )
        .with_columns(turn_ordinal=ex.count_in_session(pl.col("_any_start")))
        .with_columns(
            is_turn_start=pl.col("_any_start") & (pl.col("turn_ordinal") <= ex.MAX_TURNS),
            turn=pl.when(pl.col("turn_ordinal") > 0)
            .then(pl.min_horizontal("turn_ordinal", ex.MAX_TURNS) - 1).cast(pl.UInt32),
        )
        .drop("_any_start")
    )
    return _same_kind(lf, messages)


def turns(messages: Frame) -> Frame:
    """One row per turn libpanto sees, with its token cost.

    ``end_seq`` is exclusive (the next turn's start, or the message count).
    ``token_source`` is ``usage`` when the cost is the cumulative-usage delta
    between final assistants, and ``words`` when it falls back to per-message
    estimates (a message's own usage total, else ``ceil(words * 1.3)``).
    """
    return _same_kind(_turns(annotate(messages.lazy())), messages)


def _turns(annotated: pl.LazyFrame) -> pl.LazyFrame:
    after = pl.col("assistant_cumulative").drop_nulls().last()
    before = pl.col("prior_cumulative").first().fill_null(0)
    in_turns = annotated.filter(pl.col("turn").is_not_null())
    # A turn's rows are contiguous, so a running count of starts numbers the
    # turns of the whole corpus in order: a sorted key, grouped without hashing.
    return (
        in_turns.with_columns(_key=pl.col("is_turn_start").cum_sum().set_sorted())
        .group_by("_key", maintain_order=True)
        .agg(
            pl.col(S).first(),
            pl.col("turn").first(),
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


def _sessions(annotated: pl.LazyFrame) -> pl.LazyFrame:
    """One row per session: ``n_messages``, ``first_turn_seq``, ``n_turns``, ``capped``."""
    first_turn = annotated.filter(pl.col("is_first_turn_message")).select(S, first_turn_seq=pl.col("seq"))
    return (
        annotated.filter(ex.session_end())
        .select(
            S,
            n_messages=(pl.col("seq") + 1).cast(pl.UInt32),
            n_turns=pl.min_horizontal("turn_ordinal", ex.MAX_TURNS).cast(pl.UInt32),
            capped=pl.col("turn_ordinal") > ex.MAX_TURNS,
        )
        .join(first_turn, on=S, how="left", maintain_order="left")
        .with_columns(pl.col("first_turn_seq").fill_null(pl.col("n_messages")))
    )


def budget_frame(budgets: Iterable[int]) -> pl.LazyFrame:
    """Budgets as a one-column lazy frame (UInt64, sorted, unique)."""
    values = sorted({int(b) for b in budgets})
    if values and values[0] < 0:
        raise ValueError(f"budgets must be non-negative, got {values[0]}")
    return pl.LazyFrame({"budget": values}, schema={"budget": pl.UInt64})


def splits(messages: Frame, budgets: Iterable[int], *, sessions: pl.DataFrame | pl.LazyFrame | None = None) -> Frame:
    """One row per (session, budget): libpanto's split and what it keeps.

    ``prefix_end`` and ``kept_turns`` equal ``computeSplit(messages, usages,
    budget)``. Walking turns backward, libpanto keeps turns while the running
    total stays within the budget; since turn costs are non-negative, the
    kept turns are exactly those whose suffix sum (the turn and every later
    one) is ``<= budget``. So the split is the turn with the largest suffix
    sum not above the budget: one backward as-of join per session.

    A session with no messages has no rows in the message frame; pass
    ``sessions`` (any frame with a ``session_id`` column, e.g. the sessions
    table) to get a row for it too, in that frame's order.
    """
    annotated = annotate(messages.lazy()).cache()
    tf = _turns(annotated).with_columns(suffix=pl.col("tokens").cum_sum(reverse=True).over(S))
    # Equal suffix sums (zero-cost turns) keep the earliest turn: libpanto
    # keeps walking while the total does not grow past the budget. Turn 0
    # opens each session, so a plain shift compares turns of one session.
    candidates = (
        tf.filter((pl.col("turn") == 0) | (pl.col("suffix") != pl.col("suffix").shift(1)))
        .select(S, "suffix", kept_turn=pl.col("turn"), kept_start=pl.col("start_seq"))
        .sort("suffix")
    )
    active = tf.filter(pl.col("turn") == 0).select(S, active_tokens=pl.col("suffix"))
    per_session = (
        _sessions(annotated)
        .join(active, on=S, how="left", maintain_order="left")
        .with_columns(pl.col("active_tokens").fill_null(0))
    )
    if sessions is not None:
        # Sessions without messages: computeSplit returns (0, 0) for them.
        per_session = (
            sessions.lazy().select(pl.col(S).cast(pl.String))
            .join(per_session.with_columns(pl.col(S).cast(pl.String)), on=S, how="left", maintain_order="left")
            .with_columns(
                pl.col(S).cast(messages.lazy().collect_schema()[S]),
                pl.col("n_messages", "n_turns", "first_turn_seq", "active_tokens").fill_null(0),
                pl.col("capped").fill_null(False),
            )
        )
    per_session = per_session.with_row_index("_order")
    grid = per_session.join(budget_frame(budgets), how="cross").sort("budget")
    joined = grid.join_asof(candidates, left_on="budget", right_on="suffix", by=S,
                            strategy="backward", check_sortedness=False)
    matched = pl.col("kept_turn").is_not_null()
    kept = pl.when(matched).then(pl.col("n_turns") - pl.col("kept_turn")).otherwise(0)
    out = joined.with_columns(
        kept_turns=kept,
        kept_tokens=pl.col("suffix").fill_null(0),
        prefix_end=pl.when(pl.col("n_turns") == 0).then(pl.col("n_messages"))  # no turns
        .when(kept == pl.col("n_turns")).then(pl.col("first_turn_seq"))  # everything fits
        .when(kept == 0).then(pl.col("n_messages"))
        .otherwise(pl.col("kept_start")),
    ).with_columns(
        summarized_tokens=pl.col("active_tokens") - pl.col("kept_tokens"),
        noop=pl.col("kept_turns") == pl.col("n_turns"),
    )
    # Sessions in input order, budgets ascending.
    result = _cast(out.sort("_order", "budget"), SPLIT_SCHEMA)
    return _same_kind(result, messages)
