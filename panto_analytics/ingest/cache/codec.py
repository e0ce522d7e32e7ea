"""How the cache encodes what it stores: file keys, entries, packs and the manifest.

A *pack* is a Parquet file of message rows (``schema.MESSAGE_SCHEMA``), the
rows of many files one after another; its key-value metadata says it is ours
and how many rows it holds. The *manifest* is a Parquet table with one row
per cached file (:data:`MANIFEST_SCHEMA`): the file's key, which pack holds
its rows and where, and a JSON *record* with everything else a re-read must
reproduce: the session's :class:`~panto_analytics.formats.contract.SessionMeta`
and the file's share of the :class:`~panto_analytics.errors.IngestReport`.
Anything read back is checked, never trusted: :class:`BadEntry` marks what is
corrupt or foreign.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, BinaryIO, Final, Literal, cast

import numpy as np
import orjson
import polars as pl

from ...errors import IngestReport, InputError
from ...formats.contract import SessionMeta
from ...frame.schema import MESSAGE_SCHEMA, SESSION
from .. import _manifest as manifests

__all__ = [
    "BadEntry", "COUNT_COLUMNS", "Entry", "FileKey", "KEY_TABLE_SCHEMA", "LAYOUT", "MAGIC", "MANIFEST_SCHEMA",
    "META_KEY", "SESSION_COLUMNS", "check_record", "decoded", "decoded_session", "key_digest", "key_table",
    "keys_of", "make_meta", "manifest_rows", "merge_report", "mode_of", "open_manifest", "pack_name", "parser_version",
    "read_columns", "read_frame", "read_cache_manifest", "read_footer", "read_meta", "record_of", "report_of", "write_parquet"
]

#: Marks our metadata in a Parquet file; anything without it is foreign.
MAGIC = "panto_analytics.cache"


#: Bumped when the layout or the metadata encoding changes (2: packs per batch and a manifest; 3: the
#: session's scalar fields and the report counts as manifest columns).
LAYOUT = 3


#: One row per cached file. Columns may be added (issue 9 will add a session-hash
#: ``bucket``); a manifest is read by these names and types, and extra columns are ignored.
MANIFEST_SCHEMA: Final[dict[str, pl.DataType]] = {
    "abspath": pl.String(), "path": pl.String(), "mode": pl.String(),
    "size": pl.Int64(), "mtime_ns": pl.Int64(), "inode": pl.UInt64(),
    "parser": pl.String(), "pack": pl.String(), "row_offset": pl.Int64(), "rows": pl.Int64(),
    "source_format": pl.String(), "skipped": pl.Boolean(), "record": pl.String(),
    # What a re-read needs of most files, as columns (:data:`SESSION_COLUMNS`, :data:`COUNT_COLUMNS`); ``simple``:
    # the columns say it all (every other SessionMeta field at its default, no skips, nothing ignored), and
    # ``record`` is left empty; otherwise ``record`` holds it all.
    SESSION: pl.String(), "model": pl.String(), "context_window": pl.Int64(), "parent_session_id": pl.String(),
    "api_calls": pl.Int64(), "project": pl.String(), "is_subagent": pl.Boolean(),
    "n_files": pl.Int64(), "n_sessions": pl.Int64(), "n_messages": pl.Int64(),
    "n_api_calls": pl.Int64(), "simple": pl.Boolean(),
}

#: The :class:`SessionMeta` fields a manifest row holds as columns (of the same names).
SESSION_COLUMNS = (SESSION, "model", "context_window", "parent_session_id", "api_calls", "project", "is_subagent")
#: The report counts (files, sessions, messages, API calls) a manifest row holds as columns.
COUNT_COLUMNS = ("n_files", "n_sessions", "n_messages", "n_api_calls")
_INT64 = range(-(2**63), 2**63)


#: The Parquet key-value metadata key.
META_KEY = "panto_analytics"


_COMPRESSION: Final[Literal["lz4"]] = "lz4"  # the fastest to read back; entries are small anyway


class BadEntry(Exception):
    """An entry that is corrupt or not ours (``foreign``)."""


@lru_cache(maxsize=1)
def parser_version() -> str:
    """A digest of the code that turns a file into an entry.

    It covers the adapters, the frame's vocabulary (``frame/``: the schemas,
    word counting, the column expressions, the normalization of tool-call
    targets and the shell commands it parses), ``pathnames.py``, the report,
    ingest and this module, so that any change to how a file is read
    invalidates what was cached from it, without anyone having to bump a number.
    """
    root = Path(__file__).resolve().parents[2]  # the package folder
    shared = ("transcript.py", "errors.py", "models.py", "pathnames.py")
    sources = (sorted(root.glob("formats/**/*.py")) + sorted(root.glob("frame/*.py")) + sorted(root.glob("ingest/cache/*.py"))
               + sorted(root.glob("ingest/*.py")) + [root / name for name in shared])
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
        folder, name = os.path.split(os.path.abspath(path))
        return cls(str(path), os.path.join(os.path.realpath(folder), name), st.st_size, st.st_mtime_ns, st.st_ino)

    def state(self) -> list:
        return [self.path, self.size, self.mtime_ns, self.inode]


#: The state of many files at once (:func:`key_table`): one row per file, in the order given.
KEY_TABLE_SCHEMA: Final[dict[str, pl.DataType]] = {
    "path": pl.String(), "abspath": pl.String(), "size": pl.Int64(), "mtime_ns": pl.Int64(), "inode": pl.UInt64(),
}

#: Path pieces that ``os.path.abspath`` would normalise away.
_UNNORMAL = r"//|/\./|/\.\./|/\.$|/\.\.$|/$"


def key_table(paths: Sequence[str | Path]) -> pl.DataFrame:
    """What :meth:`FileKey.of` says of each file, as one frame (:data:`KEY_TABLE_SCHEMA`): one stat per file.

    The absolute paths are computed as columns: ``os.path.abspath`` runs only
    on the rare path that is relative to the working folder's parent or not
    normalised. A file that cannot be stat'ed is an :class:`InputError`.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "s.jsonl"
    >>> _ = p.write_text("{}\\n")
    >>> row = key_table([p]).row(0, named=True)
    >>> row["abspath"] == str(p) and row["size"] == 3
    True
    """
    names = [os.fspath(p) for p in paths]
    # Each stat's three numbers go straight into machine arrays: a list of stat results (about 700 bytes each)
    # was the largest thing a re-read of many files held.
    sizes, mtimes, inodes = array("q"), array("q"), array("Q")
    stat = os.stat
    for name in names:
        try:
            st = stat(name)
        except OSError as e:
            raise InputError(name, None, f"cannot read: {e.strerror or e}") from None
        sizes.append(st.st_size)
        mtimes.append(st.st_mtime_ns)
        inodes.append(st.st_ino)
    cwd = os.getcwd()
    table = pl.DataFrame({
        "path": names, "size": np.frombuffer(sizes, np.int64), "mtime_ns": np.frombuffer(mtimes, np.int64),
        "inode": np.frombuffer(inodes, np.uint64),
    }, schema={k: v for k, v in KEY_TABLE_SCHEMA.items() if k != "abspath"})
    path = pl.col("path")
    joined = pl.when(path.str.starts_with("/")).then(path).otherwise(pl.lit(cwd.rstrip("/") + "/") + path)
    table = table.with_columns(abspath=joined).select(list(KEY_TABLE_SCHEMA))
    odd = table.select(pl.col("abspath").str.contains(_UNNORMAL)).to_series()
    if odd.any():
        fixed = [os.path.abspath(a) if o else a for a, o in zip(table["abspath"], odd)]
        table = table.with_columns(abspath=pl.Series(fixed, dtype=pl.String))
    # Resolved: each folder once (a corpus has far fewer folders than files), so a folder reached through a
    # link, or by another spelling, is one file for the cache.
    folder = pl.col("abspath").str.replace(r"/[^/]*$", "")
    folders = table.select(folder.unique().alias("folder"))["folder"].to_list()
    real = {f: os.path.realpath(f or "/") for f in folders}
    moved = {f: r for f, r in real.items() if r != (f or "/")}
    if moved:
        table = table.with_columns(abspath=folder.replace(moved).str.strip_suffix("/")
                                   + pl.col("abspath").str.extract(r"(/[^/]*)$"))
    return table


def keys_of(table: pl.DataFrame) -> list[FileKey]:
    """The :class:`FileKey` of each row of a :func:`key_table`."""
    return [FileKey(*row) for row in table.select("path", "abspath", "size", "mtime_ns", "inode").iter_rows()]


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


def read_meta(path: Path | BinaryIO, kind: str) -> dict | None:
    """Our metadata of the pack or manifest ``path``; :class:`BadEntry` if unreadable or not ours.

    ``None`` for a file of another layout: stale, not bad (a plain miss,
    replaced by the next write).
    """
    return read_footer(path, kind)[0]


def read_footer(path: Path | BinaryIO, kind: str) -> tuple[dict | None, int]:
    """:func:`read_meta` and the number of rows the file really holds, from one read of its footer."""
    import pyarrow.parquet as pq  # here: a cold read needs it nowhere (its import, through pyarrow.fs, costs ~20 ms)

    try:
        footer = pq.read_metadata(path)
        raw = (footer.metadata or {}).get(META_KEY.encode())
        meta = orjson.loads(raw) if raw is not None else None
        rows = footer.num_rows
    except Exception as e:  # any failure to read the footer means a corrupt file
        raise BadEntry(f"unreadable: {e}") from None
    if not isinstance(meta, dict) or meta.get("magic") != MAGIC:
        raise BadEntry("not a panto_analytics cache file")
    if meta.get("layout") != LAYOUT:
        return None, rows
    if meta.get("kind") != kind:
        raise BadEntry(f"not a {kind}")
    return meta, rows


def read_cache_manifest(path: Path) -> pl.DataFrame | None:
    """The manifest's rows; None if there is none (or of another layout); :class:`BadEntry` if bad."""
    if not path.exists():
        return None
    if read_meta(path, "manifest") is None:
        return None
    return manifests.read_parquet_manifest(path, BadEntry, schema=MANIFEST_SCHEMA)


