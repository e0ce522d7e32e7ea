"""Incremental Parquet cache of parsed session files.

Parsing JSONL is the slow part of an ingest; the message frame of a file is
small. So each parsed file is stored as one Parquet *entry*, whose key-value
metadata holds everything else a re-read must reproduce: the session's
:class:`~panto_analytics.ingest.formats.base.SessionMeta` (compactions and API calls
included) and the file's share of the :class:`~panto_analytics.errors.IngestReport`.

An entry is valid for its file while the file's absolute path, the path as it
was named, its size, mtime (ns) and inode, the forced format (or
auto-detection) and the :func:`parser_version` all match; a read in strict
mode does not use an entry that recorded skipped lines (the strict read must
raise). An entry is looked up by a hash of the path and format; anything
else found there is checked, never trusted: an unreadable file, metadata that
is not ours, or data that does not match its metadata is *corrupt* or
*foreign*: it is deleted, the file is parsed again, and the rebuild is
counted in :attr:`Cache.stats` (``rebuilt``).

Reading a few hundred small Parquet files still costs a tenth of a
millisecond each, so a read of many files also leaves a *pack*: the
entries of all its files concatenated into one Parquet file, with the same
per-file metadata. The next read of the same folder serves every unchanged
file from the pack with one read; files that changed are parsed alone, and
the pack is rewritten. Entries stay the source of truth for other selections.

Every write goes to a temporary file in the same folder and is renamed into
place (``os.replace``), so a reader sees a whole entry or none, and a failed
write leaves nothing behind.

Layout::

    ROOT/CACHEDIR.TAG                 (tells backup tools to skip the folder)
    ROOT/entries/ab/abcdef....parquet (one per parsed file)
    ROOT/packs/0123....parquet        (one per folder read, at most MAX_PACKS)

>>> import tempfile
>>> cache = Cache(tempfile.mkdtemp())
>>> cache.info()["entries"], cache.stats.hits
(0, 0)
"""
from __future__ import annotations

import dataclasses
import itertools
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from ...schema import empty_messages
from .codec import (
    BadEntry,
    Entry,
    FileKey,
    decoded,
    is_usable,
    key_digest,
    make_meta,
    mode_of,
    parser_version,
    read_frame,
    read_meta,
    record_of,
    write_parquet,
)

__all__ = ["Cache", "CacheStats", "CacheWarning", "MAX_PACKS", "PACK_MIN_FILES", "as_cache", "default_cache_dir"]

#: A read of at least this many files leaves a pack.
PACK_MIN_FILES = 8
#: Packs kept; the least recently written go first.
MAX_PACKS = 16

_CACHEDIR_TAG = ("Signature: 8a477f597d28d172789f06886806bc55\n"
                 "# This file is a cache directory tag created by panto_analytics.\n"
                 "# For information about cache directory tags see https://bford.info/cachedir/\n")


class CacheWarning(UserWarning):
    """Something about the cache the user should know: a rebuilt entry, a failed write."""


