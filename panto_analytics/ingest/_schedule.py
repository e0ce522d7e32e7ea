"""How files are grouped into tasks, and when worker processes pay off."""
from __future__ import annotations

import sys

from ..errors import InputError
from ..formats import adapter, detect_format
from . import parallel
from .cache import FileKey
from .paths import PathLike

__all__ = ["FAST_POOL_MIN_CORES", "NO_POOL", "batches", "pool_threshold"]


#: At most this many bytes, or files, are parsed in one task: enough that the
#: columnar fast paths pay their fixed costs once for many small files.
BATCH_BYTES = 64_000_000


BATCH_FILES = 1024


#: Input from which worker processes pay off when most of it has no columnar
#: fast path (Python parses it alone, so a second process halves the time).
SLOW_PARALLEL_BYTES = 48_000_000


_SAMPLE_FILES = 32


#: Fewest cores on which files with a columnar fast path are shared with a pool of workers. Below, the fast
#: paths' threads take every core already and a spawned worker only adds its start: on 2 cores, a cold in-process
#: read of 313 MB (4,500 synthetic canonical sessions) took 5.26-7.75x its orjson floor with the pool (the default
#: jobs) against 4.68-5.08x with jobs=1, four processes each, interleaved, load 19-23 (issue 31 item 10:
#: ``python -m benchmarks.against --against HEAD --sessions 4500 --rounds 2 --repeat 2``).
FAST_POOL_MIN_CORES = 3

#: A threshold no input reaches: no pool.
NO_POOL = sys.maxsize


def pool_threshold(keys: list[FileKey], format: str | None, cores: int | None = None) -> int:
    """The input size from which to start worker processes for these files.

    :data:`parallel.MIN_PARALLEL_BYTES` suits formats with a columnar fast
    path, which already use every core through threads, on a machine of
    :data:`FAST_POOL_MIN_CORES` cores or more (``cores``: this process's, by
    default); on fewer, such files never start a pool (:data:`NO_POOL`), so
    the default ``jobs`` does what ``jobs=1`` does. Files parsed by Python
    alone want a pool much sooner. A sample of the files tells which kind
    dominates (a guess for scheduling only: every file is detected again
    where it is parsed).

    >>> from panto_analytics.ingest.cache import FileKey
    >>> keys = [FileKey("a", "a.jsonl", 300_000_000, 0, 0)]
    >>> pool_threshold(keys, "canonical", cores=2) == NO_POOL, pool_threshold(keys, "canonical", cores=4)
    (True, 256000000)
    """
    total = sum(k.size for k in keys)
    if total < SLOW_PARALLEL_BYTES:
        return parallel.MIN_PARALLEL_BYTES   # too small for a pool either way
    sample = keys[:: max(1, len(keys) // _SAMPLE_FILES)]
    slow = sum(k.size for k in sample if not _has_fast_path(format, k.path))
    sampled = sum(k.size for k in sample) or 1
    if slow / sampled * total >= SLOW_PARALLEL_BYTES:
        return SLOW_PARALLEL_BYTES
    cores = parallel.default_jobs() if cores is None else cores
    return parallel.MIN_PARALLEL_BYTES if cores >= FAST_POOL_MIN_CORES else NO_POOL


def _has_fast_path(format: str | None, path: PathLike) -> bool:
    try:
        return adapter(format or detect_format(path)).read_frames is not None
    except InputError:
        return False


#: Below this many bytes a batch is not split further to share it between forked workers: each batch pays
#: fixed costs (its frame's trip back, the fast path's set-up).
MIN_SHARED_BATCH_BYTES = 1_000_000


def batches(keys: list[FileKey], jobs: int | None, pool_from: int, *, shared_by: int = 0) -> list[list[FileKey]]:
    """Consecutive files grouped into tasks, small enough to keep every process busy.

    ``shared_by``: that many forked workers take the batches in file order
    (:func:`parallel.launched_workers`); the files are then cut into runs
    of about equal bytes, so that the workers finish together (see
    :func:`_balanced` for how many).

    >>> from panto_analytics.ingest.cache import FileKey
    >>> sizes = [3_000_000, 3_000_000, 2_000_000, 4_000_000, 4_000_000]
    >>> keys = [FileKey(f"f{i}", f"/f{i}", size, 0, 0) for i, size in enumerate(sizes)]
    >>> [[k.path for k in b] for b in batches(keys, 2, 10**9, shared_by=2)]
    [['f0', 'f1', 'f2'], ['f3', 'f4']]
    """
    total = sum(k.size for k in keys)
    if shared_by >= 2:
        return _balanced(keys, total, shared_by)
    target = BATCH_BYTES
    if total >= pool_from:  # processes will share them: several batches each
        target = max(1, min(BATCH_BYTES, total // (4 * (jobs or parallel.default_jobs()))))
    groups: list[list[FileKey]] = []
    size = 0
    for key in keys:
        if not groups or size + key.size > target or len(groups[-1]) >= BATCH_FILES:
            groups.append([])
            size = 0
        groups[-1].append(key)
        size += key.size
    return groups


def _balanced(keys: list[FileKey], total: int, workers: int) -> list[list[FileKey]]:
    """Consecutive runs of files of about equal bytes (each file goes to the run its middle byte falls in).

    The smallest multiple of ``workers`` that keeps runs within :data:`BATCH_BYTES`, but never more runs than
    files nor than one per :data:`MIN_SHARED_BATCH_BYTES` (so a small read may have fewer runs than workers, or
    a count that is no multiple of them); a run over :data:`BATCH_FILES` files is then split into several.
    """
    runs = workers * -(-total // (workers * BATCH_BYTES))  # ceil: no run much over BATCH_BYTES
    runs = max(1, min(runs, len(keys), total // MIN_SHARED_BATCH_BYTES))
    groups: list[list[FileKey]] = [[] for _ in range(runs)]
    done = 0
    for key in keys:
        groups[min(runs - 1, (2 * done + key.size) * runs // (2 * total or 1))].append(key)
        done += key.size
    return [files[j:j + BATCH_FILES] for files in groups if files for j in range(0, len(files), BATCH_FILES)]
