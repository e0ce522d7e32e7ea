"""Column expressions of libpanto's compaction policy, one definition each.

Every function returns a ``pl.Expr`` over the message frame (see
``schema.MESSAGE_SCHEMA``) and is evaluated per session with ``.over``; the
frame functions in :mod:`panto_analytics.policy` compose them. Names follow
``compaction.zig``.

>>> import polars as pl
>>> msgs = pl.DataFrame({"session_id": ["a", "a", "a"], "seq": [0, 1, 2],
...     "role": ["user", "user", "assistant"], "has_tool_result": [False] * 3,
...     "has_summary": [False] * 3})
>>> msgs.select(is_turn_start()).to_series().to_list()
[True, False, False]
"""
from __future__ import annotations

import operator
from functools import reduce

import polars as pl

from .schema import USAGE_COLUMNS
from .words import WORD_TO_TOKEN_FACTOR

SESSION = "session_id"

#: libpanto collects at most this many turn starts (``turn_starts_buf``).
MAX_TURNS = 4096


def usage_total() -> pl.Expr:
    """``input + cache_read + cache_write + output`` in UInt64; null without usage.

    This is both libpanto's per-message usage estimate and ``cumulativeAt``.
    """
    # Adapters store all four counters or none, and + propagates null.
    return reduce(operator.add, (pl.col(c).cast(pl.UInt64) for c in USAGE_COLUMNS)).alias("usage_total")


def word_tokens() -> pl.Expr:
    """``ceil(words * 1.3)`` in float64, as libpanto's word-count fallback."""
    return (pl.col("words").cast(pl.Float64) * WORD_TO_TOKEN_FACTOR).ceil().cast(pl.UInt64)


def message_tokens() -> pl.Expr:
    """libpanto's ``messageTokenEstimate``: the usage total if present, else words."""
    return pl.coalesce(usage_total(), word_tokens()).alias("message_tokens")


def assistant_cumulative() -> pl.Expr:
    """``cumulativeAt(usage)`` on assistant messages with usage, null elsewhere."""
    return pl.when(pl.col("role") == "assistant").then(usage_total())


def is_structural_frame() -> pl.Expr:
    """System messages and compaction-summary anchors (``isStructuralFrame``)."""
    return (pl.col("role") == "system") | pl.col("has_summary")


def active_start() -> pl.Expr:
    """Seq after the latest compaction summary, or 0: where the active window begins."""
    return (pl.when(pl.col("has_summary")).then(pl.col("seq").cast(pl.Int64) + 1).max().over(SESSION)
            .fill_null(0).alias("active_start"))


def first_turn_seq() -> pl.Expr:
    """First non-system seq of the active window, or the message count if none."""
    candidate = pl.when((pl.col("seq") >= active_start()) & (pl.col("role") != "system")).then(pl.col("seq"))
    return candidate.min().over(SESSION).fill_null(pl.len().over(SESSION)).cast(pl.Int64).alias("first_turn_seq")


def previous_conversational_role() -> pl.Expr:
    """Role of the nearest earlier message that is not structural frame, or null.

    The search runs over the whole session, before the anchor too, exactly as
    ``isTurnStart`` scans back to index 0.
    """
    role = pl.when(~is_structural_frame()).then(pl.col("role"))
    return role.shift(1).forward_fill().over(SESSION).alias("previous_role")


def is_turn_start() -> pl.Expr:
    """libpanto's ``isTurnStart``, restricted to the active window past leading system messages.

    A turn starts at a user message with no tool-result block that is the
    first user message after a non-user message (structural frames are
    transparent), or the first message of the session.
    """
    previous = previous_conversational_role()
    return (
        (pl.col("role") == "user")
        & ~pl.col("has_tool_result")
        & (pl.col("seq") >= first_turn_seq())
        & (previous.is_null() | (previous != "user"))
    ).alias("is_turn_start")


def is_counted_turn_start() -> pl.Expr:
    """Turn starts libpanto records: only the first :data:`MAX_TURNS` per session."""
    start = is_turn_start()
    return (start & (start.cum_sum().over(SESSION) <= MAX_TURNS)).alias("is_counted_turn_start")


def prior_assistant_cumulative() -> pl.Expr:
    """``cumulativeAt`` of the last assistant with usage strictly before each row (``priorAssistantUsage``)."""
    return assistant_cumulative().shift(1).forward_fill().over(SESSION).alias("prior_cumulative")
