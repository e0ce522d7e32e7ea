"""The Parquet cache: hits, misses, changed files, bad packs and manifests, atomic writes, info/clear."""
from __future__ import annotations

import json
import os
import warnings
from datetime import UTC
from pathlib import Path

import polars as pl
import pytest
from conftest import FIXTURES

import panto_analytics as pa
from panto_analytics.errors import IngestReport, InputError
from panto_analytics.ingest import pipeline as ingest
from panto_analytics.ingest.cache import Cache, CacheWarning, FileKey
from panto_analytics.ingest.cache import codec as cache_codec
from panto_analytics.ingest.cache import packs as cache_mod


def write_session(path: Path, n_turns: int, *, sid: str | None = None, bad_line: bool = False) -> Path:
    """A canonical session of ``n_turns`` user/assistant turns, with usage growing by 100 a turn."""
    lines = []
    if sid is not None:
        lines.append({"type": "session", "id": sid, "model": "m", "context_window": 1000,
                      "created_at": "2025-01-01T00:00:00Z"})
    for t in range(n_turns):
        lines.append({"type": "message", "role": "user", "content": [{"type": "text", "text": f"q {t} " * 3}],
                      "timestamp": f"2025-01-01T00:{t:02d}:00Z"})
        lines.append({"type": "message", "role": "assistant", "content": [{"type": "text", "text": "a"}],
                      "usage": {"input": 100 * (t + 1), "output": 5, "cache_read": 0, "cache_write": 0}})
    text = "".join(json.dumps(x) + "\n" for x in lines)
    if bad_line:
        text += "{not json\n"
    path.write_text(text)
    return path


@pytest.fixture
def corpus(tmp_path) -> Path:
    """Three small sessions, one with a bad line (only readable with skip_invalid)."""
    d = tmp_path / "corpus"
    d.mkdir()
    write_session(d / "a.jsonl", 2, sid="sa")
    write_session(d / "b.jsonl", 3)
    write_session(d / "c.jsonl", 1, bad_line=True)
    return d


@pytest.fixture
def big_corpus(tmp_path) -> Path:
    """Ten files, read as one batch (one pack)."""
    d = tmp_path / "big"
    d.mkdir()
    for i in range(10):
        write_session(d / f"s{i:02d}.jsonl", 1 + i % 4)
    return d


@pytest.fixture
def cache(tmp_path) -> Cache:
    return Cache(tmp_path / "cache")


@pytest.fixture
def parsed_files(monkeypatch) -> list[str]:
    """The files parsed (not served from the cache), in this process (reads use jobs=1)."""
    seen: list[str] = []
    real = ingest.parse_entries

    def spy(paths, *args, **kwargs):
        seen.extend(Path(p).name for p in paths)
        return real(paths, *args, **kwargs)

    monkeypatch.setattr(ingest, "parse_entries", spy)
    return seen


