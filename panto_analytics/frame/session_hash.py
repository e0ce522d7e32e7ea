"""A stable 64-bit hash of each session id: :func:`fnv1a64`, over Arrow buffers.

What must not change between runs, machines or library versions is keyed on
it: the bucket a session goes to in a dataset (``dataset/buckets.py``: a
dataset written today is read next year) and a session's copies in each
resample of the bootstrap (``analysis/choose/bootstrap.py``: the same
intervals in memory, bucket by bucket and on Ray). So it is not Polars'
``hash`` (documented as unstable across versions) but 64-bit FNV-1a of the
id's UTF-8 bytes.

>>> import polars as pl
>>> hex(int(fnv1a64(pl.Series(["a"]))[0]))
'0xaf63dc4c8601ec8c'
"""
from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa

__all__ = ["FNV_OFFSET", "FNV_PRIME", "fnv1a64"]

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