def open_manifest(path: Path) -> BinaryIO | None:
    """The manifest opened and checked (ours, of this layout and shape), to read columns of with :func:`read_columns`.

    None if there is none (or of another layout); :class:`BadEntry` if it is
    bad. Every read of the one open file sees the same manifest, even if
    another process replaces it meanwhile, so columns read apart line up.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "manifest.parquet"
    >>> rows = manifest_rows([FileKey("a", "/a", 1, 2, 3)], [{"report": {"skipped": []}}], None, "p", [4])
    >>> write_parquet(rows, path, make_meta("manifest"))
    >>> with open_manifest(path) as f:
    ...     read_columns(f, ["path", "rows"]).row(0), read_columns(f, ["pack"]).row(0)
    (('a', 4), ('p',))
    """
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return None
    except OSError as e:
        raise BadEntry(f"unreadable manifest: {e}") from None
    try:
        if read_meta(f, "manifest") is None:
            f.close()
            return None
        f.seek(0)
        schema = pl.read_parquet_schema(f)
    except BadEntry:
        f.close()
        raise
    except Exception as e:
        f.close()
        raise BadEntry(f"unreadable manifest: {e}") from None
    try:
        manifests.check_shape(schema, MANIFEST_SCHEMA, BadEntry)
    except BadEntry:
        f.close()
        raise
    return f


