"""grouped: the summary tables' figures all at once, or one column (and quantiles one group) at a time over a
Parquet scan of the rows, in any order: the same table to the last bit."""
from __future__ import annotations

import polars as pl
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from panto_analytics.outcomes.cost import dollars_total
from panto_analytics.outcomes.group_tables import grouped

ROW = st.tuples(st.sampled_from(["pi", "libpanto", "codex"]), st.sampled_from([8_000, 20_000, 50_000]),
                st.integers(0, 9), st.booleans(),
                st.one_of(st.none(), st.floats(0, 5, allow_nan=False, allow_infinity=False)))


def aggregations() -> dict[str, pl.Expr]:
    """What the tables take: counts, sums of integers, means, maxima, ratios of sums, dollars, quantiles (filtered
    or not, "nearest" and "linear")."""
    at = pl.col("n") > 0
    return {
        "rows": pl.len(),
        "n_sum": pl.col("n").sum(),
        "n_mean": pl.col("n").mean(),
        "n_max": pl.col("n").max(),
        "flag_share": pl.col("flag").mean(),
        "share_at": (at & pl.col("flag")).sum() / at.sum(),
        "usd": dollars_total("usd"),
        "usd_share": dollars_total("usd") / pl.col("n").sum(),
        "n_p10": pl.col("n").quantile(0.1, "nearest").cast(pl.UInt32),
        "usd_p50": pl.col("usd").filter(at).quantile(0.5, "linear"),
        "usd_p90": pl.col("usd").quantile(0.9, "nearest"),
    }


@settings(max_examples=examples(60))
@given(st.lists(ROW, min_size=1, max_size=40), st.randoms(use_true_random=False))
def test_column_at_a_time_over_parquet_equals_all_at_once(tmp_path_factory, rows, rnd):
    frame = pl.DataFrame(rows, schema={"policy": pl.String, "budget": pl.UInt64, "n": pl.UInt32, "flag": pl.Boolean,
                                       "usd": pl.Float64}, orient="row")
    keys = ["policy", "budget"]
    expected = grouped(frame, keys, aggregations())
    # The same rows in another order (as Ray's tasks finish), written to Parquet in pieces, read a column at a time.
    order = list(range(frame.height))
    rnd.shuffle(order)
    shuffled = frame[order]
    path = tmp_path_factory.mktemp("rows") / "rows.parquet"
    shuffled.write_parquet(path, row_group_size=7)
    got = grouped(pl.scan_parquet(path), keys, aggregations(), column_at_a_time=True)
    by_key = {k: i for i, k in enumerate(expected.select(keys).iter_rows())}
    got = got.with_columns(_i=pl.Series([by_key[k] for k in got.select(keys).iter_rows()])).sort("_i").drop("_i")
    assert_frame_equal(got, expected, check_exact=True)
    assert got.height == frame.select(keys).unique().height


def test_groups_come_in_the_order_they_first_appear(tmp_path):
    frame = pl.DataFrame({"k": ["b", "a", "b", "c"], "v": [1.0, 2.0, 3.0, 4.0]})
    frame.write_parquet(tmp_path / "f.parquet")
    aggs = {"p50": pl.col("v").quantile(0.5, "nearest"), "sum": pl.col("v").max()}
    for table in (grouped(frame, ["k"], aggs), grouped(pl.scan_parquet(tmp_path / "f.parquet"), ["k"], aggs,
                                                       column_at_a_time=True)):
        assert table.rows() == [("b", 3.0, 3.0), ("a", 2.0, 2.0), ("c", 4.0, 4.0)]
