"""pi sessions (``~/.pi/agent/sessions/**/*.jsonl``) as libpanto messages.

A pi session file is a ``session`` header and entries. Version 1 (no
``version`` in the header) is a flat list: the context is the file order.
Versions 2 and 3 are a tree through ``id``/``parentId``: the context is the
path from the last entry back to the root, so abandoned branches drop out.

Entries become messages: ``user`` and ``assistant`` as they are,
``toolResult`` a user message with a ``tool_result`` block, ``bashExecution``,
custom and branch-summary messages user messages with text (a ``bashExecution``
flagged ``bash_execution``). A ``compaction``
entry becomes a ``compaction_summary`` message placed before the first entry
it kept, where libpanto places its summary. Every rule is in
``docs/formats.md`` (section pi).

Reading takes two passes over the file: the first finds the tree and the
compactions (ids and positions only), the second converts the entries on the
path, so memory stays small however long the session.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePath
from typing import Any

import orjson

from panto_analytics.formats.contract import Message, Postprocess, ReadFrames, SourceFile
from panto_analytics.formats.jsonl import json_type, records, require_string, reread
from panto_analytics.formats.record_fields import BAD_RECORD, Invalid, bad_record, parse_timestamp, usage_counter

__all__ = ["NAME", "parse", "postprocess", "read_frames", "sniff"]

NAME = "pi"

#: No columnar fast path and no cross-file rules (see :class:`.contract.Adapter`).
read_frames: ReadFrames | None = None
postprocess: Postprocess | None = None

#: Entry types only pi writes (besides ``message`` and ``session``).
_ENTRY_TYPES = frozenset({"model_change", "thinking_level_change", "compaction", "branch_summary",
                          "custom_message", "label", "session_info"})

#: pi usage counters by libpanto's names.
_USAGE_KEYS = (("input", "input"), ("output", "output"), ("cache_read", "cacheRead"), ("cache_write", "cacheWrite"))


def sniff(record: Any) -> bool:
    """A pi line: a header with ``cwd``, a message entry wrapping a ``message``, or a pi-only entry.

    >>> sniff({"type": "session", "id": "x", "timestamp": "t", "cwd": "/"})
    True
    >>> sniff({"type": "message", "message": {"role": "user", "content": "hi"}})
    True
    >>> sniff({"type": "session", "id": "x", "model": "m"})
    False
    """
    if not isinstance(record, dict):
        return False
    kind = record.get("type")
    if kind == "session":
        return "cwd" in record
    if kind == "message":
        return isinstance(record.get("message"), dict)
    return kind in _ENTRY_TYPES and "timestamp" in record


def parse(src: SourceFile) -> Iterator[Message]:
    """Yield the messages of one pi session, in the order of its current branch."""
    layout = _scan(src)
    yield from _Session(src, layout).messages()


@dataclass(slots=True)
class _Entry:
    line: int
    kind: str
    id: str | None
    parent: str | None


@dataclass(slots=True)
class _Compaction:
    line: int
    summary: str
    tokens_before: int | None
    first_kept: Any  # entry id (v2+) or record index (v1), as recorded
    timestamp: Any


@dataclass
class _Layout:
    """What the first pass learns: the path to emit and where the summaries go."""

    path: list[int]  # line numbers of the entries on the current branch, in file order
    anchors: dict[int, list[tuple[_Compaction, bool]]]  # line -> (compaction, first kept found) before it
    header: dict[str, Any]


def _scan(src: SourceFile) -> _Layout:
    """First pass: entries (line, type, id, parent), compactions, and the header."""
    header: dict[str, Any] = {}
    version = 1
    entries: list[_Entry] = []
    by_id: dict[str, int] = {}
    by_record: dict[int, int] = {}  # v1: record index (header included) -> entry position
    compactions: dict[int, _Compaction] = {}
    n_records = 0
    for lineno, rec in records(src):
        index, n_records = n_records, n_records + 1
        try:
            kind = rec.get("type")
            if not isinstance(kind, str):
                raise Invalid("entry has no 'type'")
            if kind == "session":
                if index != 0:
                    raise Invalid("a session header may only be the first line")
                header = rec
                version = _version(rec.get("version"))
                continue
            entry = _Entry(lineno, kind, None, None)
            if version >= 2:
                entry.id = require_string(rec.get("id"), "entry.id")
                parent = rec.get("parentId")
                if parent is not None:
                    parent = require_string(parent, "entry.parentId")
                    if parent not in by_id:
                        raise Invalid(f"parentId {parent!r} is not the id of an earlier entry")
                if entry.id in by_id:
                    raise Invalid(f"entry id {entry.id!r} is used twice")
                entry.parent = parent
            if kind == "compaction":
                compactions[lineno] = _compaction(rec, lineno, version)
        except BAD_RECORD as e:
            src.invalid(lineno, bad_record(e))
            continue
        if entry.id is not None:
            by_id[entry.id] = len(entries)
        by_record[index] = len(entries)
        entries.append(entry)
    on_path = _branch(entries, by_id) if version >= 2 else list(range(len(entries)))
    for _ in range(len(entries) - len(on_path)):
        src.ignore("entry off the current branch")
    return _Layout([entries[i].line for i in on_path],
                   _anchors(entries, on_path, by_id if version >= 2 else by_record, compactions), header)


def _branch(entries: list[_Entry], by_id: dict[str, int]) -> list[int]:
    """Positions of the entries from the root to the last entry, following ``parentId``."""
    if not entries:
        return []
    path = []
    i: int | None = len(entries) - 1
    while i is not None:
        path.append(i)
        parent = entries[i].parent
        # Parents precede their children (checked while scanning), so this ends.
        i = by_id[parent] if parent is not None else None
    return path[::-1]


def _anchors(entries: list[_Entry], on_path: list[int], kept_index: dict[Any, int],
             compactions: dict[int, _Compaction]) -> dict[int, list[tuple[_Compaction, bool]]]:
    """Where each compaction's summary goes: before its first kept entry on the path.

    When the first kept entry is not on the path before the compaction, the
    summary goes where the compaction is (nothing recorded as kept). Anchors
    never move before an earlier compaction's anchor.
    """
    position = {entry_pos: k for k, entry_pos in enumerate(on_path)}
    anchors: dict[int, list[tuple[_Compaction, bool]]] = {}
    floor = 0
    for k, entry_pos in enumerate(on_path):
        comp = compactions.get(entries[entry_pos].line)
        if comp is None:
            continue
        target = kept_index.get(comp.first_kept) if isinstance(comp.first_kept, (str, int)) else None
        at = position.get(target) if target is not None else None
        found = at is not None and at < k
        at = max(at if found and at is not None else k, floor)
        floor = at
        anchors.setdefault(entries[on_path[at]].line, []).append((comp, found))
    return anchors


def _compaction(rec: dict[str, Any], lineno: int, version: int) -> _Compaction:
    summary = require_string(rec.get("summary"), "compaction.summary")
    tokens = rec.get("tokensBefore")
    if tokens is not None:
        tokens = usage_counter(tokens, "compaction.tokensBefore")
    key = "firstKeptEntryId" if version >= 2 else "firstKeptEntryIndex"
    first_kept = rec.get(key)
    if first_kept is None and version < 2:
        first_kept = rec.get("firstKeptEntryId")
    return _Compaction(lineno, summary, tokens, first_kept, rec.get("timestamp"))


class _Session:
    """Second pass: the entries on the path, converted, with the summaries in place."""

    def __init__(self, src: SourceFile, layout: _Layout):
        self.src, self.meta, self.layout = src, src.meta, layout
        self.count = 0
        self.model: str | None = None
        self.models: Counter[str] = Counter()  # assistant messages per model
        self.kept_found: list[tuple[int, bool]] = []
        self.recorded_at: dict[int, dict[str, Any]] = {}  # compaction line -> its recorded dict
        self._header(layout.header)

    def _header(self, header: dict[str, Any]) -> None:
        sid = header.get("id")
        if isinstance(sid, str) and sid:
            self.meta.session_id = sid
        self.meta.created_at = parse_timestamp(header.get("timestamp"))
        if isinstance(header.get("cwd"), str) and header["cwd"]:
            self.meta.project = header["cwd"]
        parent = header.get("parentSession") or header.get("branchedFrom")
        if isinstance(parent, str) and parent:
            # pi names files <timestamp>_<session id>.jsonl.
            self.meta.parent_session_id = PurePath(parent).stem.split("_", 1)[-1]
        if isinstance(header.get("modelId"), str):
            self.model = header["modelId"]

    def messages(self) -> Iterator[Message]:
        anchors = self.layout.anchors
        for lineno, rec in reread(self.src, set(self.layout.path)):
            for comp, found in anchors.get(lineno, ()):
                anchor = self._anchor(comp, found, parse_timestamp(comp.timestamp))
                self.count += 1
                yield anchor
            if lineno in self.recorded_at:
                # The compaction record itself: what was yielded so far is the conversation it compacted.
                self.recorded_at[lineno]["trigger_index"] = self.count
            try:
                msg = self._entry(rec, lineno)
            except BAD_RECORD as e:
                self.src.invalid(lineno, bad_record(e))
                continue
            if msg is not None:
                self.count += 1
                yield msg
        for recorded, (index, found) in zip(self.meta.compactions, self.kept_found):
            recorded["first_kept_index"] = index + 1 if found and index + 1 < self.count else None
            recorded["kept_end_index"] = recorded["trigger_index"] if recorded["first_kept_index"] is not None else None
        # The session's model: the one that answered most (first among equals).
        self.meta.model = self.models.most_common(1)[0][0] if self.models else self.model

    def _anchor(self, comp: _Compaction, found: bool, ts: datetime | None) -> Message:
        """The summary message of a compaction, to be yielded next (at index ``self.count``)."""
        recorded = {"anchor_index": self.count, "trigger": None, "tokens_before": comp.tokens_before,
                    "first_kept_index": None, "trigger_index": self.count, "kept_end_index": None}
        self.meta.compactions.append(recorded)
        self.recorded_at[comp.line] = recorded
        self.kept_found.append((self.count, found))
        return Message("user", [{"type": "compaction_summary", "text": comp.summary}], None, comp.line, ts,
                       self.model)

    def _entry(self, rec: dict[str, Any], lineno: int) -> Message | None:
        kind = rec["type"]
        ts = parse_timestamp(rec.get("timestamp"))
        if kind == "message":
            msg = rec.get("message")
            if not isinstance(msg, dict):
                raise Invalid(f"message entry has no 'message' object (got {json_type(msg)})")
            return self._message(msg, lineno, ts or parse_timestamp(msg.get("timestamp")))
        if kind == "custom_message":
            return self._user(self._texts(rec.get("content"), "custom_message.content"), lineno, ts)
        if kind == "branch_summary":
            summary = require_string(rec.get("summary"), "branch_summary.summary")
            return self._user([summary], lineno, ts) if summary else None
        if kind == "model_change":
            model = rec.get("modelId")
            if isinstance(model, str):
                self.model = model
        if kind != "compaction":  # a compaction's summary was placed at its anchor
            self.src.ignore(kind)
        return None

    def _message(self, msg: dict[str, Any], lineno: int, ts: datetime | None) -> Message | None:
        role = msg.get("role")
        if role == "assistant":
            return self._assistant(msg, lineno, ts)
        if role == "user":
            return self._user(self._texts(msg.get("content"), "message.content"), lineno, ts)
        if role == "toolResult":
            call_id = require_string(msg.get("toolCallId"), "message.toolCallId")
            parts = self._parts(msg.get("content"), "message.content")
            return Message("user", [{"type": "tool_result", "tool_use_id": call_id, "parts": parts}], None,
                           lineno, ts, self.model)
        if role == "bashExecution":
            if msg.get("excludeFromContext"):
                self.src.ignore("bashExecution excluded from context")
                return None
            command = require_string(msg.get("command"), "message.command")
            output = msg.get("output")
            output = "" if output is None else require_string(output, "message.output")
            return self._user([f"{command}\n{output}"], lineno, ts, bash=True)
        if role in ("custom", "hookMessage"):
            return self._user(self._texts(msg.get("content"), "message.content"), lineno, ts)
        if role == "branchSummary":
            return self._user([require_string(msg.get("summary"), "message.summary")], lineno, ts)
        if role == "compactionSummary":
            tokens = msg.get("tokensBefore")
            comp = _Compaction(lineno, require_string(msg.get("summary"), "message.summary"),
                               None if tokens is None else usage_counter(tokens, "message.tokensBefore"), None, None)
            return self._anchor(comp, False, ts)
        if not isinstance(role, str):
            raise Invalid("message has no 'role'")
        self.src.ignore(f"message role:{role}")
        return None

    def _assistant(self, msg: dict[str, Any], lineno: int, ts: datetime | None) -> Message:
        content = msg.get("content")
        if not isinstance(content, list):
            raise Invalid(f"message.content must be a list, got {json_type(content)}")
        blocks = []
        for i, block in enumerate(content):
            where = f"message.content[{i}]"
            if not isinstance(block, dict):
                raise Invalid(f"{where} must be an object, got {json_type(block)}")
            kind = block.get("type")
            if kind == "text":
                blocks.append({"type": "text", "text": require_string(block.get("text"), f"{where}.text")})
            elif kind == "thinking":
                blocks.append({"type": "thinking", "text": require_string(block.get("thinking"), f"{where}.thinking")})
            elif kind == "toolCall":
                blocks.append({"type": "tool_use", "id": require_string(block.get("id"), f"{where}.id"),
                               "name": require_string(block.get("name"), f"{where}.name"),
                               "input": orjson.dumps(block.get("arguments", {})).decode()})
            else:
                self.src.ignore(f"assistant block:{kind}")
        model = msg.get("model") if isinstance(msg.get("model"), str) else self.model
        self.model = model
        if model is not None:
            self.models[model] += 1
        raw = msg.get("usage")
        usage = _usage(raw)
        cost = _recorded_cost(raw) if usage is not None and isinstance(raw, dict) else None
        return Message("assistant", blocks, usage, lineno, ts, model, cost)

    def _user(self, texts: list[str], lineno: int, ts: datetime | None, *, bash: bool = False) -> Message:
        return Message("user", [{"type": "text", "text": t} for t in texts], None, lineno, ts, self.model, bash=bash)

    def _texts(self, content: Any, where: str) -> list[str]:
        """User-side content (a string, or text and image blocks) as texts; images are counted as ignored."""
        texts = []
        for kind, block, at in _blocks(content, where):
            if kind == "text":
                texts.append(require_string(block.get("text"), f"{at}.text"))
            elif kind == "image":
                # libpanto has media only inside tool results.
                self.src.ignore("image in a user message")
            else:
                self.src.ignore(f"content block:{kind}")
        return texts

    def _parts(self, content: Any, where: str) -> list[dict[str, Any]]:
        """A tool result's content as result parts: text, and images as media."""
        parts = []
        for kind, block, at in _blocks(content, where):
            if kind == "text":
                parts.append({"type": "text", "text": require_string(block.get("text"), f"{at}.text")})
            elif kind == "image":
                parts.append({"type": "media", "media_type": require_string(block.get("mimeType"), f"{at}.mimeType")})
            else:
                self.src.ignore(f"content block:{kind}")
        return parts


