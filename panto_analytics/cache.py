"""Incremental Parquet cache of parsed session files.

Parsing JSONL is the slow part of an ingest; the message frame of a file is
small. So each parsed file is stored as one Parquet *entry*, whose key-value
metadata holds everything else a re-read must reproduce: the session's
:class:`~panto_analytics.formats.base.SessionMeta` (compactions and API calls
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
import hashlib
import itertools
import os
import tempfile
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

import orjson
import polars as pl

from .errors import IngestReport, InputError
from .formats.base import SessionMeta
from .schema import MESSAGE_SCHEMA, empty_messages

#: Marks our metadata in a Parquet file; anything without it is foreign.
MAGIC = "panto_analytics.cache"
#: Bumped when the layout or the metadata encoding changes.
LAYOUT = 1
#: The Parquet key-value metadata key.
META_KEY = "panto_analytics"
#: A read of at least this many files leaves a pack.
PACK_MIN_FILES = 8
#: Packs kept; the least recently written go first.
MAX_PACKS = 16

_COMPRESSION = "lz4"  # the fastest to read back; entries are small anyway
_CACHEDIR_TAG = ("Signature: 8a477f597d28d172789f06886806bc55\n"
                 "# This file is a cache directory tag created by panto_analytics.\n"
                 "# For information about cache directory tags see https://bford.info/cachedir/\n")


class CacheWarning(UserWarning):
    """Something about the cache the user should know: a rebuilt entry, a failed write."""


class BadEntry(Exception):
    """An entry that is corrupt or not ours (``foreign``)."""


def default_cache_dir() -> Path:
    """``$PANTO_ANALYTICS_CACHE``, else ``$XDG_CACHE_HOME/panto_analytics``, else ``~/.cache/panto_analytics``."""
    if os.environ.get("PANTO_ANALYTICS_CACHE"):
        return Path(os.environ["PANTO_ANALYTICS_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "panto_analytics"


@lru_cache(maxsize=1)
def parser_version() -> str:
    """A digest of the code that turns a file into an entry.

    It covers the adapters, word counting, the schemas, the report, ingest
    and this module, so that any change to how a file is read invalidates
    what was cached from it, without anyone having to bump a number.
    """
    from . import __file__ as package_init

    root = Path(package_init).parent
    sources = sorted(root.glob("formats/*.py")) + [root / name for name in
                                                   ("words.py", "schema.py", "errors.py", "ingest.py", "cache.py")]
    digest = hashlib.sha256(f"layout {LAYOUT}\n".encode())
    for path in sources:
        if path.exists():
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class FileKey:
    """What identifies the state of a source file: paths, size, mtime and inode."""

    path: str
    abspath: str
    size: int
    mtime_ns: int
    inode: int

    @classmethod
    def of(cls, path: str | Path) -> "FileKey":
        """Stat ``path`` now (before it is parsed, so a later change is seen as one)."""
        try:
            st = os.stat(path)
        except OSError as e:
            raise InputError(path, None, f"cannot read: {e.strerror or e}") from None
        return cls(str(path), os.path.abspath(path), st.st_size, st.st_mtime_ns, st.st_ino)

    def state(self) -> list:
        return [self.path, self.size, self.mtime_ns, self.inode]


@dataclass
class Entry:
    """What parsing one file produced: its frame rows, session, format and report share."""

    messages: pl.DataFrame
    session: SessionMeta
    source_format: str
    report: IngestReport
    #: Where it came from: ``"parsed"``, ``"entry"`` or ``"pack"``.
    origin: str = "parsed"


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

    def merge(self, other: "CacheStats") -> None:
        for f in dataclasses.fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def since(self, before: "CacheStats") -> "CacheStats":
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
        h = _digest(key.abspath, key.path, _mode(format))
        return self.entries_dir / h[:2] / f"{h}.parquet"

    def pack_path(self, keys: list[FileKey], format: str | None) -> Path:
        """One pack per folder (the files' deepest common folder) and format mode."""
        try:
            folder = os.path.commonpath([os.path.dirname(k.abspath) for k in keys])
        except ValueError:  # files on different drives: one pack for all such reads
            folder = ""
        return self.packs_dir / f"{_digest(folder, _mode(format))}.parquet"

    # -- reading ----------------------------------------------------------

    def lookup(self, keys: list[FileKey], format: str | None, skip_invalid: bool) -> list[Entry | None]:
        """The cached entry of each file, or ``None`` where it must be parsed.

        Counts hits and rebuilds in :attr:`stats` (misses are counted by
        whoever parses). Every corrupt or foreign file met is deleted.
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
            meta = _read_meta(path, "pack", format)
            if meta is None:
                return list(range(len(keys)))
            records = {r["abspath"]: r for r in meta["files"]}
            offsets, offset = {}, 0
            for r in meta["files"]:
                offsets[r["abspath"]] = offset
                offset += r["rows"]
            wanted = {i: (records[k.abspath], _decoded(records[k.abspath])) for i, k in enumerate(keys)
                      if k.abspath in records and _usable(records[k.abspath], k, skip_invalid)}
            if not wanted:
                return list(range(len(keys)))
            frame = _read_frame(path, offset)
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
                meta = _read_meta(path, "entry", format)
                if meta is None:
                    continue
                rec = meta["file"]
                if rec["abspath"] != keys[i].abspath or rec["path"] != keys[i].path:
                    raise BadEntry("entry of another file")
                if _usable(rec, keys[i], skip_invalid):
                    usable.append((i, path, rec, _decoded(rec)))
            except BadEntry:
                self._discard(path)
        if not usable:
            return
        try:
            rows = [rec["rows"] for _, _, rec, _ in usable]
            frame = _read_frame([path for _, path, _, _ in usable], sum(rows))
            starts = itertools.accumulate(rows, initial=0)
            frames = [frame.slice(start, n) for start, n in zip(starts, rows)]
        except BadEntry:  # some entry's data is bad: find which, one by one
            frames = []
            for _, path, rec, _ in usable:
                try:
                    frames.append(_read_frame(path, rec["rows"]))
                except BadEntry:
                    frames.append(None)
                    self._discard(path)
        for (i, _, rec, (session, report)), messages in zip(usable, frames):
            if messages is not None:
                found[i] = Entry(messages, session, rec["source_format"], report, "entry")

    def _discard(self, path: Path) -> None:
        self.stats.rebuilt += 1
        try:
            path.unlink()
        except OSError:
            pass

    # -- writing ----------------------------------------------------------

    def store(self, key: FileKey, format: str | None, entry: Entry) -> bool:
        """Write the entry of one parsed file (atomically). Returns whether it was stored."""
        rec = _record(key, entry)
        if rec is None:
            return False
        meta = _meta("entry", format, file=rec)
        return self._write(self.entry_path(key, format), entry.messages, meta)

    def update_pack(self, keys: list[FileKey], format: str | None, entries: list[Entry]) -> bool:
        """Write the pack of a read of ``keys``, unless the pack served all of it or the read is small."""
        if len(keys) < PACK_MIN_FILES or all(e.origin == "pack" for e in entries):
            return False
        return self.store_pack(keys, format, entries)

    def store_pack(self, keys: list[FileKey], format: str | None, entries: list[Entry]) -> bool:
        """Write the pack of a read of ``keys`` (all parsed or cached)."""
        records = [_record(k, e) for k, e in zip(keys, entries)]
        kept = [(r, e) for r, e in zip(records, entries) if r is not None]
        frames = [e.messages for _, e in kept]
        frame = pl.concat(frames, how="vertical", rechunk=True) if frames else empty_messages()
        ok = self._write(self.pack_path(keys, format), frame, _meta("pack", format, files=[r for r, _ in kept]))
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

def write_parquet(frame: pl.DataFrame, path: str | Path, meta: dict) -> None:
    """Write ``frame`` with ``meta`` as our key-value metadata."""
    frame.write_parquet(path, compression=_COMPRESSION, statistics=False,
                        metadata={META_KEY: orjson.dumps(meta).decode()})


def _meta(kind: str, format: str | None, **body) -> dict:
    return {"magic": MAGIC, "layout": LAYOUT, "kind": kind, "parser": parser_version(), "format": _mode(format),
            **body}


def _read_meta(path: Path, kind: str, format: str | None) -> dict | None:
    """Our metadata of ``path``; :class:`BadEntry` if unreadable or not ours.

    ``None`` for an entry of another layout or parser version: stale, not
    bad (a plain miss, overwritten by the next store).
    """
    try:
        raw = pl.read_parquet_metadata(path).get(META_KEY)
        meta = orjson.loads(raw) if raw is not None else None
    except Exception as e:  # any failure to read the footer means a corrupt file
        raise BadEntry(f"unreadable: {e}") from None
    if not isinstance(meta, dict) or meta.get("magic") != MAGIC:
        raise BadEntry("not a panto_analytics cache file")
    if meta.get("layout") != LAYOUT or meta.get("parser") != parser_version():
        return None
    if meta.get("kind") != kind or meta.get("format") != _mode(format):
        raise BadEntry("entry of another kind or format")
    try:
        files = meta["files"] if kind == "pack" else [meta["file"]]
        for rec in files:
            _check_record(rec)
    except (KeyError, TypeError, ValueError) as e:
        raise BadEntry(f"malformed metadata: {e}") from None
    return meta


def _read_frame(source: Path | list[Path], rows: int) -> pl.DataFrame:
    """The message rows of one or more cache files, checked against the schema and row count."""
    try:
        frame = pl.read_parquet(source)
    except Exception as e:
        raise BadEntry(f"unreadable data: {e}") from None
    if frame.schema != pl.Schema(MESSAGE_SCHEMA) or frame.height != rows:
        raise BadEntry("data does not match its metadata")
    return frame


def _usable(rec: dict, key: FileKey, skip_invalid: bool) -> bool:
    """Is this record the file as it is now, and valid in this strictness mode?"""
    if rec["abspath"] != key.abspath or rec["state"] != key.state():
        return False
    return skip_invalid or not rec["report"]["skipped"]


def _record(key: FileKey, entry: Entry) -> dict | None:
    """The metadata record of one file, or None if it would not read back identically."""
    if entry.session is None:  # a file skipped whole: detected again next time, never cached
        return None
    rec = {"abspath": key.abspath, "path": key.path, "state": key.state(), "rows": entry.messages.height,
           "source_format": entry.source_format, "report": _encode_report(entry.report)}
    session = {f.name: getattr(entry.session, f.name) for f in dataclasses.fields(entry.session)}
    rec["datetimes"] = []
    rec["session"] = _encode(session, [], rec["datetimes"])
    try:
        session, report = _decoded(orjson.loads(orjson.dumps(rec)))
    except (TypeError, ValueError, BadEntry):  # orjson's errors are TypeErrors and ValueErrors
        return None
    if session != entry.session or report != entry.report:
        return None
    return rec


def _check_record(rec: dict) -> None:
    for name, kind in (("abspath", str), ("path", str), ("state", list), ("rows", int), ("source_format", str),
                       ("session", dict), ("report", dict), ("datetimes", list)):
        if not isinstance(rec[name], kind):
            raise TypeError(f"{name} is not a {kind.__name__}")


def _decoded(rec: dict) -> tuple[SessionMeta, IngestReport]:
    """The session and report share a record holds; :class:`BadEntry` if they are malformed."""
    try:
        return SessionMeta(**_with_datetimes(rec["session"], rec["datetimes"])), _decode_report(rec["report"])
    except (TypeError, ValueError, LookupError) as e:
        raise BadEntry(f"malformed metadata: {e}") from None


def _encode_report(report: IngestReport) -> dict:
    return {"counts": [report.files, report.sessions, report.messages, report.api_calls],
            "skipped": [[f, r, n] for (f, r), n in report.skipped.items()],
            "ignored": [[f, t, n] for (f, t), n in report.ignored.items()]}


def _decode_report(d: dict) -> IngestReport:
    report = IngestReport(*d["counts"])
    for f, r, n in d["skipped"]:
        report.skipped[(f, r)] += n
    for f, t, n in d["ignored"]:
        report.ignored[(f, t)] += n
    return report


_NESTED = (dict, list, datetime)


def _encode(value: Any, where: list, datetimes: list[list]) -> Any:
    """JSON-ready ``value``: datetimes become ISO strings, their places noted in ``datetimes``.

    Noting the places keeps decoding proportional to the number of datetimes,
    not to the size of the metadata (a session's message ids run to thousands).
    """
    if isinstance(value, datetime):
        datetimes.append(where)
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _encode(v, [*where, k], datetimes) if isinstance(v, _NESTED) else v for k, v in value.items()}
    if isinstance(value, list):
        return [_encode(v, [*where, i], datetimes) if isinstance(v, _NESTED) else v for i, v in enumerate(value)]
    return value


def _with_datetimes(value: dict, datetimes: list[list]) -> dict:
    """``value`` (freshly parsed JSON, changed in place) with the noted places turned back into datetimes."""
    for where in datetimes:
        parent = value
        for step in where[:-1]:
            parent = parent[step]
        if isinstance(parent[where[-1]], str):
            parent[where[-1]] = datetime.fromisoformat(parent[where[-1]])
    return value


# -- small helpers -------------------------------------------------------

def _mode(format: str | None) -> str:
    return format or "auto"


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:32]


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


def as_cache(cache: "Cache | str | Path | bool | None") -> "Cache | None":
    """A :class:`Cache` from what a caller passed: a Cache, a folder, True (the default folder), or None/False (off).

    >>> as_cache(None) is None, as_cache("/tmp/x").root.name
    (True, 'x')
    """
    if cache is None or cache is False:
        return None
    if cache is True:
        return Cache(default_cache_dir())
    return cache if isinstance(cache, Cache) else Cache(cache)
