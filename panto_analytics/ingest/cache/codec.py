"""How the cache encodes what it stores: file keys, entries, packs and the manifest.

A *pack* is a Parquet file of message rows (``schema.MESSAGE_SCHEMA``), the
rows of many files one after another; its key-value metadata says it is ours
and how many rows it holds. The *manifest* is a Parquet table with one row
per cached file (:data:`MANIFEST_SCHEMA`): the file's key, which pack holds
its rows and where, and a JSON *record* with everything else a re-read must
reproduce: the session's :class:`~panto_analytics.ingest.formats.base.SessionMeta`
and the file's share of the :class:`~panto_analytics.errors.IngestReport`.
Anything read back is checked, never trusted: :class:`BadEntry` marks what is
corrupt or foreign.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, Final, Literal

import orjson
import polars as pl

from ...errors import IngestReport, InputError
from ...schema import MESSAGE_SCHEMA
from ..formats.base import SessionMeta

__all__ = [
    "BadEntry", "Entry", "FileKey", "LAYOUT", "MAGIC", "MANIFEST_SCHEMA", "META_KEY", "check_record", "decoded",
    "key_digest", "make_meta", "manifest_rows", "mode_of", "pack_name", "parser_version", "read_frame", "read_manifest",
    "read_meta", "record_of", "write_parquet",
]

#: Marks our metadata in a Parquet file; anything without it is foreign.
MAGIC = "panto_analytics.cache"


#: Bumped when the layout or the metadata encoding changes (2: packs per batch and a manifest).
LAYOUT = 2


#: One row per cached file. Columns may be added (issue 9 will add a session-hash
#: ``bucket``); a manifest is read by these names and types, and extra columns are ignored.
MANIFEST_SCHEMA: Final[dict[str, pl.DataType]] = {
    "abspath": pl.String(), "path": pl.String(), "mode": pl.String(),
    "size": pl.Int64(), "mtime_ns": pl.Int64(), "inode": pl.UInt64(),
    "parser": pl.String(), "pack": pl.String(), "row_offset": pl.Int64(), "rows": pl.Int64(),
    "source_format": pl.String(), "skipped": pl.Boolean(), "record": pl.String(),
}


#: The Parquet key-value metadata key.
META_KEY = "panto_analytics"


_COMPRESSION: Final[Literal["lz4"]] = "lz4"  # the fastest to read back; entries are small anyway


class BadEntry(Exception):
    """An entry that is corrupt or not ours (``foreign``)."""


@lru_cache(maxsize=1)
def parser_version() -> str:
    """A digest of the code that turns a file into an entry.

    It covers the adapters, word counting, the schemas, the report, ingest
    and this module, so that any change to how a file is read invalidates
    what was cached from it, without anyone having to bump a number.
    """
    root = Path(__file__).resolve().parents[2]  # the package folder
    sources = (sorted(root.glob("ingest/formats/**/*.py")) + sorted(root.glob("ingest/cache/*.py"))
               + sorted(root.glob("ingest/*.py")) + [root / name for name in ("words.py", "transcript.py", "schema.py", "errors.py")])
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
    def of(cls, path: str | Path) -> FileKey:
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
    #: None (and ``source_format`` None) for a file skipped whole under skip_invalid.
    session: SessionMeta | None
    source_format: str | None
    report: IngestReport
    #: Where it came from: ``"parsed"``, ``"entry"`` or ``"pack"``.
    origin: str = "parsed"


def write_parquet(frame: pl.DataFrame, path: str | Path, meta: dict) -> None:
    """Write ``frame`` with ``meta`` as our key-value metadata."""
    frame.write_parquet(path, compression=_COMPRESSION, statistics=False,
                        metadata={META_KEY: orjson.dumps(meta).decode()})


def make_meta(kind: str, **body) -> dict:
    """The key-value metadata that marks a pack or manifest as ours."""
    return {"magic": MAGIC, "layout": LAYOUT, "kind": kind, **body}


def read_meta(path: Path, kind: str) -> dict | None:
    """Our metadata of the pack or manifest ``path``; :class:`BadEntry` if unreadable or not ours.

    ``None`` for a file of another layout: stale, not bad (a plain miss,
    replaced by the next write).
    """
    try:
        raw = pl.read_parquet_metadata(path).get(META_KEY)
        meta = orjson.loads(raw) if raw is not None else None
    except Exception as e:  # any failure to read the footer means a corrupt file
        raise BadEntry(f"unreadable: {e}") from None
    if not isinstance(meta, dict) or meta.get("magic") != MAGIC:
        raise BadEntry("not a panto_analytics cache file")
    if meta.get("layout") != LAYOUT:
        return None
    if meta.get("kind") != kind:
        raise BadEntry(f"not a {kind}")
    return meta


def read_manifest(path: Path) -> pl.DataFrame | None:
    """The manifest's rows; None if there is none (or of another layout); :class:`BadEntry` if bad."""
    if not path.exists():
        return None
    if read_meta(path, "manifest") is None:
        return None
    try:
        frame = pl.read_parquet(path)
    except Exception as e:
        raise BadEntry(f"unreadable manifest: {e}") from None
    if any(frame.schema.get(name) != dtype for name, dtype in MANIFEST_SCHEMA.items()):
        raise BadEntry("manifest of another shape")
    return frame


