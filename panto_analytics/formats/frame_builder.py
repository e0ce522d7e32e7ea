"""Messages into message-frame rows: :class:`FrameBuilder` accumulates what a line reader yields and counts
its blocks in batches (Arrow), the per-message oracle being ``reference/frame_rows.py``.
"""
from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from ..frame.schema import MESSAGE_SCHEMA, REF_STRUCT, ROLE, SEQ, USAGE_COLUMNS
from ..frame.tool_targets import refs_column
from .blocks import block_array, block_words, serialized_bytes, words_and_flags
from .contract import Message, SourceFile
from .gc_pause import gc_paused

__all__ = ["FrameBuilder"]


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
