"""A cached re-read of many files: the key table, files served from packs, and the same result as a cold read."""
from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
from conftest import FIXTURES, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cache import assert_same, read, write_session

from panto_analytics.formats.contract import ParsedFile, SessionMeta
from panto_analytics.ingest.cache import Cache, FileKey
from panto_analytics.ingest.cache.codec import key_table, keys_of
from panto_analytics.ingest.cache.hits import CachedFile, session_ids
from panto_analytics.ingest.pipeline import read_files


def test_key_table_says_what_filekey_says_for_every_spelling(tmp_path, monkeypatch):
    (tmp_path / "d").mkdir()
    f = write_session(tmp_path / "d" / "s.jsonl", 1)
    monkeypatch.chdir(tmp_path / "d")
    spellings = [str(f), "s.jsonl", "./s.jsonl", "../d/s.jsonl", str(tmp_path) + "//d/./s.jsonl", Path("s.jsonl")]
    table = key_table(spellings)
    assert keys_of(table) == [FileKey.of(s) for s in spellings]
    assert set(table["abspath"]) == {str(f)}


def test_key_table_names_a_file_that_cannot_be_read(tmp_path):
    from panto_analytics.errors import InputError

    with pytest.raises(InputError, match="gone.jsonl: cannot read"):
        key_table([tmp_path / "gone.jsonl"])


def test_simple_files_are_served_from_columns_and_the_others_from_their_record(tmp_path):
    d = tmp_path / "mixed"
    d.mkdir()
    write_session(d / "plain.jsonl", 2)
    write_session(d / "header.jsonl", 2, sid="with-header")  # created_at: a datetime, kept in the record
    shutil.copy(FIXTURES / "claude_code" / "streaming.jsonl", d / "claude.jsonl")
    cold = read(d, None)
    cache = Cache(tmp_path / "c")
    read(d, cache)
    manifest = pl.read_parquet(cache.manifest_path).sort("path")
    simple = dict(zip([Path(p).name for p in manifest["path"]], manifest["simple"]))
    assert simple == {"plain.jsonl": True, "header.jsonl": False, "claude.jsonl": False}
    assert (manifest["record"] == "").to_list() == manifest["simple"].to_list()
    again = read(d, cache)
    assert again.cache.hits == 3 and again.cache.misses == 0
    assert_same(cold, again)


def test_cached_files_are_parsed_files_sliced_only_when_asked(tmp_path):
    d = tmp_path / "s"
    d.mkdir()
    for i in range(4):
        write_session(d / f"s{i}.jsonl", i + 1)
    read_files(d, cache=tmp_path / "c", jobs=1)
    again = read_files(d, cache=tmp_path / "c", jobs=1)
    assert all(isinstance(p, CachedFile) and p.in_pack() is not None for p in again.files)
    assert [p.messages.height for p in again.files] == [2, 4, 6, 8]
    assert pl.concat([p.messages for p in again.files]).equals(again.messages)
    first = again.files[0]
    first.messages = first.messages.head(1)  # what a postprocess hook may do
    assert first.in_pack() is None and first.messages.height == 1
    plain = replace(again.files[1], session=SessionMeta("other"))
    assert type(plain) is ParsedFile and plain.messages.height == 4 and plain.path == again.files[1].path


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(turns=st.lists(st.integers(0, 3), min_size=1, max_size=8),
       changes=st.lists(st.tuples(st.integers(0, 7), st.sampled_from(["touch", "rewrite", "remove"])), max_size=4),
       batch_files=st.integers(1, 3))
def test_a_re_read_after_any_changes_equals_a_cold_read(tmp_path_factory, monkeypatch, turns, changes,
                                                        batch_files):
    """Files spread over several packs, some changed between reads: the cached read is the cold read."""
    from panto_analytics.ingest import _schedule as schedule

    monkeypatch.setattr(schedule, "BATCH_FILES", batch_files)  # several packs, served interleaved
    tmp = tmp_path_factory.mktemp("reread")
    d = tmp / "s"
    d.mkdir()
    files = [write_session(d / f"s{i}.jsonl", n, sid=f"id{i}" if i % 2 else None) for i, n in enumerate(turns)]
    cache = Cache(tmp / "c")
    read(d, cache)
    for i, what in changes:
        f = files[i % len(files)]
        if not f.exists():
            continue
        if what == "touch":
            os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 1_000_000))
        elif what == "rewrite":
            write_session(f, 1 + i % 3)
        elif len(list(d.iterdir())) > 1:
            f.unlink()
    assert_same(read(d, None), read(d, cache))


