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


def assert_same_figures(got: pl.DataFrame, want: pl.DataFrame, float_sums: tuple[str, ...] = ("cost_sum",)) -> None:
    """Every figure equal to the last bit, but the sums of floats: Polars adds a group's floats in an order of its
    own (pairwise over a slice, one by one over gathered rows), so those agree to a few units in the last place."""
    assert_frame_equal(got.drop(float_sums, strict=False), want.drop(float_sums, strict=False), check_exact=True)
    for c in (c for c in float_sums if c in want.columns):
        g, w = got[c].to_numpy(), want[c].to_numpy()
        assert (np.isnan(g) == np.isnan(w)).all() and np.allclose(g, w, rtol=1e-12, atol=0, equal_nan=True), c


@pytest.mark.parametrize("per_pass", [1, 45, 130, 10**9])
def test_every_pass_size_and_row_order_gives_the_same_tables(rows, monkeypatch, per_pass):
    expected = resampled_by_hand(rows, 23, 4)
    in_one_pass = replicate_tables(rows, ["policy", "budget"], AGGS, resamples=23, seed=4)
    assert_same_figures(in_one_pass, expected)
    monkeypatch.setattr(bootstrap, "ROWS_PER_PASS", per_pass)  # 1: a pass per replicate and key
    for frame in (rows, rows.reverse().lazy(), rows.sample(fraction=1.0, shuffle=True, seed=1)):
        got = replicate_tables(frame, ["policy", "budget"], AGGS, resamples=23, seed=4)
        assert_frame_equal(got, in_one_pass, check_exact=True)  # float sums too: each key's rows in one order


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 25), st.integers(0, 2), st.sampled_from([0, 20_000]),
                          st.one_of(st.none(), st.floats(0, 1e3, allow_nan=False)), st.integers(0, 9)),
                min_size=1, max_size=80),
       st.integers(0, 2**32), st.integers(1, 9), st.sampled_from([1, 7, 40, 10**9]), st.booleans())
def test_the_tables_are_the_resamples_exploded_and_grouped(drawn, seed, resamples, per_pass, hashed):
    """The literal bootstrap: each session's rows repeated by its copies in each resample (:func:`resample_frame`),
    grouped by (replicate, keys), in the order of the sessions' hashes and then the values; whatever the size of a
    pass, with the ids or their hashes, sessions with several rows at a key and keys with one row or none drawn."""
    rows = pl.DataFrame(drawn, schema={"session": pl.Int64, "policy": pl.Int64, "budget": pl.Int64, "cost": pl.Float64,
                                       "calls": pl.Int64}, orient="row").with_columns(
        session_id=pl.format("s{}", "session"), policy=pl.col("policy").replace_strict({0: "a", 1: "b", 2: "c"}))
    aggs = {"n": pl.len(), "calls": pl.col("calls").sum(), "calls_p50": pl.col("calls").median(),
            "cost_p90": pl.col("cost").quantile(0.9, "linear"), "cost_sum": pl.col("cost").sum(),
            "first_calls": pl.col("calls").first(), "costly": (pl.col("cost") > 500).sum()}
    draws = resample_frame(rows["session_id"], resamples, seed)
    joined = draws.join(rows, on="session_id")
    repeated = (joined.with_columns(session_hashes(joined["session_id"]))
                .with_columns(pl.int_ranges(0, "copies").alias("_c")).explode("_c"))
    want = {name: (repeated.sort("_replicate", HASH, *sorted(e.meta.root_names()), nulls_last=True)
                   .group_by("_replicate", "policy", "budget", maintain_order=True).agg(e.alias(name)))
            for name, e in aggs.items()}
    expected = pl.concat([w.select("_replicate", "policy", "budget") for w in want.values()]).unique()
    for w in want.values():
        expected = expected.join(w, on=["_replicate", "policy", "budget"], how="left")
    expected = expected.sort("_replicate", "policy", "budget").with_columns(pl.col("_replicate").cast(pl.UInt32))
    source = rows.drop("session").sample(fraction=1.0, shuffle=True, seed=seed % 7)
    if hashed:
        source = source.with_columns(session_hashes(source["session_id"])).drop("session_id")
    got = _with_rows_per_pass(per_pass, lambda: replicate_tables(source.lazy(), ["policy", "budget"], aggs,
                                                                 resamples=resamples, seed=seed))
    assert got.columns == ["_replicate", "policy", "budget", *aggs]
    assert_same_figures(got, expected.select(got.columns).cast(got.schema))  # type: ignore[arg-type]


def _with_rows_per_pass(per_pass: int, run):
    """``run()`` with :data:`bootstrap.ROWS_PER_PASS` set to ``per_pass`` (a hypothesis test has no monkeypatch per example)."""
    before = bootstrap.ROWS_PER_PASS
    bootstrap.ROWS_PER_PASS = per_pass
    try:
        return run()
    finally:
        bootstrap.ROWS_PER_PASS = before


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
