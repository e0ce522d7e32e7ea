"""A session-partitioned Parquet dataset: a corpus too large for one frame, read bucket by bucket.

- :mod:`.buckets`: the stable hash that puts each session in its bucket.
- :mod:`.info`: ``dataset.json`` (:func:`is_dataset`); :mod:`.store`: the layout, the manifest, :func:`scan_dataset`.
- :mod:`.write`: :func:`write_dataset`, incremental like the cache, and :class:`DatasetWriter`.
- :mod:`.histograms`, :mod:`.streaming`, :mod:`.engines`: the sweep and the recommendation of a dataset, bucket by
  bucket, here or on Ray Data.

It is a package of its own (not a part of ``ingest/``) so that its code is not
part of the cache's parser version: changing how datasets are written does not
invalidate parsed files. ``docs/scale.md`` says why the cache and the dataset
are two layouts. It sits above ``analysis``: it runs the analysis's own rules
(the sweep, the recommendation) bucket by bucket.

Each name is imported on first use, so that telling a dataset folder from
session files (:func:`is_dataset`) loads neither Polars nor the parsers.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "DEFAULT_BUCKETS", "TASK_ROWS", "DatasetInfo", "cost_dataset", "DatasetUpdate", "DatasetWriter", "bucket_groups", "bucket_parts",
    "dataset_corpus", "is_dataset", "read_info", "read_manifest", "recommend_dataset", "scan_dataset", "scan_parts",
    "session_buckets", "sweep_dataset", "write_dataset",
]

#: Where each name is defined.
_FROM = {
    "session_buckets": ".buckets", "cost_dataset": ".cost",
    **dict.fromkeys(["DatasetInfo", "is_dataset", "read_info"], ".info"),
    **dict.fromkeys(["DEFAULT_BUCKETS", "TASK_ROWS", "bucket_groups", "bucket_parts", "dataset_corpus",
                     "read_manifest", "scan_dataset", "scan_parts"], ".store"),
    **dict.fromkeys(["recommend_dataset", "sweep_dataset"], ".streaming"),
    **dict.fromkeys(["DatasetUpdate", "DatasetWriter", "write_dataset"], ".write"),
}

if TYPE_CHECKING:
    from .buckets import session_buckets
    from .cost import cost_dataset
    from .info import DatasetInfo, is_dataset, read_info
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
    from .streaming import recommend_dataset, sweep_dataset
    from .write import DatasetUpdate, DatasetWriter, write_dataset


def __getattr__(name: str) -> Any:
    if name not in _FROM:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_FROM[name], __name__), name)
    globals()[name] = value
    return value