def read_columns(manifest: BinaryIO, columns: list[str]) -> pl.DataFrame:
    """Some columns of a manifest that :func:`open_manifest` opened; :class:`BadEntry` if they cannot be read."""
    return cast(pl.DataFrame, manifests.read_parquet_manifest(manifest, BadEntry, columns=columns))


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
    sessions = [r.get("session") or {} for r in records]
    counts = [r["report"].get("counts") or [0, 0, 0, 0] for r in records]
    simples = [_is_simple(r) for r in records]
    return pl.DataFrame({
        "abspath": [k.abspath for k in keys], "path": [k.path for k in keys], "mode": mode_of(format),
        "size": [k.size for k in keys], "mtime_ns": [k.mtime_ns for k in keys], "inode": [k.inode for k in keys],
        "parser": parser_version(), "pack": pack, "row_offset": offsets, "rows": sizes,
        "source_format": [r.get("source_format") for r in records],
        "skipped": [bool(r["report"]["skipped"]) for r in records],
        "record": ["" if simple else orjson.dumps(r).decode() for r, simple in zip(records, simples)],
        **{name: [_column_value(name, s.get(name)) for s in sessions] for name in SESSION_COLUMNS},
        **{name: [c[k] for c in counts] for k, name in enumerate(COUNT_COLUMNS)},
        "simple": simples,
    }, schema=MANIFEST_SCHEMA)


