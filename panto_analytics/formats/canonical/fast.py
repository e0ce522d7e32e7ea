"""The batch path for canonical files: many files decoded into declared records at once, counted in Arrow.

The files of a batch are read into one buffer (:func:`~..columnar.read_together`,
which also checks their UTF-8) and each is decoded by msgspec into the
record shapes of :mod:`.shapes` (one call per file). Decoding is the
validation: a file that decodes holds only what the reference reads
without an error, and the few rules a Struct cannot state (a header only
on the first line, ISO-8601 UTC timestamps, the header's own checks) are
checked on the decoded records. The frame of the whole batch is then built
at once from the records' fields (the texts left undecoded, counted from their
JSON: :mod:`...json_words`) and sliced back into one frame per file. Nothing
per block runs but the gathering of fields into columns.

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
from functools import cache, partial
from itertools import chain, compress
from operator import attrgetter, is_not
from typing import Any, NamedTuple, cast

import msgspec
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from ...frame.json_words import raw_texts
from ...frame.schema import MESSAGE_SCHEMA, ROLE, SEQ, USAGE_COLUMNS
from ...frame.tool_targets import refs_column
from ...frame.words import MEDIA_PART_WORDS, count_words_arrow
from ...transcript import MEDIA_NOTE_BYTES, SEPARATOR, label_bytes
from ..columnar import byte_lengths, checked_timestamps, read_together
from ..contract import SourceFile
from ..gc_pause import gc_paused
from ..record_fields import Invalid
from ..typed import DEEP
from . import reader as canonical
from .shapes import (
    TEXT_BLOCKS,
    TYPE_OF,
    Header,
    MediaPart,
    MessageRecord,
    RawRecord,
    SummaryBlock,
    SystemBlock,
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


def _frames(sources: list[SourceFile], decoded: list[list[RawRecord] | None]) -> list[pl.DataFrame | None]:
    """The frame of each file whose records are clean; None for the others."""
    taken: list[int] = []
    first_lines: list[int] = []
    per_file: list[list[MessageRecord[msgspec.Raw]]] = []
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
        per_file.append(cast("list[MessageRecord[msgspec.Raw]]", messages))
    frames: list[pl.DataFrame | None] = [None] * len(sources)
    if not taken:
        return frames
    counts = np.array([len(m) for m in per_file], dtype=np.int64)
    batch, clean = _batch_frame(list(chain.from_iterable(per_file)), counts, np.array(first_lines),
                                [sources[k] for k in taken])
    starts = np.concatenate(([0], np.cumsum(counts)))
    summaries = np.flatnonzero(batch["has_summary"].to_numpy())
    summary_file = np.searchsorted(starts, summaries, side="right") - 1  # each summary's file, each file's summaries:
    per_file_summaries = np.split(summaries - starts[summary_file], np.searchsorted(summary_file, range(1, len(taken))))
    for j, (k, at) in enumerate(zip(taken, per_file_summaries)):
        if clean[j]:
            canonical.record_compactions(sources[k], at.tolist())
            frames[k] = batch.slice(int(starts[j]), int(counts[j]))
    return frames


class _Blocks(NamedTuple):
    array: pa.StructArray   # every block's type, id, name, input, tool_use_id (what refs_column reads; as BLOCK)
    owner: np.ndarray       # each one's message
    words: np.ndarray       # each one's words (libpanto's ``countWords``)
    sizes: np.ndarray       # each one's bytes in a summarizer request, its separator included
    codes: np.ndarray       # each one's shape (:data:`_SHAPES`)
    results: slice          # where the tool results are
    summary_bytes: np.ndarray  # each summary block's text bytes (in the order of the summary blocks)
    not_strings: np.ndarray    # the messages with a text that is not a JSON string (their files are declined)


def _blocks(messages: list[MessageRecord[msgspec.Raw]], assistant: np.ndarray) -> _Blocks:
    """All content blocks of ``messages``, each one's message, words and bytes; ``assistant``: which messages are.

    The blocks are grouped by type (text-like, tool calls, tool results), in
    file order within each type, so that each field is gathered only from the
    blocks that have it; what the columns are used for (sums per message, the
    first summary of a message, tool calls in order, the first result of
    each call) needs no other order. The texts are counted from their JSON
    (:func:`~...json_words.raw_texts`), never made into strings.
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

    part_lists = list(map(_PARTS, results))
    parts: list[Any] = list(chain.from_iterable(part_lists))
    n_parts = np.fromiter(map(len, part_lists), dtype=np.int64, count=n_results)
    is_media = np.fromiter(map(MediaPart.__instancecheck__, parts), dtype=bool, count=len(parts))
    text_parts = list(compress(parts, (~is_media).tolist()))
    media_types = pa.array(list(map(_MEDIA_TYPE, compress(parts, is_media.tolist()))), pa.string())
    # The texts of the text-like blocks, then of the text parts: counted together, from their JSON.
    texts = raw_texts(list(map(_TEXT, by_type[:n_text])) + list(map(_TEXT, text_parts)))
    text_words, text_bytes, is_string = count_words_arrow(texts.spaced), texts.utf8_bytes, texts.is_string
    part_owner = np.repeat(np.arange(n_results), n_parts)
    part_words = np.full(len(parts), MEDIA_PART_WORDS, dtype=np.int64)
    part_words[~is_media] = text_words[n_text:]
    part_bytes = np.empty(len(parts), dtype=np.int64)
    part_bytes[~is_media] = text_bytes[n_text:]
    part_bytes[is_media] = MEDIA_NOTE_BYTES + byte_lengths(media_types)
    not_string = np.concatenate([owner[:n_text], owner[n_text_or_use:][part_owner[~is_media]]])[~is_string]

    ids, names = pa.array(list(map(_ID, uses)), pa.string()), pa.array(list(map(_NAME, uses)), pa.string())
    inputs = pa.array(list(map(_INPUT, uses)), pa.large_string())
    tool_use_ids = pa.array(list(map(_TOOL_USE_ID, results)), pa.string())

    def spread(values: pa.Array, before: int, after: int) -> pa.Array:
        """One type's values at its place, null elsewhere."""
        return pa.concat_arrays([pa.nulls(before, values.type), values, pa.nulls(after, values.type)])

    array = pa.StructArray.from_arrays([
        _type_names().take(pa.array(codes)),
        spread(ids, n_text, n_results), spread(names, n_text, n_results), spread(inputs, n_text, n_results),
        spread(tool_use_ids, n_text + n_uses, 0),
    ], names=["type", "id", "name", "input", "tool_use_id"])
    result_words = np.bincount(part_owner, weights=part_words, minlength=n_results).astype(np.int64)
    words = np.concatenate([text_words[:n_text], count_words_arrow(inputs), result_words])
    own = np.concatenate([  # each block's own fields (:data:`~...transcript.BLOCK_FIELDS`; a system block's none)
        np.where(codes[:n_text] == _CODE[SystemBlock], 0, text_bytes[:n_text]),
        byte_lengths(ids) + byte_lengths(names) + byte_lengths(inputs),
        byte_lengths(tool_use_ids) + np.bincount(part_owner, weights=part_bytes, minlength=n_results).astype(np.int64),
    ])
    sizes = own + _LABELS[assistant[owner].astype(np.intp), codes] + len(SEPARATOR)
    summaries = codes[:n_text] == _CODE[SummaryBlock]
    return _Blocks(array, owner, words, sizes, codes, slice(n_text_or_use, len(blocks)),
                   text_bytes[:n_text][summaries], not_string)


