"""What every adapter shares: the contract it satisfies, the message it yields, the file it reads.

An adapter is a module that satisfies :class:`Adapter`: ``NAME`` (a
``schema.SOURCE_FORMATS`` entry), ``sniff(record) -> bool`` (does this first
JSON record look like my format?), ``parse(src: SourceFile) ->
Iterator[Message]``, and two optional hooks, ``read_frames`` (a columnar fast
path over many files) and ``postprocess`` (cross-file rules over every
:class:`ParsedFile` of the format), each ``None`` where the format has none.
``parse`` yields libpanto messages, in the order the agent had them, with
*canonical* content blocks (see ``docs/formats.md``); :class:`FrameBuilder`
turns them into frame rows. Bad lines go through :meth:`SourceFile.invalid`,
which raises or counts a skip; records that are not conversation go through
:meth:`SourceFile.ignore`.
"""
from __future__ import annotations

import gc
import gzip
import io
import os
import threading
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Protocol

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import IngestReport, InputError
from ..frame.schema import MAX_USAGE, MESSAGE_SCHEMA, REF_STRUCT, ROLE, SEQ, USAGE_COLUMNS
from ..frame.tool_targets import refs_column
from ..pathnames import file_name, path_stem, path_string, path_suffix
from .blocks import block_array, block_words, serialized_bytes, words_and_flags

__all__ = [
    "BAD_RECORD", "BOM", "COMPRESSED_SUFFIXES", "TRUNCATED", "Adapter", "DamagedFileError", "OnDamage", "bad_record",
    "FrameBuilder", "Invalid", "gc_paused", "Message", "ParsedFile", "Postprocess",
    "ReadFrames", "SessionMeta", "SourceFile", "open_session_file", "session_stem", "parse_timestamp", "timestamp_field", "usage_counter",
]

#: Compressed session files read like ``.jsonl`` (the suffix after ``.jsonl``).
COMPRESSED_SUFFIXES = (".gz", ".zst")

#: Why the last line of a file was skipped: it has no newline and is not JSON (the agent is still writing it).
TRUNCATED = "truncated final line (the session is still being written?)"

#: The UTF-8 byte order mark, skipped where a file starts with it.
BOM = b"\xef\xbb\xbf"


class _Decompressed(io.BufferedReader):
    """A decompressed stream: no ``fileno`` (so nobody maps the compressed bytes by mistake)."""

    def fileno(self) -> int:
        raise io.UnsupportedOperation("a decompressed stream has no file descriptor")


def session_stem(path: str | Path) -> str:
    """A session file's name without ``.jsonl`` and a compression suffix: its session id by default.

    >>> session_stem("a/b.jsonl"), session_stem("b.jsonl.gz"), session_stem("b.jsonl.zst")
    ('b', 'b', 'b')
    """
    name = file_name(path)
    for suffix in COMPRESSED_SUFFIXES:
        name = name.removesuffix(suffix)
    return path_stem(name)


class DamagedFileError(InputError):
    """A ``.gz`` or ``.zst`` file whose compressed data is cut short or corrupt (one line: file and problem)."""

    def __init__(self, path: str | Path, reason: str):
        super().__init__(path, None, reason)


#: What a reader does when a compressed file turns out damaged: raise (the default), or count it and stop there.
OnDamage = Callable[[str], None]

_CHUNK = 1 << 16


def _gzip_chunks(raw: IO[bytes]) -> Iterator[bytes]:
    """Decompressed chunks of a gzip stream (every member); :class:`_Damage` where it is cut or corrupt."""
    with gzip.GzipFile(fileobj=raw, mode="rb") as g:
        while True:
            try:
                chunk = g.read1(_CHUNK)
            except EOFError:
                raise _Damage("truncated gzip data: the file ends before its compressed stream does") from None
            except (gzip.BadGzipFile, zlib.error) as e:
                raise _Damage(f"corrupt gzip data ({e})") from None
            if not chunk:
                return
            yield chunk


