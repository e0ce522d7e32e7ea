"""The batch path for canonical files: many files decoded into declared records at once, counted in Arrow.

The files of a batch are read into one buffer (:func:`~..columnar.read_together`,
which also checks their UTF-8) and each is decoded by msgspec into the
record shapes of :mod:`.shapes` (one call per file). Decoding is the
validation: a file that decodes holds only what the reference reads
without an error, and the few rules a Struct cannot state (a header only
on the first line, ISO-8601 UTC timestamps, the header's own checks) are
checked on the decoded records. The frame of the whole batch is then built
at once from the records' fields, counted with the vectorized code the
fast paths share (:mod:`..blocks`), and sliced back into one frame per
file. Nothing per block runs but the gathering of fields into columns.

A file this path does not take in full (one that does not decode, a header
of another shape, an unusual timestamp, a blank line, a file too large to
hold) gets ``None``, and the caller reads it alone with :mod:`.reader`,
which names the file, line and field, or counts the skips. So this path
only has to be right on clean files; ``tests/formats/test_canonical_fast.py``
and ``tests/formats/test_canonical_differential.py`` check that it is,
against the line-by-line oracle ``reference/canonical_lines.py``, on
random, mutated and bundled files; a file that may hold a number beyond a
double (``1e400``), which msgspec would skip in a field it does not declare and
orjson (so the reference) refuses, is left to :mod:`.reader`
(:func:`~..typed.beyond_double`).
"""
from __future__ import annotations

import sys
from functools import cache
from itertools import chain
from operator import attrgetter
from typing import Any, NamedTuple, cast

import numpy as np
import polars as pl
import pyarrow as pa

from ...outcomes.tool_targets import refs_column
from ...schema import MESSAGE_SCHEMA, ROLE, SEQ, USAGE_COLUMNS
from ...words import MEDIA_PART_WORDS, count_words_arrow
from ..base import Invalid, SourceFile, gc_paused
from ..columnar import BLOCK, PART, bad_timestamps, parse_timestamps, read_together, serialized_bytes
from ..typed import DEEP
from . import reader as canonical
from .shapes import (
    TEXT_BLOCKS,
    TYPE_OF,
    Header,
    MediaPart,
    MessageRecord,
    Record,
    SummaryBlock,
    TextPart,
    ToolResultBlock,
    ToolUseBlock,
    decode_files,
)

__all__ = ["read_frames"]


#: The files of a call are read in groups of about this many bytes: a group's buffers, strings and arrays
#: stay in the memory the process already has (larger ones cost page faults and cache misses, more
#: than the fixed cost of a group).
GROUP_BYTES = 16_000_000


def read_frames(sources: list[SourceFile]) -> list[pl.DataFrame | None]:
    """The message frame of each clean file, or None to fall back to :func:`canonical.parse`."""
    frames: list[pl.DataFrame | None] = []
    group: list[SourceFile] = []
    size = 0
    for src in sources:
        try:
            size += src.size()
        except OSError:
            pass
        group.append(src)
        if size >= GROUP_BYTES:
            frames += _read_group(group)
            group, size = [], 0
    return frames + _read_group(group) if group else frames


def _read_group(sources: list[SourceFile]) -> list[pl.DataFrame | None]:
    with gc_paused():
        data, spans = read_together(sources)
        decoded = decode_files(data, spans)
        if sys.getrecursionlimit() > DEEP:  # then msgspec may take a line nested deeper than orjson does
            decoded = [None if records is None or _too_deep(data, span) else records
                       for records, span in zip(decoded, spans)]
        del data
        return _frames(sources, decoded)


def _too_deep(data: bytearray, span: tuple[int, int] | None) -> bool:
    assert span is not None  # a decoded file has its span
    return any(line.count(b"[") + line.count(b"{") >= DEEP for line in bytes(data[span[0]:span[1]]).split(b"\n"))


