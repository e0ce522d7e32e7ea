"""The columns a batched fast path fills (:mod:`.pi.fast`, :mod:`.codex.fast`), turned into the message frame at once.

A fast path appends each message's fields and canonical blocks to Python
lists (:class:`Columns`, the blocks by their codes in :data:`KIND_NAMES`); the
frame of every file of the batch is then built in a few array operations:
the blocks as one :data:`.blocks.BLOCK` array, their words, summarizer bytes,
flags and ``refs`` counted over all files at once, the timestamps parsed in
one vectorized call, as :class:`.frame_builder.FrameBuilder` builds the line readers'.
"""
from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime
from itertools import chain
from typing import Any

import msgspec
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from ..frame.schema import MESSAGE_SCHEMA, ROLE, SEQ, USAGE_COLUMNS
from ..frame.tool_targets import refs_column
from ..pathnames import path_suffix
from .blocks import BLOCK, PART, block_words, serialized_bytes, words_and_flags
from .columnar import MAX_FILE_BYTES, iso_utc, read_datetimes, read_whole, valid_utf8
from .contract import SessionMeta, SourceFile
from .gc_pause import gc_paused
from .record_fields import parse_timestamp
from .session_files import COMPRESSED_SUFFIXES
from .typed import DEEP, TYPED_ERRORS, beyond_double, one_per_line

__all__ = ["KIND_NAMES", "RESULT", "SUMMARY", "SYSTEM", "TEXT", "THINKING", "TOOL_USE", "Columns", "ReadFile", "read_batch",
           "strings"]

#: Canonical block types by their codes.
KIND_NAMES = ("text", "thinking", "tool_use", "tool_result", "compaction_summary", "system")
TEXT, THINKING, TOOL_USE, RESULT, SUMMARY, SYSTEM = range(6)
_STR = pa.string()
_LARGE = pa.large_string()

#: What a fast path reads each decoded file with: the source, its records, its bytes and the columns to fill;
#: it returns the session's metadata and its ignored records, or raises one of ``declines``.
ReadFile = Callable[[SourceFile, list[Any], bytes, "Columns"], tuple[SessionMeta, Counter[str]]]


def read_batch(sources: list[SourceFile], decoder: msgspec.json.Decoder[Any], name: str, read_file: ReadFile,
               declines: tuple[type[Exception], ...]) -> list[pl.DataFrame | None]:
    """The message frame of each file ``read_file`` takes, or None where it declines (the line reader's then).

    Each file is decoded in one ``decoder.decode_lines`` call where it provably holds one JSON object per line
    (:func:`.typed.one_per_line`; UTF-8) and no number beyond a double (:func:`.typed.beyond_double`); the rows
    of every file taken make one frame, sliced per file. Each taken source gets its metadata and its report's ignore counts.
    """
    frames: list[pl.DataFrame | None] = [None] * len(sources)
    cols = Columns(name)
    taken: list[tuple[int, SessionMeta, Counter[str], int]] = []
    deep = sys.getrecursionlimit() > DEEP
    with gc_paused():
        for k, src in enumerate(sources):
            # One file at a time: a buffer for the whole batch costs more (fresh pages) than all the decoding.
            raw = _read(src)
            if raw is None:
                continue
            n_lines = one_per_line(raw)
            if n_lines is None or (deep and raw.count(b"[") + raw.count(b"{") >= DEEP) or beyond_double(raw):
                continue
            try:
                records = decoder.decode_lines(raw)
            except TYPED_ERRORS:
                continue
            if len(records) != n_lines:
                continue
            mark = cols.mark()
            try:
                meta, ignored = read_file(src, records, raw, cols)
            except declines:
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
            src.report.ignore(name, label, times)
        frames[k] = frame.slice(start, n)
        start += n
    return frames


def _read(src: SourceFile) -> bytes | None:
    """A file's bytes (as :func:`.columnar.read_whole` takes them; a plain file read straight, a BOM left in)."""
    if path_suffix(src.file) in COMPRESSED_SUFFIXES:
        return read_whole(src)
    if os.stat(src.file).st_size > MAX_FILE_BYTES:
        return None
    with open(src.file, "rb") as f:
        raw = f.read()
    return raw if raw and (raw.isascii() or valid_utf8(raw)) else None


