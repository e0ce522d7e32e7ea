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
           "copies", "intervals", "replicate_tables", "resample_frame", "session_count", "session_hashes"]

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
_GROUP = "_g"
#: Sessions whose copies are drawn at once (the draws' uint64 temporaries: 8 bytes each, a few at a time).
_BLOCK = 1 << 16
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


def session_count(rows: pl.DataFrame | pl.LazyFrame) -> int:
    """The number of distinct sessions of ``rows``: of their :data:`HASH` where they have it (a dataset's spilled
    rows), counted sorted (NumPy: 8 bytes a row besides the column; over a million hashes, Polars' ``n_unique``
    held a hash set of 54 MiB), else of their ``session_id``.

    >>> rows = pl.DataFrame({"session_id": ["a", "b", "a"]})
    >>> session_count(rows), session_count(rows.select(session_hashes(rows["session_id"])))
    (2, 2)
    """
    lf = rows.lazy()
    if HASH not in lf.collect_schema().names():
        return int(lf.select(pl.col(SESSION).n_unique()).collect().item())
    hashes = np.sort(lf.select(HASH).collect()[HASH].to_numpy())
    return int(hashes.size and 1 + np.count_nonzero(hashes[1:] != hashes[:-1]))


def copies(hashes: np.ndarray, seed: int, replicates: np.ndarray) -> np.ndarray:
    """The copies of each session (by its :data:`HASH`) in each of ``replicates`` under ``seed``: a
    ``(len(replicates), len(hashes))`` ``uint8`` array of Poisson(1) draws, each a function of (hash, seed,
    replicate) alone.

    >>> h = session_hashes(pl.Series([f"s{i}" for i in range(10_000)])).to_numpy()
    >>> c = copies(h, 0, np.arange(3))
    >>> c.shape, bool(0.97 < c.mean() < 1.03), bool((copies(h[::-1], 0, np.arange(3)) == c[:, ::-1]).all())
    ((3, 10000), True, True)
    """
    hashes = np.asarray(hashes, dtype=np.uint64)
    with np.errstate(over="ignore"):
        key = _mix(np.array([seed & _MASK], dtype=np.uint64))
        streams = _mix(key + (np.asarray(replicates, dtype=np.uint64) + np.uint64(1)) * _GOLDEN)
        out = np.empty((len(streams), len(hashes)), dtype=np.uint8)
        for start in range(0, len(hashes), _BLOCK):  # blocks of 65,536 sessions, each drawn at once
            drawn = _mix(hashes[None, start:start + _BLOCK] ^ streams[:, None]) >> np.uint64(11)
            out[:, start:start + _BLOCK] = np.searchsorted(_THRESHOLDS, drawn, side="right")
    return out


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

    Memory does not hold the resamples at once, nor the session ids, nor every column the figures read: for a
    group of keys of at most :data:`ROWS_PER_PASS` rows (the group of every key where they fit), one set of
    columns at a time (the figures that read the same columns together), it holds each row's session hash, the
    number of its key (where the group has more than one) and those columns (:func:`_read`: ``rows`` lazy over
    Parquet, a dataset's spilled rows, is read again for each group and set). The replicates go in passes of at
    most :data:`ROWS_PER_PASS` repeated rows (:func:`_passes`). A replicate's rows of a key are aggregated in
    the order of their hashes, then their values (:func:`_sorted`), whatever the order of ``rows``, so a float
    sum is the same in every lane and every run too.
    """
    lf = rows.lazy()
    ident = HASH if HASH in lf.collect_schema().names() else SESSION
    key_rows = lf.group_by(*keys).agg(_rows=pl.len()).sort(*keys).with_row_index(_KEY).collect()
    if resamples < 1 or key_rows.is_empty():
        return pl.DataFrame()
    sets = _column_sets(aggs)
    out = []
    for group in _key_groups(key_rows["_rows"].to_list()):  # groups of keys, each at most ROWS_PER_PASS rows
        wanted = key_rows.slice(group[0], len(group)).drop("_rows")
        everything = key_rows.height == 1 and not key_rows.select(pl.any_horizontal(pl.col(keys).is_null())).item()
        table = None
        for columns, exprs in sets.items():  # a few sets of columns (the figures'), not rows
            frame = _sorted(_read(lf, ident, None if everything else wanted, columns))
            part = pl.concat(_passes(frame, keys=len(group), aggs=exprs, resamples=resamples, seed=seed))
            del frame
            table = part if table is None else table.join(part, on=[REPLICATE, _KEY], how="full", coalesce=True)
        if table is not None:
            table = table.with_columns(pl.col(_KEY) + group[0])  # the group's own numbers to the table's
            out.append(table.join(wanted, on=_KEY).select(REPLICATE, *keys, *aggs))
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


def _column_sets(aggs: Mapping[str, pl.Expr]) -> dict[tuple[str, ...], dict[str, pl.Expr]]:
    """``aggs`` by the columns they read (sorted names; the session's id or hash is not one of them).

    >>> sets = _column_sets({"a": pl.col("x").sum(), "b": pl.col("x").max(), "n": pl.len()})
    >>> {c: list(e) for c, e in sets.items()}
    {('x',): ['a', 'b'], (): ['n']}
    """
    sets: dict[tuple[str, ...], dict[str, pl.Expr]] = {}
    for name, expr in aggs.items():  # one entry per figure of the table, not per row
        sets.setdefault(tuple(sorted(set(expr.meta.root_names()) - {SESSION, HASH, _KEY})), {})[name] = expr
    return sets


def _read(lf: pl.LazyFrame, ident: str, wanted: pl.DataFrame | None, columns: Sequence[str]) -> pl.DataFrame:
    """The rows of ``lf`` at the keys of ``wanted`` (the keys and their numbers ``_k``; None: every row, of one
    key): :data:`HASH` (the session ids hashed where ``lf`` has no hash), ``_k`` counted from the group's first
    (0, 1, ...) where it has more than one key, and ``columns``. One key is a filter (pushed down into a
    Parquet scan), several a join to their numbers; a row with a null key matches none."""
    if wanted is None:
        frame = lf.select(ident, *columns).collect()
    elif wanted.height == 1:
        match = [pl.col(k) == pl.lit(wanted[k][0], dtype=wanted.schema[k]) for k in wanted.columns if k != _KEY]
        frame = lf.filter(*match).select(ident, *columns).collect()
    else:
        numbers = wanted.with_columns(pl.col(_KEY) - wanted[_KEY][0])
        frame = lf.join(numbers.lazy(), on=[k for k in wanted.columns if k != _KEY]).select(ident, _KEY, *columns).collect()
    if ident == SESSION:
        frame = frame.with_columns(session_hashes(frame[SESSION])).select(HASH, pl.exclude(SESSION, HASH))
    return frame


def _sorted(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (:data:`HASH`, perhaps ``_k``, the columns read) in the order of its keys, then hashes, then
    values (nulls last): the same whatever the order it was read in, and each key's rows together. The order
    is NumPy's arg-sort of the keys and hashes (8 bytes a row; Polars' sort of a million split rows by every
    column held 193 MiB beside their 42), applied one column at a time, each column's unsorted self freed as
    it goes; the values decide too only where a session has more than one row at a key (no caller's rows do).

    >>> f = pl.DataFrame({HASH: [3, 1, 2], "x": [30, 10, 20]}, schema_overrides={HASH: pl.UInt64})
    >>> _sorted(f)["x"].to_list()
    [10, 20, 30]
    """
    by = [_KEY, HASH] if _KEY in frame.columns else [HASH]
    hashes = frame[HASH].to_numpy()
    order = np.argsort(hashes) if len(by) == 1 else np.lexsort((hashes, frame[_KEY].to_numpy()))
    take = pl.Series(order.astype(np.uint32))  # row numbers as Polars gathers them, half the bytes of NumPy's
    del order, hashes
    columns = frame.get_columns()
    del frame
    for i, column in enumerate(columns):  # a few columns, each sorted in place of its unsorted self
        columns[i] = column.gather(take)
        del column
    del take
    frame = pl.DataFrame(columns)
    hashes = frame[HASH].to_numpy()
    twice = hashes[1:] == hashes[:-1]  # the same session next to itself: at one key, or at two
    if len(by) == 2 and twice.any():
        twice &= np.diff(frame[_KEY].to_numpy()) == 0
    if twice.any():  # a session with more than one row at a key: its values decide
        return frame.sort([*by, *[c for c in frame.columns if c not in by]], nulls_last=True, maintain_order=True)
    return frame


def _passes(frame: pl.DataFrame, *, keys: int, aggs: Mapping[str, pl.Expr], resamples: int,
            seed: int) -> list[pl.DataFrame]:
    """``aggs`` by (replicate, ``_k``) over ``frame`` (:func:`_sorted`, of ``keys`` keys: without ``_k``, one)
    in every resample, a group of replicates a pass: each row repeated by its session's copies (a gather of
    row numbers; measured on 1M sessions' split rows, the join of a replicate's draws to the rows, its lists of
    copies and their explosion held three times the rows the gather does), grouped by one sorted number of
    (replicate, key) (Polars aggregates each group as a slice of the rows, in their order; grouped by both
    columns, it hashed them and held four times the rows for a quantile, measured at a million rows)."""
    hashes = frame[HASH].to_numpy()
    key = frame[_KEY].to_numpy() if _KEY in frame.columns else None
    rows = frame.drop(HASH, _KEY, strict=False)
    n = len(hashes)
    per_pass = max(1, ROWS_PER_PASS // max(1, n))
    found = []
    for first in range(0, resamples, per_pass):  # passes over groups of replicates, not over sessions
        replicates = np.arange(first, min(resamples, first + per_pass), dtype=np.uint32)
        drawn = copies(hashes, seed, replicates).ravel()  # each row's copies in each replicate of the group
        take = np.repeat(np.arange(len(drawn), dtype=np.uint32), drawn)  # (replicate, row) as one number
        del drawn
        number = take // np.uint32(n) * np.uint32(keys) if len(replicates) > 1 else None
        if number is not None:
            take %= np.uint32(n)
        if key is not None:
            number = key[take] if number is None else number + key[take]
        values = rows.gather(pl.Series(take)).get_columns()
        number = np.zeros(len(take), dtype=np.uint32) if number is None else number
        del take
        gathered = pl.DataFrame([*values, pl.Series(_GROUP, number).set_sorted()])
        del values, number
        found.append(gathered.group_by(_GROUP).agg(**aggs).select(
            (pl.col(_GROUP) // keys + first).cast(pl.UInt32).alias(REPLICATE),
            (pl.col(_GROUP) % keys).cast(pl.get_index_type()).alias(_KEY), *aggs))
        del gathered
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