def _zstd_chunks(raw: IO[bytes]) -> Iterator[bytes]:
    """Decompressed chunks of a zstd stream (every frame); :class:`_Damage` where it is cut or corrupt."""
    import zstandard

    new = zstandard.ZstdDecompressor().decompressobj
    dobj, pending = new(), False  # pending: a frame was begun and has not ended
    while data := raw.read(_CHUNK):
        while data:
            try:
                out = dobj.decompress(data)
            except zstandard.ZstdError as e:
                raise _Damage(f"corrupt zstd data ({e})") from None
            pending = not dobj.eof
            data = dobj.unused_data if dobj.eof else b""
            if dobj.eof:
                dobj = new()
            if out:
                yield out
    if pending:
        raise _Damage("truncated zstd data: the file ends before its compressed frame does")


class _Damage(Exception):
    """Raised by the chunk readers: the compressed data is damaged (the reason, for the one-line error)."""


class _Decoded(io.RawIOBase):
    """Decompressed bytes that stop at a damaged stream's last whole line.

    Bytes after the last newline are held back until more data (or the
    stream's clean end) shows the line whole, so where the data is cut or
    corrupt a reader sees only whole lines; then ``on_damage`` is called with
    the reason (it raises, or counts the file and lets the read end there).
    """

    def __init__(self, raw: IO[bytes], chunks: Iterator[bytes], on_damage: OnDamage):
        self._raw, self._chunks, self._on_damage = raw, chunks, on_damage
        self._out, self._pos, self._tail, self._done = b"", 0, b"", False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        while self._pos >= len(self._out) and not self._done:
            try:
                chunk = next(self._chunks)
            except StopIteration:
                self._out, self._pos, self._tail, self._done = self._tail, 0, b"", True
            except _Damage as e:
                self._out, self._pos, self._tail, self._done = b"", 0, b"", True
                self._on_damage(str(e))
            else:
                cut = chunk.rfind(b"\n") + 1
                if cut:
                    self._out, self._pos, self._tail = self._tail + chunk[:cut], 0, chunk[cut:]
                else:
                    self._tail += chunk
        n = min(len(buffer), len(self._out) - self._pos)
        buffer[:n] = self._out[self._pos:self._pos + n]
        self._pos += n
        return n

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


def open_session_file(path: str | Path, on_damage: OnDamage | None = None) -> IO[bytes]:
    """``path`` opened for reading bytes: ``.gz`` and ``.zst`` decompressed, a UTF-8 BOM skipped.

    A compressed file that is cut short or corrupt reads as its whole lines
    before the damage, then ``on_damage(reason)`` is called; by default it
    raises :class:`DamagedFileError` (file and problem, one line).

    >>> import tempfile, pathlib, gzip
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "s.jsonl.gz"
    >>> _ = p.write_bytes(gzip.compress(b"\\xef\\xbb\\xbf{}\\n"))
    >>> with open_session_file(p) as f: f.read()
    b'{}\\n'
    >>> _ = p.write_bytes(gzip.compress(b'{"a": 1}\\n{"b": 2}\\n{"c"')[:-9])
    >>> with open_session_file(p, on_damage=print) as f: f.read()
    truncated gzip data: the file ends before its compressed stream does
    b'{"a": 1}\\n{"b": 2}\\n'
    """
    name = path_string(path)

    def damaged(reason: str) -> None:
        raise DamagedFileError(name, reason)

    f: io.BufferedReader
    suffix = path_suffix(name)
    if suffix in COMPRESSED_SUFFIXES:
        raw = open(name, "rb")
        chunks = _gzip_chunks(raw) if suffix == ".gz" else _zstd_chunks(raw)
        f = _Decompressed(_Decoded(raw, chunks, on_damage or damaged))
    else:
        f = open(name, "rb")
    try:
        if f.peek(3)[:3] == BOM:
            f.read(3)
    except BaseException:
        f.close()
        raise
    return f


@dataclass(slots=True)
class Message:
    """One libpanto message: role, canonical blocks, usage (or None), provenance."""

    role: str
    content: list[dict[str, Any]]
    usage: dict[str, int] | None
    line: int
    timestamp: datetime | None = None
    model: str | None = None
    #: The call's cost as the agent recorded it, in US dollars (``recorded_cost``); None where none is.
    cost: float | None = None
    #: pi's ``bashExecution``, a user message that is the user's ``!command`` run (``bash_execution``).
    bash: bool = False
    #: The working directory its record gives (Claude Code's ``cwd``): its tool calls' own; None: the session's.
    cwd: str | None = None


