"""Incremental Parquet cache of parsed session files: packs per batch, and a manifest.

Parsing JSONL is the slow part of an ingest; the message frame of a file is
small. Each batch of files parsed together is stored as one Parquet *pack*
(their message rows, one file after another), and one *manifest* lists every
cached file: its key (absolute path, the path as it was named, size, mtime
(ns), inode, format mode, parser version), the pack and the row range that
hold its rows, and a JSON record with the session's
:class:`~panto_analytics.formats.contract.SessionMeta` (compactions and API
calls included) and the file's share of the
:class:`~panto_analytics.errors.IngestReport`.

A re-read stats each file, matches the stats against the manifest in one
join, and reads each pack that holds a wanted file once. A cold read writes
one pack per batch (in whichever process parsed it) and the manifest once,
at the end. A file that changed is parsed again and gets a new row in the
manifest, pointing at a new pack: only its own rows are invalidated. A pack
no longer referenced by the manifest is deleted when the manifest is next
written. A read in strict mode does not use a row that recorded skipped
lines (the strict read must raise).

Anything found is checked, never trusted: an unreadable file, metadata that
is not ours, or data that does not match the manifest is *corrupt* or
*foreign*: it is deleted, its files are parsed again, and the rebuild is
counted in :attr:`Cache.stats` (``rebuilt``). Every write goes to a
temporary file in the same folder and is renamed into place
(``os.replace``), so a reader sees a whole pack or manifest or none, and a
failed write leaves nothing behind. The manifest is merged with the one on
disk just before it is replaced, so concurrent reads of other folders lose
nothing but, at worst, each other's latest rows (a miss, never a wrong hit).

Layout::

    ROOT/CACHEDIR.TAG              (tells backup tools to skip the folder)
    ROOT/manifest.parquet          (one row per cached file)
    ROOT/packs/0123....parquet     (one per parsed batch)

>>> import tempfile
>>> cache = Cache(tempfile.mkdtemp())
>>> cache.info()["entries"], cache.stats.hits
(0, 0)
"""
from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import polars as pl

from ...errors import IngestReport
from ...formats.contract import SessionMeta
from ...formats.gc_pause import gc_paused
from ...frame.schema import SESSION, empty_messages
from . import codec
from .codec import (
    BadEntry,
    Entry,
    FileKey,
    decoded_session,
    make_meta,
    merge_report,
    mode_of,
    read_cache_manifest,
    read_footer,
    read_frame,
    report_of,
    write_parquet,
)
from .hits import CachedFile, Found, Served

__all__ = ["Cache", "CacheStats", "CacheWarning", "as_cache", "default_cache_dir"]

_CACHEDIR_TAG = ("Signature: 8a477f597d28d172789f06886806bc55\n"
                 "# This file is a cache directory tag created by panto_analytics.\n"
                 "# For information about cache directory tags see https://bford.info/cachedir/\n")

#: One manifest row per file and format mode: the file is its absolute, resolved path, however it was named.
_KEY = ["abspath", "mode"]


