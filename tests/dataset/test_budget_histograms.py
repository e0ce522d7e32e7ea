"""histograms: merged per-bucket counts give the in-memory sweep and coverage table bit for bit."""
from __future__ import annotations

import polars as pl
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from panto_analytics.analysis.choose.from_splits import coverage_table
from panto_analytics.analysis.choose.rule import Rule
from panto_analytics.dataset._budget_histograms import coverage_from, histograms, merge, sweep_from
from panto_analytics.frame.schema import SPLIT_SCHEMA
from panto_analytics.policy import sweep


@st.composite
def split_frames(draw) -> tuple[pl.DataFrame, list[int]]:
    """A splits frame (small values, so ties and repeated values are common) and a bucket per session."""
    budgets = sorted(draw(st.sets(st.integers(0, 40), min_size=1, max_size=5)))
    n = draw(st.integers(1, 40))
    rows = []
    for i in range(n):
        n_turns = draw(st.integers(0, 6))
        capped = draw(st.booleans())
        active = draw(st.integers(0, 60))
        kept_turns = 0
        for b in budgets:  # kept grows with the budget, as a real split does
            kept_turns = draw(st.integers(kept_turns, n_turns)) if n_turns else 0
            kept = min(draw(st.integers(0, b)), active) if kept_turns else 0
            rows.append({"session_id": f"s{i}", "budget": b, "prefix_end": 0, "kept_turns": kept_turns,
                         "kept_tokens": kept, "summarized_tokens": active - kept, "active_tokens": active,
                         "n_turns": n_turns, "n_messages": n_turns, "noop": kept_turns == n_turns, "capped": capped,
                         "request_bytes": None})
    buckets = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    return pl.DataFrame(rows, schema=SPLIT_SCHEMA), buckets


def _merged(splits: pl.DataFrame, buckets: list[int]) -> pl.DataFrame:
    bucket_of = pl.DataFrame({"session_id": [f"s{i}" for i in range(len(buckets))], "_b": buckets})
    tagged = splits.with_columns(pl.col("session_id").cast(pl.String)).join(bucket_of, on="session_id")
    return merge(histograms(part.drop("_b")) for part in tagged.partition_by("_b"))


@settings(max_examples=examples(100), deadline=None)
@given(split_frames())
def test_sweep_from_merged_buckets_equals_in_memory(frame):
    splits, buckets = frame
    assert_frame_equal(sweep_from(_merged(splits, buckets)), sweep(splits), check_exact=True)


@settings(max_examples=examples(100), deadline=None)
@given(split_frames(), st.one_of(st.none(), st.integers(1, 5)), st.one_of(st.none(), st.floats(0.01, 1.0)),
       st.sampled_from([0.1, 0.5, 0.9, 1.0]))
def test_coverage_from_merged_buckets_equals_in_memory(frame, k, share, coverage):
    splits, buckets = frame
    rule = Rule(min_kept_turns=k, max_kept_share=share, context_window=100 if share else None,
                        coverage=coverage).or_default()
    assert_frame_equal(coverage_from(_merged(splits, buckets), rule), coverage_table(splits, rule),
                       check_exact=True)


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=300))
def test_percentiles_from_counts_equal_polars_nearest(values):
    """The rank rule on its own: many ties, lengths up to 300 (so q * (n - 1) often ends in .5)."""
    splits = pl.DataFrame({"budget": [7] * len(values), "kept_tokens": values, "kept_turns": values,
                           "summarized_tokens": 0, "active_tokens": 0, "n_turns": 1, "noop": False, "capped": False})
    row = sweep_from(histograms(splits)).row(0, named=True)
    series = pl.Series(values)
    assert [row["kept_tokens_p10"], row["kept_tokens_p50"], row["kept_tokens_p90"], row["kept_turns_p50"]] == [
        series.quantile(0.1, "nearest"), series.quantile(0.5, "nearest"), series.quantile(0.9, "nearest"),
        series.quantile(0.5, "nearest")]


def test_merge_of_nothing_is_empty():
    assert merge([]).is_empty()
