"""Writing a dataset, incrementally: :func:`write_dataset` (from session files) and :class:`DatasetWriter`.

The dataset is written from what the cache-backed read returns
(:func:`~panto_analytics.ingest.read_corpus`), a chunk of files at a time,
so a first run holds one chunk in memory, not the corpus. Its manifest
records, per source file, the file's stat and the bucket and part its
session went to, so a second run re-reads only files that are new or
changed, and rewrites only the parts that held sessions of changed or
removed files (without those sessions); every other part is left alone.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "s.jsonl").write_text('{"type":"message","role":"user","content":[{"type":"text","text":"hi"}]}\\n')
>>> first = write_dataset([d], d / "ds", buckets=4)
>>> (first.files_read, first.sessions, first.messages)
(1, 1, 1)
>>> write_dataset([d], d / "ds").files_read   # unchanged: nothing is read again
0
"""
from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import polars as pl

from ..errors import IngestReport, InputError
from ..frame.schema import SESSION
from ..ingest.cache import Cache, CacheStats, as_cache
from ..ingest.cache.codec import FileKey, mode_of, parser_version
from ..ingest.corpus import read_corpus
from ..ingest.paths import PathLike, expand_paths, expand_searched
from ..ingest.pipeline import without_strays
from ..ingest.versions import with_agent_versions
from ..phrases import counted
from .buckets import MAX_BUCKETS, session_buckets
from .info import DatasetInfo, is_dataset, read_info
from .store import (
    DATASET_MANIFEST_SCHEMA,
    DEFAULT_BUCKETS,
    TABLES,
    new_part_name,
    part_path,
    read_manifest,
    read_part,
    write_info,
    write_manifest,
    write_part,
)

__all__ = ["CHUNK_FILES", "DatasetUpdate", "DatasetWriter", "dataset_example", "files_outside", "write_dataset"]

_MANIFEST_CAST = cast("dict[Any, pl.DataType]", DATASET_MANIFEST_SCHEMA)

#: Files read (through the cache) per chunk: what one chunk holds in memory.
CHUNK_FILES = 2048


@dataclass
class DatasetUpdate:
    """What one :func:`write_dataset` run did."""

    files_unchanged: int = 0
    files_read: int = 0
    files_removed: int = 0
    parts_written: int = 0
    parts_rewritten: int = 0
    buckets_touched: int = 0
    sessions: int = 0
    messages: int = 0
    #: What the cache did for the files read (None without a cache).
    cache: CacheStats | None = None

    def describe(self) -> str:
        """One line for people.

        >>> print(DatasetUpdate(files_read=2, sessions=2, messages=9, parts_written=2, buckets_touched=2).describe())  # doctest: +ELLIPSIS
        dataset: 2 files read, 0 unchanged, 0 removed; 2 parts written, 0 rewritten, 2 buckets touched; ...
        """
        return (f"dataset: {counted(self.files_read, 'file')} read, {self.files_unchanged:,} unchanged, {self.files_removed:,} "
                f"removed; {counted(self.parts_written, 'part')} written, {self.parts_rewritten:,} rewritten, "
                f"{counted(self.buckets_touched, 'bucket')} touched; {counted(self.sessions, 'session')}, "
                f"{counted(self.messages, 'message')} in all")


