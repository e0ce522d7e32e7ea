"""Per-budget summaries of a splits frame: what each budget does across a corpus.

>>> import polars as pl
>>> s = pl.DataFrame({"session_id": ["a", "b"], "budget": [10, 10], "kept_turns": [0, 2],
...     "kept_tokens": [0, 8], "summarized_tokens": [30, 0], "active_tokens": [30, 8],
...     "n_turns": [3, 2], "noop": [False, True], "capped": [False, False]})
>>> sweep(s).select("budget", "sessions", "noop_share", "zero_kept_share").rows()
[(10, 2, 0.5, 0.5)]
"""
from __future__ import annotations

from typing import TypeVar

import polars as pl

from ..frame.expressions import observed_quantile
from ..frame.schema import BUDGET

__all__ = ["Frame", "sweep", "sweep_aggs"]

Frame = TypeVar("Frame", pl.DataFrame, pl.LazyFrame)


def sweep(splits: Frame) -> Frame:
    """One row per budget: sessions, shares of noop / zero-kept / capped sessions,
    kept-token percentiles, median kept turns, and the summarized share of all
    active tokens. Its percentiles, the p50 too, pick an observed value (the
    upper middle one of an even count), unlike the other tables' medians:
    whole tokens and turns, equal on every lane (docs/scale.md).

    ``zero_kept_share`` counts sessions with turns where not even the last
    turn fits (nothing kept verbatim); sessions without turns are excluded
    from it.

    Parameters
    ----------
    splits
        What :func:`~panto_analytics.splits` returns (DataFrame or LazyFrame).

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as ``splits``: one row per budget, ascending.

    Examples
    --------
    >>> import panto_analytics as pa
    >>> from panto_analytics import examples
    >>> pa.sweep(pa.splits(examples.messages(), [2_000, 5_000])).select("budget", "zero_kept_share").rows()
    [(2000, 0.5), (5000, 0.0)]
    """
    lf = splits.lazy().group_by(BUDGET).agg(**sweep_aggs()).sort(BUDGET)
    return lf.collect() if isinstance(splits, pl.DataFrame) else lf


def sweep_aggs() -> dict[str, pl.Expr]:
    """The figures of :func:`sweep`, by name, as aggregations of split rows (a bootstrap groups them by
    resample too).

    >>> sorted(sweep_aggs())[:3]
    ['capped_share', 'kept_tokens_p10', 'kept_tokens_p50']
    """
    has_turns = pl.col("n_turns") > 0
    return {
        "sessions": pl.len(),
        "noop_share": pl.col("noop").mean(),
        "zero_kept_share": ((pl.col("kept_turns") == 0) & has_turns).sum() / has_turns.sum().clip(1),
        "capped_share": pl.col("capped").mean(),
        # Observed values on purpose, the p50 too (not frame.expressions.median): a dataset's sweep merges exact
        # value counts bucket by bucket and picks the same rank (dataset/_budget_histograms.py, docs/scale.md),
        # and every lane must give the same whole tokens and turns.
        "kept_tokens_p10": observed_quantile("kept_tokens", 0.1, pl.UInt64()),
        "kept_tokens_p50": observed_quantile("kept_tokens", 0.5, pl.UInt64()),
        "kept_tokens_p90": observed_quantile("kept_tokens", 0.9, pl.UInt64()),
        "kept_turns_p50": observed_quantile("kept_turns", 0.5, pl.UInt32()),
        "summarized_share": pl.col("summarized_tokens").sum() / pl.col("active_tokens").sum().clip(1),
    }
