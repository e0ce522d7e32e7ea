"""The fast path for pi sessions: many files at once, each decoded in one call, its columns built in one pass.

Each file's lines are decoded in one call (``Decoder.decode_lines``) into one
declared shape (:class:`_Line`: every field either pass of :mod:`.pi` reads,
tool arguments as raw JSON bytes). The tree (``id``/``parentId``), the
current branch and where each compaction's summary goes are found as
:mod:`.pi` finds them (its own functions); the entries on the branch are then
turned straight into the frame's columns and canonical blocks (no message
object, no block dict), whose words, summarizer bytes, flags and ``refs`` are
counted over every file at once (:mod:`.blocks`, :func:`.tool_targets.refs_column`)
and whose timestamps are parsed in one vectorized call.

A file with anything the fast path leaves to :func:`.pi.parse` is declined
whole (None): a line that does not fit the declared shape or is not one JSON
object per line (blank, truncated, pretty-printed, a carriage return, invalid
UTF-8), a record :mod:`.pi`'s checks refuse or hand back to its plain checks
(``Fallback``), a header that is not the first line, a bad version or tree.
``tests/formats/test_pi_fast.py`` checks the frame, the session metadata
and the report against :func:`.pi.parse` and its oracle ``reference/pi_lines.py``.
"""
from __future__ import annotations

import itertools
import math
import sys
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from pathlib import PurePath
from typing import Any

import msgspec
import numpy as np
import orjson
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from ..outcomes.tool_targets import refs_column
from ..schema import MESSAGE_SCHEMA, ROLE, SEQ
from .base import BAD_RECORD, SessionMeta, SourceFile, gc_paused, parse_timestamp, session_stem
from .blocks import BLOCK, PART, block_words, serialized_bytes, words_and_flags
from .columnar import read_together
from .pi_shapes import NAME, Block, Compaction, Entry, Msg, anchors, branch, compaction
from .pi_shapes import version as session_version
from .typed import TYPED_ERRORS, one_per_line, raw_json

__all__ = ["read_frames"]


class _Line(msgspec.Struct):
    """A line of a pi file as the fast path reads it: an entry (every field :mod:`.pi` reads) or the header."""

    type: str
    id: str | None = None
    parentId: str | None = None  # noqa: N815 (the file's names)
    timestamp: str | int | float | None = None
    message: Msg | None = None
    content: str | list[Block] | None = None
    summary: str | None = None
    modelId: str | None = None  # noqa: N815
    # The header's own fields (read as :class:`.pi._Session` reads them: any JSON value).
    version: Any = None
    cwd: Any = None
    parentSession: Any = None  # noqa: N815
    branchedFrom: Any = None  # noqa: N815


_LINES = msgspec.json.Decoder(_Line)
_DEEP = 1000

#: Canonical block types by their codes.
_KIND_NAMES = ("text", "thinking", "tool_use", "tool_result", "compaction_summary")
_TEXT, _THINKING, _TOOL_USE, _RESULT, _SUMMARY = range(5)
#: Entry types :meth:`_File._entry` reads (the rest, but messages, are ignored records).
_SPECIAL = frozenset({"message", "custom_message", "branch_summary", "model_change", "compaction"})
_STR = pa.string()
_LARGE = pa.large_string()
#: An ISO-8601 UTC time that Python's ``fromisoformat`` and Polars read alike (seconds 00-59; year 0 apart).
_ISO_UTC = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:[0-5]\d(\.\d{1,6})?(Z|\+00:00)$"


class _Decline(Exception):
    """The file has something the fast path leaves to :func:`.pi.parse`."""