class DatasetWriter:
    """Adds tables to a dataset and drops files from it; nothing is visible until :meth:`commit`.

    ``mode`` says how its files were read (format and strictness): a dataset
    read another way, or by another parser version, is rebuilt whole.
    """

    def __init__(self, root: PathLike, *, buckets: int | None = None, mode: str = "auto"):
        self.root = Path(root)
        self.update = DatasetUpdate()
        existing = read_info(self.root) if is_dataset(self.root) else None
        if existing is not None and buckets is not None and buckets != existing.buckets:
            raise InputError(self.root, None, f"this dataset has {existing.buckets} buckets, not {buckets} "
                             "(write a new dataset to change them)", skippable=False)
        self.buckets = buckets or (existing.buckets if existing else DEFAULT_BUCKETS)
        if not 1 <= self.buckets <= MAX_BUCKETS:
            raise ValueError(f"buckets must be between 1 and {MAX_BUCKETS}, got {self.buckets}")
        self.info = DatasetInfo(self.buckets, parser_version(), mode)
        same = existing is not None and (existing.parser, existing.mode) == (self.info.parser, mode)
        self.manifest = read_manifest(self.root) if same else pl.DataFrame(schema=DATASET_MANIFEST_SCHEMA)
        #: Parts of the manifest on disk that the new manifest no longer names: deleted after the commit.
        self._obsolete: set[str] = set(read_manifest(self.root)["part"].drop_nulls()) if existing and not same else set()
        self._touched: set[int] = set()

    def drop(self, abspaths: Iterable[str]) -> None:
        """Remove the files at ``abspaths`` and their sessions; each part holding one is rewritten without them."""
        gone = self.manifest.filter(pl.col("abspath").is_in(list(abspaths)))
        if gone.is_empty():
            return
        affected = gone.filter(pl.col("part").is_not_null()).select("bucket", "part").unique().sort("part")
        stale = gone[SESSION].drop_nulls()
        remap: dict[str, str | None] = {}
        for bucket, part in affected.iter_rows():  # one iteration per affected part, not per session
            frames = {t: read_part(self.root, t, part).filter(~pl.col(SESSION).cast(pl.String).is_in(stale.implode()))
                      for t in TABLES}
            new = new_part_name(int(bucket)) if frames["sessions"].height else None
            if new is not None:
                for t, frame in frames.items():
                    write_part(self.root, t, new, frame)
            remap[part] = new
            self._obsolete.add(part)
            self._touched.add(int(bucket))
        self.update.parts_rewritten += sum(v is not None for v in remap.values())
        kept = self.manifest.join(gone.select("abspath"), on="abspath", how="anti", maintain_order="left")
        mapping = pl.DataFrame({"part": list(remap), "_new": list(remap.values())}, schema={"part": pl.String, "_new": pl.String})
        self.manifest = (kept.join(mapping, on="part", how="left", maintain_order="left")
                         .with_columns(pl.when(pl.col("_new").is_not_null() | pl.col("part").is_in(mapping["part"].implode()))
                                       .then(pl.col("_new")).otherwise(pl.col("part")).alias("part"))
                         .drop("_new"))

    def add(self, messages: pl.DataFrame, sessions: pl.DataFrame, compactions: pl.DataFrame,
            files: pl.DataFrame) -> None:
        """Add the sessions of one chunk: the three tables, and ``files`` (one row per source file read:
        ``abspath``, ``path``, ``size``, ``mtime_ns``, ``inode``; a file whose absolute path is not a session's
        ``file`` gave no session)."""
        sid = pl.col(SESSION).cast(pl.String)
        known = self.manifest.select(_sid=SESSION).drop_nulls()
        dup = sessions.with_columns(_sid=sid).join(known, on="_sid", how="semi", maintain_order="left")
        if dup.height:
            row = dup.row(0, named=True)
            other = self.manifest.filter(pl.col(SESSION) == str(row[SESSION]))["path"][0]
            raise InputError(row["file"], None, f"session {row['session_id']} is already in the dataset, from {other}",
                             skippable=False)
        bucket_of = sessions.select(session_id=sid, bucket=session_buckets(sessions[SESSION], self.buckets))
        names = {int(b): new_part_name(int(b)) for b in bucket_of["bucket"].unique().sort()}
        parts = bucket_of.with_columns(part=pl.col("bucket").replace_strict(names, return_dtype=pl.String))
        for table, frame in (("messages", messages), ("sessions", sessions), ("compactions", compactions)):
            tagged = frame.with_columns(_sid=sid).join(parts.select(_sid=SESSION, _part="part"), on="_sid",
                                                       how="left", maintain_order="left")
            by_part = {str(k[0]): rows for k, rows in tagged.partition_by("_part", as_dict=True, maintain_order=True).items()}
            for part in names.values():  # every part gets all three tables, empty where its sessions have no rows
                write_part(self.root, table, part, by_part.get(part, tagged.head(0)).drop("_sid", "_part"))
        counts = messages.group_by(sid).agg(messages=pl.len())
        per_file = (sessions.select("file", session_id=sid).join(parts, on=SESSION, how="left")
                    .join(counts, on=SESSION, how="left"))
        rows = (files.join(per_file, left_on="abspath", right_on="file", how="left", maintain_order="left")
                .with_columns(pl.col("messages").fill_null(0)))
        self.manifest = pl.concat([self.manifest, rows.select(list(DATASET_MANIFEST_SCHEMA)).cast(_MANIFEST_CAST)])
        self._touched.update(names)
        self.update.parts_written += len(names)

    def commit(self) -> DatasetUpdate:
        """Write the manifest and ``dataset.json``, then delete the parts no longer named."""
        self.root.mkdir(parents=True, exist_ok=True)
        m = self.manifest
        self.info.files = m.height
        self.info.sessions = int(m[SESSION].is_not_null().sum())
        self.info.messages = int(m["messages"].sum() or 0)
        write_manifest(self.root, m)
        write_info(self.root, self.info)
        live = set(m["part"].drop_nulls())
        for part in self._obsolete - live:
            for table in TABLES:
                part_path(self.root, table, part).unlink(missing_ok=True)
        self.update.buckets_touched = len(self._touched)
        self.update.sessions, self.update.messages = self.info.sessions, self.info.messages
        return self.update


