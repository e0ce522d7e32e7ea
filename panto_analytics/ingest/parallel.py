"""Run one function over many files on all cores, biggest first.

Parsing is Python, so parallelism means processes. Worker processes are
started with ``spawn`` (safe with Polars' threads, and the same on every
platform), which costs a few hundred milliseconds; so a pool is used only
when the work is big enough (:data:`MIN_PARALLEL_BYTES`), and the calling
process never waits for it. The files are queued biggest first; each worker,
once it is up, takes the next file from the front, one at a time; the
calling process takes files from the back meanwhile, until the queue is
empty. Small inputs are done before a worker is even up (and no worker
holds any of them); big ones keep every core busy, and the biggest files,
started first, do not straggle at the end. If the pool breaks (a worker
killed, say by the OOM killer), the calling process finishes alone.

A program that knows it will read can :func:`launch` a worker first thing
(the command line does, before it imports Polars): the worker's start and
imports then overlap the caller's, and :func:`run` gives it the work. Below
``min_weight`` the launched worker parses everything, one item after the
other, and the calling process only waits: it holds the results (message
frames), never the parser's working memory. :func:`close` ends it.

>>> run(abs, [-1, -2, 3], weights=[1, 2, 3], jobs=1)
[1, 2, 3]
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import multiprocessing
import os
import signal
import sys
import threading
import time
import types
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

__all__ = ["MIN_PARALLEL_BYTES", "close", "default_jobs", "keep_pandas_out", "launch", "launched", "run"]

T = TypeVar("T")
R = TypeVar("R")

#: Less work than this (in bytes of input) is done in the calling process alone.
#: Starting a worker costs about a second (it imports Polars, Arrow, NumPy), and
#: the columnar fast paths already use every core through threads: below this
#: much input, one process is faster.
MIN_PARALLEL_BYTES = 256_000_000


def default_jobs() -> int:
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


#: The worker pool :func:`launch` started, or None.
_launched: ProcessPoolExecutor | None = None

#: What a launched worker imports as it starts: the parsing code and its libraries.
PARSER_MODULE = "panto_analytics.ingest.pipeline"


def launch(jobs: int | None = None, module: str = PARSER_MODULE) -> bool:
    """Start a worker process now, importing ``module``, so that its start overlaps the caller's own.

    :func:`run` uses it from then on. Nothing is started with one job, or
    when a worker is already launched; returns whether one was started. The
    pool may grow to ``jobs - 1`` workers when a read is big enough for a
    pool (see :func:`run`).
    """
    global _launched
    jobs = default_jobs() if jobs is None else jobs
    if _launched is not None or jobs < 2:
        return False
    pool = ProcessPoolExecutor(max_workers=jobs - 1, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_start_worker, initargs=(module,))
    with _main_not_inherited():
        pool.submit(_ready)  # starts one worker, which imports ``module``
    _launched = pool
    return True


def _start_worker(module: str) -> None:
    """A launched worker's start: Ctrl-C is the caller's to handle (it ends the worker), then the imports."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    keep_pandas_out()
    importlib.import_module(module)