@dataclass(slots=True)
class SessionMeta:
    """What a file says about its session as a whole (slots: a cached re-read holds one per file)."""

    session_id: str
    model: str | None = None
    context_window: int | None = None
    parent_session_id: str | None = None
    created_at: datetime | None = None
    #: The working directory the agent recorded (pi, Codex, Claude Code's ``cwd``); None when unrecorded.
    project: str | None = None
    #: A subagent's own context (Claude Code sidechain files, Codex spawned threads), not a main session.
    is_subagent: bool = False
    #: Recorded compaction events: dicts with anchor_index (index of the
    #: summary message among the messages yielded), trigger, tokens_before,
    #: first_kept_index (or None), trigger_index (one past the last message of
    #: the conversation the agent compacted: rows ``[0, anchor_index)`` plus
    #: ``(anchor_index, trigger_index)``; equal to anchor_index unless what was
    #: kept verbatim was recorded before the compaction, as in pi) and
    #: kept_end_index (one past the last message kept verbatim, or None).
    compactions: list[dict[str, Any]] = field(default_factory=list)
    api_calls: int | None = None
    #: A source id per yielded message, in order (Claude Code: the uuid of the
    #: record that opened it), for cross-file rules in an adapter's
    #: ``postprocess``; None when the format has no such ids.
    message_ids: list[str | None] | None = None


class SourceFile:
    """A file being parsed: its path (``file``, a string; the ``Path`` made when first asked for), its session's
    metadata, its error policy.

    >>> src = SourceFile("a/./b.jsonl", "canonical")
    >>> src.file, src.path, src.meta.session_id
    ('a/b.jsonl', PosixPath('a/b.jsonl'), 'b')
    """

    def __init__(self, path: str | Path, source_format: str, *, skip_invalid: bool = False,
                 report: IngestReport | None = None):
        #: ``str(self.path)``.
        self.file = path_string(path)
        self._path = path if isinstance(path, Path) else None
        self.source_format = source_format
        self.skip_invalid = skip_invalid
        self.report = report if report is not None else IngestReport()
        self.meta = SessionMeta(session_id=session_stem(self.file))
        #: Set by an adapter that found no record at all (an empty or blank file): it holds no session.
        self.holds_nothing = False
        self._size: int | None = None

    def size(self) -> int:
        """The file's size on disk, taken when first asked for (a reader groups files by it, then reads them)."""
        if self._size is None:
            self._size = os.stat(self.file).st_size
        return self._size

    @property
    def path(self) -> Path:
        """The file's path."""
        if self._path is None:
            self._path = Path(self.file)
        return self._path

    @path.setter
    def path(self, value: str | Path) -> None:
        self.file = path_string(value)
        self._path = value if isinstance(value, Path) else None
        self._size = None

    def invalid(self, line: int | None, reason: str) -> None:
        """A bad line: raise :class:`InputError`, or count it under ``skip_invalid``."""
        if not self.skip_invalid:
            raise InputError(self.file, line, reason)
        self.report.skip(self.file, reason)

    def truncated(self, line: int) -> None:
        """The file's last line has no newline and is not JSON: skipped and counted, never fatal."""
        self.report.skip(self.file, TRUNCATED)

    def ignore(self, record_type: str) -> None:
        """A valid record that is not conversation: counted, never fatal."""
        self.report.ignore(self.source_format, record_type)

    def open(self) -> IO[bytes]:
        """The file's bytes (decompressed, without a BOM): see :func:`open_session_file`.

        A damaged compressed file raises :class:`DamagedFileError`, or under
        ``skip_invalid`` reads as its whole lines before the damage and is
        counted as skipped once, however often it is opened.
        """
        return open_session_file(self.file, on_damage=self.damaged)

    def damaged(self, reason: str) -> None:
        """A compressed file cut short or corrupt: raise, or count it once under ``skip_invalid``."""
        if not self.skip_invalid:
            raise DamagedFileError(self.file, reason)
        if (self.file, reason) not in self.report.skipped:
            self.report.skip(self.file, reason)


