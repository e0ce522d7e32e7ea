"""A session-partitioned Parquet dataset: a corpus too large for one frame, read bucket by bucket.

- :mod:`.buckets`: the stable hash that puts each session in its bucket.
- :mod:`.info`: ``dataset.json`` (:func:`is_dataset`); :mod:`.store`: the layout, the manifest, :func:`scan_dataset`.
- :mod:`.write`: :func:`write_dataset`, incremental like the cache, and :class:`DatasetWriter`.
- :mod:`.source`: :class:`Source`, the one face of every verb (sweep, splits, choose_budget, cost, refetch,
  replay_table), the backend chosen by the input: :class:`InMemory`, :class:`OnDataset` (bucket by bucket,
  here) or :class:`OnRay` (on Ray Data); behind it its private per-bucket implementations (:mod:`._streaming`,
  :mod:`._cost`, :mod:`._decision`, :mod:`._replay`, :mod:`._refetch`: no ``*_dataset`` twin of a verb is
  exported; the Source is the face) and :mod:`.engines`, where tasks run.

It is a package of its own (not a part of ``ingest/``) so that its code is not
part of the cache's parser version: changing how datasets are written does not
invalidate parsed files. ``docs/scale.md`` says why the cache and the dataset
are two layouts. It sits above ``analysis``: it runs the analysis's own rules
(the sweep, the recommendation) bucket by bucket.

Each name is imported on first use, so that telling a dataset folder from
session files (:func:`is_dataset`) loads neither Polars nor the parsers.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_getattr

__all__ = [
    "DEFAULT_BUCKETS", "TASK_ROWS", "DatasetInfo", "DatasetUpdate", "DatasetWriter", "InMemory", "OnDataset", "OnRay",
    "Source", "Unserved", "bucket_groups", "bucket_parts", "dataset_corpus", "is_dataset", "read_info", "read_manifest",
    "scan_dataset", "scan_parts", "session_buckets", "write_dataset",
]

#: Where each name is defined.
_FROM = {
    "session_buckets": ".buckets",
    **dict.fromkeys(["InMemory", "OnDataset", "OnRay", "Source", "Unserved"], ".source"),
    **dict.fromkeys(["DatasetInfo", "is_dataset", "read_info"], ".info"),
    **dict.fromkeys(["DEFAULT_BUCKETS", "TASK_ROWS", "bucket_groups", "bucket_parts", "dataset_corpus",
                     "read_manifest", "scan_dataset", "scan_parts"], ".store"),
    **dict.fromkeys(["DatasetUpdate", "DatasetWriter", "write_dataset"], ".write"),
}

if TYPE_CHECKING:
    from .buckets import session_buckets
    from .info import DatasetInfo, is_dataset, read_info
    from .source import InMemory, OnDataset, OnRay, Source, Unserved
    from .store import (
        DEFAULT_BUCKETS,
        TASK_ROWS,
        bucket_groups,
        bucket_parts,
        dataset_corpus,
        read_manifest,
        scan_dataset,
        scan_parts,
    )
    from .write import DatasetUpdate, DatasetWriter, write_dataset


__getattr__ = lazy_getattr(__name__, _FROM)
