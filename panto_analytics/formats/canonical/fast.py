"""The columnar fast path for canonical files: many files at once, no per-block Python.

The lines of a batch of canonical files are parsed with orjson, converted to
Arrow in C++ (which refuses wrong-typed fields), then validated and counted
with vectorized Arrow/NumPy/Polars operations over the whole batch, and the
result is sliced back into one frame per file. This is what lets a cold
ingest run close to orjson's own parse speed (see ``panto-analytics bench``):
the per-file costs of Arrow and Polars calls are paid once per batch.

The line-by-line adapter in :mod:`.canonical` stays the reference: a file in
which the fast path sees anything it does not fully handle (a bad line, a
float usage count, an explicit null, an unusual timestamp) gets ``None``, and
the caller parses it again with the reference adapter, which names the file,
line and reason, or counts the skips. So the fast path only has to be right
on clean files; ``tests/formats/test_canonical_fast.py`` checks that it is,
against the reference, on random files clean and broken.
"""
from __future__ import annotations

from typing import Any, cast

import numpy as np
import orjson
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from ...outcomes.tool_targets import refs_column
from ...schema import MAX_USAGE, MESSAGE_SCHEMA, ROLE, ROLES, SEQ, USAGE_COLUMNS
from ..base import Invalid, SourceFile
from ..columnar import BLOCK, bad_timestamps, by_halving, parse_timestamps, per_owner, read_whole, serialized_bytes, words_and_flags
from . import lines as canonical

__all__ = ["read_frames"]

#: The canonical block as it is on disk: :data:`~..columnar.BLOCK` and a system block's ``mode``.
_BLOCK = pa.struct([*BLOCK, ("mode", pa.string())])
_MESSAGE = pa.struct([
    ("type", pa.string()), ("role", pa.string()), ("content", pa.list_(_BLOCK)),
    ("usage", pa.struct([(k, pa.int64()) for k in USAGE_COLUMNS])), ("timestamp", pa.string()),
])

_PARSE = pa_json.ParseOptions(explicit_schema=pa.schema(list(_MESSAGE)), unexpected_field_behavior="ignore")
#: Arrow parses blocks on all cores; a line longer than a block makes it refuse the file.
_BLOCK_SIZE = 1 << 22

#: Fields each block type must have (as strings) in the reference adapter.
_REQUIRED = {
    "text": ("text",), "thinking": ("text",), "compaction_summary": ("text",), "system": ("text", "mode"),
    "tool_use": ("id", "name", "input"), "tool_result": ("tool_use_id", "parts"),
}

def read_frames(sources: list[SourceFile]) -> list[pl.DataFrame | None]:
    """The message frame of each clean file, or None to fall back to :func:`canonical.parse`.

    One JSON parse and one vectorized pass over all the files' messages.
    """
    loaded = [read_whole(src) for src in sources]
    good = [i for i, data in enumerate(loaded) if data is not None]
    frames: list[pl.DataFrame | None] = [None] * len(sources)
    # some file is not clean: the batch is halved until it is found
    read = by_halving(lambda part: _frames([sources[good[k]] for k in part], [cast(bytes, loaded[good[k]]) for k in part]),
                      len(good))
    for i, frame in zip(good, read):
        frames[i] = frame
    return frames


def _frames(sources: list[SourceFile], loaded: list[bytes]) -> list[pl.DataFrame | None] | None:
    """The frame of each file (None: not clean), or None when Arrow refuses some line of them."""
    frames: list[pl.DataFrame | None] = [None] * len(sources)
    rows = np.array([data.count(b"\n") for data in loaded], dtype=np.int64)
    table = _parse_json(loaded, int(rows.sum()))
    if table is None:
        return None
    file_of = np.repeat(np.arange(len(sources)), rows)
    is_header, bad_header = _headers(table, rows, sources, loaded)
    messages = table.filter(pa.array(~is_header))
    counts = rows - np.bincount(file_of[is_header], minlength=len(sources))
    file_of = np.repeat(np.arange(len(sources)), counts)
    lines = np.arange(len(table), dtype=np.int64) - np.repeat(np.cumsum(rows) - rows, rows) + 1
    batch, clean = _batch_frame(messages, file_of, sources, lines[~is_header])
    starts = np.concatenate(([0], np.cumsum(counts)))
    for k, source in enumerate(sources):
        if clean[k] and not bad_header[k]:
            frame = batch.slice(int(starts[k]), int(counts[k]))
            canonical.record_compactions(source, frame[SEQ].filter(frame["has_summary"]).to_list())
            frames[k] = frame
    return frames


def _parse_json(files: list[bytes], n_lines: int) -> pa.StructArray | None:
    """All lines of ``files`` as one struct array, or None if Arrow's strict reader refuses any of them.

    Arrow refuses every wrong-typed field, fractional or boolean counter,
    duplicate key and invalid string the reference refuses; what it lets
    through is validated in :func:`_batch_frame`. It skips blank lines, as
    the reference does, but then its rows are not the file's lines: so a
    batch with blank lines is refused too (and its files retried one by one).
    """
    if not files:
        return None
    try:
        table = pa_json.read_json(pa.BufferReader(b"".join(files)), parse_options=_PARSE,
                                  read_options=pa_json.ReadOptions(block_size=_BLOCK_SIZE))
    except (pa.ArrowException, UnicodeDecodeError, ValueError):
        return None
    if table.num_rows != n_lines:
        return None
    return table.to_struct_array().combine_chunks() if table.num_rows else None


