"""Where the per-bucket work of a dataset runs: here, bucket after bucket (``"local"``), or on Ray Data (``"ray"``).

A *bucket task* is a picklable callable ``task(root, parts)`` that reads
some whole buckets' parts of the dataset at ``root`` and returns a small
result: a frame (a histogram table, say) or several (a dict of frames).
:func:`map_buckets` runs it once per group of buckets
(:func:`~panto_analytics.dataset.bucket_groups`: consecutive buckets up to
about ``rows`` messages, so that a small bucket does not pay a query's fixed
cost alone) and yields the results; the caller merges them. A session never
spans two buckets, so every task sees whole sessions, and memory is bounded
by ``rows``, not by the corpus.

``"local"`` runs the tasks of a large dataset (more than
:data:`WORKER_MIN_ROWS` messages, in more than one group) in a worker
process, one task at a time, and replaces that worker every
:data:`TASKS_PER_WORKER` tasks: what a task leaves behind in a process (the
pages the allocator keeps after a task's frames are freed, the strings a
Categorical column interns for the life of the process) then goes with the
worker (whose allocator is told to return freed pages at once:
:data:`WORKER_ALLOCATOR`), and this process holds only the results, so that peak memory does
not grow with the number of tasks. The results come back pickled, exactly
as they left; a task's :class:`~panto_analytics.errors.InputError` comes back
as it was raised. A worker is started with ``spawn`` (safe with Polars'
threads); the next task is queued while this process takes the last one's
result, so the worker is seldom idle. Smaller datasets run here, task after
task (no worker to start).

``"ray"`` runs the same task on Ray Data: one row per group of buckets
(``ray.data.from_items``), ``map_batches`` with one group per batch (one
task each), each task's result out pickled, so that it comes back exactly as
it left (every column's type kept, Enum and Categorical included).
``ray.init()`` starts Ray on this machine, or joins the cluster at
``address`` (``"auto"``, ``"ray://head:10001"``). Ray is an optional extra:
``pip install 'panto_analytics[ray]'``.

>>> import tempfile
>>> list(map_buckets(tempfile.mkdtemp(), lambda root, parts: None, engine="local"))
[]
"""
from __future__ import annotations

import contextlib
import functools
import importlib.util
import logging
import multiprocessing
import os
import pickle
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any, TypeVar, cast

import polars as pl
import pyarrow as pa

from ..defaults import ENGINES, RAY_INSTALL
from ..errors import InputError
from .info import read_info
from .store import TASK_ROWS, bucket_groups, collect, scan_parts

__all__ = ["ENGINES", "RAY_INSTALL", "TASKS_PER_WORKER", "WORKER_ALLOCATOR", "WORKER_MIN_ROWS", "BucketTask", "EngineUnavailable", "gather",
           "map_buckets", "ray_available"]

#: Messages in a dataset above which the local engine runs its tasks in a worker process (see the module
#: docstring); below, starting the worker (about a second: it imports Polars) costs more than it saves.
WORKER_MIN_ROWS = 1_000_000

#: Tasks a local worker process runs before it is replaced by a fresh one. Measured on the replay of 1M
#: synthetic sessions (94 tasks of 250k messages), what one process keeps grows by a few MiB a task.
TASKS_PER_WORKER = 8


_T = TypeVar("_T")

#: A bucket task: ``task(root, parts)``, its result a frame or several (see the module docstring).
BucketTask = Callable[[str, list[str]], _T]


class EngineUnavailable(RuntimeError):
    """An engine that cannot run here (Ray not installed); the message says how to get it."""


def ray_available() -> bool:
    """Whether Ray Data can be imported."""
    return importlib.util.find_spec("ray") is not None


def map_buckets(root: str | Path, task: BucketTask[_T], *, engine: str = "local", address: str | None = None,
                rows: int = TASK_ROWS, workers: bool | None = None) -> Iterator[_T]:
    """``task(root, parts)`` for every group of buckets of the dataset at ``root``, in bucket order for
    ``"local"`` (in the order Ray finishes them for ``"ray"``).

    ``workers`` (``"local"`` only): run the tasks in a recycled worker process (True), here (False), or in a
    worker when the dataset has more than :data:`WORKER_MIN_ROWS` messages in more than one group (None);
    ``task`` must then be picklable (a module-level function, or a ``functools.partial`` of one)."""
    if engine not in ENGINES:
        raise ValueError(f"engine is one of {', '.join(ENGINES)}, got {engine!r}")
    groups = bucket_groups(root, rows)
    if engine == "local":
        if workers is None:
            workers = len(groups) > 1 and read_info(root).messages > WORKER_MIN_ROWS
        if workers and _picklable(task):  # one that is not (a lambda, say) runs here
            yield from _in_workers(str(root), groups, task)
            return
        for parts in groups:  # one iteration per group of buckets; the work inside is vectorized
            yield task(str(root), parts)
        return
    # Absolute: Ray's workers run in the directory Ray was started from, which need not be this one.
    yield from _on_ray(str(Path(root).absolute()), groups, task, address)


def _picklable(task: object) -> bool:
    try:
        pickle.dumps(task)
    except (pickle.PicklingError, AttributeError, TypeError):
        return False
    return True


def _in_workers(root: str, groups: list[list[str]], task: BucketTask[_T]) -> Iterator[_T]:
    """``task`` over ``groups`` in a worker process replaced every :data:`TASKS_PER_WORKER` tasks, results in
    order; one task is queued ahead, so the worker has the next one while this process takes a result."""
    with _worker_environment():  # read by each worker as it starts (the pool starts one every few tasks)
        yield from _run_in_workers(root, groups, task)


