"""Run one function over many files on all cores.

Parsing is Python, so parallelism means processes. How the work is shared
depends on whether workers were launched beforehand (see below).

With no launched workers, :func:`run` starts its own pool with ``spawn``
(safe with Polars' threads, and the same on every platform), which costs a
few hundred milliseconds; so a pool is used only when the work is big enough
(``min_weight``). A read's threshold is chosen by
:func:`panto_analytics.ingest._schedule.pool_threshold` for its files and
cores: 48 MB where most of the input has no columnar fast path, 256 MB where
it has one, and no pool at all for such input on fewer than
``FAST_POOL_MIN_CORES`` (3) cores; :data:`MIN_PARALLEL_BYTES` (256 MB) is
only the default of a caller that names none. The calling process never
waits for the pool.
The files are queued biggest first; each worker, once it is up, takes the
next file from the front, one at a time; the calling process takes files
from the back meanwhile, until the queue is empty. Small inputs are done
before a worker is even up (and no worker holds any of them); big ones keep
every core busy, and the biggest files, started first, do not straggle at
the end. If the pool breaks (a worker killed, say by the OOM killer), the
calling process finishes alone.

A program that knows it will read can :func:`launch` its workers first
thing (the command line does, before it imports Polars), and :func:`run`
gives them the work. Two ways (:data:`LAUNCH_METHODS`):

- ``"fork"`` (the default where it is safe): :func:`launch` imports the
  parsers here, then forks ``jobs`` workers at once, before any Polars work
  has started a thread pool here. The workers share the imports (no second
  import of Polars and Arrow), and a read's batches (contiguous runs of
  files, balanced by bytes) are handed to them in file order while the
  calling process only waits: both cores parse, and the caller holds the
  results (message frames), never the parser's working memory.
- ``"spawn"``: one fresh worker that imports the parsers itself, its start
  overlapping the caller's imports; it parses every batch of a small read,
  one after the other.

Fork is used only on Linux, and only when Polars and Arrow were not imported
before :func:`launch` (then nothing has used them, and no thread pool of
theirs can be caught mid-work by the fork); otherwise a ``"fork"`` launch
spawns. At the fork the process holds only the idle helper threads the
imports start (jemalloc's background purgers and OpenBLAS's pool, both
handled by their own fork hooks, and Polars' idle spill cleaner); a worker
starts Polars' query threads afresh on its first query. The objects the
imports made are frozen (:func:`gc.freeze`) before the fork: no collection
here or in a worker walks them again (a worker's collections took about
0.04 s of CPU each, walking the inherited modules and copying the pages they
touched). :func:`close` ends the workers.

Every way a command ends, ends its workers, and nothing waits on them
without a bound (issue 32: a fast command once waited forever for a worker
whose stop had been lost). The workers are forked with Ctrl-C and SIGTERM
blocked, and a worker sets its own handling of both before it takes them
(:func:`_start_sharing`): a signal sent to it before then waits for it (in
a forked child, Python drops a signal caught before its own after-fork
reset, and that worker then never stopped). A worker ends with the process
that started it, however that ends (:func:`_die_with`). :func:`close` tells
each worker to stop, waits :data:`STOP_WAIT_S` at most, then kills any left.

>>> run(abs, [-1, -2, 3], weights=[1, 2, 3], jobs=1)
[1, 2, 3]
"""
from __future__ import annotations

import contextlib
import gc
import importlib
import importlib.abc
import multiprocessing
import os
import signal
import sys
import threading
import time
import types
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

__all__ = ["LAUNCH_METHODS", "MIN_PARALLEL_BYTES", "as_program", "close", "default_jobs", "keep_pandas_out", "launch", "launched",
           "launched_workers", "run", "threads_here"]

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


#: How many processes parse at once on this machine's cores, this one included: 1 in a process that parses alone;
#: a worker learns its number as it starts (:func:`_start_sharing`).
_sharing = 1