def _frames(sources: list[SourceFile], decoded: list[list[Record] | None]) -> list[pl.DataFrame | None]:
    """The frame of each file whose records are clean; None for the others."""
    taken: list[int] = []
    first_lines: list[int] = []
    per_file: list[list[MessageRecord]] = []
    for k, records in enumerate(decoded):
        if records is None:
            continue
        start = 0
        if records and type(records[0]) is Header:
            try:
                canonical.header(sources[k], cast(Header, records[0]).as_dict())
            except Invalid:
                continue
            start = 1
        messages = records[start:] if start else records
        if any(type(r) is Header for r in messages):  # a header after the first line
            continue
        taken.append(k)
        first_lines.append(start + 1)
        per_file.append(cast("list[MessageRecord]", messages))
    frames: list[pl.DataFrame | None] = [None] * len(sources)
    if not taken:
        return frames
    counts = np.array([len(m) for m in per_file], dtype=np.int64)
    batch, clean = _batch_frame(list(chain.from_iterable(per_file)), counts, np.array(first_lines),
                                [sources[k] for k in taken])
    starts = np.concatenate(([0], np.cumsum(counts)))
    summaries = np.flatnonzero(batch["has_summary"].to_numpy())
    summary_file = np.searchsorted(starts, summaries, side="right") - 1
    for j, k in enumerate(taken):
        if clean[j]:
            at = summaries[summary_file == j] - starts[j] if len(summaries) else summaries
            canonical.record_compactions(sources[k], at.tolist())
            frames[k] = batch.slice(int(starts[j]), int(counts[j]))
    return frames


class _Blocks(NamedTuple):
    array: pa.StructArray   # every block, as :data:`~..columnar.BLOCK`
    owner: np.ndarray       # each one's message
    words: np.ndarray       # each one's words (libpanto's ``countWords``)
    codes: np.ndarray       # each one's shape (:data:`_SHAPES`)
    results: slice          # where the tool results are


def _blocks(messages: list[MessageRecord]) -> _Blocks:
    """All content blocks of ``messages`` as canonical blocks, each one's message, and its words.

    The blocks are grouped by type (text-like, tool calls, tool results), in
    file order within each type, so that each field is gathered only from the
    blocks that have it; what the columns are used for (sums per message, the
    first summary of a message, tool calls in order, the first result of
    each call) needs no other order.
    """
    # Each field gathered by C-level map over attribute getters: no Python bytecode per block or part.
    contents = list(map(_CONTENT, messages))
    n_blocks = np.fromiter(map(len, contents), dtype=np.int64, count=len(messages))
    blocks: list[Any] = list(chain.from_iterable(contents))
    codes = np.fromiter(map(_CODE.__getitem__, map(type, blocks)), dtype=np.int8, count=len(blocks))
    order = np.argsort(codes, kind="stable")
    owner = np.repeat(np.arange(len(messages)), n_blocks)[order]
    codes = codes[order]
    n_text, n_text_or_use = np.searchsorted(codes, [_CODE[ToolUseBlock], _CODE[ToolResultBlock]]).tolist()
    by_type = list(map(blocks.__getitem__, order.tolist()))
    uses, results = by_type[n_text:n_text_or_use], by_type[n_text_or_use:]
    n_uses, n_results = len(uses), len(results)
    texts = pa.array(list(map(_TEXT, by_type[:n_text])), pa.large_string())
    inputs = pa.array(list(map(_INPUT, uses)), pa.large_string())

    def spread(values: pa.Array, before: int, after: int) -> pa.Array:
        """One type's values at its place, null elsewhere."""
        return pa.concat_arrays([pa.nulls(before, values.type), values, pa.nulls(after, values.type)])

    part_lists = list(map(_PARTS, results))
    parts: list[Any] = list(chain.from_iterable(part_lists))
    n_parts = np.fromiter(map(len, part_lists), dtype=np.int32, count=n_results)
    part_offsets = np.zeros(len(blocks) + 1, dtype=np.int32)
    np.cumsum(n_parts, out=part_offsets[n_text_or_use + 1:])
    is_media = np.fromiter(map(MediaPart.__instancecheck__, parts), dtype=bool, count=len(parts))
    # A text part's media_type and a media part's text are None (class attributes, not fields).
    part_texts = pa.array(list(map(_TEXT, parts)), pa.large_string())
    part_array = pa.StructArray.from_arrays([
        _type_names()[1].take(pa.array(is_media.astype(np.int8))), part_texts,
        pa.array(list(map(_MEDIA_TYPE, parts)), pa.string()),
    ], fields=list(PART))
    array = pa.StructArray.from_arrays([
        _type_names()[0].take(pa.array(codes)),
        spread(texts, 0, n_uses + n_results),
        spread(pa.array(list(map(_ID, uses)), pa.string()), n_text, n_results),
        spread(pa.array(list(map(_NAME, uses)), pa.string()), n_text, n_results),
        spread(inputs, n_text, n_results),
        spread(pa.array(list(map(_TOOL_USE_ID, results)), pa.string()), n_text + n_uses, 0),
        pa.ListArray.from_arrays(pa.array(part_offsets), part_array),
    ], fields=list(BLOCK))
    part_words = np.where(is_media, MEDIA_PART_WORDS, count_words_arrow(part_texts))
    result_words = np.bincount(np.repeat(np.arange(n_results), n_parts), weights=part_words, minlength=n_results)
    words = np.concatenate([count_words_arrow(texts), count_words_arrow(inputs), result_words.astype(np.int64)])
    return _Blocks(array, owner, words, codes, slice(n_text_or_use, len(blocks)))


