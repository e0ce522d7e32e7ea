"""libpanto's ``computeSplit`` over whole corpora: one row per (session, budget).

:func:`splits` takes a message frame (``DataFrame`` or ``LazyFrame``, as
:func:`~panto_analytics.read_sessions` returns it) and returns the same kind.
The split for every budget comes from suffix sums of the turn costs of
:mod:`panto_analytics.policy.turn_costs` and one ``search_sorted`` of the budgets
against them (see :func:`splits`).

>>> from panto_analytics import examples
>>> # session a's turns cost 1,000, 1,000 and 3,000 tokens: a 3,000 budget keeps the last one, from message 4
>>> splits(examples.messages(), [3_000]).select("session_id", "prefix_end", "kept_turns", "kept_tokens").rows()
[('a', 4, 1, 3000), ('b', 0, 1, 400)]
"""
from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from ..budgets import Budgets, as_budgets
from ..frame import expressions as ex
from ..frame.schema import BUDGET, SESSION, SPLIT_SCHEMA
from ._frames import Frame, cast_to, checked, same_kind
from .turn_costs import annotate, annotated_sessions, annotated_turns

__all__ = ["budget_series", "splits"]



def budget_series(budgets: Budgets) -> pl.Series:
    """Budgets (one, or many; ints or strings as the command line takes them) as a sorted, unique UInt64 series.

    >>> budget_series([20_000, 0, 20_000]).to_list()
    [0, 20000]
    >>> budget_series(20_000).to_list(), budget_series("8k,20k").to_list()
    ([20000], [8000, 20000])
    """
    values = as_budgets(budgets)
    if values and values[0] < 0:
        raise ValueError(f"budgets must be non-negative, got {values[0]}")
    if values and values[-1] >= 2**64:
        raise ValueError(f"budgets must fit in 64 bits, got {values[-1]}")
    return pl.Series(BUDGET, values, dtype=pl.UInt64)


def splits(messages: Frame, budgets: Budgets, *, sessions: pl.DataFrame | pl.LazyFrame | None = None) -> Frame:
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

    Parameters
    ----------
    messages
        A message frame, ordered by ``(session_id, seq)`` (DataFrame or LazyFrame).
    budgets
        One ``keep_verbatim`` budget or many, in tokens: ints, or strings as the command line takes them
        (``"20k"``, ``"8k,20k"``, ``"0:100k:41"``).
    sessions
        A frame with a ``session_id`` column listing every session (see above).

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as ``messages``: :data:`~panto_analytics.frame.schema.SPLIT_SCHEMA`.

    Examples
    --------
    >>> from panto_analytics import examples
    >>> splits(examples.messages(), [2_000, 5_000]).select("session_id", "budget", "kept_turns", "kept_tokens").rows()
    [('a', 2000, 0, 0), ('a', 5000, 3, 5000), ('b', 2000, 1, 400), ('b', 5000, 1, 400)]
    """
    budget = budget_series(budgets)
    annotated = annotate(checked(messages).lazy())
    # Frames built by hand may lack the request sizes: their request_bytes is null.
    sized = "serialized_bytes" in annotated.collect_schema()
    if sized:
        annotated = annotated.with_columns(ex.request_bytes_before(active="is_active"), ex.latest_summary_bytes())
    annotated = annotated.cache()
    carry = ("request_bytes_before",) if sized else ()
    tf = annotated_turns(annotated, carry).with_columns(suffix=pl.col("tokens").cum_sum(reverse=True).over(SESSION))
    per_session = _with_empty_sessions(_split_sessions(annotated, tf, sized), sessions, messages)
    ranges = _budget_ranges(tf, per_session, budget, carry)
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
    ).with_columns(request_bytes=_request_bytes() if sized else pl.lit(None, pl.UInt64))
    return same_kind(cast_to(out, SPLIT_SCHEMA), messages)


def _request_bytes() -> pl.Expr:
    """``buildRequestBody(serializeTranscript(messages[active_start:prefix_end]), latestSummaryText(messages))``
    in bytes, from the sizes :mod:`panto_analytics.transcript` defines; null for a no-op."""
    summarized = pl.when(pl.col("kept_turns") == 0).then(pl.col("_total_bytes")).otherwise(pl.col("request_bytes_before"))
    return pl.when(~pl.col("noop")).then(ex.request_bytes(summarized, "_summary_bytes"))


def _split_sessions(annotated: pl.LazyFrame, tf: pl.LazyFrame, sized: bool) -> pl.LazyFrame:
    """Per session: what :func:`_sessions` gives, plus ``active_tokens`` (all turns' cost) and,
    where the frame is ``sized``, the request sizes of its last row."""
    active = tf.filter(pl.col("turn") == 0).select(SESSION, active_tokens=pl.col("suffix"))
    per_session = (
        annotated_sessions(annotated)
        .join(active, on=SESSION, how="left", maintain_order="left")
        .with_columns(pl.col("active_tokens").fill_null(0))
    )
    if not sized:
        return per_session
    last_active = pl.when(pl.col("is_active")).then(pl.col("serialized_bytes")).otherwise(0)
    ends = annotated.filter(ex.session_end()).select(
        SESSION, _total_bytes=pl.col("request_bytes_before") + last_active, _summary_bytes=pl.col("latest_summary_bytes"))
    return per_session.join(ends, on=SESSION, how="left", maintain_order="left")


def _with_empty_sessions(per_session: pl.LazyFrame, sessions: pl.DataFrame | pl.LazyFrame | None,
                         messages: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    """Add the sessions of ``sessions`` that have no messages (computeSplit gives (0, 0)), numbered in order."""
    if sessions is not None:
        dtype = messages.lazy().collect_schema()[SESSION]
        per_session = (
            sessions.lazy().select(pl.col(SESSION).cast(pl.String))
            .join(per_session.with_columns(pl.col(SESSION).cast(pl.String)), on=SESSION, how="left", maintain_order="left")
            .with_columns(
                pl.col(SESSION).cast(dtype),
                pl.col("n_messages", "n_turns", "first_turn_seq", "active_tokens").fill_null(0),
                pl.col("capped").fill_null(False),
            )
        )
    return per_session.with_row_index("_order")


def _budget_ranges(tf: pl.LazyFrame, per_session: pl.LazyFrame, budget: pl.Series, carry: Sequence[str] = ()) -> pl.LazyFrame:
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
        .select(SESSION, "suffix", *carry, kept_turn="turn", kept_start="start_seq", lo=first_at_least)
        .with_columns(hi=pl.when(pl.col("kept_turn") == 0).then(pl.lit(len(budget), pl.UInt32))
                      .otherwise(pl.col("lo").shift(1)))
    )
    nothing_kept = candidates.group_by(SESSION).agg(hi=pl.col("lo").min())
    session_cols = per_session.collect_schema().names()
    zero_rows = (
        per_session.join(nothing_kept, on=SESSION, how="left")
        .with_columns(lo=pl.lit(0, pl.UInt32), hi=pl.col("hi").fill_null(len(budget)),
                      kept_turn=pl.lit(None, pl.UInt32), kept_start=pl.lit(None, pl.UInt32),
                      suffix=pl.lit(None, pl.UInt64), **{c: pl.lit(None, pl.UInt64) for c in carry})
    )
    turn_rows = candidates.join(per_session, on=SESSION, how="inner")
    cols = [*session_cols, "lo", "hi", "kept_turn", "kept_start", "suffix", *carry]
    return (
        pl.concat([zero_rows.select(cols), turn_rows.select(cols)], how="vertical_relaxed")
        .filter(pl.col("hi") > pl.col("lo"))
        .sort("_order", "lo")
    )
