"""A dataset folder's ``dataset.json``: whether a folder is a dataset, and what it says.

The standard library only, so that the command line can tell a dataset from
session files before it loads Polars or the parsers.

>>> import tempfile
>>> is_dataset(tempfile.mkdtemp())
False
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

__all__ = ["FORMAT_NAME", "INFO_FILE", "DatasetInfo", "is_dataset", "read_info"]

INFO_FILE = "dataset.json"

#: What ``dataset.json``'s ``format`` says in a folder this package wrote.
FORMAT_NAME = "panto_analytics dataset"


@dataclass
class DatasetInfo:
    """What ``dataset.json`` says: the layout's version and counts."""

    buckets: int
    parser: str
    mode: str
    sessions: int = 0
    messages: int = 0
    files: int = 0
    version: int = 1


def is_dataset(path: str | Path) -> bool:
    """Whether ``path`` is a dataset folder (it holds ``dataset.json``)."""
    return (Path(path) / INFO_FILE).is_file()


def read_info(root: str | Path) -> DatasetInfo:
    """The dataset's ``dataset.json``; :class:`InputError` (one line) when it is not one of ours."""
    path = Path(root) / INFO_FILE
    try:
        raw = json.loads(path.read_text())
        if raw.pop("format") != FORMAT_NAME:
            raise ValueError("not a panto_analytics dataset")
        return DatasetInfo(**raw)
    except (OSError, ValueError, TypeError, KeyError) as e:
        raise InputError(path, None, f"not a readable dataset: {e}", skippable=False) from None