class CacheWarning(UserWarning):
    """Something about the cache the user should know: a rebuilt pack, a failed write."""


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
    (packs, the manifest, or a manifest row) found corrupt or foreign and
    discarded; ``written``: files stored; ``write_errors``: files that could
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
    """A cache folder. Cheap to create; nothing is written until a pack is.

    >>> import tempfile
    >>> Cache(tempfile.mkdtemp()).stats
    CacheStats(hits=0, misses=0, rebuilt=0, written=0, write_errors=0)
    """

    def __init__(self, root: str | Path):
        self.root = Path(root).expanduser()
        self.stats = CacheStats()
        #: The last write error, for the one warning the reader gives.
        self.last_error: str | None = None
        #: When the last lookup began: packs written since may belong to a concurrent read, and are not pruned.
        self._read_from_ns = time.time_ns()

    def __repr__(self) -> str:
        return f"Cache({str(self.root)!r})"

    def __reduce__(self):  # worker processes get the folder, not the counters
        return (Cache, (self.root,))

    # -- where things are -------------------------------------------------

    @property
    def packs_dir(self) -> Path:
        return self.root / "packs"

    @property
    def manifest_path(self) -> Path:
        return self.root / "manifest.parquet"

    @property
    def entries_dir(self) -> Path:
        """Where layout 1 kept one entry per file: only cleared now."""
        return self.root / "entries"

    def pack_path(self, name: str) -> Path:
        return self.packs_dir / f"{name}.parquet"

    def pack_of(self, key: FileKey, format: str | None) -> Path | None:
        """The pack that holds the rows of ``key``'s file, if the manifest lists it."""
        manifest = self._manifest_or_none()
        if manifest is None:
            return None
        row = manifest.filter((pl.col("abspath") == key.abspath) & (pl.col("mode") == mode_of(format)))
        return self.pack_path(row["pack"][0]) if row.height else None

    # -- reading ----------------------------------------------------------

    def lookup(self, keys: list[FileKey], format: str | None, skip_invalid: bool) -> list[Entry | None]:
        """The cached entry of each file, or ``None`` where it must be parsed (:meth:`find`, one entry per file)."""
        table = pl.DataFrame([(k.path, k.abspath, k.size, k.mtime_ns, k.inode) for k in keys],
                             schema=codec.KEY_TABLE_SCHEMA, orient="row")
        found = self.find(table, format, skip_invalid)
        out: list[Entry | None] = [None] * len(keys)
        manifest = self._manifest_or_none() if found.index else None
        rows = {} if manifest is None else {
            a: (p, r, counts) for a, p, r, *counts in manifest.filter(pl.col("mode") == mode_of(format))
            .select("abspath", "path", "record", *codec.COUNT_COLUMNS).iter_rows()}
        for i, f in zip(found.index, found.files):
            cached_as, record, counts = rows[keys[i].abspath]
            share = orjson.loads(record)["report"] if record else None
            report = report_of(_renamed(share, cached_as, keys[i].path)) if share else IngestReport(*counts)
            out[i] = Entry(f.messages, f.session, f.source_format, report, "pack")
        return out

    def find(self, keys: pl.DataFrame, format: str | None, skip_invalid: bool,
             paths: Sequence[str | Path] | None = None) -> Found:
        """The files of ``keys`` (a :func:`~.codec.key_table`) that the cache holds as they are now.

        One join of the files' stats against the manifest, one read per pack
        that holds a wanted file, one JSON parse of their records; no frame
        per file (see :class:`~.hits.CachedFile`). Counts hits and rebuilds in
        :attr:`stats` (misses are counted by whoever parses, with
        :meth:`count_misses`). Every corrupt or foreign file met is deleted.
        ``paths``: the names ``keys["path"]`` was made from, if the caller
        holds them, so that the files found share them instead of copies.

        Memory: only the manifest columns the serving needs are kept once
        it is matched, before the packs are read.
        """
        self._read_from_ns = time.time_ns()
        found = Found()
        matches = self._matching(keys, format, skip_invalid)
        if matches is None:
            return found
        read_packs = self._read_packs(matches["pack"].unique(maintain_order=True).to_list())
        names, packs = list(read_packs), list(read_packs.values())
        # Each row's pack by a lookup among the few packs read (not a join): null where its pack could not be read.
        pack = pl.col("pack").replace_strict(names, list(range(len(names))), default=None, return_dtype=pl.Int64)
        pack_rows = pl.col("pack").replace_strict(names, [f.height for f in packs], default=None,
                                                  return_dtype=pl.Int64)
        inside = (pl.col("row_offset") >= 0) & (pl.col("rows") >= 0) & (pl.col("row_offset") + pl.col("rows") <= pack_rows)
        in_read, usable = matches.select(read=pack.is_not_null().sum(), usable=(pack.is_not_null() & inside).sum()).row(0)
        served = matches.filter(pack.is_not_null() & inside).with_columns(pack_index=pack).drop("pack")
        del matches
        self.stats.rebuilt += in_read - usable  # parsed again, and their rows replaced
        if served.height:
            named = keys.select("path").with_row_index("i").with_columns(pl.col("i").cast(pl.Int64))
            served = served.join(named.rename({"path": "named"}), on="i", how="left", maintain_order="left")
            _rename_in_packs(served, packs)
            self._serve(served, packs, paths if paths is not None else keys["path"].to_list(), found)  # in i order
        self.stats.hits += len(found.index)
        return found

    def _matching(self, keys: pl.DataFrame, format: str | None, skip_invalid: bool) -> pl.DataFrame | None:
        """The manifest rows that are the files of ``keys`` as they are now, in ``i`` order, with ``i`` and the
        columns a lookup serves from; None if there is no manifest (a bad one is deleted, and counted) or no keys.

        Memory: the manifest is read in two passes over one open file, first
        the columns matched on, then those served, so that it is never whole
        in memory (on 30,000 files, about 5 MB less at the peak).
        """
        try:
            manifest = codec.open_manifest(self.manifest_path)
        except BadEntry:
            self._discard(self.manifest_path)
            return None
        if manifest is None:
            return None
        with manifest:
            if not keys.height:
                return None
            try:
                pairs = _matches(codec.read_columns(manifest, _KEY_STATE), keys, format, skip_invalid)
                served = codec.read_columns(manifest, _SERVED[1:])
            except BadEntry:
                self._discard(self.manifest_path)
                return None
        return pl.concat([pairs.select("i"), served.select(pl.all().gather(pairs["m"]))], how="horizontal")

    def _read_packs(self, names: list[str]) -> dict[str, pl.DataFrame]:
        """The rows of each pack named, by name, read in one call; missing packs (pruned by another read) and
        bad ones (then deleted) left out.

        Each pack's footer is checked first (ours, of this batch, with the rows
        it says); the good ones are then read together, which costs a third of
        reading them one by one, and sliced apart. If that read fails, the
        packs are read one by one to find the bad one.
        """
        good: dict[str, int] = {}
        for name in names:
            path = self.pack_path(name)
            if not path.exists():
                continue
            try:
                meta, rows = read_footer(path, "pack")
                if meta is None or meta.get("pack") != name or meta.get("rows") != rows:
                    raise BadEntry("pack of another batch")
            except BadEntry:
                self._discard(path)
                continue
            good[name] = rows
        if not good:
            return {}
        try:
            whole = read_frame([self.pack_path(name) for name in good], sum(good.values()))
        except BadEntry:
            return {name: frame for name in good if (frame := self._read_pack(name, good[name])) is not None}
        starts = np.cumsum([0, *good.values()])
        return {name: whole.slice(int(start), rows) for (name, rows), start in zip(good.items(), starts)}

    def _read_pack(self, name: str, rows: int) -> pl.DataFrame | None:
        """The rows of one pack whose footer is checked, or None if it is bad (then deleted)."""
        try:
            return read_frame(self.pack_path(name), rows)
        except BadEntry:
            self._discard(self.pack_path(name))
            return None

    def _serve(self, rows: pl.DataFrame, packs: list[pl.DataFrame], paths: Sequence[str | Path], found: Found) -> None:
        """Fill ``found`` with the files of ``rows``: manifest rows, each with its pack's place in ``packs``.

        A *simple* row (:data:`~.codec.MANIFEST_SCHEMA`) is served from its
        columns; only the others' records are parsed, all in one JSON parse.
        ``paths``: every file's name as asked for (row ``i`` is ``paths[i]``).
        """
        others = rows.filter(~pl.col("simple"))
        records = others["record"].to_list()
        try:  # one parse for all: the records are JSON objects, so joined they are one JSON array
            decoded_all = orjson.loads("[" + ",".join(records) + "]") if records else []
        except ValueError:
            decoded_all = None
        if not isinstance(decoded_all, list) or len(decoded_all) != len(records):
            decoded_all = [_loads_or_none(r) for r in records]  # some record is not one JSON value: find which
        decoded_of = dict(zip(others["i"].to_list(), decoded_all))
        renamed = others.filter(pl.col("path") != pl.col("named"))
        for i, was, now in renamed.select("i", "path", "named").iter_rows():  # only files named another way
            if isinstance(decoded_of.get(i), dict) and isinstance(decoded_of[i].get("report"), dict):
                decoded_of[i]["report"] = _renamed(decoded_of[i]["report"], was, now)
        corrupt = pl.col("simple") & pl.col(SESSION).is_null()  # a session always has an id
        corrupt_rows = int(rows.select(corrupt.sum()).item())
        self.stats.rebuilt += corrupt_rows
        simple_counts = rows.select(pl.col(list(codec.COUNT_COLUMNS)).filter(pl.col("simple") & ~corrupt).sum()).row(0)
        for name, n in zip(("files", "sessions", "messages", "api_calls"), simple_counts):
            setattr(found.report, name, getattr(found.report, name) + (n or 0))
        given: dict[int, SessionMeta] = {}  # the sessions of the other rows, from their records
        shares: list[dict] = []
        with gc_paused():  # tens of thousands of small objects, no cycles: collections would double the cost
            for i, rec in decoded_of.items():
                try:
                    given[i] = decoded_session(rec)
                except BadEntry:
                    self.stats.rebuilt += 1  # the file is parsed again, and its row replaced
                    continue
                shares.append(rec["report"])
            if corrupt_rows or len(given) < len(decoded_of):  # some rows are not served: leave them out
                rows = rows.filter(~corrupt & (pl.col("simple") | pl.col("i").is_in(list(given))))
            _build(rows, packs, len(paths), paths, given, found)
        merge_report(found.report, shares)


    def _manifest_or_none(self) -> pl.DataFrame | None:
        try:
            return read_cache_manifest(self.manifest_path)
        except BadEntry:
            return None

    def count_misses(self, n: int) -> None:
        """Count ``n`` files parsed because the cache could not serve them."""
        self.stats.misses += n

    def absorb(self, stats: CacheStats, error: str | None) -> None:
        """Take in what a task that wrote to this folder (here or in a worker process) counted."""
        self.stats.merge(stats)
        self.last_error = error or self.last_error

    def _discard(self, path: Path) -> None:
        self.stats.rebuilt += 1
        _unlink(path)

    # -- writing ----------------------------------------------------------

    def store(self, key: FileKey, format: str | None, entry: Entry) -> bool:
        """Store one parsed file now: its pack and its manifest row. Returns whether it was stored."""
        rows = self.store_batch([key], format, [entry])
        return rows is not None and rows.height == 1 and self.commit([rows])

    def store_batch(self, keys: list[FileKey], format: str | None, entries: list[Entry]) -> pl.DataFrame | None:
        """Write the pack of a batch of parsed files; return their manifest rows (None if nothing was stored).

        Safe in a worker process: the manifest is not touched here, the
        caller passes the rows to :meth:`commit`. Files that would not read
        back identically (or were skipped whole) are left out.
        """
        kept = [(k, e, rec) for k, e in zip(keys, entries) if (rec := codec.record_of(e)) is not None]
        if not kept:
            return None
        name = codec.pack_name([k for k, _, _ in kept], format)
        frames = [e.messages for _, e, _ in kept]
        frame = pl.concat(frames, how="vertical", rechunk=True) if frames else empty_messages()
        if not self._write(self.pack_path(name), frame, make_meta("pack", pack=name, rows=frame.height)):
            self.stats.write_errors += len(kept)
            return None
        self.stats.written += len(kept)
        return codec.manifest_rows([k for k, _, _ in kept], [r for _, _, r in kept], format, name,
                                   [f.height for f in frames])

    def commit(self, batches: list[pl.DataFrame]) -> bool:
        """Merge new manifest rows into the manifest on disk, write it, and prune unreferenced packs.

        Rows of other parser versions, and rows whose pack is gone, are dropped.
        """
        new = [b for b in batches if b is not None and b.height]
        if not new:
            return True
        added = pl.concat(new, how="vertical")
        current = self._manifest_or_none()
        if current is not None:
            current = current.select(list(codec.MANIFEST_SCHEMA)).join(added.select(_KEY), on=_KEY, how="anti")
            added = pl.concat([current, added], how="vertical")
        live = {p.stem for p in self.packs_dir.glob("*.parquet")} if self.packs_dir.is_dir() else set()
        merged = added.filter((pl.col("parser") == codec.parser_version()) & pl.col("pack").is_in(list(live)))
        if not self._write(self.manifest_path, merged, make_meta("manifest")):
            n = sum(b.height for b in new)  # their packs were written, but nothing leads to them
            self.stats.written -= n
            self.stats.write_errors += n
            return False
        self._prune_packs(set(merged["pack"].unique().to_list()), live)
        return True

    def _write(self, path: Path, frame: pl.DataFrame, meta: dict) -> bool:
        """Write ``frame`` atomically; on failure note the error and return False."""
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
            self.last_error = f"cannot write {path}: {e}"
            return False
        finally:
            if tmp is not None:
                _unlink(tmp)
        return True

    def _ensure_root(self) -> None:
        tag = self.root / "CACHEDIR.TAG"
        if not tag.exists():
            self.root.mkdir(parents=True, exist_ok=True)
            tag.write_text(_CACHEDIR_TAG)

    def _prune_packs(self, referenced: set[str], live: set[str]) -> None:
        """Delete packs no row refers to, except those written since the lookup (a concurrent read's)."""
        for name in live - referenced:
            path = self.pack_path(name)
            if _mtime_ns(path) < self._read_from_ns:
                _unlink(path)

    # -- maintenance ------------------------------------------------------

    def files(self) -> Iterator[Path]:
        """Every file this cache wrote: the manifest, packs, leftover temporaries, old entries, the tag."""
        for folder in (self.packs_dir, self.entries_dir):
            if folder.is_dir():
                yield from (p for p in folder.rglob("*.parquet") if p.is_file())
        if self.root.is_dir():
            yield from (p for p in self.root.glob(".tmp-*.parquet") if p.is_file())
        for name in ("manifest.parquet", "CACHEDIR.TAG"):
            if (self.root / name).is_file():
                yield self.root / name

    def info(self) -> dict[str, Any]:
        """Where the cache is and what it holds (``entries``: files listed in the manifest)."""
        packs = temporaries = size = 0
        for p in self.files():
            size += p.stat().st_size
            if p.name.startswith(".tmp-"):
                temporaries += 1
            elif p.parent == self.packs_dir:
                packs += 1
        manifest = self._manifest_or_none()
        return {"root": str(self.root), "entries": 0 if manifest is None else manifest.height, "packs": packs,
                "temporaries": temporaries, "bytes": size, "parser_version": codec.parser_version()}

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