#: The allocator's settings of a worker process (jemalloc, Polars' allocator, reads ``_RJEM_MALLOC_CONF`` as
#: the process starts; Polars puts its own defaults before what it finds there, the last setting wins): freed
#: pages go back to the system at once, not kept for later (measured on ``cost`` of 1M synthetic sessions, 23
#: tasks of 1M messages: the worker's peak 306 MiB against 414 by default, and 301 against 335 at 100k
#: sessions: what a task frees no longer piles up over the worker's tasks). A setting of the user's own is kept.
WORKER_ALLOCATOR = "dirty_decay_ms:0,muzzy_decay_ms:0"

_ALLOCATOR_KEY = "_RJEM_MALLOC_CONF"
#: What Polars itself puts in ``_RJEM_MALLOC_CONF`` as it is imported (not the user's).
_POLARS_OWN = {"dirty_decay_ms:500", "muzzy_decay_ms:1000", "thp:always", "metadata_thp:always"}


@contextlib.contextmanager
def _worker_environment() -> Iterator[None]:
    """:data:`WORKER_ALLOCATOR` in the environment the workers inherit, for as long as the pool lives, unless the
    user set the allocator's settings."""
    before = os.environ.get(_ALLOCATOR_KEY)
    if any(s and s not in _POLARS_OWN for s in (before or "").split(",")):  # the user's: kept
        yield
        return
    os.environ[_ALLOCATOR_KEY] = f"{before},{WORKER_ALLOCATOR}" if before else WORKER_ALLOCATOR
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(_ALLOCATOR_KEY, None)
        else:
            os.environ[_ALLOCATOR_KEY] = before


def _run_in_workers(root: str, groups: list[list[str]], task: BucketTask[_T]) -> Iterator[_T]:
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"), max_tasks_per_child=TASKS_PER_WORKER)
    pending: deque[Future[_T]] = deque()
    todo = iter(groups)
    try:
        for parts in todo:
            pending.append(pool.submit(task, root, parts))
            if len(pending) < 2:
                continue
            yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def gather(root: str | Path, table: str, query: Callable[[pl.LazyFrame], pl.LazyFrame], *,
           rows: int = TASK_ROWS) -> pl.DataFrame:
    """``query`` of ``table``'s rows, group of buckets after group of buckets here, concatenated: for a small
    result (the recorded summaries, the agents), read in the memory of one group, where one query over every
    part of a large dataset holds far more (measured at 1M synthetic sessions, 23M messages in 5,120 parts: the
    recorded summaries read in one query peaked at 455 MiB, group by group at 193 MiB). On a large dataset, a
    ``query`` that pickles (a module-level function) runs in the local engine's worker process.

    >>> import tempfile
    >>> gather(tempfile.mkdtemp(), "sessions", lambda lf: lf.select("session_id")).columns
    ['session_id']
    """
    task = functools.partial(_gather_task, table=table, query=query)
    found = list(map_buckets(root, task, engine="local", rows=rows))  # in a worker when large and ``query`` pickles
    return pl.concat(found) if found else task(str(root), [])


def _gather_task(root: str, parts: list[str], *, table: str, query: Callable[[pl.LazyFrame], pl.LazyFrame]) -> pl.DataFrame:
    return collect(query(scan_parts(root, table, parts)), root)


def _on_ray(root: str, buckets: list[list[str]], task: BucketTask[_T], address: str | None) -> Iterator[_T]:
    if not ray_available():
        raise EngineUnavailable(f"the Ray engine needs Ray Data: {RAY_INSTALL}")
    if not buckets:
        return
    import ray
    import ray.data

    if not ray.is_initialized():
        ray.init(address=address, ignore_reinit_error=True, include_dashboard=False, log_to_driver=False,
                 logging_level=logging.ERROR)
    logging.getLogger("ray.data").setLevel(logging.ERROR)  # no per-run INFO lines on stderr
    ray.data.DataContext.get_current().enable_progress_bars = False
    ds = ray.data.from_items([{"parts": parts} for parts in buckets], override_num_blocks=len(buckets))
    out = ds.map_batches(cast(Any, _ray_batch), batch_size=1, batch_format="pyarrow", fn_kwargs={"root": root, "task": task})
    try:
        for batch in out.iter_batches(batch_format="pyarrow", batch_size=None):
            for result in cast(pa.Table, batch).column(_RESULT).to_pylist():  # one per task
                yield pickle.loads(result)
    except Exception as e:  # a task's bad input comes back wrapped in Ray's error: one line, as locally
        cause = getattr(e, "cause", None)
        if isinstance(cause, InputError):
            raise cause from None
        raise


#: The column of a Ray task's output: the task's result, pickled.
_RESULT = "result"


def _ray_batch(batch: pa.Table, *, root: str, task: BucketTask[Any]) -> pa.Table:
    """One Ray task: each group of buckets of ``batch`` (one, with ``batch_size=1``) through ``task``, its
    result pickled in a row of its own: Ray's blocks then hold bytes only, so a column's type (an Enum, a
    Categorical, whose dictionaries differ from block to block) never meets Ray's Arrow concatenation, and
    several frames need not share one table's columns."""
    results = [pickle.dumps(task(root, list(parts))) for parts in batch.column("parts").to_pylist()]
    return pa.table({_RESULT: pa.array(results, pa.large_binary())})