def _headers(table: pa.StructArray, rows: np.ndarray, sources: list[SourceFile],
             files: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """Which rows are session headers (each applied to its file), and which files have an invalid one.

    Only a file's first line can be a header; a ``session`` record anywhere
    else stays a row, and :func:`_bad_records` refuses it.
    """
    is_session = np.asarray(pc.fill_null(pc.equal(table.field("type"), "session"), False))
    first_row = np.cumsum(rows) - rows
    has_header = (rows > 0) & is_session[np.minimum(first_row, len(table) - 1)]
    is_header = np.zeros(len(table), dtype=bool)
    is_header[first_row[has_header]] = True
    bad_header = np.zeros(len(rows), dtype=bool)
    for k in np.flatnonzero(has_header):
        try:
            canonical.header(sources[k], orjson.loads(files[k][:files[k].index(b"\n")]))
        except (Invalid, orjson.JSONDecodeError):
            bad_header[k] = True
    return is_header, bad_header


def _batch_frame(table: pa.StructArray, file_of: np.ndarray, sources: list[SourceFile],
                 line_numbers: np.ndarray) -> tuple[pl.DataFrame, np.ndarray]:
    """The message frame of a whole batch, and which of its files are clean."""
    n_files = len(sources)
    blocks = table.field("content").flatten()
    block_owner = pc.list_parent_indices(table.field("content")).to_numpy()
    bad_record = _bad_records(table) | per_owner(_bad_blocks(blocks), block_owner, len(table))
    bad_record |= bad_timestamps(table.field("timestamp"))
    words, has_tool_result, has_summary = words_and_flags(blocks, block_owner, len(table))
    serialized = serialized_bytes(table.field("role"), blocks, block_owner, len(table))
    usage = table.field("usage")
    has_usage = pc.is_valid(usage)
    counters = {}
    for key in USAGE_COLUMNS:
        values = pc.if_else(has_usage, pc.fill_null(usage.field(key), 0), None)
        in_range = pc.fill_null(pc.and_(pc.greater_equal(values, 0), pc.less_equal(values, MAX_USAGE)), True)
        bad_record |= ~np.asarray(in_range)
        counters[key] = pc.if_else(in_range, values, None)  # only unclean files are out of range
    counts = np.bincount(file_of, minlength=n_files)
    first_row = np.concatenate(([0], np.cumsum(counts)))[:-1]
    def per_file(values: list[Any]) -> pl.Series:  # a file-level value on each of its rows
        return pl.Series(values, dtype=pl.String).gather(file_of)

    frame = pl.DataFrame({
        "session_id": per_file([src.meta.session_id for src in sources]),
        SEQ: (np.arange(len(table)) - first_row[file_of]).astype(np.uint32),
        # Unknown roles only occur in unclean files, which are dropped; null keeps the Enum cast valid.
        ROLE: pl.Series(pc.if_else(pc.is_in(table.field("role"), pa.array(ROLES)), table.field("role"), None)),
        "words": words,
        "serialized_bytes": serialized,
        "has_tool_result": has_tool_result,
        "has_summary": has_summary,
        "bash_execution": pl.repeat(False, len(table), dtype=pl.Boolean, eager=True),
        **{k: pl.Series(v) for k, v in counters.items()},
        # Canonical usage records no cache lifetime: every write is a 5-minute write; no recorded cost.
        "cache_write_1h": pl.Series(pc.if_else(has_usage, 0, None)),
        "recorded_cost": pl.repeat(None, len(table), dtype=pl.Float32, eager=True),
        "source_format": per_file([src.source_format for src in sources]),
        "model": per_file([src.meta.model for src in sources]),
        "timestamp": parse_timestamps(table.field("timestamp")),
        "file": per_file([str(src.path) for src in sources]),
        "line": line_numbers.astype(np.uint32),
        "refs": refs_column(blocks, block_owner, len(table), file_of, [src.meta.project for src in sources]),
    }).cast(cast("dict[Any, pl.DataType]", MESSAGE_SCHEMA))
    clean = np.bincount(file_of, weights=bad_record, minlength=n_files) == 0
    return frame, clean


def _bad_records(table: pa.StructArray) -> np.ndarray:
    ok = pc.and_(pc.equal(table.field("type"), "message"), pc.is_in(table.field("role"), pa.array(ROLES)))
    # Arrow cannot tell a missing "content" (allowed) from an explicit null (refused).
    ok = pc.and_(ok, pc.is_valid(table.field("content")))
    return ~np.asarray(pc.fill_null(ok, False))


def _bad_blocks(blocks: pa.StructArray) -> np.ndarray:
    kinds = blocks.field("type")
    ok = pc.and_(pc.is_valid(blocks), pc.is_in(kinds, pa.array(list(_REQUIRED))))
    for kind, fields in _REQUIRED.items():
        for name in fields:
            ok = pc.and_(ok, pc.or_(pc.not_equal(kinds, kind), pc.is_valid(blocks.field(name))))
    mode_ok = pc.is_in(blocks.field("mode"), pa.array(canonical.SYSTEM_MODES))
    ok = pc.and_(ok, pc.or_(pc.not_equal(kinds, "system"), mode_ok))
    bad = ~np.asarray(pc.fill_null(ok, False))
    parts_list = blocks.field("parts")
    parts = parts_list.flatten()
    if len(parts):
        bad |= per_owner(_bad_parts(parts), pc.list_parent_indices(parts_list).to_numpy(), len(blocks))
    return bad


def _bad_parts(parts: pa.StructArray) -> np.ndarray:
    kinds = parts.field("type")
    ok = pc.and_(pc.is_valid(parts), pc.is_in(kinds, pa.array(["text", "media"])))
    ok = pc.and_(ok, pc.or_(pc.not_equal(kinds, "text"), pc.is_valid(parts.field("text"))))
    ok = pc.and_(ok, pc.or_(pc.not_equal(kinds, "media"), pc.is_valid(parts.field("media_type"))))
    return ~np.asarray(pc.fill_null(ok, False))


