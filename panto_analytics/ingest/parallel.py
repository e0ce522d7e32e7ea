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

>>> run(abs, [-1, -2, 3], weights=[1, 2, 3], jobs=1)
[1, 2, 3]
"""
from __future__ import annotations

import multiprocessing
import os
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

__all__ = ["MIN_PARALLEL_BYTES", "default_jobs", "run"]

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
    if jobs == 1 or len(items) < 2 or sum(weights) < min_weight:
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
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
    try:
        with _main_not_inherited():  # the workers start on these submits
            for _ in range(workers):
                pool.submit(_ready).add_done_callback(lambda f: schedule.feed(pool))
        schedule.work_here()
        schedule.wait()
    finally:
        # Do not wait for workers still starting up.
        pool.shutdown(wait=False, cancel_futures=True)
    if schedule.errors:
        raise schedule.errors[min(schedule.errors)]
    return schedule.results


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