@dataclass(slots=True)
class ParsedFile:
    """The messages and session metadata of one file (``session`` None: skipped whole under skip_invalid).

    Slots, not a ``__dict__``: a cached re-read of tens of thousands of files holds one per file.
    """

    messages: pl.DataFrame
    session: SessionMeta | None
    path: Path
    source_format: str | None


#: A columnar fast path: the message frame of each file, or None where it declines (the file is then parsed).
ReadFrames = Callable[[list[SourceFile]], list[pl.DataFrame | None]]
#: Cross-file rules: every parsed file of the format in, the files kept out (in order; a kept one may be updated).
Postprocess = Callable[[list[ParsedFile], IngestReport], list[ParsedFile]]


class Adapter(Protocol):
    """What the ingest pipeline needs of a source format; each format module satisfies it."""

    @property
    def NAME(self) -> str: ...  # noqa: N802 (a module constant)

    def sniff(self, record: Any) -> bool: ...

    def parse(self, src: SourceFile) -> Iterator[Message]: ...

    @property
    def read_frames(self) -> ReadFrames | None: ...

    @property
    def postprocess(self) -> Postprocess | None: ...


class Invalid(ValueError):
    """Raised by validators inside an adapter; the adapter reports it with its line."""


#: What converting one record can raise on input of an unexpected shape: :class:`Invalid` from a
#: validator, ``TypeError`` where a field of another JSON type reached code that assumed one (a list
#: used as a key), ``RecursionError`` from nesting deeper than Python recurses. Adapters report each
#: as a bad line (:func:`bad_record`), so no input ends in a traceback.
BAD_RECORD = (Invalid, TypeError, RecursionError)


def bad_record(error: Exception) -> str:
    """The reason reported for a record that raised one of :data:`BAD_RECORD`.

    >>> bad_record(Invalid("usage.input must be an integer")), bad_record(TypeError("unhashable type: 'list'"))
    ('usage.input must be an integer', "unexpected record shape: TypeError: unhashable type: 'list'")
    """
    return str(error) if isinstance(error, Invalid) else f"unexpected record shape: {type(error).__name__}: {error}"


def usage_counter(value: Any, field: str) -> int:
    """A usage counter as an int, or :class:`Invalid` saying what is wrong with it.

    ``field`` is the counter's place in the file, as the file names it
    (``message.usage.input_tokens`` in Claude Code, ``usage.input`` in the canonical format), so the
    error points at what the file holds.

    >>> usage_counter(12, "usage.input")
    12
    >>> usage_counter(1.5, "message.usage.output_tokens")
    Traceback (most recent call last):
    ...
    panto_analytics.formats.base.Invalid: message.usage.output_tokens must be a non-negative integer, got 1.5
    """
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        raise Invalid(f"{field} must be a non-negative integer, got {shown}")
    if value > MAX_USAGE:
        raise Invalid(f"{field} = {value} is above the supported maximum {MAX_USAGE}")
    return value


def parse_timestamp(value: Any) -> datetime | None:
    """An ISO-8601 string or epoch milliseconds as an aware UTC datetime, else None.

    >>> parse_timestamp("2025-01-02T03:04:05.678Z").isoformat()
    '2025-01-02T03:04:05.678000+00:00'
    >>> parse_timestamp(1735787045678).year
    2025
    >>> parse_timestamp(10**30) is None   # no datetime holds it
    True
    """
    if isinstance(value, str):
        try:
            ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return ts if ts.tzinfo else ts.replace(tzinfo=UTC)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value / 1000, tz=UTC)
        except (OverflowError, OSError, ValueError):  # beyond the years a datetime holds: no time known
            return None
    return None


