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
UTF-8), a record :mod:`.pi`'s checks refuse,
a header that is not the first line, a bad version or tree, a number orjson
refuses where msgspec skips or keeps raw bytes (beyond a double: :func:`.typed.beyond_double`).
``tests/formats/test_pi_fast.py`` checks the frame, the session metadata
and the report against :func:`.pi.parse` and its oracle ``reference/pi_lines.py``.
"""
from __future__ import annotations

import itertools
import math
from collections import Counter
from pathlib import PurePath
from typing import Any

import msgspec
import orjson
import polars as pl

from .base import BAD_RECORD, SessionMeta, SourceFile, parse_timestamp, session_stem
from .fast_columns import RESULT, SUMMARY, TEXT, THINKING, TOOL_USE, Columns, read_batch
from .pi_shapes import NAME, Block, Compaction, Entry, Msg, anchors, branch, compaction
from .pi_shapes import version as session_version
from .typed import JsonInt, raw_json

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
    # The header's own fields (read as :class:`.pi._Session` reads them: any JSON value; a version an integer
    # orjson reads as one, the rest the line reader's).
    version: JsonInt | None = None
    cwd: Any = None
    parentSession: Any = None  # noqa: N815
    branchedFrom: Any = None  # noqa: N815


_LINES = msgspec.json.Decoder(_Line)

#: Entry types :meth:`_File._entry` reads (the rest, but messages, are ignored records).
_SPECIAL = frozenset({"message", "custom_message", "branch_summary", "model_change", "compaction"})


class _Decline(Exception):
    """The file has something the fast path leaves to :func:`.pi.parse`."""


def read_frames(sources: list[SourceFile]) -> list[pl.DataFrame | None]:
    """The message frame of each clean pi session, or None to leave it to :func:`.pi.parse`.

    Each accepted source gets the session metadata and the report entries :func:`.pi.parse` would have given it.
    """
    return read_batch(sources, _LINES, NAME, lambda src, records, raw, cols: _File(src, records, raw, cols).read(),
                      (_Decline, orjson.JSONDecodeError, *BAD_RECORD))


class _File:
    """One decoded file: :mod:`.pi`'s two passes over its records, its messages appended to the columns."""

    def __init__(self, src: SourceFile, records: list[_Line], raw: bytes, cols: Columns):
        self.src, self.records, self.raw, self.cols = src, records, raw, cols
        self.ignored: Counter[str] = Counter()
        self.meta = SessionMeta(session_id=session_stem(src.file))
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
                        owner(row); code(TEXT); text(block.text); ids(None); names(None); inputs(None)  # noqa: E702
                    elif kind == "thinking":
                        if block.thinking is None:
                            raise _Decline
                        owner(row); code(THINKING); text(block.thinking); ids(None); names(None)  # noqa: E702
                        inputs(None)
                    elif kind == "toolCall":
                        if block.id is None or block.name is None:
                            raise _Decline
                        owner(row); code(TOOL_USE); text(None); ids(block.id); names(block.name)  # noqa: E702
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
                owner(row); code(RESULT); text(None); ids(None); names(None); inputs(None)  # noqa: E702
                tool_use_ids(msg.toolCallId); n_parts(n)  # noqa: E702
                role_col("user"); bash_col(False); usage_col(None); cost_col(None); model_col(self.model)  # noqa: E702
                ts_col(entry.timestamp); ts_msg_col(msg.timestamp); line_col(lineno)  # noqa: E702
            elif role == "user":
                assert msg is not None
                cols.user(self._texts(msg.content), lineno, entry.timestamp, msg.timestamp, self.model)
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
        self.cols.user([comp.summary], comp.line, ts, ts_msg, self.model, code=SUMMARY)

    def _entry(self, entry: _Line, lineno: int) -> None:
        kind = entry.type
        if kind == "message":
            msg = entry.message
            if msg is None:
                raise _Decline
            self._message(msg, lineno, entry.timestamp)
        elif kind == "custom_message":
            self.cols.user(self._texts(entry.content), lineno, entry.timestamp, None, self.model)
        elif kind == "branch_summary":
            if entry.summary is None:
                raise _Decline
            if entry.summary:
                self.cols.user([entry.summary], lineno, entry.timestamp, None, self.model)
        else:
            if kind == "model_change" and entry.modelId is not None:
                self.model = entry.modelId
            if kind != "compaction":
                self.ignored[kind] += 1

    def _message(self, msg: Msg, lineno: int, ts: Any) -> None:
        """A message entry of a role :meth:`_emit` does not inline (assistant, tool result and user messages)."""
        role = msg.role
        if role in ("custom", "hookMessage"):
            self.cols.user(self._texts(msg.content), lineno, ts, msg.timestamp, self.model)
        elif role == "bashExecution":
            if msg.excludeFromContext:
                self.ignored["bashExecution excluded from context"] += 1
                return
            if msg.command is None:
                raise _Decline
            self.cols.user([f"{msg.command}\n{msg.output or ''}"], lineno, ts, msg.timestamp, self.model, True)
        elif role == "branchSummary":
            if msg.summary is None:
                raise _Decline
            self.cols.user([msg.summary], lineno, ts, msg.timestamp, self.model)
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
