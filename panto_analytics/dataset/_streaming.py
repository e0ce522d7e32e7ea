"""The sweep, the recommendation and the splits of a dataset, bucket by bucket, in bounded memory.

Each bucket of a dataset (:mod:`panto_analytics.dataset`) holds whole
sessions, so libpanto's split is computed per bucket and reduced at once to
exact per-budget histograms (:mod:`.histograms`); only those are merged.
Peak memory is one task's splits (a group of whole buckets of about
:data:`~panto_analytics.dataset.TASK_ROWS` messages) plus the merged histograms (bounded by
the budgets), whatever the number of buckets. The results equal the
in-memory path's bit for bit:

- :func:`sweep_dataset` is ``sweep(splits(messages, budgets, sessions=sessions))``, what
  ``panto-analytics sweep`` prints;
- :func:`recommend_dataset` is ``recommend(splits(messages, budgets), rule, turns=turns(messages),
  windows=...)``, what ``panto-analytics recommend`` prints;
- :func:`write_splits` writes the rows of ``splits`` (bucket after bucket) to Parquet without holding them.

``engine="ray"`` runs the per-bucket function on Ray Data (:mod:`.engines`).

>>> from panto_analytics.dataset.write import dataset_example
>>> sweep_dataset(dataset_example(usage=True), [0, 20]).select("budget", "sessions", "kept_tokens_p50").rows()
[(0, 1, 0), (20, 1, 10)]
"""
from __future__ import annotations

import functools
import tempfile
from collections.abc import Iterable
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from ..analysis.choose.bootstrap import RESAMPLES, SEED, session_hashes
from ..analysis.choose.choice import Choice
from ..analysis.choose.from_splits import Outcomes, choose_from_coverage, outcomes_at, with_split_intervals
from ..analysis.choose.rule import Rule
from ..frame.schema import SESSION
from ..policy import splits as compute_splits
from ..policy import turns as compute_turns
from ..policy.compute_split import budget_series
from ._budget_histograms import coverage_from, histograms, merge, sweep_from
from .engines import map_buckets
from .store import TASK_ROWS, collect, scan_dataset, scan_parts

__all__ = ["MERGE_EVERY", "dataset_histograms", "recommend_dataset", "sweep_dataset", "write_splits"]

#: Bucket tables held before they are merged into one.
MERGE_EVERY = 4


def _bucket(root: str, parts: list[str], with_sessions: bool) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    messages = collect(scan_parts(root, "messages", parts), root)
    sessions = collect(scan_parts(root, "sessions", parts).select(SESSION), root) if with_sessions else None
    return messages, sessions


def _histogram_task(root: str, parts: list[str], *, budgets: list[int], with_sessions: bool) -> pl.DataFrame:
    """One bucket's histogram table (the per-bucket function both engines run)."""
    messages, sessions = _bucket(root, parts, with_sessions)
    return histograms(compute_splits(messages, budgets, sessions=sessions))


def dataset_histograms(root: str | Path, budgets: int | Iterable[int], *, with_sessions: bool = True,
                       engine: str = "local", address: str | None = None, task_rows: int = TASK_ROWS) -> pl.DataFrame:
    """The merged histogram table (:mod:`.histograms`) of every session of the dataset at ``root``.

    ``with_sessions``: count sessions without messages too (as ``sweep`` does; ``recommend`` does not).
    ``task_rows``: messages per task (:func:`~panto_analytics.dataset.bucket_groups`).
    """
    task = functools.partial(_histogram_task, budgets=budget_series(budgets).to_list(), with_sessions=with_sessions)
    merged: list[pl.DataFrame] = []
    for table in map_buckets(root, task, engine=engine, address=address, rows=task_rows):
        merged.append(table)
        if len(merged) >= MERGE_EVERY:
            merged = [merge(merged)]
    return merge(merged)


def sweep_dataset(root: str | Path, budgets: int | Iterable[int], *, engine: str = "local",
                  address: str | None = None, task_rows: int = TASK_ROWS) -> pl.DataFrame:
    """One row per budget (:func:`~panto_analytics.policy.sweep`) over the dataset at ``root``,
    task by task in bounded memory, sessions without messages included.

    Parameters
    ----------
    root
        A dataset folder (:func:`~panto_analytics.dataset.write_dataset`).
    budgets
        One budget or many.
    engine
        ``"local"`` (task after task here) or ``"ray"`` (Ray Data; the ``[ray]`` extra).
    address
        With ``engine="ray"``: the cluster to join; None starts Ray here.
    task_rows
        Messages per task (:func:`~panto_analytics.dataset.bucket_groups`).

    Returns
    -------
    pl.DataFrame
        Equal, bit for bit, to ``sweep(splits(messages, budgets, sessions=sessions))`` of the same corpus.

    Examples
    --------
    >>> from panto_analytics.dataset.write import dataset_example
    >>> sweep_dataset(dataset_example(), [0, 100]).select("budget", "sessions", "noop_share").rows()
    [(0, 1, 0.0), (100, 1, 1.0)]
    """
    return sweep_from(dataset_histograms(root, budgets, engine=engine, address=address, task_rows=task_rows))


