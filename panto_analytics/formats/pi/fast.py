"""The fast path for pi sessions: many files at once, each decoded in one call, its columns built in one pass.

Each file's lines are decoded in one call (``Decoder.decode_lines``) into one
declared shape (:class:`_Line`: every field either pass of :mod:`.reader` reads,
tool arguments as raw JSON bytes). The tree (``id``/``parentId``), the
current branch and where each compaction's summary goes are found as
:mod:`.reader` finds them (its own functions); the entries on the branch are then
turned straight into the frame's columns and canonical blocks (no message
object, no block dict), whose words, summarizer bytes, flags and ``refs`` are
counted over every file at once (:mod:`.blocks`, :func:`.tool_targets.refs_column`)
and whose timestamps are parsed in one vectorized call.

A file with anything the fast path leaves to :func:`.pi.parse` is declined
whole (None): a line that does not fit the declared shape or is not one JSON
object per line (blank, truncated, pretty-printed, a carriage return, invalid
UTF-8), a record :mod:`.reader`'s checks refuse,
a header that is not the first line, a bad version or tree, a number orjson
refuses where msgspec skips or keeps raw bytes (beyond a double: :func:`.typed.beyond_double`).
``tests/formats/test_pi_fast.py`` checks the frame, the session metadata
and the report against :func:`.pi.parse` and its oracle ``reference/pi_lines.py``.
"""
from __future__ import annotations

import math
from collections import Counter
from itertools import accumulate
from pathlib import PurePath
from typing import Any, cast

import msgspec
import orjson
import polars as pl

from ..contract import SessionMeta, SourceFile
from ..fast_columns import RESULT, SUMMARY, TEXT, THINKING, TOOL_USE, Columns, read_batch
from ..gc_pause import gc_paused
from ..record_fields import BAD_RECORD, parse_timestamp
from ..session_files import session_stem
from ..typed import JsonInt, raw_json
from .shapes import NAME, Block, Compaction, Entry, Msg, anchors, branch, compaction
from .shapes import version as session_version

__all__ = ["read_frames"]