def default_cache_dir() -> Path:
    """``$PANTO_ANALYTICS_CACHE``, else ``$XDG_CACHE_HOME/panto_analytics``, else ``~/.cache/panto_analytics``."""
    if os.environ.get("PANTO_ANALYTICS_CACHE"):
        return Path(os.environ["PANTO_ANALYTICS_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "panto_analytics"


@dataclass
class CacheStats:
    """What one or more reads did with the cache.

    ``hits``: files served from the cache; ``misses``: files parsed (new,
    changed, or not cacheable in this mode); ``rebuilt``: cache files
    (entries or packs) found corrupt or foreign, deleted and written anew;
    ``written``: cache files stored; ``write_errors``: cache files that could
    not be stored (the read goes on without them).
    """

    hits: int = 0
    misses: int = 0
    rebuilt: int = 0
    written: int = 0
    write_errors: int = 0

    def merge(self, other: CacheStats) -> None:
        for f in dataclasses.fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def since(self, before: CacheStats) -> CacheStats:
        """What happened after ``before`` was copied (for a Cache used by several reads)."""
        return CacheStats(*(getattr(self, f.name) - getattr(before, f.name) for f in dataclasses.fields(self)))


class Cache:
    """A cache folder. Cheap to create; nothing is written until an entry is.

    >>> import tempfile
    >>> Cache(tempfile.mkdtemp()).stats
    CacheStats(hits=0, misses=0, rebuilt=0, written=0, write_errors=0)
    """

    def __init__(self, root: str | Path):
        self.root = Path(root).expanduser()
        self.stats = CacheStats()
        #: The last write error, for the one warning the reader gives.
        self.last_error: str | None = None

    def __repr__(self) -> str:
        return f"Cache({str(self.root)!r})"

    def __reduce__(self):  # worker processes get the folder, not the counters
        return (Cache, (self.root,))

    # -- where things are -------------------------------------------------

    @property
    def entries_dir(self) -> Path:
        return self.root / "entries"

    @property
    def packs_dir(self) -> Path:
        return self.root / "packs"

    def entry_path(self, key: FileKey, format: str | None) -> Path:
        h = key_digest(key.abspath, key.path, mode_of(format))
        return self.entries_dir / h[:2] / f"{h}.parquet"

    def pack_path(self, keys: list[FileKey], format: str | None) -> Path:
        """One pack per folder (the files' deepest common folder) and format mode."""
        try:
            folder = os.path.commonpath([os.path.dirname(k.abspath) for k in keys])
        except ValueError:  # files on different drives: one pack for all such reads
            folder = ""
        return self.packs_dir / f"{key_digest(folder, mode_of(format))}.parquet"

    # -- reading ----------------------------------------------------------

    def lookup(self, keys: list[FileKey], format: str | None, skip_invalid: bool) -> list[Entry | None]:
        """The cached entry of each file, or ``None`` where it must be parsed.

        Counts hits and rebuilds in :attr:`stats` (misses are counted by
        whoever parses, with :meth:`count_misses`). Every corrupt or foreign file met is deleted.
        """
        found: list[Entry | None] = [None] * len(keys)
        pending = list(range(len(keys)))
        if len(keys) >= PACK_MIN_FILES:
            pending = self._from_pack(keys, format, skip_invalid, found)
        self._from_entries(keys, format, skip_invalid, pending, found)
        self.stats.hits += sum(e is not None for e in found)
        return found

    def _from_pack(self, keys, format, skip_invalid, found) -> list[int]:
        """Fill ``found`` from the folder's pack; return the indices still pending."""
        path = self.pack_path(keys, format)
        if not path.exists():
            return list(range(len(keys)))
        try:
            meta = read_meta(path, "pack", format)
            if meta is None:
                return list(range(len(keys)))
            records = {r["abspath"]: r for r in meta["files"]}
            offsets, offset = {}, 0
            for r in meta["files"]:
                offsets[r["abspath"]] = offset
                offset += r["rows"]
            wanted = {i: (records[k.abspath], decoded(records[k.abspath])) for i, k in enumerate(keys)
                      if k.abspath in records and is_usable(records[k.abspath], k, skip_invalid)}
            if not wanted:
                return list(range(len(keys)))
            frame = read_frame(path, offset)
        except BadEntry:
            self._discard(path)  # its files are read from their entries; the pack is written anew
            return list(range(len(keys)))
        for i, (rec, (session, report)) in wanted.items():
            found[i] = Entry(frame.slice(offsets[rec["abspath"]], rec["rows"]), session, rec["source_format"],
                             report, "pack")
        return [i for i in range(len(keys)) if found[i] is None]

    def _from_entries(self, keys, format, skip_invalid, pending, found) -> None:
        """Fill ``found`` from the per-file entries of ``pending`` files, read in one go."""
        usable: list[tuple[int, Path, dict, tuple]] = []
        for i in pending:
            path = self.entry_path(keys[i], format)
            if not path.exists():
                continue
            try:
                meta = read_meta(path, "entry", format)
                if meta is None:
                    continue
                rec = meta["file"]
                if rec["abspath"] != keys[i].abspath or rec["path"] != keys[i].path:
                    raise BadEntry("entry of another file")
                if is_usable(rec, keys[i], skip_invalid):
                    usable.append((i, path, rec, decoded(rec)))
            except BadEntry:
                self._discard(path)
        if not usable:
            return
        try:
            rows = [rec["rows"] for _, _, rec, _ in usable]
            frame = read_frame([path for _, path, _, _ in usable], sum(rows))
            starts = itertools.accumulate(rows, initial=0)
            frames: list[pl.DataFrame | None] = [frame.slice(start, n) for start, n in zip(starts, rows)]
        except BadEntry:  # some entry's data is bad: find which, one by one
            frames = []
            for _, path, rec, _ in usable:
                try:
                    frames.append(read_frame(path, rec["rows"]))
                except BadEntry:
                    frames.append(None)
                    self._discard(path)
        for (i, _, rec, (session, report)), messages in zip(usable, frames):
            if messages is not None:
                found[i] = Entry(messages, session, rec["source_format"], report, "entry")

    def count_misses(self, n: int) -> None:
        """Count ``n`` files parsed because the cache could not serve them."""
        self.stats.misses += n

    def absorb(self, stats: CacheStats, error: str | None) -> None:
        """Take in what a task that wrote to this folder (here or in a worker process) counted."""
        self.stats.merge(stats)
        self.last_error = error or self.last_error

    def _discard(self, path: Path) -> None:
        self.stats.rebuilt += 1
        try:
            path.unlink()
        except OSError:
            pass

    # -- writing ----------------------------------------------------------

    def store(self, key: FileKey, format: str | None, entry: Entry) -> bool:
        """Write the entry of one parsed file (atomically). Returns whether it was stored."""
        rec = record_of(key, entry)
        if rec is None:
            return False
        meta = make_meta("entry", format, file=rec)
        return self._write(self.entry_path(key, format), entry.messages, meta)

    def update_pack(self, keys: list[FileKey], format: str | None, entries: list[Entry]) -> bool:
        """Write the pack of a read of ``keys``, unless the pack served all of it or the read is small."""
        if len(keys) < PACK_MIN_FILES or all(e.origin == "pack" for e in entries):
            return False
        return self.store_pack(keys, format, entries)

    def store_pack(self, keys: list[FileKey], format: str | None, entries: list[Entry]) -> bool:
        """Write the pack of a read of ``keys`` (all parsed or cached)."""
        records = [record_of(k, e) for k, e in zip(keys, entries)]
        kept = [(r, e) for r, e in zip(records, entries) if r is not None]
        frames = [e.messages for _, e in kept]
        frame = pl.concat(frames, how="vertical", rechunk=True) if frames else empty_messages()
        ok = self._write(self.pack_path(keys, format), frame, make_meta("pack", format, files=[r for r, _ in kept]))
        if ok:
            self._prune_packs()
        return ok

    def _write(self, path: Path, frame: pl.DataFrame, meta: dict) -> bool:
        tmp = None
        try:
            self._ensure_root()
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".parquet", dir=path.parent)
            os.close(fd)
            write_parquet(frame, tmp, meta)
            os.replace(tmp, path)
            tmp = None
        except Exception as e:  # a full disk or a read-only folder must not stop the read
            self.stats.write_errors += 1
            self.last_error = f"cannot write {path}: {e}"
            return False
        finally:
            if tmp is not None:
                _unlink(tmp)
        self.stats.written += 1
        return True

    def _ensure_root(self) -> None:
        tag = self.root / "CACHEDIR.TAG"
        if not tag.exists():
            self.root.mkdir(parents=True, exist_ok=True)
            tag.write_text(_CACHEDIR_TAG)

    def _prune_packs(self) -> None:
        packs = sorted(self.packs_dir.glob("*.parquet"), key=_mtime, reverse=True)
        for old in packs[MAX_PACKS:]:
            _unlink(old)

    # -- maintenance ------------------------------------------------------

    def files(self) -> Iterator[Path]:
        """Every file this cache wrote: entries, packs, leftover temporaries, the tag."""
        for folder in (self.entries_dir, self.packs_dir):
            if folder.is_dir():
                yield from (p for p in folder.rglob("*.parquet") if p.is_file())
        if (self.root / "CACHEDIR.TAG").is_file():
            yield self.root / "CACHEDIR.TAG"

    def info(self) -> dict[str, Any]:
        """Where the cache is and what it holds."""
        entries = packs = temporaries = size = 0
        for p in self.files():
            size += p.stat().st_size
            if p.name.startswith(".tmp-"):
                temporaries += 1
            elif p.parent == self.packs_dir:
                packs += 1
            elif p.suffix == ".parquet":
                entries += 1
        return {"root": str(self.root), "entries": entries, "packs": packs, "temporaries": temporaries,
                "bytes": size, "parser_version": parser_version()}

    def clear(self) -> tuple[int, int]:
        """Delete what :meth:`files` lists (nothing else), then the emptied folders.

        Returns ``(files, bytes)`` removed.
        """
        n = size = 0
        for p in list(self.files()):
            try:
                size += p.stat().st_size
                p.unlink()
                n += 1
            except OSError:
                pass
        if self.entries_dir.is_dir():
            for d in self.entries_dir.iterdir():
                _rmdir(d)
        for folder in (self.entries_dir, self.packs_dir, self.root):
            _rmdir(folder)  # only if empty: the user's own files are never touched
        return n, size


# -- encoding ---------------------------------------------------------------


# -- small helpers -------------------------------------------------------


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _unlink(path: str | Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _rmdir(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass


def as_cache(cache: Cache | str | Path | bool | None) -> Cache | None:
    """A :class:`Cache` from what a caller passed: a Cache, a folder, True (the default folder), or None/False (off).

    >>> as_cache(None) is None, as_cache("/tmp/x").root.name
    (True, 'x')
    """
    if cache is None or cache is False:
        return None
    if cache is True:
        return Cache(default_cache_dir())
    return cache if isinstance(cache, Cache) else Cache(cache)
