"""Which bucket a session goes to: a stable hash of its id, computed over Arrow buffers.

The bucket of a session must not change between runs, machines or library
versions (a dataset written today is read next year), so it is not Polars'
``hash`` (documented as unstable across versions) but 64-bit FNV-1a of the
id's UTF-8 bytes, modulo the number of buckets.

>>> import polars as pl
>>> hex(int(fnv1a64(pl.Series(["a"]))[0]))
'0xaf63dc4c8601ec8c'
>>> session_buckets(pl.Series(["a", "b", "a"]), 16).to_list()
[12, 5, 12]
"""
from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa

from ..defaults import MAX_BUCKETS

__all__ = ["FNV_OFFSET", "FNV_PRIME", "MAX_BUCKETS", "fnv1a64", "session_buckets"]

FNV_OFFSET = np.uint64(0xCBF29CE484222325)
FNV_PRIME = np.uint64(0x100000001B3)



def fnv1a64(ids: pl.Series) -> np.ndarray:
    """64-bit FNV-1a of each string's UTF-8 bytes, as a ``uint64`` array.

    The loop runs over byte positions (the longest id's length), each step
    updating every id at once, not over the ids.

    >>> import polars as pl
    >>> fnv1a64(pl.Series([""])).tolist() == [int(FNV_OFFSET)]
    True
    """
    arr = pa.chunked_array(ids.cast(pl.String).to_arrow()).cast(pa.large_string()).combine_chunks()
    n = len(arr)
    h = np.full(n, FNV_OFFSET, dtype=np.uint64)
    if n == 0:
        return h
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset:arr.offset + n + 1]
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8) if arr.buffers()[2] is not None else np.zeros(0, np.uint8)
    starts, lengths = offsets[:-1], np.diff(offsets)
    for j in range(int(lengths.max())):
        live = np.flatnonzero(lengths > j)
        h[live] = (h[live] ^ data[starts[live] + j].astype(np.uint64)) * FNV_PRIME  # wraps modulo 2**64
    return h


def session_buckets(ids: pl.Series, buckets: int) -> pl.Series:
    """The bucket (``0 <= b < buckets``) of each session id, as ``UInt16``."""
    if not 1 <= buckets <= MAX_BUCKETS:
        raise ValueError(f"buckets must be between 1 and {MAX_BUCKETS}, got {buckets}")
    return pl.Series("bucket", fnv1a64(ids) % np.uint64(buckets), dtype=pl.UInt64).cast(pl.UInt16)