class _Line(msgspec.Struct, gc=False):
    """A line of a pi file as the fast path reads it: an entry (every field :mod:`.reader` reads) or the header."""

    type: str
    id: str | None = None
    parentId: str | None = None  # noqa: N815 (the file's names)
    timestamp: str | int | float | None = None
    message: Msg | None = None
    content: str | list[Block] | None = None
    summary: str | None = None
    modelId: str | None = None  # noqa: N815
    # The header's own fields (read as :class:`.reader._Session` reads them: any JSON value; a version an integer
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
    The garbage collector stays paused until the columns are gone (:func:`.gc_pause.gc_paused`): a collection
    between the reading and the frame would visit every value they hold (a tenth of the time, freeing nothing).
    """
    with gc_paused():
        return read_batch(sources, _LINES, NAME, lambda src, records, raw, cols: _File(src, records, raw, cols).read(),
                          (_Decline, orjson.JSONDecodeError, *BAD_RECORD))


class _File:
    """One decoded file: :mod:`.reader`'s two passes over its records, its messages appended to the columns at the end.

    The second pass collects each message's, block's and part's columns as one tuple (one append, not one per
    column) and hands them to the columns transposed, once per file (:meth:`_flush`); the tool calls' arguments
    are made compact JSON there, all of the file's in one round trip (:func:`_compact`).
    """

    def __init__(self, src: SourceFile, records: list[_Line], raw: bytes, cols: Columns):
        self.src, self.records, self.raw, self.cols = src, records, raw, cols
        self.ignored: Counter[str] = Counter()
        self.meta = SessionMeta(session_id=session_stem(src.file))
        self.model: str | None = None
        self.models: list[str] = []                            # each assistant message's model, where it has one
        self.start = cols.rows                                 # the columns' row of the file's first message
        self.messages: list[tuple[Any, ...]] = []              # as Columns.message_columns, one tuple each
        self.blocks: list[tuple[Any, ...]] = []                # as Columns.block_columns (a tool call's input None)
        self.parts: list[tuple[str, str | None, str | None]] = []  # kind, text, media
        self.calls: list[int] = []                             # the blocks that are tool calls
        self.arguments: list[msgspec.Raw] = []                 # their arguments, as recorded
        self.kept_found: list[tuple[int, bool]] = []           # per summary: its index, whether what it kept is on the path
        self.recorded_at: dict[int, dict[str, Any]] = {}        # compaction line -> its recorded event

    def read(self) -> tuple[SessionMeta, Counter[str]]:
        path, anchors = self._scan()
        self._emit(path, anchors)
        self._flush()
        models = Counter(self.models)
        self.meta.model = models.most_common(1)[0][0] if models else self.model
        return self.meta, self.ignored

    def _flush(self) -> None:
        """The file's messages, blocks and parts appended to the columns, each column extended once."""
        cols, inputs = self.cols, _compact(self.arguments)
        first, parts = len(cols.inputs), cast("tuple[list[Any], ...]", (cols.part_kind, cols.part_text, cols.part_media))
        for columns, rows in ((cols.message_columns(), self.messages), (cols.block_columns(), self.blocks),
                              (parts, self.parts)):
            for col, values in zip(columns, zip(*rows)):
                col.extend(values)
        for at, text in zip(self.calls, inputs):
            cols.inputs[first + at] = text

    def user(self, texts: list[str], line: int, ts: Any, ts_msg: Any, bash: bool = False, code: int = TEXT) -> None:
        """A user message of ``texts`` (blocks of ``code``), as :meth:`.Columns.user` appends it."""
        row = self.start + len(self.messages)
        self.messages.append(("user", bash, None, None, self.model, ts, ts_msg, line))
        self.blocks.extend([(row, code, text, None, None, None, None, 0) for text in texts])

    # -- the first pass: header, tree, compactions ---------------------------------------------------

    def _scan(self) -> tuple[list[int], dict[int, list[tuple[Compaction, bool]]]]:
        records = self.records
        types = [r.type for r in records]
        start = 1 if types and types[0] == "session" else 0
        if types.count("session") != start:
            raise _Decline   # a header that is not the first line
        version = 1
        if start:
            self._header(records[0])
            version = session_version(records[0].version)
        if "compaction" not in types and (version < 2 or self._linear(start)):
            # Version 1, or a tree that is one chain (its branch is every entry), without a compaction: every
            # entry, in file order, nothing placed.
            return list(range(start + 1, len(records) + 1)), {}
        entries: list[Entry] = []
        by_id: dict[str, int] = {}
        compactions: dict[int, Compaction] = {}
        for index in range(start, len(records)):
            rec = records[index]
            kind = rec.type
            lineno = index + 1
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

    def _linear(self, start: int) -> bool:
        """Whether the entries (from ``start``) are one chain: ids distinct and present, the first a root, each
        other's parent the entry before it. Then the current branch is every entry, in file order, and every
        check of the tree (ids unique, parents earlier) holds."""
        entries = self.records[start:]
        ids = [r.id for r in entries]
        parents = [r.parentId for r in entries]
        return not ids or (parents[0] is None and parents[1:] == ids[:-1] and None not in ids
                           and len(set(ids)) == len(ids))

    def _line(self, index: int) -> bytes:
        """The bytes of line ``index`` (0-based): rare records are read again from them."""
        return self.raw.split(b"\n", index + 1)[index]

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
        """The entries on the branch, collected. The common ones (assistant, tool result and user messages, and
        ignored records) are inlined here; the rest go to :meth:`_entry`."""
        records, recorded_at, ignored, model_of = self.records, self.recorded_at, self.ignored, self.models.append
        message, block, part = self.messages.append, self.blocks.append, self.parts.append
        calls, arguments, blocks, messages = self.calls.append, self.arguments.append, self.blocks, self.messages
        start = self.start
        for lineno in path:
            if recorded_at or anchors:
                for comp, found in anchors.get(lineno, ()):
                    self._anchor(comp, found, comp.timestamp, None)
                if lineno in recorded_at:
                    # The compaction record itself: what was appended so far is the conversation it compacted.
                    recorded_at[lineno]["trigger_index"] = len(messages)
            entry = records[lineno - 1]
            msg = entry.message
            if msg is None or entry.type != "message":
                if entry.type in _SPECIAL:
                    self._entry(entry, lineno)
                else:
                    ignored[entry.type] += 1   # a record that is not conversation (a thinking level, a label, ...)
                continue
            role = msg.role
            if role == "assistant":
                content = msg.content
                if not isinstance(content, list):
                    raise _Decline
                row = start + len(messages)
                for item in content:
                    kind = item.type
                    if kind == "text":
                        if item.text is None:
                            raise _Decline
                        block((row, TEXT, item.text, None, None, None, None, 0))
                    elif kind == "thinking":
                        if item.thinking is None:
                            raise _Decline
                        block((row, THINKING, item.thinking, None, None, None, None, 0))
                    elif kind == "toolCall":
                        if item.id is None or item.name is None:
                            raise _Decline
                        calls(len(blocks))
                        arguments(item.arguments)
                        block((row, TOOL_USE, None, item.id, item.name, None, None, 0))
                    else:
                        ignored[f"assistant block:{kind}"] += 1
                model = self.model = msg.model if msg.model is not None else self.model
                if model is not None:
                    model_of(model)
                usage: tuple[int, int, int, int] | None = None
                cost: float | None = None
                if (raw := msg.usage) is not None:
                    counted = (raw.input or 0, raw.output or 0, raw.cacheRead or 0, raw.cacheWrite or 0)
                    if counted != (0, 0, 0, 0):
                        usage = counted
                        if raw.cost is not None and (total := raw.cost.total) is not None and math.isfinite(total) \
                                and total >= 0:
                            cost = float(total)
                message(("assistant", False, usage, cost, model, entry.timestamp, msg.timestamp, lineno))
            elif role == "toolResult":
                if (tool_use_id := msg.toolCallId) is None:
                    raise _Decline
                content = msg.content
                if isinstance(content, str):
                    part(("text", content, None))
                    n = 1
                elif content is None:
                    raise _Decline
                else:
                    n = 0
                    for item in content:
                        if item.type == "text":
                            if item.text is None:
                                raise _Decline
                            part(("text", item.text, None))
                        elif item.type == "image":
                            if item.mimeType is None:
                                raise _Decline
                            part(("media", None, item.mimeType))
                        else:
                            ignored[f"content block:{item.type}"] += 1
                            continue
                        n += 1
                block((start + len(messages), RESULT, None, None, None, None, tool_use_id, n))
                message(("user", False, None, None, self.model, entry.timestamp, msg.timestamp, lineno))
            elif role == "user":
                row = start + len(messages)
                message(("user", False, None, None, self.model, entry.timestamp, msg.timestamp, lineno))
                for text in self._texts(msg.content):
                    block((row, TEXT, text, None, None, None, None, 0))
            else:
                self._message(msg, lineno, entry.timestamp)
        for recorded, (index, found) in zip(self.meta.compactions, self.kept_found):
            recorded["first_kept_index"] = index + 1 if found and index + 1 < len(self.messages) else None
            recorded["kept_end_index"] = recorded["trigger_index"] if recorded["first_kept_index"] is not None else None

    def _anchor(self, comp: Compaction, found: bool, ts: Any, ts_msg: Any) -> None:
        """A compaction's summary message, appended, and its recorded event."""
        recorded = {"anchor_index": len(self.messages), "trigger": None, "tokens_before": comp.tokens_before,
                    "first_kept_index": None, "trigger_index": len(self.messages), "kept_end_index": None}
        self.meta.compactions.append(recorded)
        self.recorded_at[comp.line] = recorded
        self.kept_found.append((len(self.messages), found))
        self.user([comp.summary], comp.line, ts, ts_msg, code=SUMMARY)

    def _entry(self, entry: _Line, lineno: int) -> None:
        kind = entry.type
        if kind == "message":
            raise _Decline   # without a message (:meth:`_emit` reads the rest)
        elif kind == "custom_message":
            self.user(self._texts(entry.content), lineno, entry.timestamp, None)
        elif kind == "branch_summary":
            if entry.summary is None:
                raise _Decline
            if entry.summary:
                self.user([entry.summary], lineno, entry.timestamp, None)
        else:
            if kind == "model_change" and entry.modelId is not None:
                self.model = entry.modelId
            if kind != "compaction":
                self.ignored[kind] += 1

    def _message(self, msg: Msg, lineno: int, ts: Any) -> None:
        """A message entry of a role :meth:`_emit` does not inline (assistant, tool result and user messages), or none."""
        role = msg.role
        if role in ("custom", "hookMessage"):
            self.user(self._texts(msg.content), lineno, ts, msg.timestamp)
        elif role == "bashExecution":
            if msg.excludeFromContext:
                self.ignored["bashExecution excluded from context"] += 1
                return
            if msg.command is None:
                raise _Decline
            self.user([f"{msg.command}\n{msg.output or ''}"], lineno, ts, msg.timestamp, True)
        elif role == "branchSummary":
            if msg.summary is None:
                raise _Decline
            self.user([msg.summary], lineno, ts, msg.timestamp)
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


