"""Per-budget summaries of a replay: what each budget does at the moments an agent compacts.

>>> import polars as pl
>>> sessions = pl.DataFrame({"session_id": ["a", "b"], "budget": [10, 10], "n_compactions": [2, 0],
...     "zero_kept_events": [1, 0], "summarized_tokens": [500, 0], "peak_context": [900, 100],
...     "overflow": [False, False], "ineffective": [True, False]})
>>> events = pl.DataFrame({"session_id": ["a", "a"], "budget": [10, 10], "kept_turns": [0, 3],
...     "kept_tokens": [0, 9], "request_bytes": [4000, 2000]})
>>> summarize_replay(events, sessions).select("budget", "compacted_share", "events", "zero_kept_event_share").rows()
[(10, 0.5, 2, 0.5)]
"""
from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from ...frame.expressions import median, observed_quantile
from ...frame.schema import BUDGET, SESSION
from ...outcomes.cost import dollars_total
from ...outcomes.group_tables import grouped
from ...outcomes.orphan_loss import LOSS_COLUMNS
from .policies import parse_policy

__all__ = ["TABLE_COLUMNS", "budgets_shown", "compare_policies", "cost_columns", "events_as_splits", "summarize_replay"]

#: The columns of a replay's events and of its session rows that the per-budget tables read
#: (:func:`summarize_replay`, :func:`compare_policies`, and the loss columns'
#: :func:`~panto_analytics.outcomes.orphan_loss.with_loss_columns`): a dataset's replay keeps only these of
#: each task's rows (``replay_dataset(..., keep=TABLE_COLUMNS)``) and gives the same table.
TABLE_COLUMNS: tuple[tuple[str, ...], tuple[str, ...]] = (
    ("policy", BUDGET, "kept_turns", "kept_tokens", "summarized_tokens", "kept_messages", "split_turn", "request_bytes",
     *(c for c in LOSS_COLUMNS if c != "orphan_rate")),  # the loss's sums; the rate is pooled from them
    ("policy", BUDGET, "n_compactions", "overflow", "ineffective", "recorded_cost_usd", "summarizer_cost_usd",
     "total_cost_usd"),
)

#: The cost columns of a billed replay's table (:func:`cost_columns`), in their order.
COST_TABLE_COLUMNS = ("cost_p50_usd", "cost_p90_usd", "cost_usd", "recorded_cost_usd", "summarizer_cost_usd",
                      "summarizer_share")


def _sum_or_null(column: str) -> pl.Expr:
    """The total of a column of dollars (:func:`~panto_analytics.outcomes.cost.dollars_total`: whole picodollars
    added up, so the same in any order), null when any value is (an unpriced call is never billed 0)."""
    return pl.when(pl.col(column).is_null().any()).then(pl.lit(None, pl.Float64)).otherwise(dollars_total(column))


def cost_columns() -> list[pl.Expr]:
    """Aggregations over a billed replay's session rows: ``cost_p50_usd`` / ``cost_p90_usd``, a session's replayed
    cost (its calls and its summarizer calls, ``total_cost_usd``) at the median
    (:func:`~panto_analytics.frame.expressions.median`: of an even count the mean of the middle two) and p90 (an
    observed value), over the priced sessions; ``cost_usd``, ``recorded_cost_usd`` and ``summarizer_cost_usd``,
    the totals (null when any call is unpriced; whole picodollars added up); ``summarizer_share`` of the replayed
    total.

    >>> s = pl.DataFrame({"total_cost_usd": [1.0, 2.0, 9.0], "recorded_cost_usd": [2.0, 4.0, 6.0],
    ...                   "summarizer_cost_usd": [0.5, 0.5, 0.5]})
    >>> s.select(cost_columns()).rows()
    [(2.0, 9.0, 12.0, 12.0, 1.5, 0.125)]
    >>> s.head(2).select(cost_columns()[0]).item()  # two sessions: the mean of the two
    1.5
    """
    return [
        median("total_cost_usd").alias("cost_p50_usd"),
        pl.col("total_cost_usd").quantile(0.9, "nearest").alias("cost_p90_usd"),
        _sum_or_null("total_cost_usd").alias("cost_usd"),
        _sum_or_null("recorded_cost_usd").alias("recorded_cost_usd"),
        _sum_or_null("summarizer_cost_usd").alias("summarizer_cost_usd"),
        (_sum_or_null("summarizer_cost_usd") / _sum_or_null("total_cost_usd")).alias("summarizer_share"),
    ]


def _named(exprs: Sequence[pl.Expr]) -> dict[str, pl.Expr]:
    return {e.meta.output_name(): e for e in exprs}