def read_frames(sources: list[SourceFile]) -> list[pl.DataFrame | None]:
    """The message frame of each clean pi session, or None to leave it to :func:`.pi.parse`.

    Each accepted source gets the session metadata and the report entries :func:`.pi.parse` would have given it.
    """
    frames: list[pl.DataFrame | None] = [None] * len(sources)
    data, spans = read_together(sources)
    cols = _Columns()
    taken: list[tuple[int, SessionMeta, Counter[str], int]] = []
    deep = sys.getrecursionlimit() > _DEEP
    with memoryview(data) as view, gc_paused():
        for k, span in enumerate(spans):
            if span is None:
                continue
            raw = bytes(view[span[0]:span[1]])
            n_lines = one_per_line(raw)
            if n_lines is None or (deep and raw.count(b"[") + raw.count(b"{") >= _DEEP):
                continue
            try:
                records = _LINES.decode_lines(raw)
            except TYPED_ERRORS:
                continue
            if len(records) != n_lines:
                continue
            mark = cols.mark()
            try:
                meta, ignored = _File(sources[k], records, raw, cols).read()
            except (_Decline, *BAD_RECORD):
                cols.undo(mark)
                continue
            taken.append((k, meta, ignored, cols.rows - mark[0]))
    if not taken:
        return frames
    frame = cols.frame([m for _, m, _, _ in taken], [n for _, _, _, n in taken], [sources[k] for k, _, _, _ in taken])
    start = 0
    for k, meta, ignored, n in taken:
        src = sources[k]
        src.meta = meta
        for label, times in ignored.items():
            src.report.ignore(NAME, label, times)
        frames[k] = frame.slice(start, n)
        start += n
    return frames


class _Columns:
    """The frame's columns and the canonical blocks of every message read, as Python lists until :meth:`frame`."""

    def __init__(self) -> None:
        self.role: list[str] = []
        self.bash: list[bool] = []
        self.usage: list[tuple[int, int, int, int] | None] = []
        self.cost: list[float | None] = []
        self.model: list[str | None] = []
        self.ts: list[Any] = []       # the entry's timestamp (or a compaction's), as recorded
        self.ts_msg: list[Any] = []   # the message's own, read where the entry's is no time
        self.line: list[int] = []
        # blocks
        self.owner: list[int] = []
        self.code: list[int] = []
        self.text: list[str | None] = []
        self.ids: list[str | None] = []
        self.names: list[str | None] = []
        self.inputs: list[str | None] = []
        self.tool_use_ids: list[str | None] = []
        self.n_parts: list[int] = []
        # parts
        self.part_kind: list[str] = []
        self.part_text: list[str | None] = []
        self.part_media: list[str | None] = []

    @property
    def rows(self) -> int:
        return len(self.role)

    def mark(self) -> tuple[int, int, int]:
        return len(self.role), len(self.owner), len(self.part_kind)

    def undo(self, mark: tuple[int, int, int]) -> None:
        """Forget what a declined file added."""
        rows, blocks, parts = mark
        for col in (self.role, self.bash, self.usage, self.cost, self.model, self.ts, self.ts_msg, self.line):
            del col[rows:]
        for col in (self.owner, self.code, self.text, self.ids, self.names, self.inputs, self.tool_use_ids,
                    self.n_parts):
            del col[blocks:]
        for col in (self.part_kind, self.part_text, self.part_media):
            del col[parts:]

    def frame(self, metas: list[SessionMeta], sizes: list[int], sources: list[SourceFile]) -> pl.DataFrame:
        """The message frame of every file taken (their rows in order), built in a few array operations."""
        with gc_paused():
            return self._frame(metas, sizes, sources)

    def _frame(self, metas: list[SessionMeta], sizes: list[int], sources: list[SourceFile]) -> pl.DataFrame:
        n = self.rows
        blocks = self._blocks()
        owner = np.asarray(self.owner, dtype=np.int64)
        roles = _strings(self.role, _STR)
        each = block_words(blocks)
        words, has_result, has_summary = words_and_flags(blocks, owner, n, each)
        size = serialized_bytes(roles, blocks, owner, n)
        file_of = np.repeat(np.arange(len(sizes)), sizes)
        is_result = np.asarray(pc.fill_null(pc.equal(blocks.field("type"), "tool_result"), False))
        refs = refs_column(blocks, owner, n, file_of, [m.project for m in metas], each[is_result])
        usage = self.usage
        has_usage = [u is not None for u in usage]
        none = (None, None, None, None)
        counters = list(zip(*(u if u is not None else none for u in usage))) if n else [(), (), (), ()]
        def per_file(values: Sequence[str | None]) -> pl.Series:  # a file-level value on each of its messages
            return pl.Series(values, dtype=pl.String).gather(file_of)

        model = pl.Series(self.model, dtype=pl.String)
        if any(m.model is not None for m in metas):
            model = model.fill_null(per_file([m.model for m in metas]))
        starts = np.repeat(np.cumsum([0, *sizes[:-1]]), sizes)
        columns: dict[str, Any] = {
            "session_id": per_file([m.session_id for m in metas]),
            SEQ: np.arange(n) - starts,
            ROLE: pl.Series(self.role, dtype=pl.String),
            "words": words, "serialized_bytes": size, "has_tool_result": has_result, "has_summary": has_summary,
            "bash_execution": pl.Series(self.bash, dtype=pl.Boolean),
            "input": pl.Series(counters[0], dtype=pl.Int64), "output": pl.Series(counters[1], dtype=pl.Int64),
            "cache_read": pl.Series(counters[2], dtype=pl.Int64), "cache_write": pl.Series(counters[3], dtype=pl.Int64),
            "cache_write_1h": pl.Series(has_usage, dtype=pl.Boolean).replace_strict({True: 0, False: None},
                                                                                    return_dtype=pl.Int64),
            "recorded_cost": pl.Series(self.cost, dtype=pl.Float64),
            "source_format": pl.repeat(NAME, n, dtype=pl.String, eager=True),
            "model": model,
            "timestamp": self._timestamps(),
            "file": per_file([str(src.path) for src in sources]),
            "line": pl.Series(self.line, dtype=pl.Int64),
        }
        frame = pl.DataFrame({name: columns[name] for name in MESSAGE_SCHEMA if name != "refs"})
        return frame.cast({k: v for k, v in MESSAGE_SCHEMA.items() if k != "refs"}).with_columns(refs=refs)

    def _blocks(self) -> pa.StructArray:
        offsets = np.zeros(len(self.n_parts) + 1, dtype=np.int32)
        np.cumsum(self.n_parts, out=offsets[1:])
        parts = pa.StructArray.from_arrays([_strings(self.part_kind, _STR), _strings(self.part_text, _LARGE),
                                            _strings(self.part_media, _STR)], fields=list(PART))
        kinds = _KINDS.take(pl.Series(self.code, dtype=pl.Int8).to_arrow())
        return pa.StructArray.from_arrays(
            [kinds, _strings(self.text, _LARGE), _strings(self.ids, _STR), _strings(self.names, _STR),
             _strings(self.inputs, _LARGE), _strings(self.tool_use_ids, _STR),
             pa.ListArray.from_arrays(pl.Series(offsets).to_arrow(), parts)], fields=list(BLOCK))

    def _timestamps(self) -> pl.Series:
        """Each message's time: its entry's, else its message's (:func:`.base.parse_timestamp`), in UTC ms.

        Where every entry's is an ISO-8601 UTC string Polars reads as Python does, one vectorized parse;
        else each is parsed as :func:`.pi.parse` parses it and converted as :class:`.base.FrameBuilder` does.
        """
        dtype = MESSAGE_SCHEMA["timestamp"]
        if all(type(t) is str for t in self.ts):
            text = pl.Series(self.ts, dtype=pl.String)
            if text.str.contains(_ISO_UTC).all() and not text.str.starts_with("0000").any():
                parsed = text.str.replace(r"\+00:00$", "Z").str.to_datetime(
                    "%Y-%m-%dT%H:%M:%S%.fZ", time_unit="ms", time_zone="UTC", strict=False)
                if parsed.null_count() == 0:
                    return parsed.cast(dtype)
        times = [parse_timestamp(t) or parse_timestamp(m) for t, m in zip(self.ts, self.ts_msg)]
        return _python_timestamps(times).cast(dtype)