def _compact(arguments: list[msgspec.Raw]) -> list[str]:
    """Each tool call's arguments as :func:`.typed.raw_json` gives them (orjson's compact serialization).

    A file's are parsed as the items of one JSON array and serialized again in one call: where that comes
    back byte for byte (every real recording), so does each item (cut at the same top-level commas), and each
    is its own bytes; else (or where the array is nested too deep for orjson) each is re-serialized alone.

    >>> _compact([msgspec.Raw(b'{"a":[1,"x"]}'), msgspec.Raw(b'"\\xc3\\xa9"')])
    ['{"a":[1,"x"]}', '"é"']
    >>> _compact([msgspec.Raw(b'{"a":[1,"x"]}'), msgspec.Raw(b'2')])
    ['{"a":[1,"x"]}', '2']
    >>> _compact([msgspec.Raw(b'{"a": 1.50}'), msgspec.Raw(b'{}')])
    ['{"a":1.5}', '{}']
    """
    if not arguments:
        return []
    joined = b"[" + b",".join(arguments) + b"]"
    try:
        same = orjson.dumps(orjson.loads(joined)) == joined
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        same = False
    if not same:
        return [raw_json(raw) for raw in arguments]
    if not joined.isascii():
        return [str(raw, "utf-8") for raw in arguments]
    text, ends = joined.decode("ascii"), list(accumulate((len(raw) + 1 for raw in arguments), initial=1))
    return [text[start:end - 1] for start, end in zip(ends, ends[1:])]   # the items, cut out of the array's text
