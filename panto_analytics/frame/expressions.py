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
from typing import TYPE_CHECKING, Literal

import polars as pl

from ..transcript import REQUEST_FRAME_BYTES, REQUEST_FRAME_WITH_SUMMARY_BYTES, SEPARATOR
from .schema import ROLE, SESSION, USAGE_COLUMNS
from .words import WORD_TO_TOKEN_FACTOR

if TYPE_CHECKING:
    from polars._typing import IntoExpr

__all__ = [
    "MAX_TURNS", "TOKEN_DIGITS", "assistant_cumulative", "count_in_session", "counted_quantile", "follows_user", "is_active", "is_api_call",
    "is_structural_frame", "is_turn_start", "last_before", "median", "message_tokens", "observed_quantile",
    "latest_summary_bytes", "prior_assistant_cumulative", "request_bytes", "request_bytes_before", "rounded_tokens",
    "session_end", "session_start",
    "sum_in_session", "transcript_bytes", "usage_total", "word_tokens",
]

#: libpanto collects at most this many turn starts (``turn_starts_buf``).
MAX_TURNS = 4096

_NONE = -1  # sentinel for "no earlier value in this session"


def _expr(value: IntoExpr) -> pl.Expr:
    """A column name as ``pl.col``, an expression as it is, anything else as a literal."""
    if isinstance(value, str):
        return pl.col(value)
    return value if isinstance(value, pl.Expr) else pl.lit(value)


# --- sizing -----------------------------------------------------------------

def usage_total(*counters: IntoExpr) -> pl.Expr:
    """``input + cache_read + cache_write + output`` in UInt64; null without usage.

    This is both libpanto's per-message usage estimate and ``cumulativeAt``.
    ``counters`` default to the four usage columns of the message frame.

    >>> pl.DataFrame({"a": [1, None], "b": [2, 3]}).select(usage_total("a", "b")).to_series().to_list()
    [3, None]
    """
    # Adapters store all four counters or none, and + propagates null.
    columns = counters or USAGE_COLUMNS
    return reduce(operator.add, (_expr(c).cast(pl.UInt64) for c in columns)).alias("usage_total")


def is_api_call(role: IntoExpr = ROLE, input: IntoExpr = "input") -> pl.Expr:
    """An assistant message with usage: one API call (where a format records no count of its own).

    >>> pl.DataFrame({"role": ["user", "assistant", "assistant"], "input": [None, 5, None]}).select(
    ...     is_api_call()).to_series().to_list()
    [False, True, False]
    """
    return ((_expr(role) == "assistant") & _expr(input).is_not_null()).alias("is_api_call")


def word_tokens(words: IntoExpr = "words") -> pl.Expr:
    """``ceil(words * 1.3)`` in float64, as libpanto's word-count fallback.

    >>> pl.DataFrame({"words": [0, 1, 10]}).select(word_tokens()).to_series().to_list()
    [0, 2, 13]
    """
    return (_expr(words).cast(pl.Float64) * WORD_TO_TOKEN_FACTOR).ceil().cast(pl.UInt64)


def message_tokens(usage: IntoExpr | None = None, words: IntoExpr = "words") -> pl.Expr:
    """libpanto's ``messageTokenEstimate``: the usage total if present, else words.

    ``usage`` defaults to :func:`usage_total` of the frame's four counters.
    """
    total = usage_total() if usage is None else _expr(usage)
    return pl.coalesce(total, word_tokens(words)).alias("message_tokens")


def assistant_cumulative(role: IntoExpr = ROLE, usage: IntoExpr | None = None) -> pl.Expr:
    """``cumulativeAt(usage)`` on assistant messages with usage, null elsewhere."""
    total = usage_total() if usage is None else _expr(usage)
    return pl.when(_expr(role) == "assistant").then(total).alias("assistant_cumulative")


# --- per-session scans --------------------------------------------------------

def session_start(session: IntoExpr = SESSION) -> pl.Expr:
    """True on the first row of each session."""
    return (_expr(session) != _expr(session).shift(1)).fill_null(True)


def session_end(session: IntoExpr = SESSION) -> pl.Expr:
    """True on the last row of each session."""
    return (_expr(session) != _expr(session).shift(-1)).fill_null(True)