_CONTENT, _PARTS, _TEXT, _INPUT, _ID, _NAME, _TOOL_USE_ID, _MEDIA_TYPE = map(attrgetter, (
    "content", "parts", "text", "input", "id", "name", "tool_use_id", "media_type"))

#: Block shapes by their code: text-like first, then tool calls, then tool results.
_SHAPES = (*TEXT_BLOCKS, ToolUseBlock, ToolResultBlock)
_CODE: dict[type, int] = {shape: code for code, shape in enumerate(_SHAPES)}


@cache
def _type_names() -> tuple[pa.Array, pa.Array]:
    """The block types by code and the part types (text, media), as Arrow arrays (built on first use: an
    array built at import would import pandas, see :func:`~...ingest.parallel.keep_pandas_out`)."""
    return (pa.array([TYPE_OF[shape] for shape in _SHAPES], pa.string()),
            pa.array([TYPE_OF[TextPart], TYPE_OF[MediaPart]], pa.string()))


def _batch_frame(messages: list[MessageRecord], counts: np.ndarray, first_lines: np.ndarray,
                 sources: list[SourceFile]) -> tuple[pl.DataFrame, np.ndarray]:
    """The message frame of a whole batch (``counts[j]`` messages of ``sources[j]`` each), and which files are clean."""
    n = len(messages)
    file_of = np.repeat(np.arange(len(sources)), counts)
    first_row = np.concatenate(([0], np.cumsum(counts)))[:-1]
    seq = np.arange(n) - first_row[file_of]
    blocks = _blocks(messages)
    owner = blocks.owner
    roles = pa.array([m.role for m in messages], pa.string())
    timestamps = pa.array([m.timestamp for m in messages], pa.string())
    words = np.bincount(owner, weights=blocks.words, minlength=n).astype(np.int64)
    has_tool_result = np.bincount(owner[blocks.results], minlength=n) > 0
    has_summary = np.bincount(owner[blocks.codes == _CODE[SummaryBlock]], minlength=n) > 0
    usages = [m.usage for m in messages]
    has_usage = [u is not None for u in usages]
    counters = {key: pl.Series(key, [None if u is None else getattr(u, key) or 0 for u in usages], dtype=pl.Int64)
                for key in USAGE_COLUMNS}

    def per_file(values: list[Any]) -> pl.Series:  # a file-level value on each of its rows
        return pl.Series(values, dtype=pl.String).gather(file_of)

    frame = pl.DataFrame({
        "session_id": per_file([src.meta.session_id for src in sources]),
        SEQ: seq.astype(np.uint32),
        ROLE: pl.Series(roles),
        "words": words,
        "serialized_bytes": serialized_bytes(roles, blocks.array, owner, n),
        "has_tool_result": has_tool_result,
        "has_summary": has_summary,
        "bash_execution": pl.repeat(False, n, dtype=pl.Boolean, eager=True),
        **counters,
        # Canonical usage records no cache lifetime: every write is a 5-minute write; no recorded cost.
        "cache_write_1h": pl.Series([0 if u else None for u in has_usage], dtype=pl.Int64),
        "recorded_cost": pl.repeat(None, n, dtype=pl.Float32, eager=True),
        "source_format": per_file([src.source_format for src in sources]),
        "model": per_file([src.meta.model for src in sources]),
        "timestamp": parse_timestamps(timestamps),
        "file": per_file([src.file for src in sources]),
        "line": (seq + first_lines[file_of]).astype(np.uint32),
        "refs": refs_column(blocks.array, owner, n, file_of, [src.meta.project for src in sources],
                            result_words=blocks.words[blocks.results]),
    }).cast(cast("dict[Any, pl.DataType]", MESSAGE_SCHEMA))
    clean = np.bincount(file_of, weights=bad_timestamps(timestamps), minlength=len(sources)) == 0
    return frame, clean

