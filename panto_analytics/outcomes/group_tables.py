"""Per-group figures of a frame, all at once or one column at a time: :func:`grouped`.

The summary tables (a replay's per-budget table, the loss's sums, the
decision's per-(policy, budget) table) are aggregations of rows per group.
In memory they run as one ``group_by(...).agg(...)``. Over rows too many to
hold (a dataset's replay, written to Parquet task by task), the same
aggregations run one source column at a time: each query reads the keys and
the columns one aggregation names, so memory holds a column, not the rows.
Both give the same figures to the last bit when every aggregation is
*order-free*: a count, a sum of integers (dollars as whole picodollars:
:func:`~panto_analytics.outcomes.cost.dollars_total`), a mean of integers or
booleans (a sum of integers below 2**53 is exact in float64, in any order),
a minimum or maximum, or a quantile (the sorted values pick it). A float sum
is not (its rounding depends on the order of its terms): the tables do not
take one.

>>> import polars as pl
>>> f = pl.DataFrame({"k": ["b", "a", "b"], "x": [1, 2, 3], "y": [True, False, True]})
>>> aggs = {"n": pl.len(), "x_max": pl.col("x").max(), "y_share": pl.col("y").mean()}
>>> grouped(f, ["k"], aggs).rows()
[('b', 2, 3, 1.0), ('a', 1, 2, 0.0)]
>>> grouped(f.lazy(), ["k"], aggs, column_at_a_time=True).equals(grouped(f, ["k"], aggs))
True
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

__all__ = ["grouped"]


def grouped(frame: pl.DataFrame | pl.LazyFrame, keys: Sequence[str], aggs: Mapping[str, pl.Expr], *,
            column_at_a_time: bool = False) -> pl.DataFrame:
    """One row per group of ``keys``, in the order the groups first appear, with each of ``aggs`` (name:
    expression) as a column, after the keys.

    ``column_at_a_time``: one query per set of columns the aggregations read (those reading the same
    columns together), each reading only the keys and those columns of ``frame`` (a scan of Parquet reads
    nothing else), joined on the keys; quantiles group by group (a query per group, its rows filtered as they
    are read); the same figures when the aggregations are order-free (see the module docstring), in bounded
    memory. Otherwise one ``group_by(...).agg(...)``.

    The table comes as plain columns in one chunk either way: Polars divides by a column that holds one
    value broadcast (as a group-by can give: every group of the same size) or by a one-row chunk as a
    multiplication by its reciprocal, which can round differently from the division, so what is computed
    from the table afterwards would depend on how it was built.
    """
    lf, keys = frame.lazy(), list(keys)
    if not column_at_a_time:
        return _plain(lf.group_by(keys, maintain_order=True).agg(**aggs).collect())
    groups = out = lf.select(keys).group_by(keys, maintain_order=True).agg().collect()  # the groups, in order
    by_columns: dict[tuple[bool, tuple[str, ...]], dict[str, pl.Expr]] = {}
    for name, expr in aggs.items():
        columns = tuple(sorted(set(expr.meta.root_names()) - set(keys)))
        by_columns.setdefault((_is_quantile(expr), columns), {})[name] = expr
    for (quantile, columns), exprs in by_columns.items():  # one query per set of columns read
        if quantile:  # group by group: a group-by's quantile holds several copies of the column
            part = _quantiles(lf, groups, keys, columns, exprs)
        else:
            part = lf.select(*keys, *columns).group_by(keys).agg(**exprs).collect()
        out = out.join(part, on=keys, how="left", maintain_order="left", nulls_equal=True)
    return _plain(out.select(*keys, *aggs))


def _is_quantile(expr: pl.Expr) -> bool:
    """Whether ``expr`` takes a quantile (a median is one).

    >>> _is_quantile(pl.col("x").median()), _is_quantile(pl.col("x").quantile(0.9)), _is_quantile(pl.col("x").max())
    (True, True, False)
    """
    return ".quantile(" in str(expr) or ".median(" in str(expr)


def _quantiles(lf: pl.LazyFrame, groups: pl.DataFrame, keys: list[str], columns: tuple[str, ...],
               exprs: Mapping[str, pl.Expr]) -> pl.DataFrame:
    """``exprs`` (quantiles) per group, one group at a time: its rows of ``columns`` filtered as they are read,
    the quantile taken over them (the same value as a group-by's: the sorted values pick it), in the memory of
    the group's column rather than the group-by's copies of every group's (measured on 1M rows of one group:
    19 MiB against 50)."""
    schema = lf.select(*keys, *columns).head(0).group_by(keys).agg(**exprs).collect().schema
    rows = []
    for group in groups.iter_rows(named=True):  # one query per group: the groups are few (policy x budget)
        match = pl.all_horizontal(pl.col(k).eq_missing(pl.lit(v, groups.schema[k])) for k, v in group.items())
        found = lf.select(*keys, *columns).filter(match).select(**exprs).collect()
        rows.append(found.select(*(pl.lit(v, groups.schema[k]).alias(k) for k, v in group.items()), *exprs))
    if not rows:
        return pl.DataFrame(schema=schema)
    return pl.concat(rows, how="vertical_relaxed").cast(schema)


def _plain(table: pl.DataFrame) -> pl.DataFrame:
    """``table`` as plain columns in one chunk each (see :func:`grouped`).

    >>> t = pl.DataFrame({"a": [4993359, 4255612]}).with_columns(n=pl.lit(150))  # ``n``: one value, broadcast
    >>> t.select(pl.col("a") / pl.col("n")).item(0, 0), _plain(t).select(pl.col("a") / pl.col("n")).item(0, 0)
    (33289.060000000005, 33289.06)
    """
    return pl.DataFrame(list(table.rechunk().iter_columns()))