def read(paths, cache, **kw):
    """A corpus read with its report, in this process, warnings recorded."""
    kw.setdefault("skip_invalid", True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        corpus = pa.ingest.read_corpus(paths, cache=cache, jobs=1, **kw)
    corpus.warnings = [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
    return corpus


def assert_same(a: pa.ingest.Corpus, b: pa.ingest.Corpus) -> None:
    assert a.messages.equals(b.messages)
    assert a.sessions.equals(b.sessions)
    assert a.compactions.equals(b.compactions)
    assert a.report == b.report


def test_unchanged_corpus_is_read_from_the_cache_alone(corpus, cache, parsed_files):
    cold = read(corpus, None)
    assert sorted(parsed_files) == ["a.jsonl", "b.jsonl", "c.jsonl"]
    first = read(corpus, cache)
    assert first.cache.misses == 3 and first.cache.hits == 0 and first.cache.written == 3
    parsed_files.clear()
    again = read(corpus, cache)
    assert parsed_files == []
    assert again.cache.hits == 3 and again.cache.misses == 0 and again.cache.written == 0
    assert_same(cold, first)
    assert_same(cold, again)
    assert again.report.n_skipped == 1  # the skipped line is remembered, not lost


def test_cached_read_reproduces_adapters_metadata_and_postprocess(cache, tmp_path):
    """Other formats: ignored records, compactions, subagents, resumed sessions dropped by postprocess."""
    paths = [FIXTURES / "claude_code", FIXTURES / "codex" / "compacted.jsonl", FIXTURES / "pi"]
    cold = read(paths, None)
    assert cold.report.ignored and cold.compactions.height > 0  # the fixtures exercise both
    assert cold.report.files > cold.report.sessions  # some session was dropped by a postprocess hook
    read(paths, cache)
    again = read(paths, cache)
    assert again.cache.misses == 0
    assert_same(cold, again)


def test_changed_file_is_parsed_alone(corpus, cache, parsed_files):
    read(corpus, cache)
    parsed_files.clear()
    write_session(corpus / "b.jsonl", 5)  # more turns: new size and mtime
    after = read(corpus, cache)
    assert parsed_files == ["b.jsonl"]
    assert after.cache.hits == 2 and after.cache.misses == 1
    assert_same(after, read(corpus, None))
    assert after.sessions.filter(pl.col("session_id") == "b")["messages"].item() == 10


def test_touched_file_is_parsed_again(corpus, cache, parsed_files):
    read(corpus, cache)
    parsed_files.clear()
    st = os.stat(corpus / "a.jsonl")
    os.utime(corpus / "a.jsonl", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    read(corpus, cache)
    assert parsed_files == ["a.jsonl"]


def test_new_parser_version_invalidates_without_calling_it_corrupt(corpus, cache, parsed_files, monkeypatch):
    read(corpus, cache)
    parsed_files.clear()
    monkeypatch.setattr(cache_codec, "parser_version", lambda: "another-version")
    again = read(corpus, cache)
    assert sorted(parsed_files) == ["a.jsonl", "b.jsonl", "c.jsonl"]
    assert again.cache.rebuilt == 0 and again.warnings == []


def test_strict_read_does_not_trust_an_entry_with_skips(corpus, cache):
    read(corpus, cache, skip_invalid=True)
    with pytest.raises(InputError) as e:
        read(corpus, cache, skip_invalid=False)
    assert e.value.path.endswith("c.jsonl") and e.value.line == 3


def test_lenient_read_uses_entries_of_a_strict_read(tmp_path, cache):
    d = tmp_path / "ok"
    d.mkdir()
    write_session(d / "a.jsonl", 2)
    strict = read(d, cache, skip_invalid=False)
    lenient = read(d, cache, skip_invalid=True)
    assert lenient.cache.hits == 1
    assert_same(strict, lenient)


def test_the_forced_format_is_part_of_the_key_and_the_paths_spelling_is_not(corpus, cache, monkeypatch):
    # The README: the cache matches on the absolute path. Keyed on the path as typed, `corpus`, its absolute
    # path and another spelling each missed and parsed again (three manifest rows per file).
    first = read(corpus, cache)
    forced = read(corpus, cache, format="canonical")
    assert forced.cache.misses == 3
    monkeypatch.chdir(corpus.parent)
    (corpus.parent / "link").symlink_to(corpus)
    for spelling in (Path("corpus"), Path("./corpus/../corpus/"), Path("link")):
        again = read(spelling, cache)
        assert (again.cache.hits, again.cache.misses) == (3, 0), spelling
        files = again.messages["file"].cast(str).unique().sort().to_list()
        assert files == [str(spelling / f) for f in ("a.jsonl", "b.jsonl", "c.jsonl")]  # named as given now
        assert again.messages.drop("file").equals(first.messages.drop("file"))
        # c.jsonl's skipped line is reported under the name given now too.
        assert {f for f, _ in again.report.skipped} == {str(spelling / "c.jsonl")}
    manifest = pl.read_parquet(cache.manifest_path)
    assert manifest.height == 6  # one row per file and format mode, whatever the spelling
    assert set(manifest["abspath"]) == {str(corpus.resolve() / f) for f in ("a.jsonl", "b.jsonl", "c.jsonl")}


def test_a_file_parsed_again_under_another_spelling_replaces_its_row(corpus, cache, monkeypatch):
    read(corpus, cache)
    monkeypatch.chdir(corpus.parent)
    write_session(Path("corpus") / "b.jsonl", 4)  # changed: parsed again, named relatively this time
    again = read(Path("corpus"), cache)
    assert (again.cache.hits, again.cache.misses) == (2, 1)
    assert pl.read_parquet(cache.manifest_path).height == 3
    assert read(corpus, cache).cache.hits == 3


def _entry_path(cache: Cache, path: Path) -> Path:
    """The pack that holds ``path``'s rows."""
    pack = cache.pack_of(FileKey.of(path), None)
    assert pack is not None
    return pack


def fill_one_pack_per_file(corpus: Path, cache: Cache) -> None:
    """Cache each file of ``corpus`` by a read of its own, so that each has a pack of its own."""
    for f in sorted(corpus.iterdir()):
        read(f, cache)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
def test_corrupt_entry_is_rebuilt_and_reported(corpus, cache, damage):
    cold = read(corpus, None)
    fill_one_pack_per_file(corpus, cache)
    entry = _entry_path(cache, corpus / "b.jsonl")
    data = entry.read_bytes()
    entry.write_bytes({"garbage": b"not parquet at all" * 10, "truncated": data[: len(data) // 2],
                       "empty": b""}[damage])
    again = read(corpus, cache)
    assert again.cache.rebuilt == 1 and again.cache.hits == 2 and again.cache.misses == 1
    assert len(again.warnings) == 1 and "rebuilt" in again.warnings[0]
    assert_same(cold, again)
    assert read(corpus, cache).cache.hits == 3  # the rebuilt entry is good


def _foreign_parquet(cache, corpus) -> None:
    pl.DataFrame({"x": [1, 2]}).write_parquet(_entry_path(cache, corpus / "a.jsonl"))


def _entry_of_another_file(cache, corpus) -> None:
    _entry_path(cache, corpus / "b.jsonl").write_bytes(_entry_path(cache, corpus / "a.jsonl").read_bytes())


def _rows_missing(cache, corpus) -> None:
    entry = _entry_path(cache, corpus / "b.jsonl")
    meta = json.loads(pl.read_parquet_metadata(entry)[cache_codec.META_KEY])
    cache_codec.write_parquet(pl.read_parquet(entry).head(1), entry, meta)  # right metadata, rows missing


@pytest.mark.parametrize("damage", [_foreign_parquet, _entry_of_another_file, _rows_missing],
                         ids=["a foreign parquet file", "the entry of another file",
                              "data that does not match its metadata"])
def test_a_damaged_entry_is_not_trusted(corpus, cache, damage):
    """An entry replaced by another Parquet file, by another file's entry, or with rows missing under its
    metadata is rebuilt, and the read is the cold one."""
    cold = read(corpus, None)
    fill_one_pack_per_file(corpus, cache)
    damage(cache, corpus)
    again = read(corpus, cache)
    assert again.cache.rebuilt == 1
    assert_same(cold, again)


def test_failed_write_leaves_no_partial_file(corpus, cache, monkeypatch):
    def failing(frame, path, meta):
        Path(path).write_bytes(b"PAR1 half a file")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache_mod, "write_parquet", failing)
    cold = read(corpus, None)
    got = read(corpus, cache)
    assert_same(cold, got)  # the read goes on without the cache
    assert got.cache.write_errors == 3 and got.cache.written == 0
    assert len(got.warnings) == 1 and "No space left" in got.warnings[0]
    assert [p for p in cache.root.rglob("*") if p.is_file() and p.name != "CACHEDIR.TAG"] == []


def test_unwritable_cache_folder_does_not_stop_the_read(corpus, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    got = read(corpus, Cache(blocker / "cache"))
    assert got.cache.write_errors == 3
    assert got.messages.height == read(corpus, None).messages.height


def test_a_big_read_leaves_a_pack_that_serves_the_next_one(big_corpus, cache, parsed_files):
    cold = read(big_corpus, None)
    read(big_corpus, cache)
    assert len(list(cache.packs_dir.glob("*.parquet"))) == 1
    for entry in cache.entries_dir.rglob("*.parquet"):
        entry.unlink()  # the pack alone must do
    parsed_files.clear()
    again = read(big_corpus, cache)
    assert parsed_files == [] and again.cache.hits == cold.report.files
    assert_same(cold, again)
    # one file changes: it alone is parsed, the rest still come from the pack
    write_session(big_corpus / "s03.jsonl", 7)
    changed = read(big_corpus, cache)
    assert parsed_files == ["s03.jsonl"]
    assert_same(changed, read(big_corpus, None))
    for entry in cache.entries_dir.rglob("*.parquet"):
        entry.unlink()  # the pack was brought up to date
    parsed_files.clear()
    assert read(big_corpus, cache).cache.hits == cold.report.files and parsed_files == []


def test_corrupt_pack_is_rebuilt(big_corpus, cache):
    cold = read(big_corpus, None)
    read(big_corpus, cache)
    (pack,) = cache.packs_dir.glob("*.parquet")
    pack.write_bytes(b"junk")
    again = read(big_corpus, cache)
    assert again.cache.rebuilt == 1 and again.cache.misses == cold.report.files  # its files alone are parsed again
    assert_same(cold, again)
    assert pl.read_parquet(pack).height == cold.messages.height  # the same batch writes the same pack


def test_a_read_writes_one_pack_per_batch_and_one_manifest(corpus, cache):
    read(corpus, cache)
    assert len(list(cache.packs_dir.glob("*.parquet"))) == 1 and cache.manifest_path.is_file()
    manifest = pl.read_parquet(cache.manifest_path)
    assert manifest["path"].to_list() == [str(corpus / n) for n in ("a.jsonl", "b.jsonl", "c.jsonl")]
    assert manifest["row_offset"].to_list() == [0, 4, 10] and manifest["rows"].to_list() == [4, 6, 2]
    assert manifest["skipped"].to_list() == [False, False, True]


def test_a_corrupt_pack_invalidates_its_own_files_only(corpus, big_corpus, cache):
    cold = read([corpus, big_corpus], None)
    read(corpus, cache)
    read(big_corpus, cache)
    _entry_path(cache, corpus / "a.jsonl").write_bytes(b"junk")
    again = read([corpus, big_corpus], cache)
    assert (again.cache.rebuilt, again.cache.misses, again.cache.hits) == (1, 3, cold.report.files - 3)
    assert_same(cold, again)


def test_changed_files_leave_unreferenced_packs_that_are_pruned(corpus, cache):
    read(corpus, cache)
    (old,) = cache.packs_dir.glob("*.parquet")
    for name in ("a.jsonl", "b.jsonl", "c.jsonl"):
        write_session(corpus / name, 4)
    read(corpus, cache)
    assert not old.exists() and len(list(cache.packs_dir.glob("*.parquet"))) == 1


def test_a_corrupt_manifest_is_rebuilt(corpus, cache):
    cold = read(corpus, None)
    read(corpus, cache)
    cache.manifest_path.write_bytes(b"junk")
    again = read(corpus, cache)
    assert (again.cache.rebuilt, again.cache.misses) == (1, 3) and len(again.warnings) == 1
    assert_same(cold, again)
    assert read(corpus, cache).cache.hits == 3


@pytest.mark.parametrize("change", ["a column gone", "a column of another type"])
def test_a_manifest_of_another_shape_is_rebuilt(corpus, cache, change):
    cold = read(corpus, None)
    read(corpus, cache)
    meta = cache_codec.read_meta(cache.manifest_path, "manifest")
    manifest = pl.read_parquet(cache.manifest_path)
    manifest = manifest.drop("record") if change == "a column gone" else manifest.with_columns(pl.col("rows").cast(pl.Int32))
    cache_codec.write_parquet(manifest, cache.manifest_path, meta)
    again = read(corpus, cache)
    assert (again.cache.rebuilt, again.cache.misses, again.cache.hits) == (1, 3, 0)
    assert_same(cold, again)
    assert read(corpus, cache).cache.hits == 3


def test_info_and_clear_touch_only_cache_files(corpus, cache, big_corpus):
    read(corpus, cache)
    read(big_corpus, cache)
    mine = cache.root / "notes.txt"
    mine.write_text("the user's own file")
    info = cache.info()
    n_files = 3 + len(list(big_corpus.iterdir()))
    assert (info["entries"], info["packs"], info["root"]) == (n_files, 2, str(cache.root))
    assert info["bytes"] == sum(p.stat().st_size for p in cache.root.rglob("*") if p.is_file() and p != mine)
    removed, size = cache.clear()
    assert (removed, size) == (2 + 1 + 1, info["bytes"])  # the packs, the manifest, the tag
    assert [p.name for p in cache.root.rglob("*")] == ["notes.txt"]
    assert cache.info()["entries"] == 0


def test_clear_removes_the_emptied_folder(corpus, cache):
    read(corpus, cache)
    cache.clear()
    assert not cache.root.exists()


def test_default_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("PANTO_ANALYTICS_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_mod.default_cache_dir() == tmp_path / "xdg" / "panto_analytics"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_mod.default_cache_dir() == tmp_path / "home" / ".cache" / "panto_analytics"
    monkeypatch.setenv("PANTO_ANALYTICS_CACHE", str(tmp_path / "mine"))
    assert cache_mod.default_cache_dir() == tmp_path / "mine"


def test_read_sessions_takes_a_folder_or_a_cache(corpus, tmp_path):
    as_folder = pa.read_sessions(corpus, cache=tmp_path / "c", skip_invalid=True, jobs=1)
    c = Cache(tmp_path / "c")
    report = IngestReport()
    as_cache = pa.read_sessions(corpus, cache=c, skip_invalid=True, jobs=1, report=report)
    assert as_folder.equals(as_cache) and c.stats.hits == 3 and report.files == 3


def test_session_metadata_round_trips_exactly(tmp_path):
    from datetime import datetime

    from panto_analytics.formats.contract import SessionMeta
    from panto_analytics.ingest.cache import Entry

    meta = SessionMeta("s", model="m", context_window=5, parent_session_id="p",
                       created_at=datetime(2025, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
                       compactions=[{"anchor_index": 3, "trigger": "auto", "tokens_before": 9,
                                     "first_kept_index": None,
                                     "at": datetime(2025, 1, 2, 4, 0, tzinfo=UTC)}],
                       api_calls=4, message_ids=["u1", None, "u3"])
    report = IngestReport(1, 1, 0, 4)
    report.skip("f", "why")
    report.ignore("claude-code", "progress", 2)
    entry = Entry(pl.DataFrame(schema=pa.read_sessions([]).schema), meta, "canonical", report)
    src = write_session(tmp_path / "x.jsonl", 0)
    c = Cache(tmp_path / "c")
    key = FileKey.of(src)
    assert c.store(key, None, entry)
    (back,) = c.lookup([key], None, skip_invalid=True)
    assert back.session == meta and back.report == report and back.source_format == "canonical"


@pytest.mark.parametrize("where", ["record", "columns"])
def test_entry_with_malformed_session_metadata_is_not_trusted(corpus, big_corpus, cache, where):
    for folder in (corpus, big_corpus):
        cold = read(folder, None)
        read(folder, cache)
        path = cache.manifest_path
        meta = json.loads(pl.read_parquet_metadata(path)[cache_codec.META_KEY])
        manifest = pl.read_parquet(path)
        first = str(folder / sorted(p.name for p in folder.iterdir())[0])
        mine = pl.col("path") == first
        if where == "record":  # a row served from its record (not simple): a record of the wrong shape
            row = manifest.filter(mine).row(0, named=True)
            record = json.loads(row["record"]) if row["record"] else {"report": {}, "datetimes": []}
            record["session"] = {"no_such_field": 1}
            manifest = manifest.with_columns(pl.when(mine).then(pl.lit(json.dumps(record))).otherwise("record")
                                             .alias("record"), pl.when(mine).then(False).otherwise("simple").alias("simple"))
        else:  # a row served from its columns (simple): a session without an id
            manifest = manifest.with_columns(pl.when(mine).then(True).otherwise("simple").alias("simple"),
                                             pl.when(mine).then(None).otherwise("session_id").alias("session_id"))
        cache_codec.write_parquet(manifest, path, meta)
        again = read(folder, cache)
        assert again.cache.rebuilt == 1
        assert_same(cold, again)
