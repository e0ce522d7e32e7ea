"""The re-fetch check (``panto-analytics loss``) over a dataset, bucket by bucket: :func:`refetch_dataset`.

:func:`~panto_analytics.outcomes.recorded_refetch.refetch` measures each
cut on its own session's tool calls, so whole sessions can be measured
apart, with one exception: a pseudo-cut sits where a quiet session reaches
a context size at which *any* session of its agent recorded a compaction.
So the work runs in two passes over the buckets
(:func:`~panto_analytics.dataset.engines.map_buckets`, here or on Ray):

1. each task measures the compactions recorded in its sessions (reading the
   messages of those sessions only); the driver keeps their context sizes;
2. each task places and measures the pseudo-cuts of its quiet sessions at
   those sizes.

Each task's rows are reduced at once to
:func:`~panto_analytics.outcomes.recorded_refetch.refetch_partials` (sums,
and value counts for the medians), which merge exactly, so the summary
equals ``refetch_summary(refetch(...))`` of the whole corpus in memory, bit
for bit; the rows themselves go to ``on_cuts`` (a file writer) as they come
and are not kept. Memory holds one task's messages and rows, the context
sizes (distinct per agent) and the partials (bounded by the distinct
re-orientation counts), not the corpus.

The rows come recorded compactions first, then pseudo-cuts (as in memory),
each in bucket order here and in the order the tasks finish on Ray (sorted
by session within a task; the in-memory rows are sorted by session over the
whole corpus): the same rows, in another order when there are several
tasks.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from ..frame.schema import SESSION
from ..frame.tool_targets import references
from ..outcomes.orphan_loss import DEFAULT_HORIZON, ORPHAN_KINDS
from ..outcomes.recorded_refetch import (
    cut_rows,
    measure_cuts,
    merge_refetch_partials,
    pseudo_cuts,
    recorded_cut_rows,
    refetch_partials,
)
from .engines import gather, map_buckets
from .store import TASK_ROWS, collect, scan_parts

__all__ = ["DatasetRefetch", "refetch_dataset"]


@dataclass(frozen=True)
class DatasetRefetch:
    """What :func:`refetch_dataset` returns: ``summary`` (:func:`refetch_summary`'s table), ``agents`` (every
    ``source_format`` of the dataset's sessions, sorted) and ``cuts`` (the number of rows measured)."""

    summary: pl.DataFrame
    agents: list[str]
    cuts: int


def _sessions(root: str, parts: list[str]) -> pl.DataFrame:
    return collect(scan_parts(root, "sessions", parts).select(SESSION, "source_format", "compactions"), root)


def _messages_of(root: str, parts: list[str], ids: pl.Series) -> pl.DataFrame:
    """The messages of the sessions ``ids`` in ``parts``."""
    return collect(scan_parts(root, "messages", parts).filter(pl.col(SESSION).cast(pl.String).is_in(ids.implode())),
                   root)


def _recorded_task(root: str, parts: list[str], *, horizon: int, kinds: Sequence[str]) -> pl.DataFrame:
    """Pass 1 of one group of buckets: the rows of the compactions its sessions recorded."""
    compactions = collect(scan_parts(root, "compactions", parts), root)
    sessions = _sessions(root, parts)
    messages = _messages_of(root, parts, compactions[SESSION].cast(pl.String).unique())
    cuts = recorded_cut_rows(messages, compactions, sessions).collect()
    return measure_cuts(references(messages).collect(), cuts, horizon=horizon, kinds=kinds)


def _baseline_task(root: str, parts: list[str], *, sizes: pl.DataFrame, horizon: int,
                   kinds: Sequence[str]) -> pl.DataFrame:
    """Pass 2 of one group of buckets: the pseudo-cuts of its quiet sessions at ``sizes`` (``source_format``,
    ``context``: the recorded compactions' sizes over the whole dataset)."""
    sessions = _sessions(root, parts)
    quiet = sessions.filter((pl.col("compactions") == 0)
                            & pl.col("source_format").cast(pl.String).is_in(sizes["source_format"].implode()))
    messages = _messages_of(root, parts, quiet[SESSION].cast(pl.String))
    cuts = cut_rows(pseudo_cuts(messages, sizes, sessions), "baseline").collect()
    return measure_cuts(references(messages).collect(), cuts, horizon=horizon, kinds=kinds)


def refetch_dataset(root: str | Path, *, horizon: int = DEFAULT_HORIZON, kinds: Sequence[str] = ORPHAN_KINDS,
                    on_cuts: Callable[[pl.DataFrame], None] | None = None, engine: str = "local",
                    address: str | None = None, task_rows: int = TASK_ROWS) -> DatasetRefetch:
    """:func:`~panto_analytics.outcomes.recorded_refetch.refetch_summary` of
    :func:`~panto_analytics.outcomes.recorded_refetch.refetch` over the dataset at ``root``, bucket by bucket,
    here or on Ray (``engine="ray"``); ``on_cuts`` receives the rows of each task as they come (the module
    docstring says in which order).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from panto_analytics.dataset import write_dataset
    >>> root = pathlib.Path(tempfile.mkdtemp()) / "ds"
    >>> _ = write_dataset(["data/"], root, buckets=4, cache=False)
    >>> refetch_dataset(root, horizon=5).summary.select("source_format", "cut").rows()
    [('canonical', 'compaction'), ('canonical', 'baseline')]
    """
    run = functools.partial(map_buckets, root, engine=engine, address=address, rows=task_rows)
    partials: list[pl.DataFrame] = []
    sizes: list[pl.DataFrame] = []
    cuts = 0

    def take(rows: pl.DataFrame) -> None:
        nonlocal cuts
        cuts += rows.height
        partials.append(refetch_partials(rows))
        if on_cuts is not None:
            on_cuts(rows)

    for rows in run(functools.partial(_recorded_task, horizon=horizon, kinds=kinds)):  # one per task
        take(rows)
        sizes.append(rows.select(pl.col("source_format").cast(pl.String), pl.col("context").cast(pl.Int64)).unique())
    found = (pl.concat(sizes).unique().drop_nulls().sort("source_format", "context") if sizes
             else pl.DataFrame(schema={"source_format": pl.String, "context": pl.Int64}))
    if found.height:  # no recorded compaction: no size to place a pseudo-cut at
        for rows in run(functools.partial(_baseline_task, sizes=found, horizon=horizon, kinds=kinds)):
            take(rows)
    agents = gather(root, "sessions", lambda lf: lf.select(pl.col("source_format").cast(pl.String)).unique())
    return DatasetRefetch(merge_refetch_partials(partials), sorted(set(agents["source_format"].drop_nulls().to_list())),
                          cuts)
