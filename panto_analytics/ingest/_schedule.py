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


def batches(keys: list[FileKey], jobs: int | None, pool_from: int) -> list[list[FileKey]]:
    """Consecutive files grouped into tasks, small enough to keep every process busy."""
    total = sum(k.size for k in keys)
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