def timestamp_field(value: Any, where: str) -> datetime | None:
    """An optional timestamp field of a format that documents one (ISO-8601 or epoch ms): None when absent,
    :class:`Invalid` naming the field when it is there but no time (a wrong type, text, out of range).

    >>> timestamp_field(None, "message.timestamp") is None, timestamp_field(0, "message.timestamp").year
    (True, 1970)
    >>> timestamp_field("not a date", "message.timestamp")
    Traceback (most recent call last):
    ...
    panto_analytics.formats.base.Invalid: message.timestamp must be an ISO-8601 string or epoch milliseconds, got 'not a date'
    """
    if value is None:
        return None
    ts = parse_timestamp(value)
    if ts is None:
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        raise Invalid(f"{where} must be an ISO-8601 string or epoch milliseconds, got {shown}")
    return ts


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off for a block that makes many objects and no cycles, and back as it
    was after it; safe from any number of threads (the collector comes back when the last pause ends).

    Reading makes several objects per line (a record, its blocks, a message) and keeps many (the columns,
    the pending blocks) until it is done, none in a reference cycle: with the collector on, pi's cold
    ingest spent about a quarter of its time, Claude Code's decoding a quarter, a batch of canonical files
    a fifth and a re-read of 30,000 cached files about 45% of its lookup in collections that free nothing.

    >>> with gc_paused():
    ...     gc.isenabled()
    False
    """
    global _pauses, _was_enabled
    with _pause_lock:
        if _pauses == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0 and _was_enabled:
                gc.enable()


#: :func:`gc_paused`'s state: pauses under way, and whether the collector was on before the first.
_pause_lock = threading.Lock()
_pauses = 0
_was_enabled = False


class FrameBuilder:
    """Accumulates messages as frame columns; their blocks are counted in batches (Arrow), then dropped.

    Each message's fields are appended to a list per column; its content
    blocks are gathered, and every :data:`FLUSH_BLOCKS` or so converted at
    once into an Arrow array (:func:`.blocks.block_array`) whose words, sizes
    and flags per message are counted in a few array operations; only the
    tool blocks are kept, in Arrow, for the ``refs`` column built in
    :meth:`finish`, where the frame is built in one construction.
    """

    #: Pending blocks that trigger a count (at the end of a session): bounds the memory held by block dicts.
    FLUSH_BLOCKS = 1 << 15

    def __init__(self) -> None:
        self._cols: dict[str, list[Any]] = {name: [] for name in MESSAGE_SCHEMA if name not in _COUNTED}
        self._blocks: list[dict[str, Any]] = []   # pending blocks, and the row each belongs to
        self._owner: list[int] = []
        self._counted = 0                         # rows whose blocks are counted
        self._counts: list[tuple[np.ndarray, ...]] = []   # (words, serialized_bytes, has_tool_result, has_summary)
        self._tools: list[pa.StructArray] = []    # tool calls and results, and their rows
        self._tool_rows: list[np.ndarray] = []
        self._tool_words: list[np.ndarray] = []
        self._sizes: list[int] = []
        self._cwds: list[str | None] = []
        self._message_cwds: dict[int, str] = {}   # a message's own working directory (row: cwd), where it has one
        self._tool_cwds: list[list[str | None]] = []

    @property
    def height(self) -> int:
        """Rows added so far."""
        return len(self._cols[SEQ])

    def add_session(self, src: SourceFile, messages: Iterator[Message]) -> int:
        """Append all messages of one session (read with the garbage collector paused); returns how many."""
        with gc_paused():
            return self._add(src, messages)

    def _add(self, src: SourceFile, messages: Iterator[Message]) -> int:
        cols = self._cols
        first = row = self.height
        blocks, owner = self._blocks, self._owner
        role, bash, cost, model, timestamp, line = (cols[ROLE], cols["bash_execution"], cols["recorded_cost"],
                                                    cols["model"], cols["timestamp"], cols["line"])
        usage_cols = [cols[name] for name in (*USAGE_COLUMNS, "cache_write_1h")]
        usage_keys = [*USAGE_COLUMNS, "cache_write_1h"]
        for msg in messages:
            content = msg.content
            blocks.extend(content)
            owner.extend([row] * len(content))
            role.append(msg.role)
            bash.append(msg.bash)
            if msg.cwd is not None:
                self._message_cwds[row] = msg.cwd
            usage = msg.usage
            if usage is None:
                for col in usage_cols:
                    col.append(None)
            else:
                for col, key in zip(usage_cols, usage_keys):
                    col.append(usage.get(key, 0))
            cost.append(msg.cost)
            model.append(msg.model)
            timestamp.append(msg.timestamp)
            line.append(msg.line)
            row += 1
        n = row - first
        meta = src.meta
        self._sizes.append(n)
        self._cwds.append(meta.project)
        cols["session_id"].extend([meta.session_id] * n)
        cols[SEQ].extend(range(n))
        cols["source_format"].extend([src.source_format] * n)
        cols["file"].extend([src.file] * n)
        # Messages without a model of their own inherit the session's.
        if meta.model is not None:
            for i in range(first, row):
                if model[i] is None:
                    model[i] = meta.model
        if len(blocks) >= self.FLUSH_BLOCKS:
            self._count()
        return n

    def _count(self) -> None:
        """Count the pending blocks: words, sizes and flags of their rows; keep the tool blocks."""
        start, n = self._counted, self.height - self._counted
        blocks = block_array(self._blocks)
        owner = np.asarray(self._owner, dtype=np.int64) - start
        roles = pa.array(self._cols[ROLE][start:], pa.string())
        each = block_words(blocks)
        words, has_result, has_summary = words_and_flags(blocks, owner, n, each)
        self._counts.append((words, serialized_bytes(roles, blocks, owner, n), has_result, has_summary))
        is_tool = np.asarray(pc.fill_null(pc.is_in(blocks.field("type"), pa.array(["tool_use", "tool_result"])),
                                          False))
        if is_tool.any():
            self._tools.append(blocks.filter(pa.array(is_tool)))
            self._tool_rows.append(owner[is_tool] + start)
            self._tool_words.append(each[is_tool])
            if self._message_cwds:
                self._tool_cwds.append([self._message_cwds.get(r) for r in (owner[is_tool] + start).tolist()])
            else:
                self._tool_cwds.append([None] * int(is_tool.sum()))
        self._blocks.clear()
        self._owner.clear()
        self._counted = self.height

    def finish(self) -> pl.DataFrame:
        """The frame of every message added."""
        with gc_paused():
            return self._finish()

    def _finish(self) -> pl.DataFrame:
        self._count()
        n = self.height
        counts = [np.concatenate(c) for c in zip(*self._counts)]   # _count above appended at least one
        if self._tools:
            scope = np.repeat(np.arange(len(self._sizes)), self._sizes)
            tools = pa.concat_arrays(self._tools)
            is_result = np.asarray(pc.fill_null(pc.equal(tools.field("type"), "tool_result"), False))
            own = pa.array([c for cwds in self._tool_cwds for c in cwds], pa.string()) if self._message_cwds else None
            refs = refs_column(tools, np.concatenate(self._tool_rows), n, scope, self._cwds,
                               np.concatenate(self._tool_words)[is_result], own)
        else:
            refs = pl.Series("refs", [None] * n, dtype=pl.List(REF_STRUCT))
        columns: dict[str, Any] = dict(self._cols)
        columns.update(zip(_COUNTED, counts))
        columns["timestamp"] = _timestamps(columns["timestamp"])
        frame = pl.DataFrame({name: columns[name] for name in MESSAGE_SCHEMA if name != "refs"},
                             schema={k: v for k, v in MESSAGE_SCHEMA.items() if k != "refs"})
        return frame.with_columns(refs=refs)


#: The columns :class:`FrameBuilder` counts from the blocks, in the order :meth:`FrameBuilder._count` keeps them.
_COUNTED = ("words", "serialized_bytes", "has_tool_result", "has_summary", "refs")


def _timestamps(values: list[datetime | None]) -> pl.Series | list[datetime | None]:
    """Aware datetimes as the frame's UTC milliseconds, through Arrow (Polars converts them one by one, 5x slower).

    >>> from datetime import timedelta, timezone
    >>> _timestamps([datetime(2026, 1, 2, 3, 4, 5, 678999, tzinfo=timezone(timedelta(hours=2))), None]).to_list()
    [datetime.datetime(2026, 1, 2, 1, 4, 5, 678000, tzinfo=zoneinfo.ZoneInfo(key='UTC')), None]
    """
    try:
        return pl.Series(pa.array(values, pa.timestamp("ms", tz="UTC"))).cast(MESSAGE_SCHEMA["timestamp"])
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return values