_CONTENT, _PARTS, _TEXT, _INPUT, _ID, _NAME, _TOOL_USE_ID, _MEDIA_TYPE, _ROLE, _TIMESTAMP, _USAGE = map(attrgetter, (
    "content", "parts", "text", "input", "id", "name", "tool_use_id", "media_type", "role", "timestamp", "usage"))
_IS_NOT_NONE = partial(is_not, None)

#: Block shapes by their code: text-like first, then tool calls, then tool results.
_SHAPES = (*TEXT_BLOCKS, ToolUseBlock, ToolResultBlock)
_CODE: dict[type, int] = {shape: code for code, shape in enumerate(_SHAPES)}
#: The bytes a block of each shape writes besides its fields, by role (not the assistant's, the assistant's).
_LABELS = np.array([[label_bytes(role, TYPE_OF[shape]) for shape in _SHAPES] for role in ("user", "assistant")],
                   dtype=np.int64)


@cache
def _type_names() -> pa.Array:
    """The block types by code, as an Arrow array (built on first use: an array built at import would import
    pandas, see :func:`~...ingest.parallel.keep_pandas_out`)."""
    return pa.array([TYPE_OF[shape] for shape in _SHAPES], pa.string())


def _batch_frame(messages: list[MessageRecord[msgspec.Raw]], counts: np.ndarray, first_lines: np.ndarray,
                 sources: list[SourceFile]) -> tuple[pl.DataFrame, np.ndarray]:
    """The message frame of a whole batch (``counts[j]`` messages of ``sources[j]`` each), and which files are clean."""
    n = len(messages)
    file_of = np.repeat(np.arange(len(sources)), counts)
    first_row = np.concatenate(([0], np.cumsum(counts)))[:-1]
    seq = np.arange(n) - first_row[file_of]
    roles = pa.array(list(map(_ROLE, messages)), pa.string())
    assistant = np.asarray(pc.equal(roles, "assistant"))
    blocks = _blocks(messages, assistant)
    owner = blocks.owner
    words = np.bincount(owner, weights=blocks.words, minlength=n).astype(np.int64)
    has_tool_result = np.bincount(owner[blocks.results], minlength=n) > 0
    is_summary = blocks.codes == _CODE[SummaryBlock]
    has_summary = np.bincount(owner[is_summary], minlength=n) > 0
    # What each message adds to a summarizer request (:func:`~...transcript.serialized_bytes`): its first summary's
    # text if it holds one, else its blocks (a system message's none).
    request_bytes = np.bincount(owner, weights=blocks.sizes, minlength=n).astype(np.int64)
    request_bytes[np.asarray(pc.equal(roles, "system"))] = 0
    with_summary, first = np.unique(owner[is_summary], return_index=True)
    request_bytes[with_summary] = blocks.summary_bytes[first]
    timestamps = pa.array(list(map(_TIMESTAMP, messages)), pa.string())
    parsed_times, bad = checked_timestamps(timestamps)   # a file with a bad one is declined (below)

    def per_file(values: list[Any]) -> pl.Series:  # a file-level value on each of its rows
        return pl.Series(values, dtype=pl.String).gather(file_of)

    frame = pl.DataFrame({
        "session_id": per_file([src.meta.session_id for src in sources]),
        SEQ: seq.astype(np.uint32),
        ROLE: pl.Series(roles),
        "words": words,
        "serialized_bytes": request_bytes,
        "has_tool_result": has_tool_result,
        "has_summary": has_summary,
        "bash_execution": pl.repeat(False, n, dtype=pl.Boolean, eager=True),
        **_usage_columns(messages),
        "recorded_cost": pl.repeat(None, n, dtype=pl.Float32, eager=True),
        "source_format": per_file([src.source_format for src in sources]),
        "model": per_file([src.meta.model for src in sources]),
        "timestamp": parsed_times,
        "file": per_file([src.file for src in sources]),
        "line": (seq + first_lines[file_of]).astype(np.uint32),
        "refs": refs_column(blocks.array, owner, n, file_of, [src.meta.project for src in sources],
                            result_words=blocks.words[blocks.results]),
    }).cast(cast("dict[Any, pl.DataType]", MESSAGE_SCHEMA))
    bad[blocks.not_strings] = True
    clean = np.bincount(file_of, weights=bad, minlength=len(sources)) == 0
    return frame, clean


def _usage_columns(messages: list[MessageRecord[msgspec.Raw]]) -> dict[str, pl.Series]:
    """The usage counters of each message (a missing or null counter 0), null where it records no usage; and the
    1-hour cache writes: canonical usage records no cache lifetime, every write is a 5-minute write."""
    usages = list(map(_USAGE, messages))
    has_usage = np.fromiter(map(_IS_NOT_NONE, usages), dtype=bool, count=len(usages))
    recorded = list(compress(usages, has_usage.tolist()))
    values = np.zeros((len(USAGE_COLUMNS) + 1, len(usages)), dtype=np.int64)  # the last row: the 1-hour writes
    for row, key in zip(values, USAGE_COLUMNS):
        row[has_usage] = pc.fill_null(pa.array(list(map(attrgetter(key), recorded)), pa.int64()), 0).to_numpy()
    return {key: pl.Series(key, pa.array(row, mask=~has_usage))
            for key, row in zip((*USAGE_COLUMNS, "cache_write_1h"), values)}