class Columns:
    """The frame's columns and the canonical blocks of every message read, as Python lists until :meth:`frame`."""

    def __init__(self, name: str) -> None:
        self.name = name  # the format, each row's source_format
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
        for col in self.message_columns():
            del col[rows:]
        for col in self.block_columns():
            del col[blocks:]
        for col in (self.part_kind, self.part_text, self.part_media):
            del col[parts:]

    def message_columns(self) -> tuple[list[Any], ...]:
        return self.role, self.bash, self.usage, self.cost, self.model, self.ts, self.ts_msg, self.line

    def block_columns(self) -> tuple[list[Any], ...]:
        return self.owner, self.code, self.text, self.ids, self.names, self.inputs, self.tool_use_ids, self.n_parts

    def user(self, texts: list[str], line: int, ts: Any, ts_msg: Any, model: str | None, bash: bool = False,
             code: int = TEXT) -> None:
        """A user message of ``texts`` (blocks of ``code``) appended."""
        row = self.rows
        for col, value in zip(self.message_columns(), ("user", bash, None, None, model, ts, ts_msg, line)):
            col.append(value)
        for text in texts:
            for col, value in zip(self.block_columns(), (row, code, text, None, None, None, None, 0)):
                col.append(value)

    def frame(self, metas: list[SessionMeta], sizes: list[int], sources: list[SourceFile]) -> pl.DataFrame:
        """The message frame of every file taken (their rows in order), built in a few array operations."""
        with gc_paused():
            return self._frame(metas, sizes, sources)

    def _frame(self, metas: list[SessionMeta], sizes: list[int], sources: list[SourceFile]) -> pl.DataFrame:
        n = self.rows
        blocks = self._blocks()
        owner = np.asarray(self.owner, dtype=np.int64)
        roles = strings(self.role, _STR)
        each = block_words(blocks)
        words, has_result, has_summary = words_and_flags(blocks, owner, n, each)
        size = serialized_bytes(roles, blocks, owner, n)
        file_of = np.repeat(np.arange(len(sizes)), sizes)
        is_result = np.asarray(pc.fill_null(pc.equal(blocks.field("type"), "tool_result"), False))
        refs = refs_column(blocks, owner, n, file_of, [m.project for m in metas], each[is_result])
        # The four counters of every message side by side in one series (a message without usage: four nulls).
        none = (None, None, None, None)
        flat = pl.Series(list(chain.from_iterable([u or none for u in self.usage])), dtype=pl.Int64)
        counters = [flat.gather_every(4, k) for k in range(4)]
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
            **dict(zip(USAGE_COLUMNS, counters)),
            # 0 with usage (its counters are ints), null without.
            "cache_write_1h": pl.select(pl.when(counters[0].is_not_null()).then(pl.lit(0, pl.Int64))).to_series(),
            "recorded_cost": pl.Series(self.cost, dtype=pl.Float64),
            "source_format": pl.repeat(self.name, n, dtype=pl.String, eager=True),
            "model": model,
            "timestamp": self._timestamps(),
            "file": per_file([src.file for src in sources]),
            "line": pl.Series(self.line, dtype=pl.Int64),
        }
        frame = pl.DataFrame({name: columns[name] for name in MESSAGE_SCHEMA if name != "refs"})
        return frame.cast({k: v for k, v in MESSAGE_SCHEMA.items() if k != "refs"}).with_columns(refs=refs)

    def _blocks(self) -> pa.StructArray:
        offsets = np.zeros(len(self.n_parts) + 1, dtype=np.int32)
        np.cumsum(self.n_parts, out=offsets[1:])
        parts = pa.StructArray.from_arrays([strings(self.part_kind, _STR), strings(self.part_text, _LARGE),
                                            strings(self.part_media, _STR)], fields=list(PART))
        kinds = _KINDS.take(pl.Series(self.code, dtype=pl.Int8).to_arrow())
        return pa.StructArray.from_arrays(
            [kinds, strings(self.text, _LARGE), strings(self.ids, _STR), strings(self.names, _STR),
             strings(self.inputs, _LARGE), strings(self.tool_use_ids, _STR),
             pa.ListArray.from_arrays(pl.Series(offsets).to_arrow(), parts)], fields=list(BLOCK))

    def _timestamps(self) -> pl.Series:
        """Each message's time: its entry's, else its message's (:func:`.record_fields.parse_timestamp`), in UTC ms.

        Where every entry's is an ISO-8601 UTC string Polars reads as Python does
        (:func:`.columnar.iso_utc`), one vectorized parse; else each is parsed as :func:`.pi.parse` parses it and
        converted as ``FrameBuilder`` does.
        """
        dtype = MESSAGE_SCHEMA["timestamp"]
        try:  # every entry's a string (strict: anything else raises), parsed once
            strings = pl.Series("t", self.ts, dtype=pl.String)
            text = pl.DataFrame([strings, read_datetimes(strings).rename("p")])
        except (TypeError, ValueError, pl.exceptions.PolarsError):
            text = None
        if text is not None and text.select(iso_utc(pl.col("t"), pl.col("p")).all() & pl.col("t").is_not_null().all()).item():
            return text["p"].cast(dtype)
        times = [parse_timestamp(t) or parse_timestamp(m) for t, m in zip(self.ts, self.ts_msg)]
        return _python_timestamps(times).cast(dtype)


def _python_timestamps(values: list[datetime | None]) -> pl.Series:
    """Aware datetimes as :class:`.frame_builder.FrameBuilder` converts them (through Arrow, else by Polars)."""
    try:
        return pl.Series(pa.array(values, pa.timestamp("ms", tz="UTC")))
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return pl.Series(values, dtype=MESSAGE_SCHEMA["timestamp"])


def strings(values: Sequence[str | None], arrow_type: pa.DataType) -> pa.Array:
    """Python strings as an Arrow string array of ``arrow_type`` (through Polars: faster than ``pa.array``)."""
    return pl.Series(values, dtype=pl.String).to_arrow().cast(arrow_type)


_KINDS = strings(list(KIND_NAMES), _STR)
