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


def check_order(messages: pl.DataFrame) -> None:
    """Raise ValueError unless each session's rows are contiguous and in ``seq`` order 0, 1, 2, ...

    Every scan of the policy relies on it, as :func:`~panto_analytics.read_sessions`
    returns frames. Eager frames are checked by the public functions here; a
    LazyFrame is taken on trust (checking it would mean collecting it).

    >>> df = pl.DataFrame({"session_id": ["a", "b", "a"], "seq": [0, 0, 1]})
    >>> check_order(df)
    Traceback (most recent call last):
    ...
    ValueError: the message frame is not in order: sort it by session_id, seq (each session's rows contiguous, seq 0, 1, 2, ...)
    """
    start = ex.session_start()
    expected_seq = pl.when(start).then(0).otherwise(pl.col("seq").shift(1) + 1)
    ok = messages.select(
        (pl.col("seq") == expected_seq).all() & (start.sum() == pl.col(S).n_unique())
    ).item()
    if ok is False:
        raise ValueError("the message frame is not in order: sort it by session_id, seq "
                         "(each session's rows contiguous, seq 0, 1, 2, ...)")


def _checked(messages: Frame) -> Frame:
    if isinstance(messages, pl.DataFrame):
        check_order(messages)
    return messages


def annotate(messages: Frame) -> Frame:
    """The message frame plus the policy's per-message columns.

    Adds ``is_active`` (after the latest compaction summary),
    ``is_turn_start`` (a turn start libpanto records), ``turn_ordinal`` (turn
    starts so far in the session, past the 4096 cap too), ``turn`` (0-based
    index of the turn the message belongs to, null outside turns),
    ``message_tokens``, ``assistant_cumulative`` and ``prior_cumulative``.
    """
    lf = (
        _checked(messages).lazy()
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
    return _same_kind(lf, messages)


def turns(messages: Frame) -> Frame:
    """One row per turn libpanto sees, with its token cost.

    ``end_seq`` is exclusive (the next turn's start, or the message count).
    ``token_source`` is ``usage`` when the cost is the cumulative-usage delta
    between final assistants, and ``words`` when it falls back to per-message
    estimates (a message's own usage total, else ``ceil(words * 1.3)``).
    """
    return _same_kind(_turns(annotate(_checked(messages).lazy())), messages)


def _turns(annotated: pl.LazyFrame) -> pl.LazyFrame:
    # A turn's rows are contiguous and open with its start, so a forward fill
    # from the start row carries the turn's opening values to its last row,
    # where a filter keeps one row per turn. No group-by, no hashing.
    start = pl.col("is_turn_start")
    from_start = lambda e: pl.when(start).then(e).forward_fill()  # noqa: E731
    tokens_so_far = pl.col("message_tokens").cum_sum()
    # Latest assistant usage of this turn: the fill restarts at the turn
    # start (-1 = none yet; the start row itself is a user message).
    after = pl.when(pl.col("assistant_cumulative").is_not_null()).then(pl.col("assistant_cumulative").cast(pl.Int64)) \
        .when(start).then(-1).forward_fill()
    is_last = pl.col("turn").is_not_null() & (start.shift(-1).fill_null(True) | ex.session_end())
    return (
        annotated.with_columns(
            start_seq=from_start(pl.col("seq")),
            _before=from_start(pl.col("prior_cumulative").fill_null(0)),
            _fallback=tokens_so_far - from_start(tokens_so_far - pl.col("message_tokens")),
            _after=after,
        )
        .filter(is_last)
        .select(
            S, "turn", "start_seq",
            end_seq=pl.col("seq") + 1,
            n_messages=pl.col("seq") + 1 - pl.col("start_seq"),
            tokens=pl.when(pl.col("_after") < 0).then(pl.col("_fallback"))
            # Saturating subtraction, as libpanto's turnTokenEstimate.
            .when(pl.col("_after") > pl.col("_before")).then(pl.col("_after") - pl.col("_before")).otherwise(0),
            token_source=pl.when(pl.col("_after") < 0).then(pl.lit("words")).otherwise(pl.lit("usage")),
        )
        .pipe(_cast, TURN_SCHEMA)
    )


def _sessions(annotated: pl.LazyFrame) -> pl.LazyFrame:
    """One row per session: ``n_messages``, ``first_turn_seq``, ``n_turns``, ``capped``."""
    # libpanto's first_turn_msg: the first active non-system message.
    first_turn = (
        annotated.filter(pl.col("is_active") & (pl.col("role") != "system"))
        .filter(ex.session_start())
        .select(S, first_turn_seq=pl.col("seq"))
    )
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


def budget_series(budgets: Iterable[int]) -> pl.Series:
    """Budgets as a sorted, unique UInt64 series.

    >>> budget_series([20_000, 0, 20_000]).to_list()
    [0, 20000]
    """
    values = sorted({int(b) for b in budgets})
    if values and values[0] < 0:
        raise ValueError(f"budgets must be non-negative, got {values[0]}")
    if values and values[-1] >= 2**64:
        raise ValueError(f"budgets must fit in 64 bits, got {values[-1]}")
    return pl.Series("budget", values, dtype=pl.UInt64)


def splits(messages: Frame, budgets: Iterable[int], *, sessions: pl.DataFrame | pl.LazyFrame | None = None) -> Frame:
    """One row per (session, budget): libpanto's split and what it keeps.

    ``prefix_end`` and ``kept_turns`` equal ``computeSplit(messages, usages,
    budget)``. Walking turns backward, libpanto keeps turns while the running
    total stays within the budget; since turn costs are non-negative, the
    kept turns are exactly those whose *suffix sum* (the turn and every later
    one) is ``<= budget``. So for each budget the split is at the turn with
    the largest suffix sum not above it. Turned around, each turn is the
    split for a contiguous range of the sorted budgets, found with one
    ``search_sorted``; exploding those ranges gives every (session, budget)
    row, sessions in input order and budgets ascending, without a cross join.

    A session with no messages has no rows in the message frame; pass
    ``sessions`` (any frame with a ``session_id`` column, e.g. the sessions
    table) to get a row for it too, in that frame's order.
    """
    budget = budget_series(budgets)
    annotated = annotate(_checked(messages).lazy()).cache()
    tf = _turns(annotated).with_columns(suffix=pl.col("tokens").cum_sum(reverse=True).over(S))
    per_session = _with_empty_sessions(_split_sessions(annotated, tf), sessions, messages)
    ranges = _budget_ranges(tf, per_session, budget)
    # One row per (session, budget index) the range covers.
    rows = ranges.with_columns(_i=pl.int_ranges("lo", "hi", dtype=pl.UInt32)).explode("_i")
    kept = pl.when(pl.col("kept_turn").is_not_null()).then(pl.col("n_turns") - pl.col("kept_turn")).otherwise(0)
    out = rows.with_columns(
        budget=pl.lit(budget).gather(pl.col("_i")),
        kept_turns=kept,
        kept_tokens=pl.col("suffix").fill_null(0),
        prefix_end=pl.when(pl.col("n_turns") == 0).then(pl.col("n_messages"))  # no turns
        .when(kept == pl.col("n_turns")).then(pl.col("first_turn_seq"))  # everything fits
        .when(kept == 0).then(pl.col("n_messages"))  # not even the last turn fits
        .otherwise(pl.col("kept_start")),
    ).with_columns(
        summarized_tokens=pl.col("active_tokens") - pl.col("kept_tokens"),
        noop=pl.col("kept_turns") == pl.col("n_turns"),
    )
    return _same_kind(_cast(out, SPLIT_SCHEMA), messages)


def _split_sessions(annotated: pl.LazyFrame, tf: pl.LazyFrame) -> pl.LazyFrame:
    """Per session: what :func:`_sessions` gives, plus ``active_tokens`` (all turns' cost)."""
    active = tf.filter(pl.col("turn") == 0).select(S, active_tokens=pl.col("suffix"))
    return (
        _sessions(annotated)
        .join(active, on=S, how="left", maintain_order="left")
        .with_columns(pl.col("active_tokens").fill_null(0))
    )


def _with_empty_sessions(per_session: pl.LazyFrame, sessions, messages) -> pl.LazyFrame:
    """Add the sessions of ``sessions`` that have no messages (computeSplit gives (0, 0)), numbered in order."""
    if sessions is not None:
        dtype = messages.lazy().collect_schema()[S]
        per_session = (
            sessions.lazy().select(pl.col(S).cast(pl.String))
            .join(per_session.with_columns(pl.col(S).cast(pl.String)), on=S, how="left", maintain_order="left")
            .with_columns(
                pl.col(S).cast(dtype),
                pl.col("n_messages", "n_turns", "first_turn_seq", "active_tokens").fill_null(0),
                pl.col("capped").fill_null(False),
            )
        )
    return per_session.with_row_index("_order")


def _budget_ranges(tf: pl.LazyFrame, per_session: pl.LazyFrame, budget: pl.Series) -> pl.LazyFrame:
    """Per session, the budget-index ranges ``[lo, hi)`` each split applies to.

    A turn whose suffix sum is ``s`` is the split for every budget from the
    first one ``>= s`` up to (not including) the first one ``>=`` the
    previous turn's suffix sum. Budgets below the last turn's own cost keep
    nothing (``kept_turn`` null).
    """
    first_at_least = pl.lit(budget).search_sorted(pl.col("suffix"), side="left").cast(pl.UInt32)
    # Equal suffix sums (zero-cost turns) keep the earliest turn: libpanto
    # keeps walking while the total does not grow past the budget. Turn 0
    # opens each session, so a plain shift compares turns of one session.
    candidates = (
        tf.filter((pl.col("turn") == 0) | (pl.col("suffix") != pl.col("suffix").shift(1)))
        .select(S, "suffix", kept_turn="turn", kept_start="start_seq", lo=first_at_least)
        .with_columns(hi=pl.when(pl.col("kept_turn") == 0).then(pl.lit(len(budget), pl.UInt32))
                      .otherwise(pl.col("lo").shift(1)))
    )
    nothing_kept = candidates.group_by(S).agg(hi=pl.col("lo").min())
    session_cols = per_session.collect_schema().names()
    zero_rows = (
        per_session.join(nothing_kept, on=S, how="left")
        .with_columns(lo=pl.lit(0, pl.UInt32), hi=pl.col("hi").fill_null(len(budget)),
                      kept_turn=pl.lit(None, pl.UInt32), kept_start=pl.lit(None, pl.UInt32),
                      suffix=pl.lit(None, pl.UInt64))
    )
    turn_rows = candidates.join(per_session, on=S, how="inner")
    cols = [*session_cols, "lo", "hi", "kept_turn", "kept_start", "suffix"]
    return (
        pl.concat([zero_rows.select(cols), turn_rows.select(cols)], how="vertical_relaxed")
        .filter(pl.col("hi") > pl.col("lo"))
        .sort("_order", "lo")
    )
