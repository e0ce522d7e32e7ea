"""Which bucket a session goes to: a stable hash of its id, computed over Arrow buffers.

The bucket of a session must not change between runs, machines or library
versions (a dataset written today is read next year), so it is not Polars'
``hash`` (documented as unstable across versions) but 64-bit FNV-1a of the
id's UTF-8 bytes (:func:`~panto_analytics.frame.session_hash.fnv1a64`, the hash the bootstrap keys a
session's copies on too), modulo the number of buckets.

>>> import polars as pl
>>> hex(int(fnv1a64(pl.Series(["a"]))[0]))
'0xaf63dc4c8601ec8c'
>>> session_buckets(pl.Series(["a", "b", "a"]), 16).to_list()
[12, 5, 12]
"""
from __future__ import annotations

import numpy as np
import polars as pl

from ..defaults import MAX_BUCKETS
from ..frame.session_hash import FNV_OFFSET, FNV_PRIME, fnv1a64

__all__ = ["FNV_OFFSET", "FNV_PRIME", "MAX_BUCKETS", "fnv1a64", "session_buckets"]



def session_buckets(ids: pl.Series, buckets: int) -> pl.Series:
    """The bucket (``0 <= b < buckets``) of each session id, as ``UInt16``."""
    if not 1 <= buckets <= MAX_BUCKETS:
        raise ValueError(f"buckets must be between 1 and {MAX_BUCKETS}, got {buckets}")
    return pl.Series("bucket", fnv1a64(ids) % np.uint64(buckets), dtype=pl.UInt64).cast(pl.UInt16)
