"""One definition of a median a user reads (issue 32, item 6): of two values, their mean, never the larger one.

Every table's median or ``_p50`` goes through :func:`panto_analytics.frame.expressions.median`; the exceptions
(the sweep's observed percentiles, the summary size a replay assumes, the bootstrap's budget interval) pick an
observed value on purpose and say so.
"""
import struct

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from panto_analytics.analysis.choose.from_replay import table_from_sessions
from panto_analytics.frame.expressions import counted_quantile, median
from panto_analytics.policy import sweep
from panto_analytics.policy.compaction.engine import summary_size
from panto_analytics.policy.compaction.summary import compare_policies, summarize_replay


def test_the_median_of_two_values_is_their_mean():
    assert pl.DataFrame({"v": [3, 10]}).select(median("v")).item() == 6.5
    assert pl.DataFrame({"v": [3, 10, 11]}).select(median("v")).item() == 10.0
    assert pl.DataFrame({"v": [1, 3, 10]}).select(median(pl.col("v").filter(pl.col("v") > 1))).item() == 6.5


def _replay_rows() -> tuple[pl.DataFrame, pl.DataFrame]:
    """One policy, one budget, two sessions, two compaction events of unequal figures."""
    events = pl.DataFrame({
        "policy": ["pi", "pi"], "session_id": ["a", "b"], "budget": [20_000, 20_000],
        "kept_turns": [1, 4], "kept_tokens": [1_000, 18_000], "kept_messages": [2, 9],
        "summarized_tokens": [50_000, 90_000], "split_turn": [False, False], "request_bytes": [4_000, 9_000]})
    sessions = pl.DataFrame({
        "policy": ["pi", "pi"], "session_id": ["a", "b"], "budget": [20_000, 20_000], "n_compactions": [1, 1],
        "overflow": [False, False], "ineffective": [False, False],
        "total_cost_usd": [1.0, 4.0], "recorded_cost_usd": [2.0, 5.0], "summarizer_cost_usd": [0.1, 0.2]})
    return events, sessions


@pytest.mark.parametrize("column_at_a_time", [False, True])
def test_the_replay_tables_medians_of_two_events_are_their_means(column_at_a_time):
    events, sessions = _replay_rows()
    row = summarize_replay(events, sessions, by=("policy", "budget"), column_at_a_time=column_at_a_time).row(0, named=True)
    assert (row["kept_turns_p50"], row["kept_tokens_p50"], row["request_bytes_p50"]) == (2.5, 9_500.0, 6_500.0)
    assert row["cost_p50_usd"] == 2.5
    row = compare_policies(events, sessions, column_at_a_time=column_at_a_time).row(0, named=True)
    assert (row["kept_messages_p50"], row["summarized_tokens_p50"]) == (5.5, 70_000.0)
    assert (row["kept_tokens_p10"], row["kept_tokens_p90"]) == (1_000, 18_000)  # observed percentiles stay whole


def test_the_decision_tables_medians_of_two_sessions_are_their_means():
    ses = pl.DataFrame({
        "policy": ["libpanto"] * 2, "session_id": ["a", "b"], "budget": [8_000] * 2, "_reach": [True, True],
        "n_compactions": [1, 1], "zero_kept_events": [0, 0], "min_kept_turns": [2, 3],
        "summarized_tokens": [10_000, 30_000], "refetch_tokens": [100, 400], "total_cost_usd": [1.0, 2.0]})
    row = table_from_sessions(ses, window=32_000, reserve=16_384).row(0, named=True)
    assert (row["summarized_p50"], row["refetch_tokens_p50"], row["cost_p50"]) == (20_000.0, 250.0, 1.5)


def test_the_exceptions_pick_an_observed_value_and_say_which():
    splits = pl.DataFrame({"session_id": ["a", "b"], "budget": [10, 10], "kept_tokens": [2, 9], "kept_turns": [1, 4],
                           "n_turns": [1, 4], "noop": [False] * 2, "capped": [False] * 2,
                           "summarized_tokens": [0, 0], "active_tokens": [2, 9]})
    assert sweep(splits).row(0, named=True)["kept_tokens_p50"] == 9  # lanes merged from value counts stay equal
    tokens, source = summary_size(pl.DataFrame({"words": [300, 500], "has_summary": [True, True]}))
    assert tokens == 650 and source == "the median of 2 recorded summaries (the larger middle one: a size a summary had)"
    assert summary_size(pl.DataFrame({"words": [300, 400, 500], "has_summary": [True] * 3}))[1] == \
        "the median of 3 recorded summaries"


_COUNTS = st.integers(0, 4)
_FLOAT_COUNTS = st.lists(st.tuples(st.floats(allow_nan=False, allow_infinity=False), _COUNTS), min_size=1, max_size=12)
_INT_COUNTS = st.lists(st.tuples(st.integers(-(2**62), 2**62), _COUNTS), min_size=1, max_size=12)


def _bits(x: float | None) -> bytes | None:
    return None if x is None else struct.pack("<d", float(x))


@settings(max_examples=300)
@given(st.one_of(_FLOAT_COUNTS, _INT_COUNTS), st.sampled_from([0.5, 0.1, 0.25, 0.75, 0.9, 0.0, 1.0, 0.37]))
def test_a_quantile_from_value_counts_is_polars_quantile_of_the_values_bit_for_bit(pairs, q):
    """The lanes that merge value counts (the report's overview and plots, the loss's medians, the sweep) take
    their quantiles from them with counted_quantile; the in-memory lane takes Polars' of the values (Float64;
    an observed one from counts keeps the values' dtype, the same number)."""
    dtype = pl.Float64 if isinstance(pairs[0][0], float) else pl.Int64
    counts = pl.DataFrame({"value": [v for v, _ in pairs], "count": [c for _, c in pairs]},
                          schema={"value": dtype, "count": pl.UInt64}).sort("value")
    expanded = counts.select(pl.col("value").repeat_by("count").explode().drop_nulls())
    for how in ("linear", "nearest", "lower"):
        got = counts.select(counted_quantile(q, interpolation=how)).item()
        assert _bits(got) == _bits(expanded.select(pl.col("value").quantile(q, how)).item()), how
    median_of_counts = counts.select(counted_quantile(0.5)).item()
    assert _bits(median_of_counts) == _bits(expanded.select(median("value")).item())


def test_a_median_from_value_counts_is_polars_not_the_midpoint():
    """Of two middle values Polars takes ``lo + 0.5 * (hi - lo)``, which differs in the last bit from
    ``(lo + hi) / 2`` here: the median from counts follows Polars."""
    lo, hi = -2.920992050670755, 2.02481449257876  # Polars: -0.4480887790459973; (lo + hi) / 2: ...99753
    counts = pl.DataFrame({"value": [lo, hi], "count": [1, 1]})
    assert counts.select(counted_quantile(0.5)).item() == pl.Series([lo, hi]).median() != (lo + hi) / 2
