"""One seeded bootstrap over sessions: every figure of a choice's table with its interval, and the chosen budget's.

The sessions are resampled by a Poisson bootstrap: in resample ``r`` a session comes ``copies`` times, a
Poisson(1) draw that depends on nothing but the session's own id (its 64-bit FNV-1a,
:func:`~panto_analytics.frame.session_hash.fnv1a64`), the seed and ``r`` (:func:`copies`: splitmix64 of those,
compared as an integer with Poisson(1)'s cumulative probabilities on a 2**53 scale, so every machine draws the
same). A session's copies do not depend on which other sessions there are nor on their order: in memory,
bucket by bucket and on Ray, the same resamples, and the resample of a set of sessions is the union of the
resamples of its parts (what figures merged from per-bucket partial results need). A resample holds the
number of sessions on average, not exactly (Hanley and MacGibbon 2006; Chamandy et al. 2012, "Estimating
uncertainty for massive data streams"). Before, each resample drew exactly n sessions from a seeded generator
over the sorted session ids, which needed every id at once.

A resample's rows are the per-session rows, each repeated by its copies, and the table's own aggregations
grouped by replicate as well: no Python loop over sessions or resamples (the replicates and the table's keys
go in passes only where their rows would pass :data:`ROWS_PER_PASS`, so that memory holds one pass, not the
resamples: :func:`replicate_tables`).

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
from decimal import Decimal, localcontext

import numpy as np
import polars as pl

from ...defaults import DEFAULT_RESAMPLES, DEFAULT_SEED
from ...frame.schema import SESSION
from ...frame.session_hash import fnv1a64
from ..formatting import format_tokens

__all__ = ["HASH", "LEVEL", "MIN_SESSIONS", "RESAMPLES", "ROWS_PER_PASS", "SEED", "BudgetInterval", "budget_interval",
           "copies", "intervals", "replicate_tables", "resample_frame", "session_hashes"]

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
#: The column of a session's hash (:func:`session_hashes`), what the bootstrap keys its copies on: rows that
#: carry it (a dataset's spilled rows) need no session ids to be resampled.
HASH = "_session_hash"
REPLICATE = "_replicate"
_KEY = "_k"
_MASK = (1 << 64) - 1
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _poisson_thresholds(bits: int = 53) -> np.ndarray:
    """Poisson(1)'s cumulative probabilities P(X <= k), k = 0, 1, ..., as integers on a ``2**bits`` scale
    (floors, computed in 60-digit decimals: exact, whatever the machine), up to the first whose tail is below
    one step of the scale.

    >>> t = _poisson_thresholds()
    >>> int(t[0]), len(t), int(t[-1]) == 2**53 - 1
    (3313563428353947, 18, True)
    """
    scale, out, total, k = 1 << bits, [], Decimal(0), 0
    with localcontext() as ctx:
        ctx.prec = 60
        term = Decimal(-1).exp()  # P(X = 0)
        while (1 - total) * scale >= 1:  # one step per count of copies (18 of them), not per session
            total += term
            out.append(int(total * scale))
            k += 1
            term /= k
    return np.array(out, dtype=np.uint64)


_THRESHOLDS = _poisson_thresholds()


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer of each ``uint64`` (wrapping arithmetic)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def session_hashes(ids: pl.Series) -> pl.Series:
    """The :data:`HASH` column of session ids: their 64-bit FNV-1a (``UInt64``).

    >>> session_hashes(pl.Series(["a"])).to_list()
    [12638187200555641996]
    """
    return pl.Series(HASH, fnv1a64(ids), dtype=pl.UInt64)


def copies(hashes: np.ndarray, seed: int, replicates: np.ndarray) -> np.ndarray:
    """The copies of each session (by its :data:`HASH`) in each of ``replicates`` under ``seed``: a
    ``(len(replicates), len(hashes))`` ``uint8`` array of Poisson(1) draws, each a function of (hash, seed,
    replicate) alone.

    >>> h = session_hashes(pl.Series([f"s{i}" for i in range(10_000)])).to_numpy()
    >>> c = copies(h, 0, np.arange(3))
    >>> c.shape, bool(0.97 < c.mean() < 1.03), bool((copies(h[::-1], 0, np.arange(3)) == c[:, ::-1]).all())
    ((3, 10000), True, True)
    """
    with np.errstate(over="ignore"):
        key = _mix(np.array([seed & _MASK], dtype=np.uint64))
        streams = _mix(key + (np.asarray(replicates, dtype=np.uint64) + np.uint64(1)) * _GOLDEN)
        drawn = _mix(np.asarray(hashes, dtype=np.uint64)[None, :] ^ streams[:, None]) >> np.uint64(11)
    return np.searchsorted(_THRESHOLDS, drawn, side="right").astype(np.uint8)


def resample_frame(session_ids: pl.Series, resamples: int = RESAMPLES, seed: int = SEED) -> pl.DataFrame:
    """The ``resamples`` resamples of the distinct ``session_ids``: one row per (replicate, session drawn),
    with ``copies`` (how often it comes, :func:`copies`), sessions in the order of their ids.
    :func:`replicate_tables` resamples the same, a group of replicates at a time.

    >>> f = resample_frame(pl.Series(["b", "a", "c", "a"]), resamples=4, seed=0)
    >>> f.columns, f["session_id"].is_in(["a", "b", "c"]).all()
    (['_replicate', 'session_id', 'copies'], True)
    """
    ids = session_ids.cast(pl.String).unique().sort()
    if ids.is_empty() or resamples < 1:
        return pl.DataFrame(schema={REPLICATE: pl.UInt32, SESSION: pl.String, "copies": pl.UInt32})
    drawn = copies(session_hashes(ids).to_numpy(), seed, np.arange(resamples)).ravel()
    hit = np.flatnonzero(drawn)
    n = len(ids)
    return pl.DataFrame({REPLICATE: (hit // n).astype(np.uint32), SESSION: ids.gather(hit % n),
                         "copies": drawn[hit].astype(np.uint32)})


def replicate_tables(rows: pl.DataFrame | pl.LazyFrame, keys: Sequence[str], aggs: Mapping[str, pl.Expr], *,
                     resamples: int = RESAMPLES, seed: int = SEED) -> pl.DataFrame:
    """``aggs`` grouped by ``keys`` in each resample of the sessions of ``rows`` (which has ``session_id``, or
    :data:`HASH`, read in its place): one row per (replicate, keys) (none where no session of a key is drawn).

    Memory does not hold the resamples at once, nor the session ids: each session is its hash, each key its
    number, and of the rows only the columns ``aggs`` read are kept, for a group of keys of at most
    :data:`ROWS_PER_PASS` rows at a time (the group of every key where they fit; ``rows`` lazy over Parquet, a
    dataset's spilled rows, is read again for each group). Per group, the replicates go in passes of at most
    :data:`ROWS_PER_PASS` repeated rows. A replicate's rows are aggregated in the order of their hashes (then
    their values), whatever the order of ``rows``, so a float sum is the same in every lane too.
    """
    lf = rows.lazy()
    ident = HASH if HASH in lf.collect_schema().names() else SESSION
    used = sorted({c for e in aggs.values() for c in e.meta.root_names()} - {SESSION, HASH})
    key_rows = lf.group_by(*keys).agg(_rows=pl.len()).sort(*keys).with_row_index(_KEY).collect()
    if resamples < 1 or key_rows.is_empty():
        return pl.DataFrame()
    out = []
    for group in _key_groups(key_rows["_rows"].to_list()):  # groups of keys, each at most ROWS_PER_PASS rows
        wanted = key_rows.filter(pl.col(_KEY).is_in(group))
        compact = lf.join(wanted.lazy().select(*keys, _KEY), on=list(keys)).select(ident, _KEY, *used).collect()
        if ident == SESSION:
            compact = compact.select(session_hashes(compact[SESSION]), _KEY, *used)
        out += _passes(compact, keys=wanted.select(_KEY, *keys), aggs=aggs, resamples=resamples, seed=seed)
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


def _passes(compact: pl.DataFrame, *, keys: pl.DataFrame, aggs: Mapping[str, pl.Expr], resamples: int,
            seed: int) -> list[pl.DataFrame]:
    """``aggs`` by (replicate, keys) over ``compact`` (:data:`HASH`, ``_k`` and the columns read) in every
    resample, a group of replicates a pass: each row repeated by its session's copies (a gather of row numbers;
    measured on 1M sessions' split rows, the join of a replicate's draws to the rows, its lists of copies and
    their explosion, as before, held three times the rows the gather does), the aggregations reading the same
    columns together, one set of columns gathered at a time (all of them at once, over a million sessions'
    rows, held the gathered rows and a copy of a column for each quantile at once)."""
    compact = compact.sort(compact.columns, nulls_last=True, maintain_order=True)  # the same order in every lane
    hashes, rows = compact[HASH].to_numpy(), compact.drop(HASH)
    positions = np.arange(compact.height, dtype=np.uint32)
    per_pass = max(1, ROWS_PER_PASS // max(1, compact.height))
    del compact
    by_columns: dict[tuple[str, ...], dict[str, pl.Expr]] = {}
    for name, expr in aggs.items():  # one entry per figure of the table, not per row
        by_columns.setdefault(tuple(sorted(set(expr.meta.root_names()) - {_KEY})), {})[name] = expr
    found = []
    for first in range(0, resamples, per_pass):  # passes over groups of replicates, not over sessions
        replicates = np.arange(first, min(resamples, first + per_pass), dtype=np.uint32)
        drawn = copies(hashes, seed, replicates)  # each row's copies in each replicate of the group
        take = pl.Series(np.repeat(np.tile(positions, len(replicates)), drawn.ravel()))
        replicate = pl.Series(REPLICATE, np.repeat(replicates, drawn.sum(axis=1, dtype=np.int64)))
        del drawn
        table = None
        for columns, exprs in by_columns.items():  # a few sets of columns (the figures'), not rows
            part = (rows.select(_KEY, *columns).gather(take).with_columns(replicate).lazy()
                    .group_by(REPLICATE, _KEY).agg(**exprs).collect())
            table = part if table is None else table.join(part, on=[REPLICATE, _KEY], how="full", coalesce=True)
        del take, replicate
        if table is not None:
            found.append(table.join(keys, on=_KEY).select(REPLICATE, *keys.columns[1:], *aggs))
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
