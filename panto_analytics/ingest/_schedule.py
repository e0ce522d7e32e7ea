"""How files are grouped into tasks, and when worker processes pay off."""
from __future__ import annotations

from ..errors import InputError
from ..formats import adapter, detect_format
from . import parallel
from .cache import FileKey
from .paths import PathLike

__all__ = ["batches", "pool_threshold"]


#: At most this many bytes, or files, are parsed in one task: enough that the
#: columnar fast paths pay their fixed costs once for many small files.
BATCH_BYTES = 64_000_000


BATCH_FILES = 1024


#: Input from which worker processes pay off when most of it has no columnar
#: fast path (Python parses it alone, so a second process halves the time).
SLOW_PARALLEL_BYTES = 48_000_000


_SAMPLE_FILES = 32


def pool_threshold(keys: list[FileKey], format: str | None) -> int:
    """The input size from which to start worker processes for these files.

    :data:`parallel.MIN_PARALLEL_BYTES` suits formats with a columnar fast
    path, which already use every core through threads; files parsed by
    Python alone want a pool much sooner. A sample of the files tells which
    kind dominates (a guess for scheduling only: every file is detected again
    where it is parsed).
    """
    total = sum(k.size for k in keys)
    if not SLOW_PARALLEL_BYTES <= total < parallel.MIN_PARALLEL_BYTES:
        return parallel.MIN_PARALLEL_BYTES
    sample = keys[:: max(1, len(keys) // _SAMPLE_FILES)]
    slow = sum(k.size for k in sample if not _has_fast_path(format, k.path))
    sampled = sum(k.size for k in sample) or 1
    return SLOW_PARALLEL_BYTES if slow / sampled * total >= SLOW_PARALLEL_BYTES else parallel.MIN_PARALLEL_BYTES


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