def _column_value(name: str, value: Any) -> Any:
    """A session field as its column holds it (None where it does not fit, and the row is not simple)."""
    dtype = MANIFEST_SCHEMA[name]
    if dtype == pl.Int64:
        return value if type(value) is int and value in _INT64 else None
    if dtype == pl.Boolean:
        return value if type(value) is bool else None
    return value if type(value) is str else None


@lru_cache(maxsize=1)
def _defaults() -> dict[str, Any]:
    """The default of every :class:`SessionMeta` field that has no column."""
    out = {}
    for f in dataclasses.fields(SessionMeta):
        if f.name not in SESSION_COLUMNS:
            out[f.name] = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
    return out


def _is_simple(rec: dict) -> bool:
    """Whether the manifest columns say all a record holds (so a re-read need not parse it)."""
    session, report = rec.get("session"), rec.get("report")
    if not isinstance(session, dict) or not isinstance(report, dict) or rec.get("datetimes"):
        return False
    if report.get("skipped") or report.get("ignored") or set(session) != set(SESSION_COLUMNS) | set(_defaults()):
        return False
    if any(session[name] != default for name, default in _defaults().items()):
        return False
    return all(session[name] is None or _column_value(name, session[name]) is session[name] for name in SESSION_COLUMNS) \
        and isinstance(session[SESSION], str)


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


def decoded_session(rec: Any) -> SessionMeta:
    """The session a record holds, its report share checked but not built; :class:`BadEntry` if malformed.

    With :func:`merge_report`, what a re-read of many files does per file:
    no :class:`IngestReport` of its own.
    """
    try:
        check_record(rec)
        _check_report(rec["report"])
        return SessionMeta(**_with_datetimes(rec["session"], rec["datetimes"]))
    except (TypeError, ValueError, LookupError) as e:
        raise BadEntry(f"malformed metadata: {e}") from None


def report_of(share: dict) -> IngestReport:
    """The :class:`IngestReport` of one file's share, as a record holds it (checked by :func:`decoded_session`)."""
    return _decode_report(share)


def merge_report(report: IngestReport, shares: list[dict]) -> None:
    """Add the report shares of many records (checked by :func:`decoded_session`) to ``report``.

    The counts are summed in one pass; only shares that skipped or ignored
    something touch the counters.
    """
    counts = [0, 0, 0, 0]
    for share in shares:
        c = share["counts"]
        counts[0] += c[0]
        counts[1] += c[1]
        counts[2] += c[2]
        counts[3] += c[3]
        if share["skipped"]:
            for f, r, n in share["skipped"]:
                report.skipped[(f, r)] += n
        if share["ignored"]:
            for f, t, n in share["ignored"]:
                report.ignored[(f, t)] += n
    report.files += counts[0]
    report.sessions += counts[1]
    report.messages += counts[2]
    report.api_calls += counts[3]


def _check_report(d: Any) -> None:
    """Raise TypeError unless ``d`` has the shape of an encoded report."""
    if not isinstance(d, dict):
        raise TypeError("report is not an object")
    counts = d.get("counts")
    if not isinstance(counts, list) or len(counts) != 4 or not all(type(c) is int for c in counts):
        raise TypeError("report counts are not four integers")
    for name in ("skipped", "ignored"):
        rows = d.get(name)
        if not isinstance(rows, list) or not all(
                isinstance(r, list) and len(r) == 3 and isinstance(r[0], str) and isinstance(r[1], str)
                and type(r[2]) is int for r in rows):
            raise TypeError(f"report {name} is not a list of [key, key, count]")


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
