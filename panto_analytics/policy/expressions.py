"""Column expressions of libpanto's compaction policy, one definition each.

Every function returns a ``pl.Expr`` over a message frame whose rows are
ordered by ``(session_id, seq)`` with each session's messages contiguous, as
:func:`panto_analytics.read_sessions` returns them. Names follow
``compaction.zig``; :func:`panto_analytics.policy.annotate` composes them.

Why no ``.over(session_id)``: every per-session scan here is a *global*
forward or backward fill that is stopped at session boundaries by a sentinel
(see :func:`last_before`). That is one linear pass per column instead of a
group-by per window, and it is what makes a corpus sweep several times
faster than libpanto's own loop.

>>> import polars as pl
>>> msgs = pl.DataFrame({"session_id": ["a", "a", "a", "b"], "seq": [0, 1, 2, 0],
...     "role": ["user", "user", "assistant", "user"], "has_tool_result": [False] * 4,
...     "has_summary": [False] * 4})
>>> msgs.select(is_turn_start()).to_series().to_list()
[True, False, False, True]
"""
from __future__ import annotations

import operator
from functools import reduce

import polars as pl

from ..schema import USAGE_COLUMNS
from ..words import WORD_TO_TOKEN_FACTOR

SESSION = "session_id"

#: libpanto collects at most this many turn starts (``turn_starts_buf``).
MAX_TURNS = 4096

_NONE = -1  # sentinel for "no earlier value in this session"


# --- sizing -----------------------------------------------------------------

def usage_total() -> pl.Expr:
    """``input + cache_read + cache_write + output`` in UInt64; null without usage.

    This is both libpanto's per-message usage estimate and ``cumulativeAt``.
    """
    # Adapters store all four counters or none, and + propagates null.
    return reduce(operator.add, (pl.col(c).cast(pl.UInt64) for c in USAGE_COLUMNS)).alias("usage_total")


def is_api_call() -> pl.Expr:
    """An assistant message with usage: one API call (where a format records no count of its own).

    >>> pl.DataFrame({"role": ["user", "assistant", "assistant"], "input": [None, 5, None]}).select(
    ...     is_api_call()).to_series().to_list()
    [False, True, False]
    """
    return ((pl.col("role") == "assistant") & pl.col("input").is_not_null()).alias("is_api_call")


def word_tokens() -> pl.Expr:
    """``ceil(words * 1.3)`` in float64, as libpanto's word-count fallback."""
    return (pl.col("words").cast(pl.Float64) * WORD_TO_TOKEN_FACTOR).ceil().cast(pl.UInt64)


def message_tokens() -> pl.Expr:
    """libpanto's ``messageTokenEstimate``: the usage total if present, else words."""
    return pl.coalesce(usage_total(), word_tokens()).alias("message_tokens")


def assistant_cumulative() -> pl.Expr:
    """``cumulativeAt(usage)`` on assistant messages with usage, null elsewhere."""
    return pl.when(pl.col("role") == "assistant").then(usage_total()).alias("assistant_cumulative")


# --- per-session scans --------------------------------------------------------

def session_start() -> pl.Expr:
    """True on the first row of each session."""
    return (pl.col(SESSION) != pl.col(SESSION).shift(1)).fill_null(True)


def session_end() -> pl.Expr:
    """True on the last row of each session."""
    return (pl.col(SESSION) != pl.col(SESSION).shift(-1)).fill_null(True)


def last_before(value: pl.Expr) -> pl.Expr:
    """Within each session, the latest non-null ``value`` strictly before each row.

    ``value`` must be a non-negative integer expression. The first row of a
    session gets a sentinel, so the forward fill never carries a value from
    one session into the next.

    >>> df = pl.DataFrame({"session_id": ["a", "a", "a", "b", "b"], "v": [5, None, 7, None, 1]})
    >>> df.select(last_before(pl.col("v"))).to_series().to_list()
    [None, 5, 5, None, None]
    """
    filled = pl.when(session_start()).then(pl.lit(_NONE, pl.Int64)) \
        .otherwise(value.cast(pl.Int64).shift(1)).forward_fill()
    return pl.when(filled != _NONE).then(filled)


def count_in_session(flag: pl.Expr) -> pl.Expr:
    """Running count of ``flag`` within each session, this row included."""
    running = flag.cast(pl.UInt32).cum_sum()
    before_session = pl.when(session_start()).then(running - flag.cast(pl.UInt32)).forward_fill()
    return running - before_session


# --- the policy -----------------------------------------------------------------

def is_active() -> pl.Expr:
    """True after the session's latest compaction summary (``latestCompactionIndex``).

    A backward fill from each summary (False) or the session's last row (True)
    tells every row whether a summary lies at or after it.
    """
    return pl.when(pl.col("has_summary")).then(False).when(session_end()).then(True) \
        .backward_fill().alias("is_active")


def is_structural_frame() -> pl.Expr:
    """System messages and compaction-summary anchors (``isStructuralFrame``)."""
    return (pl.col("role") == "system") | pl.col("has_summary")


def follows_user() -> pl.Expr:
    """Whether the nearest earlier non-structural message of the session is a user message.

    The search runs over the whole session, before the anchor too, exactly as
    ``isTurnStart`` scans back to index 0; false when there is none.
    """
    conversational_is_user = pl.when(~is_structural_frame()).then(pl.col("role") == "user")
    return (last_before(conversational_is_user) == 1).fill_null(False).alias("follows_user")


def is_turn_start() -> pl.Expr:
    """libpanto's ``isTurnStart`` within the active window.

    A turn starts at a user message with no tool-result block that is the
    first user message after a non-user message (structural frames are
    transparent), or the first conversational message of the session. Being a
    user message in the active window implies being at or past libpanto's
    ``first_turn_msg`` (the first active non-system message).
    """
    return (
        (pl.col("role") == "user")
        & ~pl.col("has_tool_result")
        & is_active()
        & ~follows_user()
    ).alias("is_turn_start")


def is_counted_turn_start(start: pl.Expr | None = None) -> pl.Expr:
    """Turn starts libpanto records: only the first :data:`MAX_TURNS` per session."""
    start = is_turn_start() if start is None else start
    return (start & (count_in_session(start) <= MAX_TURNS)).alias("is_counted_turn_start")


def prior_assistant_cumulative() -> pl.Expr:
    """``cumulativeAt`` of the last assistant with usage strictly before each row (``priorAssistantUsage``)."""
    return last_before(assistant_cumulative()).cast(pl.UInt64).alias("prior_cumulative")
