"""sweep: one row per budget, every column derived by hand from a small splits frame."""
import polars as pl
import pytest

from panto_analytics.policy.budget_sweep import sweep


@pytest.fixture
def splits():
    # Budget 100: four sessions. "d" has no turns at all.
    return pl.DataFrame({
        "session_id": ["a", "b", "c", "d", "a", "b", "c", "d"],
        "budget": [100] * 4 + [1000] * 4,
        "kept_turns": [0, 1, 3, 0, 2, 4, 3, 0],
        "kept_tokens": [0, 90, 60, 0, 500, 900, 60, 0],
        "summarized_tokens": [700, 810, 0, 0, 200, 0, 0, 0],
        "active_tokens": [700, 900, 60, 0, 700, 900, 60, 0],
        "n_turns": [4, 4, 3, 0, 4, 4, 3, 0],
        "noop": [False, False, True, True, False, True, True, True],
        "capped": [False, True, False, False, False, True, False, False],
    })


def test_one_row_per_budget_in_order(splits):
    table = sweep(splits.reverse())
    assert table["budget"].to_list() == [100, 1000]
    assert table["sessions"].to_list() == [4, 4]


def test_shares(splits):
    row = sweep(splits).row(0, named=True)
    assert row["noop_share"] == 2 / 4
    assert row["zero_kept_share"] == 1 / 3  # "a" keeps nothing; "d" has no turns and is not counted
    assert row["capped_share"] == 1 / 4
    assert row["summarized_share"] == pytest.approx((700 + 810) / (700 + 900 + 60))


def test_percentiles_are_observed_whole_values(splits):
    row = sweep(splits).row(1, named=True)
    # kept tokens at budget 1000: 0, 60, 500, 900 (nearest rank)
    assert (row["kept_tokens_p10"], row["kept_tokens_p50"], row["kept_tokens_p90"]) == (0, 500, 900)
    assert row["kept_turns_p50"] == 3
    assert sweep(splits).schema["kept_tokens_p50"] == pl.UInt64


def test_lazy_in_lazy_out(splits):
    lazy = sweep(splits.lazy())
    assert isinstance(lazy, pl.LazyFrame)
    assert lazy.collect().equals(sweep(splits))
