"""The session-partitioned dataset: what it holds equals a read of the files; incremental updates; bad datasets."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from conftest import DATA, REALDATA
from polars.testing import assert_frame_equal

import panto_analytics as pa
from panto_analytics.dataset import (
    bucket_groups,
    bucket_parts,
    read_info,
    read_manifest,
    scan_dataset,
    session_buckets,
    write_dataset,
)
from panto_analytics.dataset.store import ROW_GROUP_ROWS, write_part
from panto_analytics.errors import InputError


def by_session(frame: pl.DataFrame) -> pl.DataFrame:
    """Rows grouped by session id (a dataset groups sessions by bucket; within a session, order is kept)."""
    return frame.with_columns(pl.col("session_id").cast(pl.String)).sort("session_id", maintain_order=True)


def assert_same_corpus(root: Path, paths, **read) -> None:
    """Every table of the dataset at ``root`` equals a fresh read of ``paths``, up to the order of sessions."""
    corpus = pa.ingest.read_corpus(paths, **read)
    for table, expected in (("messages", corpus.messages), ("sessions", corpus.sessions),
                            ("compactions", corpus.compactions)):
        got = scan_dataset(root, table).collect()
        assert got.schema == expected.schema
        assert_frame_equal(by_session(got), by_session(expected), categorical_as_str=True)


def copy_data(tmp_path: Path) -> Path:
    d = tmp_path / "src"
    shutil.copytree(DATA, d)
    return d


def test_dataset_equals_a_read_of_the_files(tmp_path):
    update = write_dataset([DATA], tmp_path / "ds", buckets=8)
    assert_same_corpus(tmp_path / "ds", [DATA])
    info = read_info(tmp_path / "ds")
    assert (info.buckets, info.files, info.sessions) == (8, 40, 40)
    assert info.messages == update.messages == pa.read_sessions([DATA]).height


def test_each_session_lives_in_its_bucket_and_one_part(tmp_path):
    write_dataset([DATA], tmp_path / "ds", buckets=8)
    for bucket, parts in bucket_parts(tmp_path / "ds").items():
        for part in parts:
            assert part.startswith(f"bucket={bucket:03d}/")
            ids = pl.read_parquet(tmp_path / "ds" / "messages" / part)["session_id"].cast(pl.String)
            assert set(session_buckets(ids.unique(), 8).to_list()) == {bucket}
    manifest = read_manifest(tmp_path / "ds")
    assert manifest["session_id"].n_unique() == manifest.height  # one part per session


def test_bucket_of_a_session_is_stable():
    """Fixed values: a dataset written today must be read the same way by any later version."""
    ids = pl.Series(["0963a6d2-9c87-43a8-8b29-8037e82ed488", "s", ""])
    assert session_buckets(ids, 256).to_list() == session_buckets(ids, 256).to_list()
    assert session_buckets(ids, 1000).to_list() == [int(h) % 1000 for h in _fnv(ids.to_list())]


def _fnv(ids: list[str]) -> list[int]:
    """A literal, byte-by-byte FNV-1a 64 (the reference for the vectorized hash)."""
    out = []
    for s in ids:
        h = 0xCBF29CE484222325
        for byte in s.encode():
            h = ((h ^ byte) * 0x100000001B3) % 2**64
        out.append(h)
    return out


def test_row_groups_never_cut_a_session(tmp_path):
    sizes = [5, ROW_GROUP_ROWS - 3, 7, ROW_GROUP_ROWS + 2, 1]
    ids = [f"s{i}" for i, n in enumerate(sizes) for _ in range(n)]
    frame = pl.DataFrame({"session_id": ids, "seq": [0] * len(ids)})
    write_part(tmp_path, "messages", "p.parquet", frame)
    meta = pq.ParquetFile(tmp_path / "messages" / "p.parquet").metadata
    seen: set[str] = set()
    start = 0
    for g in range(meta.num_row_groups):
        n = meta.row_group(g).num_rows
        group = set(ids[start:start + n])
        assert not group & seen, "a session spans two row groups"
        seen |= group
        start += n
    assert start == len(ids) and meta.num_row_groups > 1


def test_second_run_reads_nothing_when_nothing_changed(tmp_path):
    write_dataset([DATA], tmp_path / "ds", buckets=8)
    parts_before = sorted((tmp_path / "ds").rglob("part-*.parquet"))
    update = write_dataset([DATA], tmp_path / "ds")
    assert (update.files_read, update.files_unchanged, update.parts_written, update.parts_rewritten) == (0, 40, 0, 0)
    assert sorted((tmp_path / "ds").rglob("part-*.parquet")) == parts_before


def test_incremental_update_rewrites_only_touched_folders_parts(tmp_path):
    """Four folders of ten sessions; a file changes in one, one is removed from another, one added to a third:
    those three folders are read again (an adapter may join files of a folder), the fourth's parts stay."""
    src = tmp_path / "src"
    files = sorted(DATA.glob("*.jsonl"))
    for i, f in enumerate(files):
        (src / f"f{i // 10}").mkdir(parents=True, exist_ok=True)
        shutil.copy(f, src / f"f{i // 10}" / f.name)
    ds = tmp_path / "ds"
    write_dataset([src], ds, buckets=8, chunk_files=10)
    manifest = read_manifest(ds)
    changed = sorted((src / "f0").glob("*.jsonl"))[0]
    os.utime(changed, ns=(1, 1))  # same text, another mtime: read again
    sorted((src / "f1").glob("*.jsonl"))[0].unlink()
    (src / "f2" / "new.jsonl").write_text('{"type":"message","role":"user","content":[{"type":"text","text":"new"}]}\n')
    kept = set(manifest.filter(pl.col("path").str.contains("/f3/"))["part"])
    touched = set(manifest["part"]) - kept

    update = write_dataset([src], ds, chunk_files=10)
    assert (update.files_read, update.files_removed, update.files_unchanged) == (30, 1, 10)
    after = read_manifest(ds)
    assert kept <= set(after["part"])  # the untouched folder's parts are left alone
    assert not touched & set(after["part"])
    for part in touched:
        assert not (ds / "messages" / part).exists()
    assert_same_corpus(ds, [src])