def _rename_in_packs(served: pl.DataFrame, packs: list[pl.DataFrame]) -> None:
    """Where a file was cached under another spelling of its path (``path``) than it is named now
    (``named``), its rows in ``packs`` name it as it is named now (only the packs that hold such a file
    are touched)."""
    renamed = served.filter(pl.col("path") != pl.col("named")).select("pack_index", "path", "named")
    for (k,), group in renamed.partition_by("pack_index", as_dict=True).items():  # one per pack touched
        mapping = dict(zip(group["path"].to_list(), group["named"].to_list()))
        pack = packs[int(k)]
        dtype = pack.schema["file"]
        packs[int(k)] = pack.with_columns(pl.col("file").cast(pl.String).replace(mapping).cast(dtype))


def _renamed(share: dict, was: str, now: str) -> dict:
    """A report share (as a record holds it) with its file named ``now`` instead of ``was``."""
    if was == now or not isinstance(share.get("skipped"), list):
        return share
    skipped = [[now, *s[1:]] if isinstance(s, list) and s[:1] == [was] else s for s in share["skipped"]]
    return {**share, "skipped": skipped}


def _build(rows: pl.DataFrame, packs: list[pl.DataFrame], n: int, paths: Sequence[str | Path],
           given: dict[int, SessionMeta], found: Found) -> None:
    """One :class:`~.hits.CachedFile` per served row, file ``i`` of one :class:`~.hits.Served` (of ``n`` files).

    Where each file's rows are, and the session columns, stay columns; per
    file there is only the CachedFile (a simple row's session is built when
    first asked for; the others' are ``given``).
    """
    i = rows["i"].to_numpy()
    pack_index, offsets, counts, row_of = (np.zeros(n, dtype=np.int64) for _ in range(4))
    pack_index[i], offsets[i], counts[i] = rows["pack_index"].to_numpy(), rows["row_offset"].to_numpy(), rows["rows"].to_numpy()
    row_of[i] = np.arange(rows.height)
    served = Served(packs, pack_index, offsets, counts, rows.select(codec.SESSION_COLUMNS), row_of)
    index = rows["i"].to_list()
    found.index.extend(index)
    found.files.extend(CachedFile(served, k, paths[k], fmt, given.get(k))
                       for k, fmt in zip(index, _few_strings(rows["source_format"])))