def threads_here(most: int = 4) -> int:
    """The threads a columnar fast path may use in this process: its share of the cores, 1 to ``most``.

    A process that parses alone takes every core; each of several parsing
    processes (forked workers, a pool and its caller) takes its share, so
    that threads do not outnumber the cores: the fast paths hold the GIL
    for much of their time, and a thread beyond the cores only contends.

    >>> 1 <= threads_here() <= 4
    True
    """
    return max(1, min(most, default_jobs() // _sharing))


def _start_sharing(sharing: int, parent: int) -> None:
    """A forked worker's start: it is one of ``sharing`` parsing processes, it ends with ``parent`` and on SIGTERM,
    and Ctrl-C is the caller's to handle; then the signals held since the fork (:func:`_stop_signals_held`) come in."""
    global _sharing
    _sharing = max(1, sharing)
    _stop_at_once(parent)


#: The signals that stop a command: held while workers are forked (:func:`_stop_signals_held`).
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

#: Seconds :func:`close` waits for workers told to stop before it kills them, and again for the killed ones.
STOP_WAIT_S = 2.0


@contextmanager
def _stop_signals_held():
    """Hold Ctrl-C and SIGTERM in this thread meanwhile, so that a process forked here starts with them held.

    A forked child runs Python's after-fork reset before any of its code: a
    signal that came before it (a fast command closing its workers as they
    start, on a loaded machine) is dropped there, and the worker, never
    told to stop, waited on its queue forever, and the command for it. Held,
    the signal waits in the kernel until the worker has set what it does
    with it (:func:`_stop_at_once`). Here, a signal sent to the process meanwhile
    goes to another thread or waits until the end of the block: none is lost.
    """
    if not hasattr(signal, "pthread_sigmask"):  # not on POSIX: nothing is forked
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


@contextmanager
def _stop_signals_deferred() -> Iterator[None]:
    """Run the block whole: a Ctrl-C or SIGTERM that comes meanwhile is acted on as it ends, not in the middle.

    Python runs a signal's handler in the main thread at its next bytecode,
    whichever thread the kernel gave the signal to (a library's idle thread,
    when the main thread holds it, see :func:`_stop_signals_held`). Raised
    mid-way through forking the workers, between a worker's start and the
    pool recording it, or through :func:`close`, between ending a worker
    and reaping it, the handler's exception left a worker no one ends or a
    zombie no one reaps (the stress test's one worker left behind in 300,
    issue 32). Here the block's signals are only noted; as it ends, the
    handler that was there runs for the first one (once: a second Ctrl-C
    meanwhile asks for nothing more). Outside the main thread, where a
    handler cannot be set, the block runs as it is.

    >>> with _stop_signals_deferred():
    ...     pass
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []
    before: dict[int, Any] = {sig: signal.getsignal(sig) for sig in _STOP_SIGNALS}
    for sig in _STOP_SIGNALS:
        signal.signal(sig, lambda signum, frame: came.append(signum))
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
        if came:
            _act_on(came[0], before[came[0]])


def _act_on(signum: int, handler: Any) -> None:
    """Do what ``handler`` (as :func:`signal.getsignal` gives it) does with ``signum``, now."""
    if callable(handler):
        handler(signum, None)
    elif handler == signal.SIG_DFL:
        signal.raise_signal(signum)   # its default: the process ends (Ctrl-C's default handler is a callable)


def _stop_at_once(parent: int) -> None:
    """In a worker: SIGTERM ends it at once, whatever it waits on (a Python handler runs only between bytecodes);
    Ctrl-C is ignored (the caller handles it and ends the workers); it ends with ``parent``; then the signals are
    let in (held by a fork, they end it now)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _ignore_ctrl_c()
    _die_with(parent)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)


def _die_with(parent: int) -> None:
    """Have the kernel kill this worker when ``parent`` ends (Linux), however it ends (even by SIGKILL): no worker
    outlives its command; a worker whose parent is gone already ends now."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


#: The worker pool :func:`launch` started, or None; how it was started; how many workers it holds.
_launched: ProcessPoolExecutor | None = None
_launched_method: str | None = None
_launched_count = 0

#: Whether :func:`launch` froze this process's objects (:func:`gc.freeze`): :func:`close` gives them back.
_froze = False

#: What a launched worker imports as it starts: the parsing code and its libraries.
PARSER_MODULE = "panto_analytics.ingest.pipeline"

#: How :func:`launch` starts workers: forked after the imports, or spawned to import on their own.
LAUNCH_METHODS = ("fork", "spawn")

#: Libraries whose thread pools must not be running when a worker is forked: if any was imported before
#: :func:`launch`, it may have been used, so the launch spawns instead.
_THREADED_LIBRARIES = ("polars", "pyarrow")


def _fork_is_safe() -> bool:
    """Whether forking here cannot catch a library's thread mid-work (see the module docstring)."""
    return sys.platform.startswith("linux") and not any(name in sys.modules for name in _THREADED_LIBRARIES)


def launch(jobs: int | None = None, module: str = PARSER_MODULE, method: str = "fork") -> bool:
    """Start parsing workers now, so that :func:`run` finds them ready.

    ``method="fork"`` imports ``module`` here and forks ``jobs`` workers
    that share it (spawned instead where forking is not safe, see
    :func:`_fork_is_safe`); ``"spawn"`` starts one worker that imports
    ``module`` itself, its start overlapping the caller's own (the pool may
    grow to ``jobs - 1`` workers when a read is big enough for a pool, see
    :func:`run`). Nothing is started with one job, or when workers are
    already launched; returns whether any was started.
    """
    global _launched, _launched_method, _launched_count, _froze
    if method not in LAUNCH_METHODS:
        raise ValueError(f"method must be one of {LAUNCH_METHODS}, not {method!r}")
    jobs = default_jobs() if jobs is None else jobs
    if _launched is not None or jobs < 2:
        return False
    if method == "fork" and not _fork_is_safe():
        method = "spawn"
    if method == "fork":
        collecting = gc.isenabled()
        gc.disable()   # imports make many objects and free few: the collector's passes would find nothing
        try:
            importlib.import_module(module)  # here, once: the forked workers share it
            importlib.import_module("ctypes")  # and what a worker's start uses (_die_with)
        finally:
            if collecting:
                gc.enable()
        pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork"),
                                   initializer=_start_sharing, initargs=(jobs, os.getpid()))
        # Known before a worker exists: a Ctrl-C or SIGTERM held over the fork comes in as it ends, and the
        # caller's close() must find the pool then (else its workers outlive the command, and its exit waits
        # on them forever: the stress test's one hang in 300).
        _launched, _launched_method = pool, method
        # What the imports made lives as long as the process: the collector leaves it alone from now on, here
        # and in the workers, whose collections would otherwise walk it all (and copy every page they touch).
        gc.freeze()
        _froze = True
        with warnings.catch_warnings():  # Python 3.12+ warns of any thread; the libraries' own are fork-safe
            warnings.filterwarnings("ignore", message=".*fork.*", category=DeprecationWarning)
            with _stop_signals_deferred(), _stop_signals_held():
                pool.submit(_ready)  # forks every worker now, before this process starts any thread of its own
        _launched_count = jobs
    else:
        pool = ProcessPoolExecutor(max_workers=jobs - 1, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_start_worker, initargs=(module, os.getpid()))
        _launched, _launched_method = pool, method   # as above: known before the worker is started
        with _stop_signals_deferred(), _main_not_inherited():
            pool.submit(_ready)  # starts one worker, which imports ``module``
        _launched_count = 1
    return True