def test_files_are_read_in_chunks_that_never_split_a_folder(tmp_path):
    src = tmp_path / "src"
    for i, f in enumerate(sorted(DATA.glob("*.jsonl"))[:12]):
        (src / f"f{i // 4}").mkdir(parents=True, exist_ok=True)
        shutil.copy(f, src / f"f{i // 4}" / f.name)
    write_dataset([src], tmp_path / "ds", buckets=4, chunk_files=3)
    by_part = read_manifest(tmp_path / "ds").with_columns(folder=pl.col("path").str.extract(r"/(f\d)/"))
    assert by_part.group_by("part").agg(pl.col("folder").n_unique())["folder"].max() == 1
    assert_same_corpus(tmp_path / "ds", [src])


def test_a_part_the_manifest_does_not_name_is_ignored(tmp_path):
    write_dataset([DATA], tmp_path / "ds", buckets=4)
    stray = tmp_path / "ds" / "messages" / "bucket=000" / "part-leftover.parquet"
    pa.read_sessions([DATA]).head(5).write_parquet(stray)  # say, a write cut short
    assert scan_dataset(tmp_path / "ds").collect().height == pa.read_sessions([DATA]).height


def test_bucket_count_of_an_existing_dataset_cannot_change(tmp_path):
    write_dataset([DATA], tmp_path / "ds", buckets=4)
    with pytest.raises(InputError, match="has 4 buckets, not 8"):
        write_dataset([DATA], tmp_path / "ds", buckets=8)


def test_a_session_already_in_the_dataset_is_refused(tmp_path):
    src = copy_data(tmp_path)
    write_dataset([src], tmp_path / "ds", buckets=4)
    extra = tmp_path / "extra"
    extra.mkdir()
    first = sorted(src.glob("*.jsonl"))[0]
    shutil.copy(first, extra / first.name)
    with pytest.raises(InputError, match="already in the dataset"):
        write_dataset([src, extra], tmp_path / "ds")


def test_an_unreadable_dataset_is_one_line_of_bad_input(tmp_path):
    write_dataset([DATA], tmp_path / "ds", buckets=4)
    (tmp_path / "ds" / "dataset.json").write_text(json.dumps({"format": "something else"}))
    with pytest.raises(InputError, match="not a readable dataset"):
        read_info(tmp_path / "ds")
    with pytest.raises(InputError, match="not a dataset folder"):
        scan_dataset(tmp_path)


def test_real_recordings_round_trip(tmp_path):
    if not REALDATA.is_dir():
        pytest.skip(f"no real recordings at {REALDATA}")
    write_dataset([REALDATA], tmp_path / "ds", buckets=16, skip_invalid=True)
    assert_same_corpus(tmp_path / "ds", [REALDATA], skip_invalid=True)


def test_bucket_parts_are_the_parts_the_manifest_names_in_the_buckets_asked(tmp_path):
    """bucket_parts reads two columns of the manifest, of the buckets asked for: the parts read_manifest names
    there, each once, sorted; a bucket without a part, or no manifest, gives none."""
    write_dataset([DATA], tmp_path / "ds", buckets=8)
    manifest = read_manifest(tmp_path / "ds").filter(pl.col("part").is_not_null())
    two = sorted(manifest["bucket"].unique().to_list())[:2]
    expected = {b: sorted(set(manifest.filter(pl.col("bucket") == b)["part"])) for b in two}
    assert bucket_parts(tmp_path / "ds", [*two, 200]) == expected
    assert sum(map(len, bucket_parts(tmp_path / "ds").values())) == manifest["part"].n_unique()
    assert bucket_parts(tmp_path / "nowhere") == {}


def test_bucket_groups_hold_whole_buckets_up_to_the_rows_asked(tmp_path):
    write_dataset([DATA], tmp_path / "ds", buckets=8)
    by_bucket = bucket_parts(tmp_path / "ds")
    every = sorted(p for ps in by_bucket.values() for p in ps)
    assert [sorted(g) for g in bucket_groups(tmp_path / "ds", 1)] == [sorted(ps) for ps in by_bucket.values()]
    assert [sorted(g) for g in bucket_groups(tmp_path / "ds", 10**9)] == [every]
    middle = bucket_groups(tmp_path / "ds", 1_000)
    assert 1 < len(middle) < 8 and sorted(p for g in middle for p in g) == every


def test_a_part_written_before_a_column_was_added_reads_it_as_null(tmp_path):
    from panto_analytics.dataset.store import read_part
    from panto_analytics.frame.schema import SESSIONS_SCHEMA

    old = pl.DataFrame({"session_id": ["s"], "file": ["s.jsonl"], "no_longer_a_column": [1]},
                       schema_overrides={"session_id": pl.Categorical})
    write_part(tmp_path, "sessions", "p.parquet", old)
    got = read_part(tmp_path, "sessions", "p.parquet")
    assert got.schema == SESSIONS_SCHEMA
    assert got.row(0, named=True)["file"] == "s.jsonl" and got.row(0, named=True)["project"] is None