def last_before(value: IntoExpr, session: IntoExpr = SESSION) -> pl.Expr:
    """Within each session, the latest non-null ``value`` strictly before each row.

    ``value`` must be a non-negative integer expression. The first row of a
    session gets a sentinel, so the forward fill never carries a value from
    one session into the next.

    >>> df = pl.DataFrame({"session_id": ["a", "a", "a", "b", "b"], "v": [5, None, 7, None, 1]})
    >>> df.select(last_before(pl.col("v"))).to_series().to_list()
    [None, 5, 5, None, None]
    """
    filled = pl.when(session_start(session)).then(pl.lit(_NONE, pl.Int64)) \
        .otherwise(_expr(value).cast(pl.Int64).shift(1)).forward_fill()
    return pl.when(filled != _NONE).then(filled)


def sum_in_session(value: IntoExpr, session: IntoExpr = SESSION) -> pl.Expr:
    """Running sum of ``value`` (non-negative integers, no nulls) within each session, this row included.

    One global cumulative sum minus its value where the session began: no group-by.

    >>> df = pl.DataFrame({"session_id": ["a", "a", "b"], "v": [3, 4, 5]})
    >>> df.select(sum_in_session("v")).to_series().to_list()
    [3, 7, 5]
    """
    v = _expr(value)
    running = v.cum_sum()
    before_session = pl.when(session_start(session)).then(running - v).forward_fill()
    return running - before_session


def count_in_session(flag: IntoExpr, session: IntoExpr = SESSION) -> pl.Expr:
    """Running count of ``flag`` within each session, this row included.

    >>> df = pl.DataFrame({"session_id": ["a", "a", "b"], "f": [True, True, True]})
    >>> df.select(count_in_session("f")).to_series().to_list()
    [1, 2, 1]
    """
    return sum_in_session(_expr(flag).cast(pl.UInt32), session)


# --- the policy -----------------------------------------------------------------

def is_active(has_summary: IntoExpr = "has_summary", session: IntoExpr = SESSION) -> pl.Expr:
    """True after the session's latest compaction summary (``latestCompactionIndex``).

    A backward fill from each summary (False) or the session's last row (True)
    tells every row whether a summary lies at or after it.
    """
    return pl.when(_expr(has_summary)).then(False).when(session_end(session)).then(True) \
        .backward_fill().alias("is_active")


def is_structural_frame(role: IntoExpr = ROLE, has_summary: IntoExpr = "has_summary") -> pl.Expr:
    """System messages and compaction-summary anchors (``isStructuralFrame``)."""
    return (_expr(role) == "system") | _expr(has_summary)


def follows_user(role: IntoExpr = ROLE, has_summary: IntoExpr = "has_summary", session: IntoExpr = SESSION) -> pl.Expr:
    """Whether the nearest earlier non-structural message of the session is a user message.

    The search runs over the whole session, before the anchor too, exactly as
    ``isTurnStart`` scans back to index 0; false when there is none.
    """
    conversational_is_user = pl.when(~is_structural_frame(role, has_summary)).then(_expr(role) == "user")
    return (last_before(conversational_is_user, session) == 1).fill_null(False).alias("follows_user")


def is_turn_start(role: IntoExpr = ROLE, has_tool_result: IntoExpr = "has_tool_result",
                  has_summary: IntoExpr = "has_summary", session: IntoExpr = SESSION) -> pl.Expr:
    """libpanto's ``isTurnStart`` within the active window.

    A turn starts at a user message with no tool-result block that is the
    first user message after a non-user message (structural frames are
    transparent), or the first conversational message of the session. Being a
    user message in the active window implies being at or past libpanto's
    ``first_turn_msg`` (the first active non-system message).
    """
    return (
        (_expr(role) == "user")
        & ~_expr(has_tool_result)
        & is_active(has_summary, session)
        & ~follows_user(role, has_summary, session)
    ).alias("is_turn_start")