class _NoPandas(importlib.abc.MetaPathFinder):
    """An import finder that says pandas is not installed (see :func:`keep_pandas_out`)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r} (kept out of this parsing process)", name=name)
        return None


def keep_pandas_out() -> bool:
    """Make this process read as if pandas were not installed; returns whether it did.

    pyarrow imports pandas, when it is installed, the first time it builds an
    array (to check whether the input is a pandas object): about 0.3 s of CPU
    in every process that parses, for a library a read never hands it. The
    command line calls this where it reads session files (Ray, which uses
    pandas, runs only over datasets), and so does every parsing worker.
    A process that has read before, or imported pandas, is left as it is
    (a notebook, a test): it may want pandas.

    >>> from panto_analytics.ingest import pipeline   # this process reads: it is left alone
    >>> keep_pandas_out()
    False
    """
    if "pandas" in sys.modules or PARSER_MODULE in sys.modules:
        return False
    if not any(isinstance(f, _NoPandas) for f in sys.meta_path):
        sys.meta_path.insert(0, _NoPandas())
    return True


def launched() -> bool:
    """Whether a launched worker pool is there to parse on."""
    return _launched is not None


def close() -> None:
    """End the launched workers now, without waiting for one still starting (nothing is left for them)."""
    global _launched
    pool, _launched = _launched, None
    if pool is None:
        return
    processes = list(getattr(pool, "_processes", None) or {})
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(Exception):
            process.terminate()


def run(fn: Callable[[T], R], items: Sequence[T], *, weights: Sequence[int], jobs: int | None = None,
        on_done: Callable[[int, R], None] | None = None, stop: Callable[[R], bool] | None = None,
        min_weight: int | None = None) -> list[R | None]:
    """``[fn(x) for x in items]``, spread over ``jobs`` processes (the caller included).

    Parameters
    ----------
    fn
        A module-level function (it is pickled by name for the workers).
    weights
        The cost of each item (its size in bytes); biggest go first.
    jobs
        Processes to use, this one included; ``None``: all cores; 1: no pool.
    on_done
        Called with ``(index, result)`` as each item finishes, possibly from
        another thread.
    stop
        When it returns True for a result, the items not yet started are
        dropped (their results stay ``None``): no point parsing on after a
        fatal error.
    min_weight
        Below this total weight, no pool is started; default :data:`MIN_PARALLEL_BYTES`.

    An exception raised by ``fn`` (here or in a worker) is raised here,
    after the items already started are done.
    """
    jobs = default_jobs() if jobs is None else max(1, jobs)
    min_weight = MIN_PARALLEL_BYTES if min_weight is None else min_weight
    small = len(items) < 2 or sum(weights) < min_weight
    if _launched is not None and items and (small or jobs == 1):
        return _run_on_launched(_launched, fn, items, on_done, stop)
    if jobs == 1 or small:
        results: list[R | None] = [None] * len(items)
        for i in range(len(items)):  # in order: the first bad file is the one reported
            result = fn(items[i])
            results[i] = result
            if on_done is not None:
                on_done(i, result)
            if stop is not None and stop(result):
                break
        return results

    schedule = _Schedule(fn, items, sorted(range(len(items)), key=lambda i: -weights[i]), on_done, stop)
    workers = min(jobs - 1, len(items) - 1)
    own = _launched is None
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=keep_pandas_out) if own else _launched
    assert pool is not None
    try:
        with _main_not_inherited():  # the workers start on these submits (a launched one is up, or nearly)
            for _ in range(workers):
                pool.submit(_ready).add_done_callback(lambda f: schedule.feed(pool))
        schedule.work_here()
        schedule.wait()
    finally:
        if own:  # do not wait for workers still starting up
            pool.shutdown(wait=False, cancel_futures=True)
    if schedule.errors:
        raise schedule.errors[min(schedule.errors)]
    return schedule.results


def _run_on_launched(pool: ProcessPoolExecutor, fn: Callable[[T], R], items: Sequence[T],
                     on_done: Callable[[int, R], None] | None, stop: Callable[[R], bool] | None) -> list[R | None]:
    """Every item on the launched worker, in order, one at a time (so no second worker starts); the rest here
    if the pool breaks. An exception raised by ``fn`` is raised here."""
    results: list[R | None] = [None] * len(items)
    for i in range(len(items)):
        try:
            future: Future[R] | None = pool.submit(fn, items[i])
        except RuntimeError:  # broken (BrokenProcessPool is one) or shut down
            future = None
        try:
            result = future.result() if future is not None else fn(items[i])
        except BrokenProcessPool:  # the worker died on it: this process does it
            result = fn(items[i])
        results[i] = result
        if on_done is not None:
            on_done(i, result)
        if stop is not None and stop(result):
            break
    return results


class _Schedule(Generic[T, R]):
    """The shared queue: workers take from the front, the calling process from the back."""

    def __init__(self, fn: Callable[[T], R], items: Sequence[T], order: list[int],
                 on_done: Callable[[int, R], None] | None, stop: Callable[[R], bool] | None) -> None:
        self.fn, self.items, self.on_done, self.stop = fn, items, on_done, stop
        self.queue = deque(order)
        self.results: list[R | None] = [None] * len(items)
        self.errors: dict[int, BaseException] = {}
        self.in_flight: set[Future[Any]] = set()
        self.stopped = False
        self.lock = threading.Lock()

    def _next(self, front: bool) -> int | None:
        with self.lock:
            if self.stopped or not self.queue:
                return None
            return self.queue.popleft() if front else self.queue.pop()

    def _finish(self, i: int, result: R) -> None:
        self.results[i] = result
        if self.on_done is not None:
            self.on_done(i, result)
        if self.stop is not None and self.stop(result):
            self.stopped = True

    def feed(self, pool: ProcessPoolExecutor) -> None:
        """Give a worker that is ready its next item (runs in the pool's thread)."""
        i = self._next(front=True)
        if i is None:
            return
        try:
            future = pool.submit(self.fn, self.items[i])
        except (BrokenProcessPool, RuntimeError):  # broken or shut down: give it back
            with self.lock:
                self.queue.append(i)
            return
        with self.lock:
            self.in_flight.add(future)
        future.add_done_callback(lambda f: self._landed(i, f, pool))

    def _landed(self, i: int, future: Future[R], pool: ProcessPoolExecutor) -> None:
        if future.cancelled():  # only at shutdown, after an error here
            return
        error = future.exception()
        if isinstance(error, BrokenProcessPool):
            with self.lock:
                self.queue.append(i)  # the calling process will do it
        elif error is not None:
            self.errors[i] = error
            self.stopped = True
        else:
            self._finish(i, future.result())
            self.feed(pool)
        with self.lock:
            self.in_flight.discard(future)

    def work_here(self) -> None:
        """Take items from the back of the queue until it is empty."""
        while (i := self._next(front=False)) is not None:
            self._finish(i, self.fn(self.items[i]))

    def wait(self) -> None:
        """Wait for the workers' items; do here any a broken pool gave back."""
        while True:
            with self.lock:
                flying = set(self.in_flight)
            if flying:
                running = {f for f in flying if not f.done()}
                if running:
                    wait(running, return_when=FIRST_COMPLETED)
                else:
                    time.sleep(0.0005)  # a finished item's callback is still handing out the next one
                continue
            self.work_here()
            with self.lock:
                if not self.in_flight and (self.stopped or not self.queue):
                    return


def _ready() -> None:
    """A worker's first task: it is up."""


@contextmanager
def _main_not_inherited():
    """Start workers without re-running the caller's ``__main__``.

    ``spawn`` re-imports the main script in each worker, which fails (and
    would start pools of its own) when a script calls us without an
    ``if __name__ == "__main__":`` guard. The workers only need
    ``fn``, which lives in an importable module, so they are started while
    ``__main__`` is a blank module: nothing to re-import.
    """
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main
