"""Turns of libpanto's compaction policy: per-message annotations and one row per turn.

Each function takes a message frame (``DataFrame`` or ``LazyFrame``, rows
ordered by ``(session_id, seq)`` with each session contiguous, as
:func:`~panto_analytics.read_sessions` returns them) and returns the same
kind. Nothing loops in Python: turns come from scans over sessions (see
:mod:`panto_analytics.frame.expressions`) and turn costs from fills started
at each turn's first row.

>>> import polars as pl
>>> msgs = pl.DataFrame({
...     "session_id": ["s"] * 4, "seq": [0, 1, 2, 3],
...     "role": ["user", "assistant", "user", "assistant"], "words": [1] * 4,
...     "has_tool_result": [False] * 4, "has_summary": [False] * 4,
...     "input": [0, 100, 0, 300], "output": [0, 100, 0, 100],
...     "cache_read": [0] * 4, "cache_write": [0] * 4})
>>> turns(msgs).select("turn", "start_seq", "tokens").rows()
[(0, 0, 200), (1, 2, 200)]
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import polars as pl

from ..frame import expressions as ex
from ..frame.schema import ROLE, SEQ, SESSION, TURN_SCHEMA
from ._frames import Frame, cast_to, check_order, checked, same_kind

__all__ = ["annotate", "annotated_sessions", "annotated_turns", "check_order", "session_turns", "turns"]

def annotate(messages: Frame) -> Frame:
    """The message frame plus the policy's per-message columns.

    Adds ``is_active`` (after the latest compaction summary),
    ``is_turn_start`` (a turn start libpanto records), ``turn_ordinal`` (turn
    starts so far in the session, past the 4096 cap too), ``turn`` (0-based
    index of the turn the message belongs to, null outside turns),
    ``message_tokens``, ``assistant_cumulative`` and ``prior_cumulative``; ``messages`` and what comes back
    as the module docstring says.

    >>> from panto_analytics import examples
    >>> annotate(examples.messages()).select("seq", "is_turn_start", "turn").head(3).rows()
    [(0, True, 0), (1, False, 0), (2, True, 1)]
    """
    lf = (
        checked(messages).lazy()
        .with_columns(
            ex.is_active(),
            ex.is_turn_start().alias("_any_start"),
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
    return same_kind(lf, messages)


def turns(messages: Frame) -> Frame:
    """One row per turn libpanto sees, with its token cost.

    ``end_seq`` is exclusive (the next turn's start, or the message count).
    ``token_source`` is ``usage`` when the cost is the cumulative-usage delta
    between final assistants, and ``words`` when it falls back to per-message
    estimates (a message's own usage total, else ``ceil(words * 1.3)``).

    Parameters
    ----------
    messages
        A message frame, ordered by ``(session_id, seq)``.

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as ``messages``: one row per turn (:data:`~panto_analytics.frame.schema.TURN_SCHEMA`).

    Examples
    --------
    >>> from panto_analytics import examples
    >>> turns(examples.messages()).select("session_id", "turn", "tokens").rows()
    [('a', 0, 1000), ('a', 1, 1000), ('a', 2, 3000), ('b', 0, 400)]
    """
    return same_kind(annotated_turns(annotate(checked(messages).lazy())), messages)


def annotated_turns(annotated: pl.LazyFrame, carry: Sequence[str] = ()) -> pl.LazyFrame:
    """:func:`turns` of an annotated frame, plus the ``carry`` columns' values at each turn's start row."""
    # A turn's rows are contiguous and open with its start, so a forward fill
    # from the start row carries the turn's opening values to its last row,
    # where a filter keeps one row per turn. No group-by, no hashing.
    start = pl.col("is_turn_start")
    from_start: Callable[[pl.Expr], pl.Expr] = lambda e: pl.when(start).then(e).forward_fill()  # noqa: E731
    tokens_so_far = pl.col("message_tokens").cum_sum()
    # Latest assistant usage of this turn: the fill restarts at the turn
    # start (-1 = none yet; the start row itself is a user message).
    after = pl.when(pl.col("assistant_cumulative").is_not_null()).then(pl.col("assistant_cumulative").cast(pl.Int64)) \
        .when(start).then(-1).forward_fill()
    is_last = pl.col("turn").is_not_null() & (start.shift(-1).fill_null(True) | ex.session_end())
    return (
        annotated.with_columns(
            *[from_start(pl.col(c)).alias(c) for c in carry],
            start_seq=from_start(pl.col(SEQ)),
            _before=from_start(pl.col("prior_cumulative").fill_null(0)),
            _fallback=tokens_so_far - from_start(tokens_so_far - pl.col("message_tokens")),
            _after=after,
        )
        .filter(is_last)
        .select(
            SESSION, "turn", "start_seq", *carry,
            end_seq=pl.col(SEQ) + 1,
            n_messages=pl.col(SEQ) + 1 - pl.col("start_seq"),
            tokens=pl.when(pl.col("_after") < 0).then(pl.col("_fallback"))
            # Saturating subtraction, as libpanto's turnTokenEstimate.
            .when(pl.col("_after") > pl.col("_before")).then(pl.col("_after") - pl.col("_before")).otherwise(0),
            token_source=pl.when(pl.col("_after") < 0).then(pl.lit("words")).otherwise(pl.lit("usage")),
        )
        .pipe(cast_to, TURN_SCHEMA, carry)
    )


def session_turns(messages: Frame) -> Frame:
    """One row per session: ``n_messages``, ``n_turns`` (at most 4096), ``capped``, ``first_turn_seq``.

    ``first_turn_seq`` is libpanto's ``first_turn_msg``: the first active
    non-system message (``n_messages`` when there is none).
    """
    return same_kind(annotated_sessions(annotate(checked(messages).lazy())), messages)


def annotated_sessions(annotated: pl.LazyFrame) -> pl.LazyFrame:
    """:func:`session_turns` of an annotated frame."""
    # libpanto's first_turn_msg: the first active non-system message.
    first_turn = (
        annotated.filter(pl.col("is_active") & (pl.col(ROLE) != "system"))
        .filter(ex.session_start())
        .select(SESSION, first_turn_seq=pl.col(SEQ))
    )
    return (
        annotated.filter(ex.session_end())
        .select(
            SESSION,
            n_messages=(pl.col(SEQ) + 1).cast(pl.UInt32),
            n_turns=pl.min_horizontal("turn_ordinal", ex.MAX_TURNS).cast(pl.UInt32),
            capped=pl.col("turn_ordinal") > ex.MAX_TURNS,
        )
        .join(first_turn, on=SESSION, how="left", maintain_order="left")
        .with_columns(pl.col("first_turn_seq").fill_null(pl.col("n_messages")))
    )
