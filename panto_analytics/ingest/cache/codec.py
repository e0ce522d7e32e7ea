"""How the cache encodes what it stores: file keys, entries, and their Parquet metadata.

An entry's Parquet key-value metadata holds everything a re-read must
reproduce besides the message rows: the session's
:class:`~panto_analytics.ingest.formats.base.SessionMeta` and the file's share
of the :class:`~panto_analytics.errors.IngestReport`. Anything read back is
checked, never trusted: :class:`BadEntry` marks what is corrupt or foreign.
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
    "BadEntry", "Entry", "FileKey", "LAYOUT", "MAGIC", "META_KEY", "check_record", "decoded", "is_usable", "key_digest",
    "make_meta", "mode_of", "parser_version", "read_frame", "read_meta", "record_of", "write_parquet",
]

#: Marks our metadata in a Parquet file; anything without it is foreign.
MAGIC = "panto_analytics.cache"


#: Bumped when the layout or the metadata encoding changes.
LAYOUT = 1


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


def make_meta(kind: str, format: str | None, **body) -> dict:
    return {"magic": MAGIC, "layout": LAYOUT, "kind": kind, "parser": parser_version(), "format": mode_of(format),
            **body}


def read_meta(path: Path, kind: str, format: str | None) -> dict | None:
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
    if meta.get("kind") != kind or meta.get("format") != mode_of(format):
        raise BadEntry("entry of another kind or format")
    try:
        files = meta["files"] if kind == "pack" else [meta["file"]]
        for rec in files:
            check_record(rec)
    except (KeyError, TypeError, ValueError) as e:
        raise BadEntry(f"malformed metadata: {e}") from None
    return meta


def read_frame(source: Path | list[Path], rows: int) -> pl.DataFrame:
    """The message rows of one or more cache files, checked against the schema and row count."""
    try:
        frame = pl.read_parquet(source)
    except Exception as e:
        raise BadEntry(f"unreadable data: {e}") from None
    if frame.schema != pl.Schema(MESSAGE_SCHEMA) or frame.height != rows:
        raise BadEntry("data does not match its metadata")
    return frame


def is_usable(rec: dict, key: FileKey, skip_invalid: bool) -> bool:
    """Is this record the file as it is now, and valid in this strictness mode?"""
    if rec["abspath"] != key.abspath or rec["state"] != key.state():
        return False
    return skip_invalid or not rec["report"]["skipped"]


def record_of(key: FileKey, entry: Entry) -> dict | None:
    """The metadata record of one file, or None if it would not read back identically."""
    if entry.session is None:  # a file skipped whole: detected again next time, never cached
        return None
    rec: dict[str, Any] = {"abspath": key.abspath, "path": key.path, "state": key.state(), "rows": entry.messages.height,
           "source_format": entry.source_format, "report": _encode_report(entry.report)}
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


def check_record(rec: dict) -> None:
    for name, kind in (("abspath", str), ("path", str), ("state", list), ("rows", int), ("source_format", str),
                       ("session", dict), ("report", dict), ("datetimes", list)):
        if not isinstance(rec[name], kind):
            raise TypeError(f"{name} is not a {kind.__name__}")


def decoded(rec: dict) -> tuple[SessionMeta, IngestReport]:
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


def mode_of(format: str | None) -> str:
    return format or "auto"


def key_digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:32]
