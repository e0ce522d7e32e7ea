"""pi's record shapes and tree rules, shared by the line reader (:mod:`.reader`) and the fast path (:mod:`.fast`).

The shapes are ``msgspec.Struct``s holding only the fields read (tool
arguments as raw JSON bytes; ``gc=False``: records hold no reference cycle); the rules find the current branch of a
version 2+ tree (:func:`branch`) and where each compaction's summary goes
(:func:`anchors`), as ``docs/formats.md`` (section pi) states them.

>>> entries = [Entry(1, "message", "a", None), Entry(2, "message", "b", "a"), Entry(3, "message", "c", "a")]
>>> branch(entries, {"a": 0, "b": 1, "c": 2})
[0, 2]
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from ..jsonl import require_string
from ..record_fields import Invalid, usage_counter
from ..typed import Counter as Count

__all__ = ["NAME", "Block", "Compaction", "Cost", "Entry", "Msg", "Usage", "anchors", "branch", "compaction", "version"]

#: The format's name.
NAME = "pi"


class Block(msgspec.Struct, gc=False):
    """A content block: text, thinking, a tool call (its arguments as raw JSON), an image."""

    type: str | None = None
    text: str | None = None
    thinking: str | None = None
    id: str | None = None
    name: str | None = None
    arguments: msgspec.Raw = msgspec.Raw(b"{}")
    mimeType: str | None = None  # noqa: N815


class Cost(msgspec.Struct, gc=False):
    total: float | None = None


class Usage(msgspec.Struct, gc=False):
    input: Count | None = None
    output: Count | None = None
    cacheRead: Count | None = None  # noqa: N815
    cacheWrite: Count | None = None  # noqa: N815
    cost: Cost | None = None


class Msg(msgspec.Struct, gc=False):
    """The ``message`` of a message entry, every role's fields."""

    role: str | None = None
    content: str | list[Block] | None = None
    model: str | None = None
    usage: Usage | None = None
    toolCallId: str | None = None  # noqa: N815
    command: str | None = None
    output: str | None = None
    excludeFromContext: bool | None = None  # noqa: N815
    summary: str | None = None
    tokensBefore: Count | None = None  # noqa: N815
    timestamp: str | int | float | None = None


@dataclass(slots=True)
class Entry:
    line: int
    kind: str
    id: str | None
    parent: str | None


@dataclass(slots=True)
class Compaction:
    line: int
    summary: str
    tokens_before: int | None
    first_kept: Any  # entry id (v2+) or record index (v1), as recorded
    timestamp: Any


def branch(entries: list[Entry], by_id: dict[str, int]) -> list[int]:
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


def anchors(entries: list[Entry], on_path: list[int], kept_index: dict[Any, int],
            compactions: dict[int, Compaction]) -> dict[int, list[tuple[Compaction, bool]]]:
    """Where each compaction's summary goes: before its first kept entry on the path.

    When the first kept entry is not on the path before the compaction, the
    summary goes where the compaction is (nothing recorded as kept). Anchors
    never move before an earlier compaction's anchor.
    """
    position = {entry_pos: k for k, entry_pos in enumerate(on_path)}
    placed: dict[int, list[tuple[Compaction, bool]]] = {}
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
        placed.setdefault(entries[on_path[at]].line, []).append((comp, found))
    return placed


def compaction(rec: dict[str, Any], lineno: int, version: int) -> Compaction:
    summary = require_string(rec.get("summary"), "compaction.summary")
    tokens = rec.get("tokensBefore")
    if tokens is not None:
        tokens = usage_counter(tokens, "compaction.tokensBefore")
    key = "firstKeptEntryId" if version >= 2 else "firstKeptEntryIndex"
    first_kept = rec.get(key)
    if first_kept is None and version < 2:
        first_kept = rec.get("firstKeptEntryId")
    return Compaction(lineno, summary, tokens, first_kept, rec.get("timestamp"))


def version(value: Any) -> int:
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise Invalid(f"session.version must be a positive integer, got {value!r}")
    return value
