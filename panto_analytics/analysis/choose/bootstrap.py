"""One seeded bootstrap over sessions: every figure of a choice's table with its interval, and the chosen budget's.

The sessions are resampled with replacement (``resamples`` times, from a seeded generator over the sorted
session ids, so the same sessions give the same resamples in any order, in memory or bucket by bucket). A
resample is a frame of (replicate, session, copies) joined to the per-session rows, each row repeated by its
copies, and the table's own aggregations grouped by replicate as well: no Python loop over sessions or
resamples (the replicates and the table's keys go in passes only where their rows would pass
:data:`ROWS_PER_PASS`, so that memory holds one pass, not the resamples: :func:`replicate_tables`).

- :func:`intervals`: each figure's ``*_lo`` and ``*_hi`` (the :data:`LEVEL` share of resamples between
  them), one row per key of the table;
- :func:`budget_interval`: the budget the rule chooses in each resample, as a :class:`BudgetInterval`
  ("47.5k (90% of resamples: 37.5k-60k; 5 sessions)").

With fewer than :data:`MIN_SESSIONS` sessions there is nothing to resample: the interval says so.

>>> import polars as pl
>>> rows = pl.DataFrame({"session_id": list("abcdef"), "budget": [1] * 6, "x": [1.0, 2, 3, 4, 5, 6]})
>>> t = replicate_tables(rows, ["budget"], {"x_p50": pl.col("x").median()}, resamples=50, seed=1)
>>> t.height, sorted(t.columns)
(50, ['_replicate', 'budget', 'x_p50'])
>>> iv = intervals(t, ["budget"], ["x_p50"])
>>> 1.0 <= iv["x_p50_lo"][0] <= iv["x_p50_hi"][0] <= 6.0
True
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from ...defaults import DEFAULT_RESAMPLES, DEFAULT_SEED
from ...frame.schema import SESSION
from ..formatting import format_tokens

__all__ = ["LEVEL", "MIN_SESSIONS", "RESAMPLES", "ROWS_PER_PASS", "SEED", "BudgetInterval", "budget_interval",
           "intervals", "replicate_tables", "resample_frame"]

#: Resamples of the sessions, the generator's seed, and the share of resamples an interval spans.
RESAMPLES, SEED, LEVEL = DEFAULT_RESAMPLES, DEFAULT_SEED, 0.9
#: Fewer sessions than this: no interval ("too few sessions to resample").
MIN_SESSIONS = 3
#: Rows one pass of the bootstrap holds at most: of the rows read (a group of the table's keys) and of the
#: rows repeated by their copies (a group of resamples); the resamples and keys go in as many passes as needed
#: (a key with more rows than this, one replicate of it). Measured on the split rows of 100k synthetic sessions
#: at one budget, 200 resamples (``with_split_intervals`` alone, peak RSS above the 179 MiB before it): 798 MiB
#: when every draw was held at once; 334 with passes of 2M rows, 146 of 500k, 86 of 250k, 70 of 100k, in
#: about the same time (20-80 s at a load of 18-20).
ROWS_PER_PASS = 250_000
REPLICATE = "_replicate"
_INDEX, _KEY = "_i", "_k"


def _draws(rng: np.random.Generator, n: int, resamples: int, first: int = 0) -> pl.DataFrame:
    """The next ``resamples`` draws of ``n`` sessions from ``rng`` (one call per replicate group: the same stream as
    one call for all of them), as (``_replicate`` from ``first``, ``_i``: the session's index, ``copies``)."""
    draws = rng.integers(0, n, size=(resamples, n))
    counts = np.bincount((draws + n * np.arange(resamples)[:, None]).ravel(), minlength=resamples * n)
    del draws
    hit = np.flatnonzero(counts)
    return pl.DataFrame({REPLICATE: (hit // n + first).astype(np.uint32), _INDEX: (hit % n).astype(np.uint32),
                         "copies": counts[hit].astype(np.uint32)})


def resample_frame(session_ids: pl.Series, resamples: int = RESAMPLES, seed: int = SEED) -> pl.DataFrame:
    """``resamples`` draws of ``len(ids)`` sessions with replacement from the distinct, sorted ``session_ids``:
    one row per (replicate, session drawn), with ``copies`` (how often it was drawn). :func:`replicate_tables`
    draws the same, a group of replicates at a time.

    >>> f = resample_frame(pl.Series(["b", "a", "c", "a"]), resamples=4, seed=0)
    >>> f.group_by("_replicate").agg(pl.col("copies").sum())["copies"].to_list()
    [3, 3, 3, 3]
    """
    ids = session_ids.cast(pl.String).unique().sort()
    n = len(ids)
    if n == 0 or resamples < 1:
        return pl.DataFrame(schema={REPLICATE: pl.UInt32, SESSION: pl.String, "copies": pl.UInt32})
    draws = _draws(np.random.default_rng(seed), n, resamples)
    return draws.select(REPLICATE, ids.gather(draws[_INDEX]).alias(SESSION), "copies")


def replicate_tables(rows: pl.DataFrame | pl.LazyFrame, keys: Sequence[str], aggs: Mapping[str, pl.Expr], *,
                     resamples: int = RESAMPLES, seed: int = SEED) -> pl.DataFrame:
    """``aggs`` grouped by ``keys`` in each resample of the sessions of ``rows`` (which has ``session_id``):
    one row per (replicate, keys).

    Memory does not hold the resamples at once, nor the session ids beside the rows: each session is its index
    among the sorted distinct ids (what the generator draws), each key its number, and of the rows only the
    columns ``aggs`` read are kept, for a group of keys of at most :data:`ROWS_PER_PASS` rows at a time (the
    group of every key where they fit; ``rows`` lazy over Parquet, a dataset's spilled rows, is read again for
    each group). Per group, the replicates go in passes of at most :data:`ROWS_PER_PASS` repeated rows, each
    pass drawing its replicates from the same seeded stream (the same draws as :func:`resample_frame`); a
    replicate's rows are aggregated in the order of the sorted session ids, whatever the order of ``rows``.
    """
    lf = rows.lazy().with_columns(pl.col(SESSION).cast(pl.String))
    used = sorted({c for e in aggs.values() for c in e.meta.root_names()} - {SESSION})
    index = lf.select(pl.col(SESSION).unique()).sort(SESSION).with_row_index(_INDEX)
    key_rows = lf.group_by(*keys).agg(_rows=pl.len()).sort(*keys).with_row_index(_KEY).collect()
    n = index.select(pl.len()).collect().item()
    if n == 0 or resamples < 1 or key_rows.is_empty():
        return pl.DataFrame()
    out = []
    for group in _key_groups(key_rows["_rows"].to_list()):  # groups of keys, each at most ROWS_PER_PASS rows
        wanted = key_rows.filter(pl.col(_KEY).is_in(group))
        compact = (lf.join(wanted.lazy().select(*keys, _KEY), on=list(keys)).join(index, on=SESSION)
                   .select(_INDEX, _KEY, *used).collect())
        out += _passes(compact, n, keys=wanted.select(_KEY, *keys), aggs=aggs, resamples=resamples, seed=seed)
        del compact
    return pl.concat(out).sort(REPLICATE, *keys) if out else pl.DataFrame()


def _key_groups(rows_per_key: list[int]) -> list[list[int]]:
    """Consecutive keys (by number) packed into groups of at most :data:`ROWS_PER_PASS` rows (a key of more
    rows alone).

    >>> _key_groups([3, 3, 3]) == [[0, 1, 2]]
    True
    """
    groups: list[list[int]] = [[]]
    total = 0
    for k, rows in enumerate(rows_per_key):  # one iteration per key of the table (budgets x policies)
        if groups[-1] and total + rows > ROWS_PER_PASS:
            groups.append([])
            total = 0
        groups[-1].append(k)
        total += rows
    return groups


def _passes(compact: pl.DataFrame, n: int, *, keys: pl.DataFrame, aggs: Mapping[str, pl.Expr], resamples: int,
            seed: int) -> list[pl.DataFrame]:
    """``aggs`` by (replicate, keys) over ``compact`` (``_i``, ``_k`` and the columns read) in every resample,
    replicates drawn a group at a time from the seeded stream."""
    rng = np.random.default_rng(seed)
    per_pass = max(1, ROWS_PER_PASS // max(1, compact.height, n))
    found = []
    for first in range(0, resamples, per_pass):  # passes over groups of replicates, not over sessions
        draws = _draws(rng, n, min(per_pass, resamples - first), first)
        repeated = (draws.lazy().join(compact.lazy(), on=_INDEX, maintain_order="left")
                    .with_columns(pl.int_ranges(0, "copies").alias("_copy")).explode("_copy"))
        found.append(repeated.group_by(REPLICATE, _KEY).agg(**aggs).join(keys.lazy(), on=_KEY)
                     .select(REPLICATE, *keys.columns[1:], *aggs).collect())
    return found


def intervals(tables: pl.DataFrame, keys: Sequence[str], figures: Sequence[str], level: float = LEVEL) -> pl.DataFrame:
    """Per ``keys``: each of ``figures`` at the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of the
    resamples (``*_lo``, ``*_hi``; NaN taken as missing)."""
    lo, hi = (1 - level) / 2, (1 + level) / 2
    present = [f for f in figures if f in tables.columns]
    clean = tables.with_columns(pl.col(f).cast(pl.Float64).fill_nan(None) for f in present)
    return clean.group_by(*keys).agg(*[e for f in present for e in (pl.col(f).quantile(lo, "linear").alias(f"{f}_lo"),
                                                                    pl.col(f).quantile(hi, "linear").alias(f"{f}_hi"))])


@dataclass(frozen=True)
class BudgetInterval:
    """The budgets the rule chose across resamples: ``lo``-``hi`` hold ``level`` of them; ``none``: the
    resamples where no budget met the rule; ``sessions``: the sessions behind the figures (None: too few
    to resample)."""

    lo: int | None
    hi: int | None
    sessions: int
    resamples: int
    none: int = 0
    level: float = LEVEL

    @property
    def resampled(self) -> bool:
        """Whether there were sessions enough to resample."""
        return self.resamples > 0

    def describe(self, *, budgets: bool = True) -> str:
        """The interval as a person reads it; ``budgets=False`` (a policy with no token budget): no span.

        >>> BudgetInterval(37_500, 60_000, 5, 200).describe()
        '90% of resamples: 37.5k-60k; 5 sessions'
        >>> BudgetInterval(0, 0, 5, 200).describe(budgets=False)
        '5 sessions'
        >>> BudgetInterval(None, None, 2, 0).describe()
        'no interval: 2 sessions are too few to resample'
        """
        if not self.resampled:
            verb = "is" if self.sessions == 1 else "are"
            return f"no interval: {self.sessions} session{'' if self.sessions == 1 else 's'} {verb} too few to resample"
        n = f"{self.sessions} session{'' if self.sessions == 1 else 's'}"
        missing = f"; in {self.none} of {self.resamples} no budget meets the rule" if self.none else ""
        if self.lo is None or self.hi is None:
            return f"no budget meets the rule in {self.none} of {self.resamples} resamples; {n}"
        if not budgets:
            return f"{n}{missing}"
        span = format_tokens(self.lo) if self.lo == self.hi else f"{format_tokens(self.lo)}-{format_tokens(self.hi)}"
        return f"{self.level:.0%} of resamples: {span}; {n}{missing}"

    def to_dict(self) -> dict[str, object]:
        """JSON-ready: ``lo``, ``hi``, ``level``, ``resamples``, ``sessions``, ``none`` and the sentence."""
        return {"lo": self.lo, "hi": self.hi, "level": self.level, "resamples": self.resamples,
                "sessions": self.sessions, "none": self.none, "text": self.describe()}


def budget_interval(chosen: pl.DataFrame, *, sessions: int, resamples: int, level: float = LEVEL) -> BudgetInterval:
    """The :class:`BudgetInterval` of ``chosen`` (one row per replicate with ``budget``, null where none met
    the rule; replicates without a row count as none)."""
    budgets = chosen["budget"].drop_nulls().sort()
    none = resamples - len(budgets)
    if budgets.is_empty():
        return BudgetInterval(None, None, sessions, resamples, none, level)
    # The budgets themselves (nearest), so the interval names budgets that were tried.
    lo = budgets.quantile((1 - level) / 2, "nearest")
    hi = budgets.quantile((1 + level) / 2, "nearest")
    return BudgetInterval(int(lo or 0), int(hi or 0), sessions, resamples, none, level)