def _few_strings(column: pl.Series) -> list[str | None]:
    """A column of few distinct strings as a list whose equal strings are one object (not one string per row).

    >>> _few_strings(pl.Series(["pi", None, "pi"]))
    ['pi', None, 'pi']
    """
    values = column.drop_nulls().unique().sort().to_list()
    return [None if code is None else values[code - 1] for code in column.rank("dense").to_list()]


def _matches(manifest: pl.DataFrame, keys: pl.DataFrame, format: str | None, skip_invalid: bool) -> pl.DataFrame:
    """Which manifest rows are the files of ``keys`` (a :func:`~.codec.key_table`) as they are now, in ``i`` order.

    ``manifest``: at least the columns :data:`_KEY_STATE`. Returns ``i``
    (the file's row in ``keys``) and ``m`` (its row in ``manifest``).

    >>> key = FileKey("a", "/a", 1, 2, 3)
    >>> rows = codec.manifest_rows([key], [{"report": {"skipped": []}}], None, "p", [4])
    >>> keys = pl.DataFrame([key.state()[:1] + ["/a"] + key.state()[1:]], schema=codec.KEY_TABLE_SCHEMA, orient="row")
    >>> _matches(rows, keys, None, False).rows(), _matches(rows, keys, "pi", False).height
    ([(0, 0)], 0)
    """
    now = keys.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("i"), "abspath", "path",
                      size_now="size", mtime_now="mtime_ns", inode_now="inode")
    usable = (pl.col("size") == pl.col("size_now")) & (pl.col("mtime_ns") == pl.col("mtime_now")) \
        & (pl.col("inode") == pl.col("inode_now")) & (pl.lit(skip_invalid) | ~pl.col("skipped"))
    # Memory (a 30,000-file manifest, measured): the join is on ``abspath`` alone (``path`` compared after it),
    # which spares the row encoding of a two-column key, and keeps the keys' order, which spares a sort.
    wanted = manifest.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("m"), *_KEY_STATE) \
        .filter((pl.col("mode") == mode_of(format)) & (pl.col("parser") == codec.parser_version()))
    # The file is its absolute path: the path as it was named then (``path``) may be another spelling of it.
    return now.join(wanted, on="abspath", how="inner", maintain_order="left").filter(usable).select("i", "m")


#: The manifest columns a lookup matches on.
_KEY_STATE = ["abspath", "mode", "parser", "size", "mtime_ns", "inode", "skipped"]


#: The manifest columns a lookup serves from, with ``i`` (the file's row among the keys).
_SERVED = ["i", "pack", "path", "row_offset", "rows", "source_format", "simple", "record", *codec.SESSION_COLUMNS,
           *codec.COUNT_COLUMNS]


# -- small helpers -------------------------------------------------------


def _loads_or_none(record: str) -> Any:
    """A record parsed, or None if it is not JSON (then :func:`~.codec.decoded_session` refuses it)."""
    try:
        return orjson.loads(record)
    except ValueError:
        return None


def _mtime_ns(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


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