def _stats(files: list[Path]) -> pl.DataFrame:
    """The stat of each file (one ``os.stat`` each, as the cache does); ``abspath``: the absolute path as named
    (the dataset's ``file`` columns name it so), not resolved through links as the cache's key is."""
    keys = [FileKey.of(f) for f in files]
    return pl.DataFrame({"abspath": [os.path.abspath(k.path) for k in keys], "path": [k.path for k in keys],
                         "size": [k.size for k in keys], "mtime_ns": [k.mtime_ns for k in keys],
                         "inode": [k.inode for k in keys]},
                        schema={c: DATASET_MANIFEST_SCHEMA[c] for c in ("abspath", "path", "size", "mtime_ns", "inode")})


def write_dataset(paths: Iterable[PathLike] | PathLike, root: PathLike, *, buckets: int | None = None,
                  format: str | None = None, skip_invalid: bool = False, report: IngestReport | None = None,
                  cache: Cache | PathLike | bool | None = None, progress: bool = False, jobs: int | None = None,
                  chunk_files: int = CHUNK_FILES, replace: bool = False) -> DatasetUpdate:
    """Write (or bring up to date) the dataset at ``root`` from the session files under ``paths``.

    Files the dataset already holds that ``paths`` do not name (:func:`files_outside`: a folder written
    before) are kept, and brought up to date too; ``replace`` drops them, so the dataset holds ``paths``
    alone. A file gone from a folder ``paths`` name is removed.

    Parameters
    ----------
    paths, format, skip_invalid, report, cache, progress, jobs
        As in :func:`~panto_analytics.read_sessions`.
    root
        The dataset folder; created when missing.
    buckets
        Buckets of a new dataset (default :data:`~.store.DEFAULT_BUCKETS`); an existing one keeps its own.
    chunk_files
        Files read per chunk (a folder is never split between chunks).
    replace
        Drop the files the dataset holds that ``paths`` do not name.

    Returns
    -------
    DatasetUpdate
        Files read, unchanged and removed; parts written and rewritten; the dataset's totals.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "s.jsonl").write_text('{"type":"message","role":"user","content":[{"type":"text","text":"hi"}]}\\n')
    >>> write_dataset([d], d / "ds", buckets=2).sessions
    1
    """
    report = report if report is not None else IngestReport()
    store = as_cache(cache)
    counted = dataclasses.replace(store.stats) if store is not None else None
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    before = read_manifest(root) if is_dataset(root) else None
    writer = DatasetWriter(root, buckets=buckets, mode=f"{mode_of(format)}:{'lenient' if skip_invalid else 'strict'}")
    stats = _stats([Path(n) for n in without_strays(*expand_searched(paths), format, report)])
    kept = pl.DataFrame(schema={"abspath": pl.String()})
    if before is not None and not replace:
        # Files the dataset holds that PATHS do not name stay: those still there are updated like the others,
        # those gone are kept as they are (only naming their folder, or --replace, removes them).
        outside = files_outside(before, paths, stats)["abspath"]
        there = [os.path.exists(a) for a in outside]  # one stat per file, as for the files named
        stats = pl.concat([stats, _stats([Path(a) for a, t in zip(outside, there) if t])])
        kept = pl.DataFrame({"abspath": [a for a, t in zip(outside, there) if not t]}, schema={"abspath": pl.String()})
        if kept.height and writer.manifest.is_empty():
            raise InputError(root, None, f"this dataset must be rebuilt (it was read with another format, strictness "
                             f"or parser version), and {kept.height} of its files not under PATHS are gone (first: "
                             f"{kept['abspath'][0]}); --replace rebuilds it from PATHS alone", skippable=False)
    stats = stats.with_columns(_folder(pl.col("abspath")))
    state = ["abspath", "size", "mtime_ns", "inode"]
    old = writer.manifest.join(kept, on="abspath", how="anti").with_columns(_folder(pl.col("abspath")))
    same = old.join(stats, on=state, how="semi")
    # A folder with a new, changed or removed file is read again whole: adapters join files of one folder
    # (a Claude Code session resumed into another file), so its sessions are rebuilt together.
    touched = pl.concat([old.join(same, on="abspath", how="anti").select("folder"),
                         stats.join(same, on="abspath", how="anti").select("folder")]).unique()
    writer.drop(old.join(touched, on="folder", how="semi")["abspath"])
    fresh = stats.join(touched, on="folder", how="semi", maintain_order="left")
    writer.update.files_unchanged = same.join(touched, on="folder", how="anti").height
    for chunk in _chunks(fresh, chunk_files):  # one iteration per chunk of files
        # Read by absolute path, so the dataset's ``file`` columns name each file wherever it is read from
        # (``request`` re-reads a session's file); the manifest keeps the path as named too.
        corpus = read_corpus(chunk["abspath"].to_list(), format=format, skip_invalid=skip_invalid, report=report,
                             cache=store, progress=progress, jobs=jobs)
        # The Claude Code version of each message is stored beside the frame (store.STORED_BESIDE), read back from
        # the files now, while they are certainly there: a claude-code replay on the dataset reads it.
        writer.add(with_agent_versions(corpus.messages), corpus.sessions, corpus.compactions, chunk.drop("folder"))
        writer.update.files_read += chunk.height
    writer.update.files_removed = _removed(before, pl.concat([stats.select("abspath"), kept]))
    writer.update.cache = store.stats.since(counted) if store is not None and counted is not None else None
    return writer.commit()