def _python_timestamps(values: list[datetime | None]) -> pl.Series:
    """Aware datetimes as :class:`.base.FrameBuilder` converts them (through Arrow, else by Polars)."""
    try:
        return pl.Series(pa.array(values, pa.timestamp("ms", tz="UTC")))
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return pl.Series(values, dtype=MESSAGE_SCHEMA["timestamp"])


def _strings(values: Sequence[str | None], arrow_type: pa.DataType) -> pa.Array:
    """Python strings as an Arrow string array of ``arrow_type`` (through Polars: faster than ``pa.array``)."""
    return pl.Series(values, dtype=pl.String).to_arrow().cast(arrow_type)


_KINDS = _strings(list(_KIND_NAMES), _STR)


class _File:
    """One decoded file: :mod:`.pi`'s two passes over its records, its messages appended to the columns."""

    def __init__(self, src: SourceFile, records: list[_Line], raw: bytes, cols: _Columns):
        self.src, self.records, self.raw, self.cols = src, records, raw, cols
        self.ignored: Counter[str] = Counter()
        self.meta = SessionMeta(session_id=session_stem(src.path))
        self.model: str | None = None
        self.models: Counter[str] = Counter()
        self.start = cols.rows
        self.kept_found: list[tuple[int, bool]] = []           # per summary: its index, whether what it kept is on the path
        self.recorded_at: dict[int, dict[str, Any]] = {}        # compaction line -> its recorded event

    def read(self) -> tuple[SessionMeta, Counter[str]]:
        path, anchors = self._scan()
        self._emit(path, anchors)
        self.meta.model = self.models.most_common(1)[0][0] if self.models else self.model
        return self.meta, self.ignored

    # -- the first pass: header, tree, compactions ---------------------------------------------------

    def _scan(self) -> tuple[list[int], dict[int, list[tuple[Compaction, bool]]]]:
        records = self.records
        start = 1 if records and records[0].type == "session" else 0
        if (not start or records[0].version is None) and all(
                r.type != "session" and r.type != "compaction" for r in itertools.islice(records, start, None)):
            # Version 1 without a compaction: every entry, in file order, nothing placed.
            if start:
                self._header(records[0])
            return list(range(start + 1, len(records) + 1)), {}
        version = 1
        entries: list[Entry] = []
        by_id: dict[str, int] = {}
        compactions: dict[int, Compaction] = {}
        for index, rec in enumerate(self.records):
            kind = rec.type
            lineno = index + 1
            if kind == "session":
                if index != 0:
                    raise _Decline
                self._header(rec)
                version = session_version(rec.version)
                continue
            entry = Entry(lineno, kind, None, None)
            if version >= 2:
                if rec.id is None or rec.id in by_id:
                    raise _Decline
                parent = rec.parentId
                if parent is not None and parent not in by_id:
                    raise _Decline
                entry.id, entry.parent = rec.id, parent
                by_id[rec.id] = len(entries)
            if kind == "compaction":
                compactions[lineno] = compaction(orjson.loads(self._line(index)), lineno, version)
            entries.append(entry)
        on_path = branch(entries, by_id) if version >= 2 else list(range(len(entries)))
        off = len(entries) - len(on_path)
        if off:
            self.ignored["entry off the current branch"] += off
        # v1: a record index (the header counted) -> its entry's position.
        kept_index: dict[Any, int] = by_id if version >= 2 else {
            i + (len(self.records) - len(entries)): i for i in range(len(entries))}
        return [entries[i].line for i in on_path], anchors(entries, on_path, kept_index, compactions)

    def _line(self, index: int) -> bytes:
        """The bytes of line ``index`` (0-based): rare records are read again from them."""
        raw, start = self.raw, 0
        for _ in range(index):
            start = raw.index(b"\n", start) + 1
        end = raw.find(b"\n", start)
        return raw[start:] if end < 0 else raw[start:end]

    def _header(self, header: _Line) -> None:
        meta = self.meta
        if header.id:
            meta.session_id = header.id
        meta.created_at = parse_timestamp(header.timestamp)
        if isinstance(header.cwd, str) and header.cwd:
            meta.project = header.cwd
        parent = header.parentSession or header.branchedFrom
        if isinstance(parent, str) and parent:
            meta.parent_session_id = PurePath(parent).stem.split("_", 1)[-1]
        if header.modelId is not None:
            self.model = header.modelId

    # -- the second pass: the entries on the branch, with the summaries in place ---------------------

    def _emit(self, path: list[int], anchors: dict[int, list[tuple[Compaction, bool]]]) -> None:
        """The entries on the branch, appended. The common ones (assistant, tool result and user messages, and
        ignored records) are inlined here, with the columns' appends bound once; the rest go to :meth:`_entry`."""
        records, recorded_at, cols, ignored = self.records, self.recorded_at, self.cols, self.ignored
        role_col, bash_col, usage_col, cost_col, model_col, ts_col, ts_msg_col, line_col = (
            cols.role.append, cols.bash.append, cols.usage.append, cols.cost.append, cols.model.append,
            cols.ts.append, cols.ts_msg.append, cols.line.append)
        owner, code, text, ids, names, inputs, tool_use_ids, n_parts = (
            cols.owner.append, cols.code.append, cols.text.append, cols.ids.append, cols.names.append,
            cols.inputs.append, cols.tool_use_ids.append, cols.n_parts.append)
        part_kind, part_text, part_media = cols.part_kind.append, cols.part_text.append, cols.part_media.append
        models = self.models
        rows = cols.role
        for lineno in path:
            if recorded_at or anchors:
                for comp, found in anchors.get(lineno, ()):
                    self._anchor(comp, found, comp.timestamp, None)
                if lineno in recorded_at:
                    # The compaction record itself: what was appended so far is the conversation it compacted.
                    recorded_at[lineno]["trigger_index"] = self.count
            entry = records[lineno - 1]
            msg = entry.message
            role = msg.role if msg is not None and entry.type == "message" else None
            row = len(rows)
            if role == "assistant":
                assert msg is not None
                content = msg.content
                if not isinstance(content, list):
                    raise _Decline
                for block in content:
                    kind = block.type
                    if kind == "text":
                        if block.text is None:
                            raise _Decline
                        owner(row); code(_TEXT); text(block.text); ids(None); names(None); inputs(None)  # noqa: E702
                    elif kind == "thinking":
                        if block.thinking is None:
                            raise _Decline
                        owner(row); code(_THINKING); text(block.thinking); ids(None); names(None)  # noqa: E702
                        inputs(None)
                    elif kind == "toolCall":
                        if block.id is None or block.name is None:
                            raise _Decline
                        owner(row); code(_TOOL_USE); text(None); ids(block.id); names(block.name)  # noqa: E702
                        inputs(raw_json(block.arguments))
                    else:
                        ignored[f"assistant block:{kind}"] += 1
                        continue
                    tool_use_ids(None)
                    n_parts(0)
                model = msg.model if msg.model is not None else self.model
                self.model = model
                if model is not None:
                    models[model] += 1
                usage: tuple[int, int, int, int] | None = None
                cost = None
                raw = msg.usage
                if raw is not None:
                    usage = (raw.input or 0, raw.output or 0, raw.cacheRead or 0, raw.cacheWrite or 0)
                    if not any(usage):
                        usage = None
                    elif raw.cost is not None and (total := raw.cost.total) is not None and math.isfinite(total) \
                            and total >= 0:
                        cost = float(total)
                role_col("assistant"); bash_col(False); usage_col(usage); cost_col(cost); model_col(model)  # noqa: E702
                ts_col(entry.timestamp); ts_msg_col(msg.timestamp); line_col(lineno)  # noqa: E702
            elif role == "toolResult":
                assert msg is not None
                if msg.toolCallId is None:
                    raise _Decline
                content = msg.content
                if isinstance(content, str):
                    part_kind("text"); part_text(content); part_media(None)  # noqa: E702
                    n = 1
                elif content is None:
                    raise _Decline
                else:
                    n = 0
                    for block in content:
                        if block.type == "text":
                            if block.text is None:
                                raise _Decline
                            part_kind("text"); part_text(block.text); part_media(None)  # noqa: E702
                        elif block.type == "image":
                            if block.mimeType is None:
                                raise _Decline
                            part_kind("media"); part_text(None); part_media(block.mimeType)  # noqa: E702
                        else:
                            ignored[f"content block:{block.type}"] += 1
                            continue
                        n += 1
                owner(row); code(_RESULT); text(None); ids(None); names(None); inputs(None)  # noqa: E702
                tool_use_ids(msg.toolCallId); n_parts(n)  # noqa: E702
                role_col("user"); bash_col(False); usage_col(None); cost_col(None); model_col(self.model)  # noqa: E702
                ts_col(entry.timestamp); ts_msg_col(msg.timestamp); line_col(lineno)  # noqa: E702
            elif role == "user":
                assert msg is not None
                for one in self._texts(msg.content):
                    owner(row); code(_TEXT); text(one); ids(None); names(None); inputs(None)  # noqa: E702
                    tool_use_ids(None); n_parts(0)  # noqa: E702
                role_col("user"); bash_col(False); usage_col(None); cost_col(None); model_col(self.model)  # noqa: E702
                ts_col(entry.timestamp); ts_msg_col(msg.timestamp); line_col(lineno)  # noqa: E702
            elif entry.type not in _SPECIAL:
                ignored[entry.type] += 1   # a record that is not conversation (a thinking level, a label, ...)
            else:
                self._entry(entry, lineno)
        for recorded, (index, found) in zip(self.meta.compactions, self.kept_found):
            recorded["first_kept_index"] = index + 1 if found and index + 1 < self.count else None
            recorded["kept_end_index"] = recorded["trigger_index"] if recorded["first_kept_index"] is not None else None

    @property
    def count(self) -> int:
        """Messages appended so far."""
        return self.cols.rows - self.start

    def _anchor(self, comp: Compaction, found: bool, ts: Any, ts_msg: Any) -> None:
        """A compaction's summary message, appended, and its recorded event."""
        recorded = {"anchor_index": self.count, "trigger": None, "tokens_before": comp.tokens_before,
                    "first_kept_index": None, "trigger_index": self.count, "kept_end_index": None}
        self.meta.compactions.append(recorded)
        self.recorded_at[comp.line] = recorded
        self.kept_found.append((self.count, found))
        row = self.cols.rows
        self._row("user", None, None, comp.line, ts, ts_msg, self.model)
        self._block(row, _SUMMARY, comp.summary)

    def _row(self, role: str, usage: tuple[int, int, int, int] | None, cost: float | None, line: int, ts: Any,
             ts_msg: Any, model: str | None, bash: bool = False) -> None:
        cols = self.cols
        cols.role.append(role)
        cols.bash.append(bash)
        cols.usage.append(usage)
        cols.cost.append(cost)
        cols.model.append(model)
        cols.ts.append(ts)
        cols.ts_msg.append(ts_msg)
        cols.line.append(line)

    def _block(self, row: int, code: int, text: str | None = None, ident: str | None = None,
               name: str | None = None, inp: str | None = None, tool_use_id: str | None = None,
               n_parts: int = 0) -> None:
        cols = self.cols
        cols.owner.append(row)
        cols.code.append(code)
        cols.text.append(text)
        cols.ids.append(ident)
        cols.names.append(name)
        cols.inputs.append(inp)
        cols.tool_use_ids.append(tool_use_id)
        cols.n_parts.append(n_parts)

    def _user(self, texts: list[str], lineno: int, ts: Any, ts_msg: Any, bash: bool = False) -> None:
        row = self.cols.rows
        self._row("user", None, None, lineno, ts, ts_msg, self.model, bash)
        for text in texts:
            self._block(row, _TEXT, text)

    def _entry(self, entry: _Line, lineno: int) -> None:
        kind = entry.type
        if kind == "message":
            msg = entry.message
            if msg is None:
                raise _Decline
            self._message(msg, lineno, entry.timestamp)
        elif kind == "custom_message":
            self._user(self._texts(entry.content), lineno, entry.timestamp, None)
        elif kind == "branch_summary":
            if entry.summary is None:
                raise _Decline
            if entry.summary:
                self._user([entry.summary], lineno, entry.timestamp, None)
        else:
            if kind == "model_change" and entry.modelId is not None:
                self.model = entry.modelId
            if kind != "compaction":
                self.ignored[kind] += 1

    def _message(self, msg: Msg, lineno: int, ts: Any) -> None:
        """A message entry of a role :meth:`_emit` does not inline (assistant, tool result and user messages)."""
        role = msg.role
        if role in ("custom", "hookMessage"):
            self._user(self._texts(msg.content), lineno, ts, msg.timestamp)
        elif role == "bashExecution":
            if msg.excludeFromContext:
                self.ignored["bashExecution excluded from context"] += 1
                return
            if msg.command is None:
                raise _Decline
            self._user([f"{msg.command}\n{msg.output or ''}"], lineno, ts, msg.timestamp, bash=True)
        elif role == "branchSummary":
            if msg.summary is None:
                raise _Decline
            self._user([msg.summary], lineno, ts, msg.timestamp)
        elif role == "compactionSummary":
            if msg.summary is None:
                raise _Decline
            self._anchor(Compaction(lineno, msg.summary, msg.tokensBefore, None, None), False, ts, msg.timestamp)
        elif role is None:
            raise _Decline
        else:
            self.ignored[f"message role:{role}"] += 1

    def _texts(self, content: str | list[Block] | None) -> list[str]:
        if isinstance(content, str):
            return [content]
        if content is None:
            raise _Decline
        texts = []
        for block in content:
            if block.type == "text":
                if block.text is None:
                    raise _Decline
                texts.append(block.text)
            else:
                self.ignored["image in a user message" if block.type == "image" else f"content block:{block.type}"] += 1
        return texts