def summarize_replay(events: pl.DataFrame | pl.LazyFrame, sessions: pl.DataFrame | pl.LazyFrame, *,
                     by: Sequence[str] = (BUDGET,), column_at_a_time: bool = False) -> pl.DataFrame:
    """One row per budget from :func:`~panto_analytics.policy.compaction.engine.replay_libpanto`'s two frames.

    ``by``: the grouping (``("policy", "budget")`` for a policy replay; the
    rows then come in the order the policies appear).

    Per budget: ``sessions``; ``compacted_share`` (sessions with at least one
    compaction); ``compactions_mean`` and ``compactions_max`` per session;
    ``events``; ``zero_kept_event_share`` (events that keep no turn
    verbatim); ``kept_turns_p10`` / ``kept_turns_p50`` and
    ``kept_tokens_p50`` at events; ``request_bytes_p50`` and
    ``request_bytes_per_session`` (summarizer input, mean over sessions);
    ``overflow_share`` and ``ineffective_share`` of sessions. A ``_p50`` is
    the median (:func:`~panto_analytics.frame.expressions.median`: of an even
    count the mean of the middle two); ``kept_turns_p10`` picks an observed
    value ("nearest"), so it stays whole. A billed replay
    (``replay(..., prices=...)``) adds :func:`cost_columns`: the cost per
    session (median, p90), the totals and the summarizer's share.

    Every figure is order-free (:mod:`~panto_analytics.outcomes.group_tables`): the rows of disjoint sets of
    sessions, in any order, give the same table.

    Parameters
    ----------
    events, sessions
        :attr:`~panto_analytics.policy.compaction.engine.Replay.events` and ``.sessions`` (or lazy frames of
        their rows: a dataset's, read back from Parquet).
    column_at_a_time
        Read one column of the frames at a time (:func:`~panto_analytics.outcomes.group_tables.grouped`): the
        same table, holding a column of the rows rather than the rows.

    Returns
    -------
    pl.DataFrame
        One row per budget, ascending.

    Examples
    --------
    >>> import panto_analytics as pa
    >>> from panto_analytics import examples
    >>> r = pa.replay(examples.messages(), [1_000, 3_000], window=20_000, summary_tokens=500)
    >>> summarize_replay(r.events, r.sessions).select("budget", "events", "kept_tokens_p50").rows()
    [(1000, 1, 0.0), (3000, 1, 3000.0)]
    """
    keys = list(by)
    billed = "total_cost_usd" in sessions.lazy().collect_schema().names()
    costs = COST_TABLE_COLUMNS if billed else ()
    per_session = grouped(sessions, keys, {
        "sessions": pl.len(),
        "compacted_share": (pl.col("n_compactions") > 0).mean(),
        "compactions_mean": pl.col("n_compactions").mean(),
        "compactions_max": pl.col("n_compactions").max(),
        "overflow_share": pl.col("overflow").mean(),
        "ineffective_share": pl.col("ineffective").mean(),
        **(_named(cost_columns()) if billed else {}),
    }, column_at_a_time=column_at_a_time)
    per_event = grouped(events, keys, {
        "events": pl.len(),
        "zero_kept_event_share": (pl.col("kept_turns") == 0).mean(),
        "kept_turns_p10": observed_quantile("kept_turns", 0.1, pl.UInt32()),
        "kept_turns_p50": median("kept_turns"),
        "kept_tokens_p50": median("kept_tokens"),
        "request_bytes_p50": median("request_bytes"),
        "request_bytes_total": pl.col("request_bytes").sum(),
    }, column_at_a_time=column_at_a_time)
    table = (
        per_session.join(per_event, on=keys, how="left", maintain_order="left")
        .with_columns(
            pl.col("events").fill_null(0),
            request_bytes_per_session=pl.col("request_bytes_total").fill_null(0) / pl.col("sessions"),
        )
        .drop("request_bytes_total")
        .select(*keys, "sessions", "compacted_share", "compactions_mean", "compactions_max", "events",
                "zero_kept_event_share", "kept_turns_p10", "kept_turns_p50", "kept_tokens_p50", "request_bytes_p50",
                "request_bytes_per_session", "overflow_share", "ineffective_share", *costs)
    )
    # Budgets ascending (within each group of the other keys, kept in the order they first appear).
    if len(keys) == 1:
        return table.sort(keys)
    return table.with_row_index("_i").sort([pl.col("_i").min().over(keys[:-1]), pl.col(keys[-1])],
                                           maintain_order=True).drop("_i")