def _ignore_ctrl_c() -> None:
    """Ctrl-C is the caller's to handle (it ends the workers): no traceback from a worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _start_worker(module: str, parent: int) -> None:
    """A spawned worker's start: it ends with ``parent``, Ctrl-C is the caller's to handle, then the imports.

    It parses alone (the caller waits) unless a read big enough for a pool
    starts more of them; it keeps every core for its threads.
    """
    _stop_at_once(parent)
    _block_pandas()
    importlib.import_module(module)


def launched_workers() -> int:
    """How many launched workers share a small read at once: 0 when none is launched.

    Forked workers are all up and share a read's batches; a spawned one
    parses them one after the other.
    """
    return _launched_count if _launched is not None else 0


class _NoPandas(importlib.abc.MetaPathFinder):
    """An import finder that says pandas is not installed (see :func:`keep_pandas_out`)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r} (kept out of this parsing process)", name=name)
        return None


#: Whether this process is the command line's own (:func:`as_program`): only there is pandas kept out.
_program = False


def as_program() -> None:
    """Mark this process as the ``panto-analytics`` console script's own (``cli.run`` calls it first).

    A process that imports the package (a notebook, a test, a command run in
    process through click's ``CliRunner``) is not marked: it may want pandas.
    """
    global _program
    _program = True


def keep_pandas_out() -> bool:
    """In the command line's own process, make a read go as if pandas were not installed; whether it did.

    pyarrow imports pandas, when it is installed, the first time it builds an
    array (to check whether the input is a pandas object): about 0.3 s of CPU
    in every process that parses, for a library a read never hands it. The
    command line calls this where it reads session files (Ray, which uses
    pandas, runs only over datasets), and so does every parsing worker
    (:func:`_block_pandas`). Any other process (not :func:`as_program`), or
    one that has read before or imported pandas, is left as it is.

    >>> keep_pandas_out()   # a test's process: left alone
    False
    """
    if not _program or "pandas" in sys.modules or PARSER_MODULE in sys.modules:
        return False
    _block_pandas()
    return True


