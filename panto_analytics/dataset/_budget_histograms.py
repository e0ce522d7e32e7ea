"""Exact, mergeable per-budget summaries of splits: the sweep and the recommendation from counts.

Every figure of :func:`~panto_analytics.policy.sweep` and of
:func:`~panto_analytics.analysis.choose.from_splits.coverage_table` is a count, a
sum of integers, or a percentile of integers. So a splits frame can be
reduced to one long table of ``(budget, metric, value, count)`` rows
(:func:`histograms`), tables of disjoint sets of sessions add up
(:func:`merge`), and the figures come back from the merged table
(:func:`sweep_from`, :func:`coverage_from`) bit for bit as the in-memory
path computes them: shares are the same integer ratios, and percentiles
pick the same observed value with the same ``"nearest"`` rule Polars uses
(:func:`~panto_analytics.frame.expressions.counted_quantile`).

Metrics: ``kept_tokens``, ``kept_turns``, ``n_turns`` (value: the figure;
count: sessions), ``noop_n_turns`` (``n_turns`` of no-op sessions with
turns), ``noop`` and ``capped`` (value 0 or 1) and, for ``summarized_tokens``
and ``active_tokens``, one row of value 0 whose ``count`` is their sum.
The table's size is bounded by the budgets (``kept_tokens <= budget``), not
by the corpus.

>>> import polars as pl
>>> from panto_analytics.policy import sweep
>>> s = pl.DataFrame({"session_id": ["a", "b", "c"], "budget": [10, 10, 10], "kept_turns": [0, 2, 1],
...     "kept_tokens": [0, 8, 5], "summarized_tokens": [30, 0, 4], "active_tokens": [30, 8, 9],
...     "n_turns": [3, 2, 2], "noop": [False, True, False], "capped": [False, False, False]})
>>> one, two = histograms(s.head(1)), histograms(s.tail(2))
>>> sweep_from(merge([one, two])).equals(sweep(s))
True
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

import polars as pl

from ..analysis.choose.from_splits import coverage_table
from ..analysis.choose.rule import Rule
from ..frame.expressions import counted_quantile
from ..frame.schema import BUDGET, SPLIT_SCHEMA
from ..policy import sweep

__all__ = ["HISTOGRAM_SCHEMA", "METRICS", "Metric", "coverage_from", "histograms", "merge", "sweep_from"]

METRICS = ("kept_tokens", "kept_turns", "n_turns", "noop_n_turns", "noop", "capped", "summarized_tokens", "active_tokens")
Metric = pl.Enum(list(METRICS))

HISTOGRAM_SCHEMA: dict[str, pl.DataType] = {BUDGET: pl.UInt64(), "metric": Metric, "value": pl.UInt64(),
                                            "count": pl.UInt64()}
_CAST = cast("dict[Any, pl.DataType]", HISTOGRAM_SCHEMA)
_KEY = [BUDGET, "metric", "value"]


def histograms(splits: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """The ``(budget, metric, value, count)`` table of a splits frame (see the module docstring).

    >>> import polars as pl
    >>> s = pl.DataFrame({"budget": [5, 5], "kept_turns": [1, 1], "kept_tokens": [4, 4], "summarized_tokens": [1, 2],
    ...     "active_tokens": [5, 6], "n_turns": [2, 2], "noop": [False, False], "capped": [False, False]})
    >>> histograms(s).filter(pl.col("metric") == "kept_tokens").select("value", "count").rows()
    [(4, 2)]
    """
    lf = splits.lazy()
    with_turns = pl.col("n_turns") > 0

    def counted(metric: str, value: pl.Expr, rows: pl.LazyFrame = lf) -> pl.LazyFrame:
        return rows.group_by(BUDGET, value.alias("value")).agg(count=pl.len()).with_columns(metric=pl.lit(metric))

    def summed(metric: str) -> pl.LazyFrame:
        return lf.group_by(BUDGET).agg(value=pl.lit(0), count=pl.col(metric).sum()).with_columns(metric=pl.lit(metric))

    parts = [
        counted("kept_tokens", pl.col("kept_tokens")),
        counted("kept_turns", pl.col("kept_turns")),
        counted("n_turns", pl.col("n_turns")),
        counted("noop_n_turns", pl.col("n_turns"), lf.filter(pl.col("noop") & with_turns)),
        counted("noop", pl.col("noop")),
        counted("capped", pl.col("capped")),
        summed("summarized_tokens"),
        summed("active_tokens"),
    ]
    cols = list(HISTOGRAM_SCHEMA)
    return pl.concat([p.select(pl.col(c).cast(HISTOGRAM_SCHEMA[c]) for c in cols) for p in parts]).sort(_KEY).collect()


def merge(tables: Iterable[pl.DataFrame]) -> pl.DataFrame:
    """Tables of disjoint sets of sessions, added up into one.

    >>> import polars as pl
    >>> t = pl.DataFrame({"budget": [1], "metric": ["noop"], "value": [0], "count": [2]}, schema=HISTOGRAM_SCHEMA)
    >>> merge([t, t])["count"].to_list()
    [4]
    """
    frames = [t.select(pl.col(c).cast(HISTOGRAM_SCHEMA[c]) for c in HISTOGRAM_SCHEMA) for t in tables]
    if not frames:
        return pl.DataFrame(schema=HISTOGRAM_SCHEMA)
    return pl.concat(frames).group_by(_KEY).agg(pl.col("count").sum()).sort(_KEY).cast(_CAST)


def _quantile(hist: pl.DataFrame, metric: str, q: float, name: str) -> pl.LazyFrame:
    """Per budget, the metric's ``q`` percentile by nearest rank (an observed value, the sweep's on purpose:
    :func:`~panto_analytics.frame.expressions.observed_quantile`), from its counts."""
    return (hist.lazy().filter(pl.col("metric") == metric).sort(BUDGET, "value")
            .group_by(BUDGET).agg(counted_quantile(q, interpolation="nearest").alias(name)))


def _count(metric: str, where: pl.Expr | None = None) -> pl.Expr:
    keep = pl.col("metric") == metric
    return pl.col("count").filter(keep if where is None else keep & where).sum()


def _ratio(num: pl.Expr, den: pl.Expr) -> pl.Expr:
    """``num / den.clip(1)`` as the in-memory path divides: the same integers, one float division."""
    return num.cast(pl.Float64) / den.clip(1).cast(pl.Float64)


_SESSIONS = _count("noop")
_WITH_TURNS = _count("n_turns", pl.col("value") > 0)


def _table(hist: pl.DataFrame, **aggs: pl.Expr) -> pl.LazyFrame:
    return hist.lazy().group_by(BUDGET).agg(sessions=_SESSIONS, with_turns=_WITH_TURNS, **aggs)


def sweep_from(hist: pl.DataFrame) -> pl.DataFrame:
    """:func:`~panto_analytics.policy.sweep` of the sessions ``hist`` counts, bit for bit."""
    v = pl.col("value")
    no_turns = pl.col("sessions") - pl.col("with_turns")
    base = _table(hist, noop=_count("noop", v == 1), capped=_count("capped", v == 1), zero=_count("kept_turns", v == 0),
                  summarized=_count("summarized_tokens"), active=_count("active_tokens"))
    out = base.with_columns(
        noop_share=_ratio(pl.col("noop"), pl.col("sessions")),
        zero_kept_share=_ratio(pl.col("zero") - no_turns, pl.col("with_turns")),
        capped_share=_ratio(pl.col("capped"), pl.col("sessions")),
        summarized_share=_ratio(pl.col("summarized"), pl.col("active")),
    )
    for metric, q, name in (("kept_tokens", 0.1, "kept_tokens_p10"), ("kept_tokens", 0.5, "kept_tokens_p50"),
                            ("kept_tokens", 0.9, "kept_tokens_p90"), ("kept_turns", 0.5, "kept_turns_p50")):
        out = out.join(_quantile(hist, metric, q, name), on=BUDGET, how="left")
    target = sweep(pl.DataFrame(schema=SPLIT_SCHEMA)).schema
    return out.select(list(target)).cast(cast("dict[Any, pl.DataType]", dict(target))).sort(BUDGET).collect()


def coverage_from(hist: pl.DataFrame, rule: Rule) -> pl.DataFrame:
    """:func:`~panto_analytics.analysis.choose.from_splits.coverage_table` of the sessions ``hist`` counts, bit for bit."""
    v = pl.col("value")
    no_turns = pl.col("sessions") - pl.col("with_turns")
    aggs: dict[str, pl.Expr] = {}
    cols: dict[str, pl.Expr] = {"sessions_with_turns": pl.col("with_turns")}
    verdicts = []
    if rule.min_kept_turns is not None:
        k = rule.min_kept_turns
        aggs["fewer"] = _count("n_turns", (v > 0) & (v < k))
        # kept >= min(n_turns, k): k or more turns kept, or all of fewer than k (a no-op session).
        aggs["keeps"] = _count("kept_turns", v >= k) + _count("noop_n_turns", (v > 0) & (v < k))
        cols["fewer_than_k_turns"] = pl.col("fewer")
        cols["keeps_k_share"] = _ratio(pl.col("keeps"), pl.col("with_turns"))
        verdicts.append((pl.col("keeps_k_share") >= rule.coverage).alias("meets_min_kept_turns"))
    if rule.max_kept_share is not None:
        aggs["within"] = _count("kept_tokens", v <= rule.limit)
        cols["within_limit_share"] = _ratio(pl.col("within") - no_turns, pl.col("with_turns"))
        verdicts.append((pl.col("within_limit_share") >= rule.coverage).alias("meets_max_kept_share"))
    rules = _table(hist, **aggs).select(BUDGET, **cols).with_columns(verdicts)
    target = coverage_table(pl.DataFrame(schema=SPLIT_SCHEMA), rule).schema
    per_budget = sweep_from(hist).lazy()
    out = per_budget.join(rules, on=BUDGET, how="left").sort(BUDGET)
    return out.select(list(target)).cast(cast("dict[Any, pl.DataType]", dict(target))).collect()