def compare_policies(events: pl.DataFrame | pl.LazyFrame, sessions: pl.DataFrame | pl.LazyFrame, *,
                     column_at_a_time: bool = False) -> pl.DataFrame:
    """One row per (policy, budget) of a policy replay (:func:`~panto_analytics.policy.compaction.any_policy.replay_policies`).

    :func:`summarize_replay`'s columns by ``("policy", "budget")``, then, at
    events: ``kept_tokens_p10`` / ``kept_tokens_p90`` (observed values), ``kept_messages_p50``,
    ``summarized_tokens_p50`` (medians: what each compaction takes out of the context)
    and ``split_turn_share`` (pi's cuts inside a turn). ``column_at_a_time``: as in :func:`summarize_replay`.

    >>> e = pl.DataFrame({"policy": ["pi", "pi"], "session_id": ["a", "a"], "budget": [20, 20],
    ...     "kept_turns": [0, 3], "kept_tokens": [5, 9], "kept_messages": [2, 7], "summarized_tokens": [50, 70],
    ...     "split_turn": [True, False], "request_bytes": [4000, 2000]})
    >>> s = pl.DataFrame({"policy": ["pi"], "session_id": ["a"], "budget": [20], "n_compactions": [2],
    ...     "zero_kept_events": [1], "summarized_tokens": [120], "peak_context": [900], "overflow": [False],
    ...     "ineffective": [False]})
    >>> compare_policies(e, s).select("policy", "events", "kept_tokens_p90", "split_turn_share").rows()
    [('pi', 2, 9, 0.5)]
    """
    keys = ["policy", BUDGET]
    extra = grouped(events, keys, {
        "kept_tokens_p10": observed_quantile("kept_tokens", 0.1, pl.UInt64()),
        "kept_tokens_p90": observed_quantile("kept_tokens", 0.9, pl.UInt64()),
        "kept_messages_p50": median("kept_messages"),
        "summarized_tokens_p50": median("summarized_tokens"),
        "split_turn_share": pl.col("split_turn").mean(),
    }, column_at_a_time=column_at_a_time)
    table = summarize_replay(events, sessions, by=keys, column_at_a_time=column_at_a_time).join(
        extra, on=keys, how="left", maintain_order="left")
    billed = "total_cost_usd" in sessions.lazy().collect_schema().names()
    return table.select(
        *keys, "sessions", "compacted_share", "compactions_mean", "compactions_max", "events", "zero_kept_event_share",
        "kept_turns_p50", "kept_messages_p50", "kept_tokens_p10", "kept_tokens_p50", "kept_tokens_p90",
        "summarized_tokens_p50", "split_turn_share", "request_bytes_p50", "request_bytes_per_session",
        "overflow_share", "ineffective_share", *(COST_TABLE_COLUMNS if billed else ()))


#: ``n_turns`` of an event in :func:`events_as_splits`: more than it can keep (an event is never a no-op).
_MANY_TURNS = 2**31


def events_as_splits(events: pl.DataFrame) -> pl.DataFrame:
    """Replay events in the shape of a splits frame, so that the sweep, the plots and the rules apply to them.

    One row per compaction event (``session_id`` stays the session's): its
    ``budget``, ``prefix_end``, ``kept_turns``, ``kept_tokens``,
    ``summarized_tokens``, ``active_tokens`` (kept plus summarized),
    ``request_bytes``; ``noop`` and ``capped`` are false, and ``n_turns`` is
    a large constant, since an event never keeps all of its turns: a rule on
    kept turns then reads "keeps at least k whole turns".

    >>> e = pl.DataFrame({"session_id": ["a"], "budget": [10], "prefix_end": [4], "kept_turns": [1],
    ...     "kept_tokens": [8], "summarized_tokens": [30], "request_bytes": [900]})
    >>> events_as_splits(e).select("kept_turns", "active_tokens", "noop").rows()
    [(1, 38, False)]
    """
    return events.select(
        SESSION, BUDGET, "prefix_end", "kept_turns", "kept_tokens", "summarized_tokens",
        active_tokens=pl.col("kept_tokens") + pl.col("summarized_tokens"),
        n_turns=pl.lit(_MANY_TURNS, pl.UInt32), noop=pl.lit(False), capped=pl.lit(False),
        request_bytes="request_bytes",
    )


def budgets_shown(table: pl.DataFrame) -> pl.DataFrame:
    """``table`` (one row per policy and budget) as it is shown: the budget of a policy that has no token budget
    (a share of the window, a count, nothing kept) is empty, never 0; it is named by its spec. The replay's own
    frames keep 0 there (their rows join on it).

    >>> budgets_shown(pl.DataFrame({"policy": ["pi", "gemini-cli"], "budget": [20_000, 0]}))["budget"].to_list()
    [20000, None]
    """
    if "policy" not in table.columns or BUDGET not in table.columns:
        return table
    specs = table["policy"].cast(pl.String).unique().to_list()
    budgeted = {s: s is None or parse_policy(s).budget_name() is not None for s in specs}
    return table.with_columns(pl.when(pl.col("policy").cast(pl.String).replace_strict(
        budgeted, return_dtype=pl.Boolean, default=True)).then(pl.col(BUDGET)).alias(BUDGET))