def _start_pool_worker(sharing: int, parent: int) -> None:
    """A worker of :func:`run`'s own pool: one of ``sharing`` parsing processes (the caller parses too), pandas out;
    it ends with ``parent``."""
    global _sharing
    _sharing = max(1, sharing)
    _die_with(parent)
    _block_pandas()


def _block_pandas() -> None:
    """Put :class:`_NoPandas` first among the import finders (once); a parsing worker's start calls it."""
    if "pandas" not in sys.modules and not any(isinstance(f, _NoPandas) for f in sys.meta_path):
        sys.meta_path.insert(0, _NoPandas())


def launched() -> bool:
    """Whether a launched worker pool is there to parse on."""
    return _launched is not None


def close() -> None:
    """End the launched workers now, without waiting for one still starting (nothing is left for them).

    Each worker is told to stop (SIGTERM, which ends it at once, see
    :func:`_stop_at_once`) and waited for :data:`STOP_WAIT_S` at most; any
    still there is killed and waited for as long again; every ended worker
    is reaped (no zombie outlives the command); then the pool is shut down,
    and its thread here, which ends as soon as it sees the workers gone, is
    waited for with the same bound. Nothing waits without a bound, and a
    Ctrl-C or SIGTERM that comes meanwhile is acted on once all that is done
    (:func:`_stop_signals_deferred`; the console script then ends at once,
    see :func:`panto_analytics.cli.app.leave`).
    """
    global _launched, _launched_method, _launched_count, _froze
    with _stop_signals_deferred():
        pool, _launched, _launched_method, _launched_count = _launched, None, None, 0
        if _froze:   # the collector looks at them again (a process that goes on after the read: a test, a notebook)
            gc.unfreeze()
            _froze = False
        if pool is not None:
            _end_pool(pool)


def _end_pool(pool: ProcessPoolExecutor) -> None:
    """Stop, kill what does not stop, reap, and shut down ``pool``: each wait bounded (see :func:`close`)."""
    manager = getattr(pool, "_executor_manager_thread", None)
    processes = list((getattr(pool, "_processes", None) or {}).values())
    running = processes
    try:
        for process in processes:
            with contextlib.suppress(Exception):
                process.terminate()
        running = _still_running(processes, STOP_WAIT_S)
    finally:
        for process in running:
            with contextlib.suppress(Exception):
                process.kill()
        _still_running(running, STOP_WAIT_S)
        _reap(processes, STOP_WAIT_S)
        pool.shutdown(wait=False, cancel_futures=True)
        if manager is not None:
            manager.join(STOP_WAIT_S)


def _reap(processes: Sequence[Any], seconds: float) -> None:
    """Collect the exit status of every one of ``processes`` that has ended, waiting ``seconds`` in all at most.

    An ended worker nobody has waited for is a zombie: it stays in the
    process table (and in the command's process group) until its parent
    reaps it, or, once the command has ended, until init does. The pool's
    thread may reap one meanwhile; then there is nothing left to collect.

    >>> _reap([], 1.0)
    """
    deadline = time.monotonic() + seconds
    for process in processes:
        with contextlib.suppress(Exception):   # closed, never started, or reaped by the pool's thread
            process.join(max(0.05, deadline - time.monotonic()))   # > 0: an ended one is waited for, not polled


def _still_running(processes: Sequence[Any], seconds: float) -> list[Any]:
    """Wait until every one of ``processes`` has ended, ``seconds`` at most; those still running then.

    Each one's sentinel tells: a pipe the kernel closes when the process
    ends, whoever reaps it (the pool's thread may, meanwhile).

    >>> _still_running([], 1.0)
    []
    """
    from multiprocessing.connection import wait as wait_for

    sentinels = {}
    for process in processes:
        with contextlib.suppress(ValueError, AttributeError):   # closed, or never started
            sentinels[process.sentinel] = process
    deadline = time.monotonic() + seconds
    while sentinels and (left := deadline - time.monotonic()) > 0:
        for ready in wait_for(list(sentinels), timeout=left):
            sentinels.pop(ready)
    return list(sentinels.values())