def prior_assistant_cumulative(role: IntoExpr = ROLE, usage: IntoExpr | None = None,
                               session: IntoExpr = SESSION) -> pl.Expr:
    """``cumulativeAt`` of the last assistant with usage strictly before each row (``priorAssistantUsage``)."""
    return last_before(assistant_cumulative(role, usage), session).cast(pl.UInt64).alias("prior_cumulative")


# --- the summarizer request -------------------------------------------------------

def request_bytes_before(serialized: IntoExpr = "serialized_bytes", has_summary: IntoExpr = "has_summary",
                         session: IntoExpr = SESSION, *, active: IntoExpr | None = None) -> pl.Expr:
    """What the active messages strictly before each row add to a summarizer request, in bytes.

    The sum of :func:`~panto_analytics.transcript.serialized_bytes` over
    ``messages[active_start:row]``: the transcript of a split whose
    ``prefix_end`` is this row is 2 bytes less (no separator before its
    first block), or empty. ``active`` defaults to :func:`is_active` (pass
    the column where a frame already has it).
    """
    in_window = is_active(has_summary, session) if active is None else _expr(active)
    own = pl.when(in_window).then(_expr(serialized)).otherwise(0).cast(pl.UInt64)
    return (sum_in_session(own, session) - own).alias("request_bytes_before")


def latest_summary_bytes(serialized: IntoExpr = "serialized_bytes", has_summary: IntoExpr = "has_summary",
                         session: IntoExpr = SESSION) -> pl.Expr:
    """Bytes of the latest compaction summary at or before each row of its session; null before any.

    On a session's last row: the ``latestSummaryText`` that goes in the request's previous-summary section.
    """
    latest = pl.when(_expr(has_summary)).then(_expr(serialized).cast(pl.Int64)) \
        .when(session_start(session)).then(pl.lit(_NONE, pl.Int64)).forward_fill()
    return pl.when(latest != _NONE).then(latest).cast(pl.UInt64).alias("latest_summary_bytes")


def transcript_bytes(contributions: IntoExpr) -> pl.Expr:
    """``serializeTranscript``'s size from its messages' summed ``serialized_bytes``: no separator before the first block.

    >>> pl.DataFrame({"c": [0, 2, 12]}).select(transcript_bytes("c")).to_series().to_list()
    [0, 0, 10]
    """
    c = _expr(contributions)
    return pl.when(c > len(SEPARATOR)).then(c - len(SEPARATOR)).otherwise(0).cast(pl.UInt64).alias("transcript_bytes")


def request_bytes(contributions: IntoExpr, previous_summary_bytes: IntoExpr) -> pl.Expr:
    """``buildRequestBody``'s size: its framing, the previous summary's section where that is not null, the transcript.

    The expression form of :func:`panto_analytics.transcript.request_bytes`.

    >>> df = pl.DataFrame({"c": [12, 12], "prev": [None, 5]})
    >>> df.select(request_bytes("c", "prev")).to_series().to_list() == [59 + 10, 167 + 5 + 10]
    True
    """
    previous = _expr(previous_summary_bytes)
    framing = pl.when(previous.is_null()).then(pl.lit(REQUEST_FRAME_BYTES, pl.UInt64)) \
        .otherwise(REQUEST_FRAME_WITH_SUMMARY_BYTES + previous.cast(pl.UInt64))
    return (framing + transcript_bytes(contributions)).alias("request_bytes")


def median(values: IntoExpr) -> pl.Expr:
    """The median of ``values`` (a column name or an expression) as every table shows it: the middle value, and
    of an even count the mean of the two middle ones (Polars' ``median``; Float64, null without values).

    The one definition of a median or ``_p50`` a user reads. Exceptions pick an observed value on purpose and
    say why where they do: :func:`observed_quantile`. From exact value counts: :func:`counted_quantile`.

    >>> pl.DataFrame({"k": [7, 22]}).select(median("k")).item()
    14.5
    >>> pl.DataFrame({"k": [10, 20, 40]}).select(median(pl.col("k").filter(pl.col("k") > 10))).item()
    30.0
    """
    return _expr(values).median()