def manifest_rows(keys: list[FileKey], records: list[dict], format: str | None, pack: str,
                  sizes: list[int]) -> pl.DataFrame:
    """The manifest rows of files stored one after another in ``pack`` (``sizes``: their row counts).

    >>> rows = manifest_rows([FileKey("a", "/a", 1, 2, 3)], [{"report": {"skipped": []}}], None, "p", [4])
    >>> rows.select("path", "mode", "pack", "row_offset", "rows", "skipped").row(0)
    ('a', 'auto', 'p', 0, 4, False)
    """
    offsets = [0]
    for n in sizes[:-1]:
        offsets.append(offsets[-1] + n)
    return pl.DataFrame({
        "abspath": [k.abspath for k in keys], "path": [k.path for k in keys], "mode": mode_of(format),
        "size": [k.size for k in keys], "mtime_ns": [k.mtime_ns for k in keys], "inode": [k.inode for k in keys],
        "parser": parser_version(), "pack": pack, "row_offset": offsets, "rows": sizes,
        "source_format": [r.get("source_format") for r in records],
        "skipped": [bool(r["report"]["skipped"]) for r in records],
        "record": [orjson.dumps(r).decode() for r in records],
    }, schema=MANIFEST_SCHEMA)


def pack_name(keys: list[FileKey], format: str | None) -> str:
    """A pack's name: a digest of the files' states, so the same batch always writes the same pack."""
    return key_digest(mode_of(format), parser_version(), *(f"{k.abspath}\0{k.path}\0{k.state()}" for k in keys))


def read_frame(source: Path | list[Path], rows: int) -> pl.DataFrame:
    """The message rows of one or more cache files, checked against the schema and row count."""
    try:
        frame = pl.read_parquet(source)
    except Exception as e:
        raise BadEntry(f"unreadable data: {e}") from None
    if frame.schema != pl.Schema(MESSAGE_SCHEMA) or frame.height != rows:
        raise BadEntry("data does not match its metadata")
    return frame


def record_of(entry: Entry) -> dict | None:
    """The manifest record of one parsed file, or None if it would not read back identically."""
    if entry.session is None:  # a file skipped whole: detected again next time, never cached
        return None
    rec: dict[str, Any] = {"source_format": entry.source_format, "report": _encode_report(entry.report)}
    fields = {f.name: getattr(entry.session, f.name) for f in dataclasses.fields(entry.session)}
    rec["datetimes"] = []
    rec["session"] = _encode(fields, [], rec["datetimes"])
    try:
        session, report = decoded(orjson.loads(orjson.dumps(rec)))
    except (TypeError, ValueError, BadEntry):  # orjson's errors are TypeErrors and ValueErrors
        return None
    if session != entry.session or report != entry.report:
        return None
    return rec


def check_record(rec: Any) -> None:
    """Raise TypeError unless ``rec`` has the shape of a record."""
    if not isinstance(rec, dict):
        raise TypeError("record is not an object")
    for name, kind in (("source_format", str), ("session", dict), ("report", dict), ("datetimes", list)):
        if not isinstance(rec.get(name), kind):
            raise TypeError(f"{name} is not a {kind.__name__}")


def decoded(rec: dict) -> tuple[SessionMeta, IngestReport]:
    """The session and report share a record holds; :class:`BadEntry` if they are malformed."""
    try:
        check_record(rec)
        return SessionMeta(**_with_datetimes(rec["session"], rec["datetimes"])), _decode_report(rec["report"])
    except (TypeError, ValueError, LookupError) as e:
        raise BadEntry(f"malformed metadata: {e}") from None


def _encode_report(report: IngestReport) -> dict:
    return {"counts": [report.files, report.sessions, report.messages, report.api_calls],
            "skipped": [[f, r, n] for (f, r), n in report.skipped.items()],
            "ignored": [[f, t, n] for (f, t), n in report.ignored.items()]}


def _decode_report(d: dict) -> IngestReport:
    report = IngestReport(*d["counts"])
    if not d["skipped"] and not d["ignored"]:
        return report
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


def mode_of(format: str | None) -> str:
    return format or "auto"


def key_digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:32]
