"""The bootstrap in passes (analysis/choose/bootstrap.py): the same resamples and the same tables whatever the size of
a pass and whatever the order of the rows, so a dataset's spilled rows (any order, read back lazily) give the
intervals of the same corpus in memory."""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from panto_analytics.analysis.choose import bootstrap
from panto_analytics.analysis.choose.bootstrap import replicate_tables, resample_frame


@pytest.fixture(scope="module")
def rows() -> pl.DataFrame:
    """Three keys (policy, budget) of 40 sessions, two of them without a row at one key."""
    rng = np.random.default_rng(7)
    keys = [("libpanto", 0), ("libpanto", 20), ("pi", 0)]
    frames = [pl.DataFrame({"session_id": [f"s{i:02d}" for i in range(40) if (k, i) not in {(2, 3), (2, 9)}]})
              .with_columns(policy=pl.lit(p), budget=pl.lit(b, pl.Int64)) for k, (p, b) in enumerate(keys)]
    df = pl.concat(frames)
    return df.with_columns(cost=pl.Series(rng.gamma(2.0, 0.3, df.height)),
                           calls=pl.Series(rng.integers(0, 9, df.height), dtype=pl.UInt32))


AGGS = {"cost_p50": pl.col("cost").quantile(0.5, "linear"), "cost_sum": pl.col("cost").sum(),
        "calls": pl.col("calls").sum(), "n": pl.len()}


def resampled_by_hand(rows: pl.DataFrame, resamples: int, seed: int) -> pl.DataFrame:
    """Every resample at once, as the bootstrap was first written: each drawn session's rows repeated."""
    draws = resample_frame(rows["session_id"], resamples, seed)
    repeated = draws.join(rows, on="session_id").with_columns(pl.int_ranges(0, "copies").alias("_c")).explode("_c")
    return (repeated.sort("_replicate", "session_id").group_by("_replicate", "policy", "budget", maintain_order=True)
            .agg(**AGGS).sort("_replicate", "policy", "budget"))


@pytest.mark.parametrize("per_pass", [1, 45, 130, 10**9])
def test_every_pass_size_and_row_order_gives_the_same_tables(rows, monkeypatch, per_pass):
    expected = resampled_by_hand(rows, 23, 4)
    monkeypatch.setattr(bootstrap, "ROWS_PER_PASS", per_pass)  # 1: a pass per replicate and key
    for given in (rows, rows.reverse().lazy(), rows.sample(fraction=1.0, shuffle=True, seed=1)):
        got = replicate_tables(given, ["policy", "budget"], AGGS, resamples=23, seed=4)
        assert_frame_equal(got, expected, check_exact=True)


def test_the_replicates_are_drawn_from_one_stream():
    """A group of replicates drawn after another continues the generator's stream: the same draws as at once."""
    ids = pl.Series([f"s{i}" for i in range(11)])
    whole = resample_frame(ids, 9, 2)
    rng = np.random.default_rng(2)
    parts = pl.concat([bootstrap._draws(rng, 11, k, first) for first, k in ((0, 4), (4, 1), (5, 4))])
    assert_frame_equal(parts.select("_replicate", "copies"), whole.select("_replicate", "copies"))
    assert (ids.sort().gather(parts["_i"]) == whole["session_id"]).all()
