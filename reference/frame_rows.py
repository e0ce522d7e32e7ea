"""The frame of line-by-line messages, one message at a time: what :class:`panto_analytics.formats.frame_builder.FrameBuilder`
computes in batches (words, summarizer-request bytes and flags per message, the ``refs`` column), stated per
message with :func:`~panto_analytics.frame.words.message_words` and :func:`~panto_analytics.transcript.serialized_bytes`,
and the ``refs`` of each tool call one call at a time (:func:`references`).

The package's builder before it counted in batches, kept as the oracle ``tests/formats/test_frame_builder.py``
holds it to.
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import polars as pl

from panto_analytics.formats.contract import Message, SourceFile
from panto_analytics.frame.schema import MESSAGE_SCHEMA, REF_STRUCT, ROLE, SEQ, USAGE_COLUMNS
from panto_analytics.frame.tool_targets import is_file_tool, key_of, targets
from panto_analytics.frame.words import block_words, message_words
from panto_analytics.transcript import serialized_bytes

__all__ = ["FrameBuilder", "references"]


class FrameBuilder:
    """Accumulates messages as frame columns, each counted as it comes."""

    def __init__(self) -> None:
        self._cols: dict[str, list[Any]] = {name: [] for name in MESSAGE_SCHEMA if name != "refs"}
        # For the refs column, built once in finish: tool calls and results, their rows, each session's size and cwd.
        self._tools: list[dict[str, Any]] = []
        self._tool_rows: list[int] = []
        self._sizes: list[int] = []
        self._cwds: list[str | None] = []

    @property
    def height(self) -> int:
        """Rows added so far."""
        return len(self._cols[SEQ])

    def add_session(self, src: SourceFile, messages: Iterator[Message]) -> int:
        """Append all messages of one session; returns how many were added."""
        cols = self._cols
        n = 0
        first = self.height
        for n, msg in enumerate(messages, 1):  # noqa: B007 (n is the count returned)
            kinds = {b["type"] for b in msg.content}
            if "tool_use" in kinds or "tool_result" in kinds:
                calls = [b for b in msg.content if b["type"] in ("tool_use", "tool_result")]
                # a call's own working directory (Claude Code's record cwd) rides with it
                self._tools.extend({**b, "cwd": msg.cwd} if msg.cwd is not None else b for b in calls)
                self._tool_rows.extend([first + n - 1] * len(calls))
            cols[ROLE].append(msg.role)
            cols["words"].append(message_words(msg.content))
            cols["serialized_bytes"].append(serialized_bytes(msg.role, msg.content))
            cols["has_tool_result"].append("tool_result" in kinds)
            cols["has_summary"].append("compaction_summary" in kinds)
            cols["bash_execution"].append(msg.bash)
            usage = msg.usage
            for name in USAGE_COLUMNS:
                cols[name].append(None if usage is None else usage.get(name, 0))
            cols["cache_write_1h"].append(None if usage is None else usage.get("cache_write_1h", 0))
            cols["recorded_cost"].append(msg.cost)
            cols["model"].append(msg.model)
            cols["timestamp"].append(msg.timestamp)
            cols["line"].append(msg.line)
        meta = src.meta
        self._sizes.append(n)
        self._cwds.append(meta.project)
        cols["session_id"].extend([meta.session_id] * n)
        cols[SEQ].extend(range(n))
        cols["source_format"].extend([src.source_format] * n)
        cols["file"].extend([str(src.path)] * n)
        # Messages without a model of their own inherit the session's.
        if meta.model is not None:
            model = cols["model"]
            for i in range(len(model) - n, len(model)):
                if model[i] is None:
                    model[i] = meta.model
        return n

    def finish(self) -> pl.DataFrame:
        refs = pl.Series("refs", references(self._tools, self._tool_rows, self._sizes, self._cwds),
                         dtype=pl.List(REF_STRUCT))
        schema = {k: v for k, v in MESSAGE_SCHEMA.items() if k != "refs"}
        return pl.DataFrame(self._cols, schema=schema).with_columns(refs=refs).select(list(MESSAGE_SCHEMA))


def references(tools: list[dict[str, Any]], rows: list[int], sizes: list[int],
               cwds: list[str | None]) -> list[list[dict[str, Any]] | None]:
    """The ``refs`` of every row, session by session: each tool call's targets, in order, with the tokens of
    the session's first result that answers it (``ceil(words * 1.3)``; None without one)."""
    out: list[list[dict[str, Any]] | None] = [None] * sum(sizes)
    start = 0
    for size, cwd in zip(sizes, cwds):
        mine = [(row, b) for row, b in zip(rows, tools) if start <= row < start + size]
        answered: dict[str, int] = {}
        for _, block in mine:
            if block["type"] == "tool_result" and block.get("tool_use_id") is not None:
                answered.setdefault(block["tool_use_id"], block_words(block))
        calls_in_row: dict[int, int] = {}
        for row, block in mine:
            if block["type"] != "tool_use":
                continue
            call = calls_in_row.get(row, 0)
            calls_in_row[row] = call + 1
            words = answered.get(block["id"]) if block.get("id") is not None else None
            tokens = None if words is None else math.ceil(words * 1.3)
            for kind, target in targets(block.get("name") or "", block.get("input"), block.get("cwd") or cwd):
                refs = out[row] if out[row] is not None else []
                refs.append({"call": call, "key": key_of(target), "kind": kind, "file": target.startswith("file:"),
                             "file_tool": is_file_tool(block.get("name") or ""), "tokens": tokens})
                out[row] = refs
        start += size
    return out