def _outcome_task(root: str, parts: list[str], *, budget: int) -> pl.DataFrame:
    """One bucket's :class:`Outcomes` at ``budget``, as a frame: the examples, then one row of counts."""
    messages, _ = _bucket(root, parts, False)
    o = outcomes_at(compute_splits(messages, [budget]), budget, turns=compute_turns(messages))
    counts = pl.DataFrame({SESSION: [None], "last_turn_tokens": [None], "zero": [o.zero],
                           "with_turns": [o.with_turns], "capped": [o.capped]})
    examples = o.examples.with_columns(zero=pl.lit(None, pl.Int64), with_turns=pl.lit(None, pl.Int64),
                                       capped=pl.lit(None, pl.Int64))
    return pl.concat([examples, counts], how="vertical_relaxed")


def _outcomes(root: str | Path, budget: int, engine: str, address: str | None, task_rows: int) -> list[str]:
    task = functools.partial(_outcome_task, budget=budget)
    frames = list(map_buckets(root, task, engine=engine, address=address, rows=task_rows))
    parts = []
    for f in frames:  # one per bucket
        rows = f.filter(pl.col("zero").is_not_null())
        examples = f.filter(pl.col("zero").is_null()).select(pl.col(SESSION).cast(pl.String),
                                                              pl.col("last_turn_tokens").cast(pl.UInt64))
        for zero, with_turns, capped in rows.select("zero", "with_turns", "capped").iter_rows():
            parts.append(Outcomes(budget, examples, int(zero), int(with_turns), int(capped)))
    return Outcomes.merge(parts).warnings() if parts else []


def recommend_dataset(root: str | Path, budgets: int | Iterable[int], rule: Rule | None = None, *,
                      engine: str = "local", address: str | None = None, task_rows: int = TASK_ROWS,
                      resamples: int = RESAMPLES, seed: int = SEED) -> Choice:
    """:func:`~panto_analytics.recommend` over the dataset at ``root``, task by task in bounded memory.

    Parameters
    ----------
    root, budgets, engine, address, task_rows
        As in :func:`sweep_dataset`.
    rule
        The rule (:class:`~panto_analytics.Rule`); None: the default rule.

    Returns
    -------
    Choice
        The same budget, reasons, table and warnings as ``recommend(splits(messages, budgets), rule,
        turns=turns(messages), windows=sessions["context_window"])`` (what ``panto-analytics recommend`` prints).

    Examples
    --------
    >>> from panto_analytics.dataset.write import dataset_example
    >>> recommend_dataset(dataset_example(), [0, 100]).budget
    100
    """
    rule = (rule or Rule()).on_splits()
    hist = dataset_histograms(root, budgets, with_sessions=False, engine=engine, address=address, task_rows=task_rows)
    table = coverage_from(hist, rule)
    windows = collect(scan_dataset(root, "sessions").select(pl.col("context_window").unique()), root).to_series().to_list()
    chosen = choose_from_coverage(table, rule, outcomes=lambda b: _outcomes(root, b, engine, address, task_rows),
                                  windows=windows)
    if resamples < 1:
        return chosen
    # The bootstrap resamples sessions: their split rows, written to a temporary Parquet file bucket group by
    # bucket group (write_splits) and read back lazily, give the same intervals as in memory.
    with tempfile.TemporaryDirectory(prefix="panto-splits-") as tmp:
        path = Path(tmp) / "splits.parquet"
        write_splits(root, budgets, path, task_rows=task_rows, with_sessions=False, hashed=True)
        return with_split_intervals(chosen, pl.scan_parquet(path), resamples=resamples, seed=seed)


def _splits_task(root: str, parts: list[str], *, budgets: list[int], with_sessions: bool,
                 hashed: bool = False) -> pa.Table:
    """One group of buckets' splits, as an Arrow table (what :func:`write_splits` writes); ``hashed``: the
    session hash (:data:`~panto_analytics.analysis.choose.bootstrap.HASH`) in place of the ids."""
    messages, sessions = _bucket(root, parts, with_sessions)
    found = compute_splits(messages, budgets, sessions=sessions)
    if hashed:
        found = found.with_columns(session_hashes(found[SESSION])).drop(SESSION)
    return found.to_arrow()


def write_splits(root: str | Path, budgets: int | Iterable[int], output: str | Path, *,
                 task_rows: int = TASK_ROWS, with_sessions: bool = True, hashed: bool = False) -> int:
    """Write every (session, budget) split of the dataset at ``root`` to the Parquet file ``output``, one row
    group per group of buckets, in bucket order, holding one group's rows at a time; returns the number of rows.
    ``with_sessions``: sessions without messages too (as ``splits`` does; ``recommend`` does not); ``hashed``:
    each session's hash in place of its id (what the bootstrap reads: read back, the ids of a million sessions
    held 140 MiB, a Categorical's strings interned for the life of the process; the hashes 8 MB). On a large
    dataset each group's splits are computed in the local engine's worker process (:func:`map_buckets`) and
    only written here: computed here, what each group left behind piled up in this process (measured on 1M
    synthetic sessions at one budget, 23M messages: a peak of 774 MiB here against 470 at 100k)."""
    rows = 0
    writer: pq.ParquetWriter | None = None
    task = functools.partial(_splits_task, budgets=budget_series(budgets).to_list(), with_sessions=with_sessions,
                             hashed=hashed)
    try:
        for table in map_buckets(root, task, engine="local", rows=task_rows):  # one per group of buckets, in order
            if writer is None:
                writer = pq.ParquetWriter(output, table.schema, compression="zstd")
            writer.write_table(table)
            rows += table.num_rows
    finally:
        if writer is not None:
            writer.close()
    if writer is None:
        compute_splits(pl.DataFrame(schema=scan_dataset(root).collect_schema()), budgets).write_parquet(output)
    return rows