def run(fn: Callable[[T], R], items: Sequence[T], *, weights: Sequence[int], jobs: int | None = None,
        on_done: Callable[[int, R], None] | None = None, stop: Callable[[R], bool] | None = None,
        min_weight: int | None = None) -> list[R | None]:
    """``[fn(x) for x in items]``, spread over ``jobs`` processes (the caller included).

    Where the items go:

    - workers launched with ``"fork"`` (:func:`launch`): every read, whatever
      its size and ``jobs``, is handed to them in item order, as many at
      once as there are workers, while this process only waits;
    - workers launched with ``"spawn"``: a read below ``min_weight``, or
      with ``jobs`` 1, goes to the one launched worker, in item order; a
      bigger one is shared as with no launched workers, on that pool;
    - no launched workers: below ``min_weight``, or with ``jobs`` 1, this
      process does every item, in order; otherwise a ``spawn`` pool of
      ``jobs - 1`` workers takes the biggest items first while this
      process takes the smallest.

    Parameters
    ----------
    fn
        A module-level function (it is pickled by name for the workers).
    weights
        The cost of each item (its size in bytes): what ``min_weight`` is
        compared with, and, when a pool is shared with this process, the
        order (biggest first).
    jobs
        Processes to use, this one included; ``None``: all cores.
    on_done
        Called with ``(index, result)`` as each item finishes, possibly from
        another thread.
    stop
        When it returns True for a result, the items not yet started are
        dropped (their results stay ``None``): no point parsing on after a
        fatal error.
    min_weight
        The total weight from which a pool is shared with this process;
        default :data:`MIN_PARALLEL_BYTES`.

    An exception raised by ``fn`` (here or in a worker) is raised here,
    after the items already started are done: the first in item order
    (with forked workers, unless an earlier item stopped the run).
    """
    jobs = default_jobs() if jobs is None else max(1, jobs)
    min_weight = MIN_PARALLEL_BYTES if min_weight is None else min_weight
    small = len(items) < 2 or sum(weights) < min_weight
    if _launched is not None and items and (small or jobs == 1 or _launched_method == "fork"):
        return _run_on_launched(_launched, fn, items, on_done, stop, launched_workers())
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
                               initializer=_start_pool_worker, initargs=(workers + 1, os.getpid())) if own else _launched
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
                     on_done: Callable[[int, R], None] | None, stop: Callable[[R], bool] | None,
                     at_once: int) -> list[R | None]:
    """Every item on the launched workers, handed out in item order, ``at_once`` at a time (so a spawned pool
    starts no second worker); the rest here if the pool breaks.

    As each finishes, the next item is handed out. After a ``stop`` result no
    item is handed out any more, and those handed out already are finished:
    every item before a stopping one has run, and every result after it is
    None, as in a one-process read. An exception raised by ``fn``
    is raised here, the first in item order, unless an earlier item stopped
    the run (an item already in flight after it may fail; a one-process
    read would not have reached it).
    """
    results: list[R | None] = [None] * len(items)
    errors: dict[int, BaseException] = {}
    flying: dict[Future[R], int] = {}
    here: list[int] = []  # what a broken pool left to this process
    stop_at = len(items)  # the first item whose result stopped the run
    handed = 0

    def finish(i: int, result: R) -> None:
        nonlocal stop_at
        results[i] = result
        if on_done is not None:
            on_done(i, result)
        if stop is not None and stop(result):
            stop_at = min(stop_at, i)

    while True:
        while handed < stop_at and not errors and len(flying) < max(1, at_once):
            try:
                future = pool.submit(fn, items[handed])
            except RuntimeError:  # broken (BrokenProcessPool is one) or shut down: the rest is done here
                here.extend(range(handed, len(items)))
                handed = len(items)
                break
            flying[future] = handed
            handed += 1
        if not flying:
            break
        done, _ = wait(list(flying), return_when=FIRST_COMPLETED)
        for future in sorted(done, key=flying.__getitem__):  # in item order
            i = flying.pop(future)
            error = future.exception()
            if isinstance(error, BrokenProcessPool):  # the worker died on it: this process does it, and the rest
                here.extend([i, *range(handed, len(items))])
                handed = len(items)
            elif error is not None:
                errors[i] = error
            else:
                finish(i, future.result())
    for i in sorted(set(here)):
        if i > stop_at or (errors and min(errors) < i):
            break
        try:
            finish(i, fn(items[i]))
        except Exception as e:  # raised below: the first in item order
            errors[i] = e
    # An error after a stopping item is dropped: a one-process read, in item order, never got that far.
    first_error = min((i for i in errors if i <= stop_at), default=None)
    if first_error is not None:
        raise errors[first_error]
    # And so is a result after it: which items were in flight when the stop came is the scheduler's, so
    # the results are a one-process read's, whatever the timing.
    return [r if i <= stop_at else None for i, r in enumerate(results)]


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