def test_a_pack_of_the_wrong_shape_among_good_ones_invalidates_its_own_files(tmp_path, monkeypatch):
    """Packs are read together; one whose footer passes but whose rows are not ours is found and dropped alone."""
    from panto_analytics.ingest import _schedule as schedule
    from panto_analytics.ingest.cache import codec

    monkeypatch.setattr(schedule, "BATCH_FILES", 2)
    d = tmp_path / "s"
    d.mkdir()
    for i in range(6):
        write_session(d / f"s{i}.jsonl", i + 1)
    cold = read(d, None)
    cache = Cache(tmp_path / "c")
    read(d, cache)
    packs = sorted(cache.packs_dir.glob("*.parquet"))
    assert len(packs) == 3
    victim = packs[1]
    meta = codec.read_meta(victim, "pack")
    assert meta is not None
    codec.write_parquet(pl.DataFrame({"x": list(range(meta["rows"]))}), victim, meta)  # right rows, wrong columns
    again = read(d, cache)
    assert again.cache.rebuilt == 1 and again.cache.hits == 4 and again.cache.misses == 2
    assert_same(cold, again)


@pytest.mark.parametrize("meta, simple", [
    (SessionMeta("s", model="m", context_window=5, api_calls=2, project="/home/p", is_subagent=True), True),
    (SessionMeta("s", parent_session_id="p", project=None), True),
    (SessionMeta("s", context_window=2**63), False),            # does not fit the column: kept in the record
    (SessionMeta("s", message_ids=["u1", None]), False),         # a field without a column
])
def test_session_fields_round_trip_through_columns_or_record(tmp_path, meta, simple):
    from panto_analytics.errors import IngestReport
    from panto_analytics.ingest.cache import Entry

    frame = read_files([], cache=None).messages
    src = write_session(tmp_path / "x.jsonl", 0)
    cache = Cache(tmp_path / "c")
    key = FileKey.of(src)
    assert cache.store(key, None, Entry(frame, meta, "canonical", IngestReport(1, 1, 0, 2)))
    assert pl.read_parquet(cache.manifest_path)["simple"].to_list() == [simple]
    (back,) = cache.lookup([key], None, skip_invalid=False)
    assert back is not None and back.session == meta and back.report == IngestReport(1, 1, 0, 2)


def test_a_re_read_builds_no_session_per_file_until_one_is_asked_for(tmp_path):
    d = tmp_path / "s"
    d.mkdir()
    for i in range(5):  # a header with a datetime: that file's session is kept in its record, built at once
        write_session(d / f"s{i}.jsonl", i + 1, sid="with-header" if i == 3 else None)
    cold = read_files(d, jobs=1)
    read_files(d, cache=tmp_path / "c", jobs=1)
    again = read_files(d, cache=tmp_path / "c", jobs=1)
    lazy = [isinstance(p, CachedFile) and p.lazy_session() is not None for p in again.files]
    assert lazy == [True, True, True, False, True]
    assert session_ids(again.files).to_list() == [p.session.session_id for p in cold.files]
    assert [isinstance(p, CachedFile) and p.lazy_session() is not None for p in again.files] == lazy  # from the column
    assert [p.session for p in again.files] == [p.session for p in cold.files]
    assert all(p.lazy_session() is None for p in again.files)  # built once asked for, and kept
    assert again.files[0].session is again.files[0].session


def test_session_ids_in_order_whatever_holds_them(tmp_path):
    d = tmp_path / "s"
    d.mkdir()
    for i in range(3):
        write_session(d / f"id{i}.jsonl", 1)
    read_files(d, cache=tmp_path / "c", jobs=1)
    first, second = (read_files(d, cache=tmp_path / "c", jobs=1).files for _ in range(2))  # two lookups
    asked = first[1]
    assert asked.session is not None  # built: its id now comes from the session
    renamed = replace(first[2], session=SessionMeta("renamed"))  # a plain ParsedFile
    replaced = second[0]
    replaced.messages = replaced.messages.head(0)  # what a postprocess hook may do: the session stays
    files = [second[2], asked, renamed, first[0], replaced, second[1]]
    assert session_ids(files).to_list() == ["id2", "id1", "renamed", "id0", "id0", "id1"]
    assert replaced.session == SessionMeta("id0") and replaced.in_pack() is None


def test_a_duplicate_session_served_from_the_cache_is_skipped_as_a_cold_read_skips_it(tmp_path):
    from panto_analytics.errors import IngestReport

    d = tmp_path / "dup"
    (d / "x").mkdir(parents=True)
    write_session(d / "s.jsonl", 1)
    write_session(d / "x" / "s.jsonl", 2)
    reports = [IngestReport() for _ in range(3)]
    frames = [read_files(d, cache=cache, skip_invalid=True, report=r, jobs=1).messages
              for cache, r in zip((None, tmp_path / "c", tmp_path / "c"), reports)]
    assert frames[0].equals(frames[1]) and frames[0].equals(frames[2]) and frames[0].height == 2
    assert reports[0] == reports[1] == reports[2] and reports[0].n_skipped == 1