def dataset_example(*, usage: bool = False) -> Path:
    """A dataset in two buckets, for examples, in a new temporary folder: one session ``s``, a user's "hi" and,
    with ``usage``, an assistant's reply that reports 9 input and 1 output tokens.

    >>> from panto_analytics.dataset import scan_dataset
    >>> scan_dataset(dataset_example(usage=True)).select("role", "input").collect().rows()
    [('user', None), ('assistant', 9)]
    """
    folder = Path(tempfile.mkdtemp())
    lines = ['{"type":"message","role":"user","content":[{"type":"text","text":"hi"}]}\n']
    if usage:
        lines.append('{"type":"message","role":"assistant","content":[],'
                     '"usage":{"input":9,"output":1,"cache_read":0,"cache_write":0}}\n')
    (folder / "s.jsonl").write_text("".join(lines))
    write_dataset([folder], folder / "ds", buckets=2)
    return folder / "ds"


def files_outside(manifest: pl.DataFrame, paths: Iterable[PathLike] | PathLike,
                  named: pl.DataFrame | None = None) -> pl.DataFrame:
    """The rows of a dataset ``manifest`` whose files ``paths`` do not name: not among the files found under
    them (``named``, their :func:`_stats`; found again when None), nor inside a folder they name.

    >>> m = pl.DataFrame({"abspath": ["/a/x.jsonl", "/b/y.jsonl"], "session_id": ["x", "y"]})
    >>> files_outside(m, [], pl.DataFrame({"abspath": ["/a/x.jsonl"]}))["abspath"].to_list()
    ['/b/y.jsonl']
    """
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    if named is None:
        named = _stats(expand_paths(paths))
    folders = [os.path.abspath(Path(p).expanduser()).rstrip("/") + "/" for p in paths if Path(p).expanduser().is_dir()]
    inside = pl.col("abspath").is_in(named["abspath"].implode())
    for folder in folders:
        inside = inside | pl.col("abspath").str.starts_with(folder)
    return manifest.filter(~inside)


def _folder(abspath: pl.Expr) -> pl.Expr:
    """The folder of each absolute path.

    >>> pl.select(_folder(pl.lit("/a/b/c.jsonl"))).item()
    '/a/b'
    """
    return abspath.str.replace(r"/[^/]*$", "").alias("folder")


def _chunks(files: pl.DataFrame, size: int) -> list[pl.DataFrame]:
    """``files`` (sorted by path) in chunks of about ``size`` files that never split a folder.

    >>> f = pl.DataFrame({"folder": ["a", "a", "b", "c", "c", "c"]})
    >>> [c["folder"].to_list() for c in _chunks(f, 2)]
    [['a', 'a'], ['b', 'c', 'c', 'c']]
    """
    if files.is_empty():
        return []
    # Files before each folder's first file decide its chunk: a folder never straddles two.
    first = files.with_row_index("_i").group_by("folder", maintain_order=True).agg(pl.col("_i").first())
    chunk_of = first.with_columns(_chunk=pl.col("_i") // max(size, 1)).select("folder", "_chunk")
    tagged = files.join(chunk_of, on="folder", how="left", maintain_order="left")
    return [c.drop("_chunk") for c in tagged.partition_by("_chunk", maintain_order=True)]


def _removed(before: pl.DataFrame | None, stats: pl.DataFrame) -> int:
    """Files the dataset held that are no longer among the files named."""
    return 0 if before is None else before.join(stats, on="abspath", how="anti").height
