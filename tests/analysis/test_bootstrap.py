"""The bootstrap in passes (analysis/choose/bootstrap.py): the same resamples and the same tables whatever the size of
a pass and whatever the order of the rows, so a dataset's spilled rows (any order, read back lazily) give the
intervals of the same corpus in memory; a session's copies are its own (Poisson, keyed on its id), so the
resamples of a corpus are the union of its buckets' and their sums merge."""
from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from panto_analytics.analysis.choose import bootstrap
from panto_analytics.analysis.choose.bootstrap import HASH, copies, replicate_tables, resample_frame, session_hashes


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
    """Every resample at once, as the bootstrap was first written: each drawn session's rows repeated, in the order
    of the sessions' hashes (the order a replicate's float sums are taken in)."""
    draws = resample_frame(rows["session_id"], resamples, seed)
    joined = draws.join(rows, on="session_id")
    repeated = (joined.with_columns(session_hashes(joined["session_id"]))
                .with_columns(pl.int_ranges(0, "copies").alias("_c")).explode("_c"))
    return (repeated.sort("_replicate", HASH).group_by("_replicate", "policy", "budget", maintain_order=True)
            .agg(**AGGS).sort("_replicate", "policy", "budget"))


@pytest.mark.parametrize("per_pass", [1, 45, 130, 10**9])
def test_every_pass_size_and_row_order_gives_the_same_tables(rows, monkeypatch, per_pass):
    expected = resampled_by_hand(rows, 23, 4)
    monkeypatch.setattr(bootstrap, "ROWS_PER_PASS", per_pass)  # 1: a pass per replicate and key
    for frame in (rows, rows.reverse().lazy(), rows.sample(fraction=1.0, shuffle=True, seed=1)):
        got = replicate_tables(frame, ["policy", "budget"], AGGS, resamples=23, seed=4)
        assert_frame_equal(got, expected, check_exact=True)


def test_a_sessions_copies_are_its_own():
    """The copies of a session depend on its id, the seed and the replicate alone: not on the other sessions, their
    order, nor the group of replicates drawn with it."""
    ids = pl.Series([f"s{i}" for i in range(11)])
    whole = resample_frame(ids, 9, 2)
    part = resample_frame(ids.head(4), 9, 2)
    assert_frame_equal(part, whole.filter(pl.col("session_id").is_in(ids.head(4).implode())))
    h = session_hashes(ids).to_numpy()
    at_once = copies(h, 2, np.arange(9))
    assert (np.vstack([copies(h, 2, np.arange(a, b)) for a, b in ((0, 4), (4, 5), (5, 9))]) == at_once).all()
    assert not (copies(h, 3, np.arange(9)) == at_once).all()  # another seed, other resamples


def test_the_copies_are_poisson_one():
    """Over 200,000 (session, replicate) pairs the copies' shares are Poisson(1)'s, to sampling error (a fixed set of
    ids: the same draws on every run)."""
    h = session_hashes(pl.Series([f"session-{i}" for i in range(20_000)])).to_numpy()
    drawn = copies(h, 0, np.arange(10)).ravel()
    shares = np.bincount(drawn, minlength=5)[:5] / drawn.size
    want = np.array([math.exp(-1) / math.factorial(k) for k in range(5)])
    assert np.abs(shares - want).max() < 0.005 and abs(drawn.mean() - 1) < 0.01


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 2), st.integers(0, 9), st.integers(0, 3)), min_size=1,
                max_size=60, unique_by=lambda t: (t[0], t[1])),
       st.integers(0, 2**32), st.integers(1, 4))
def test_a_corpus_bootstrap_is_its_buckets_merged(drawn, seed, buckets):
    """The counts and sums of every resample of a corpus are those of its buckets' resamples added up (each
    bucket's sessions resampled alone): what a bootstrap merged from per-bucket partial results gives."""
    rows = pl.DataFrame(drawn, schema={"session": pl.Int64, "budget": pl.Int64, "calls": pl.Int64,
                                       "bucket": pl.Int64}, orient="row")
    rows = rows.with_columns(session_id=pl.format("s{}", "session"),
                             bucket=pl.col("bucket").max().over("session") % buckets)  # a session in one bucket
    aggs = {"n": pl.len(), "calls": pl.col("calls").sum()}
    whole = replicate_tables(rows, ["budget"], aggs, resamples=7, seed=seed)
    parts = [replicate_tables(rows.filter(pl.col("bucket") == b), ["budget"], aggs, resamples=7, seed=seed)
             for b in range(buckets)]
    merged = (pl.concat([p for p in parts if p.height], how="vertical_relaxed")
              .group_by("_replicate", "budget").agg(pl.col("n").sum(), pl.col("calls").sum())
              .sort("_replicate", "budget"))
    assert_frame_equal(whole.cast(merged.schema), merged, check_dtypes=False)


def test_rows_with_the_hash_need_no_session_ids(rows):
    """Rows carrying the session hash (a dataset's spilled rows) are resampled as the rows with the ids."""
    hashed = rows.with_columns(session_hashes(rows["session_id"])).drop("session_id")
    assert_frame_equal(replicate_tables(hashed, ["policy", "budget"], AGGS, resamples=11, seed=5),
                       replicate_tables(rows, ["policy", "budget"], AGGS, resamples=11, seed=5), check_exact=True)
