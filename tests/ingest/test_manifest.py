"""The one manifest read (ingest/_manifest.py), under the cache's and the dataset's policies."""
from pathlib import Path

import polars as pl
import pytest

from panto_analytics.dataset.store import DATASET_MANIFEST_SCHEMA, MANIFEST_FILE
from panto_analytics.dataset.store import read_manifest as dataset_manifest
from panto_analytics.errors import InputError
from panto_analytics.ingest._manifest import read_parquet_manifest
from panto_analytics.ingest.cache.codec import BadEntry, open_manifest, read_columns
from panto_analytics.ingest.cache.codec import read_cache_manifest as cache_manifest


def test_a_missing_manifest_is_none_for_the_cache_and_empty_for_the_dataset(tmp_path: Path):
    assert read_parquet_manifest(tmp_path / "manifest.parquet", ValueError) is None
    assert cache_manifest(tmp_path / "manifest.parquet") is None
    assert open_manifest(tmp_path / "manifest.parquet") is None
    empty = dataset_manifest(tmp_path)
    assert empty.is_empty() and empty.schema == pl.Schema(DATASET_MANIFEST_SCHEMA)


def test_a_bad_manifest_is_each_callers_error(tmp_path: Path):
    (tmp_path / MANIFEST_FILE).write_bytes(b"not parquet")
    with pytest.raises(ValueError, match="^unreadable manifest: "):
        read_parquet_manifest(tmp_path / MANIFEST_FILE, ValueError)
    with pytest.raises(BadEntry):
        cache_manifest(tmp_path / MANIFEST_FILE)
    with pytest.raises(InputError, match="unreadable dataset manifest"):
        dataset_manifest(tmp_path)


def test_columns_are_read_from_an_open_file_from_its_start(tmp_path: Path):
    path = tmp_path / "m.parquet"
    pl.DataFrame({"a": [1, 2], "b": ["x", "y"]}).write_parquet(path)
    with open(path, "rb") as f:
        f.read(3)
        assert read_parquet_manifest(f, ValueError, columns=["b"]).to_dict(as_series=False) == {"b": ["x", "y"]}
        with pytest.raises(BadEntry, match="^unreadable manifest: "):
            read_columns(f, ["nope"])


def test_a_dataset_manifest_is_cast_and_a_cache_manifest_checked(tmp_path: Path):
    path = tmp_path / "m.parquet"
    pl.DataFrame({"bucket": [3], "extra": [1]}).write_parquet(path)
    cast = read_parquet_manifest(path, ValueError, schema={"bucket": pl.UInt16()}, exact=False)
    assert cast is not None and cast.schema == pl.Schema({"bucket": pl.UInt16()})
    with pytest.raises(ValueError, match="^manifest of another shape$"):
        read_parquet_manifest(path, ValueError, schema={"bucket": pl.UInt16()})
    with pytest.raises(ValueError, match="^unreadable dataset manifest: "):
        read_parquet_manifest(path, ValueError, what="dataset manifest", schema={"missing": pl.UInt16()}, exact=False)