def observed_quantile(column: str, q: float, dtype: pl.DataType) -> pl.Expr:
    """The ``q`` quantile of ``column`` as one of its values (nearest rank), cast to ``dtype``: a percentile of
    whole tokens, turns or bytes stays whole. Not for a median shown to a user (:func:`median`), except where
    a figure must be an observed value: the sweep's, merged bucket by bucket from exact value counts
    (docs/scale.md), picks one on every path (from the counts: :func:`counted_quantile` ``"nearest"``).

    >>> pl.DataFrame({"k": [10, 20, 40]}).select(observed_quantile("k", 0.9, pl.UInt64())).item()
    40
    """
    return pl.col(column).quantile(q, "nearest").cast(dtype)


#: The significant digits a token count keeps in a summary that merges (:func:`rounded_tokens`).
TOKEN_DIGITS = 3


def rounded_tokens(values: IntoExpr) -> pl.Expr:
    """Token counts rounded to :data:`TOKEN_DIGITS` significant digits (12,345 -> 12,300; 999 stays 999), the
    precision :func:`~panto_analytics.analysis.formatting.format_tokens` shows from 10k up: what a summary counts
    per value so that it merges exactly (by adding counts) and stays bounded (at most 900 values a decade).
    Rounding is monotone, so a quantile that picks an observed value (:func:`counted_quantile`, ``"lower"``) of
    the rounded counts is the rounded quantile of the counts themselves.

    >>> pl.DataFrame({"t": [999, 12_345, 12_350, 99_960]}).select(rounded_tokens("t")).to_series().to_list()
    [999, 12300, 12400, 100000]
    """
    return _expr(values).round_sig_figs(TOKEN_DIGITS)


# --- quantiles of value counts ----------------------------------------------

def counted_quantile(q: float, value: IntoExpr = "value", count: IntoExpr = "count", *,
                     interpolation: Literal["linear", "nearest", "lower"] = "linear") -> pl.Expr:
    """The ``q`` quantile of the values a value-counts table counts (each ``value`` ``count`` times), bit for bit
    Polars' ``quantile(q, interpolation)`` of the values themselves: the one definition of a quantile from exact value
    counts (what lanes that merge counts bucket by bucket take theirs from). An aggregation (``select``,
    ``group_by().agg``) over rows sorted by ``value``, none of them null (``value`` and ``count``: names, or
    expressions such as the same filter of both); null when they count nothing.

    The definitions, each at the 0-based rank ``q * (n - 1)`` among the ``n`` sorted values:

    - ``"linear"``: between the values at its floor and its ceiling, Float64. At ``q = 0.5`` the median of
      :func:`median` (of an even count, the two middle values' mean, as Polars takes it: ``lo + 0.5 * (hi - lo)``,
      which is not always ``(lo + hi) / 2`` to the last bit); the box statistics' quantiles.
    - ``"nearest"``: the value at the rank rounded half away from zero (:func:`observed_quantile`'s, the sweep's
      percentiles: an observed value, in the values' dtype).
    - ``"lower"``: the value at the rank's floor (an observed value, in the values' dtype).

    The k-th smallest value (from 0) is the first whose cumulative count passes k.

    >>> c = pl.DataFrame({"value": [1, 4, 9], "count": [1, 1, 2]})  # 1, 4, 9, 9
    >>> c.select(counted_quantile(0.5)).item(), pl.DataFrame({"k": [1, 4, 9, 9]}).select(median("k")).item()
    (6.5, 6.5)
    >>> c.select(nearest=counted_quantile(0.5, interpolation="nearest"), lower=counted_quantile(0.5, interpolation="lower")).row(0)
    (9, 4)
    """
    v, c = _expr(value), _expr(count)
    at = (c.sum().cast(pl.Int64) - 1).cast(pl.Float64) * q
    seen = c.cum_sum()

    def at_rank(rank: pl.Expr) -> pl.Expr:
        return v.filter((seen > rank) & (c > 0)).first()

    if interpolation == "nearest":
        return at_rank(at.round(0, mode="half_away_from_zero"))
    if interpolation == "lower":
        return at_rank(at.floor())
    low, high = at_rank(at.floor()).cast(pl.Float64), at_rank(at.ceil()).cast(pl.Float64)
    return pl.when(low == high).then(low).otherwise((at - at.floor()) * (high - low) + low)