def _blocks(content: Any, where: str) -> list[tuple[Any, dict[str, Any], str]]:
    """pi's content (a string, or a list of blocks) as ``(type, block, where the block is)``; a string is one text
    block at ``where``; content of another type, or a block that is not an object, is invalid.

    >>> _blocks("hi", "m.content")
    [('text', {'type': 'text', 'text': 'hi'}, 'm.content')]
    >>> _blocks([{"type": "image"}], "m.content")
    [('image', {'type': 'image'}, 'm.content[0]')]
    """
    if isinstance(content, str):
        return [("text", {"type": "text", "text": content}, where)]
    if not isinstance(content, list):
        raise Invalid(f"{where} must be a string or a list, got {json_type(content)}")
    blocks = []
    for i, block in enumerate(content):
        if not isinstance(block, dict):
            raise Invalid(f"{where}[{i}] must be an object, got {json_type(block)}")
        blocks.append((block.get("type"), block, f"{where}[{i}]"))
    return blocks


def _usage(usage: Any) -> dict[str, int] | None:
    """pi's usage as libpanto's; none when absent or all zero (a call that failed before any usage).

    >>> _usage({"input": 5, "output": 2, "cacheRead": 100, "cacheWrite": 0, "totalTokens": 107})
    {'input': 5, 'output': 2, 'cache_read': 100, 'cache_write': 0}
    >>> _usage({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}) is None
    True
    """
    if usage is None:
        return None
    if not isinstance(usage, dict):
        raise Invalid(f"message.usage must be an object, got {json_type(usage)}")
    out = {name: usage_counter(usage.get(key), f"message.usage.{key}") for name, key in _USAGE_KEYS}
    return out if any(out.values()) else None


def _recorded_cost(usage: dict[str, Any]) -> float | None:
    """The cost pi recorded for the call (``usage.cost.total``, US dollars); None when it records none.

    >>> _recorded_cost({"cost": {"input": 0.000009, "output": 0.002865, "total": 0.002874}})
    0.002874
    >>> _recorded_cost({"cost": {"total": "?"}}) is None
    True
    """
    cost = usage.get("cost")
    total = cost.get("total") if isinstance(cost, dict) else None
    if isinstance(total, bool) or not isinstance(total, int | float) or not math.isfinite(total) or total < 0:
        return None
    return float(total)


def _version(value: Any) -> int:
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise Invalid(f"session.version must be a positive integer, got {value!r}")
    return value


