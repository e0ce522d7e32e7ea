"""The columnar fast path for Claude Code transcripts: many files at once, the state machine as window expressions.

The lines of a batch of transcripts are split with NumPy and parsed by
Arrow's JSON reader (on every core) with a per-format schema. Claude Code
writes ``message.content``, and a tool result's ``content``, as a string or
as a list; Arrow needs one type per field, so each line is first put into
one of three shapes by a cheap regular expression on its bytes, and each
shape is parsed with its own schema. A line put in the wrong shape fails to
parse, and the batch is halved until the file is found and declined: the
shape only picks the schema, the parsed fields say what the line is.

The transcript state machine of :mod:`.reference` (API calls streamed over
several lines and merged, tool results written while a call streams,
duplicate records, repeated calls, synthetic messages, compaction
boundaries filled by their summaries, prompts queued mid-turn) then runs
as window expressions over the records of every file at once, and the
blocks of all messages are counted by :mod:`..columnar`, as for canonical
files. What Arrow cannot give is read again by orjson, line by line, as the
reference reads it: the compact JSON of a tool call's ``input`` (its words
and bytes are those of that text), a queued prompt or a compact summary (a
string or a list of blocks), a boundary's ``compactMetadata``.

What the fast path does not handle, it declines (returns None for the
file), and :mod:`.reference` reads the file, names the file and line of a
bad record, or counts the skips: a compaction's preserved segment,
sidechain records inside a main transcript, server tool results, invalid
records or blocks, timestamps other than ISO UTC, lines that do not start
with ``{``, lone surrogate escapes, nesting deeper than orjson parses (see
:func:`_too_deep`), invalid UTF-8.
``tests/formats/test_claude_code_fast.py`` checks the frame, the
session metadata and the report against the reference, on the fixtures,
synthetic and real transcripts, files broken one way each and random
mutations.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import numpy as np
import orjson
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from ...outcomes.tool_targets import refs_column
from ...schema import MAX_USAGE, MESSAGE_SCHEMA, ROLE, USAGE_COLUMNS
from ..base import BAD_RECORD, SessionMeta, SourceFile, parse_timestamp, session_stem
from ..columnar import BLOCK, ISO_UTC, PART, by_halving, parse_timestamps, read_together, serialized_bytes, words_and_flags
from .lines import NAME, PRESERVED_MARK, SYNTHETIC_MODEL, TOOL_USE_BLOCKS, USAGE_KEYS, project_folder, text_of

__all__ = ["read_frames"]

# -- the schemas --------------------------------------------------------------------

_STR = pa.string()
_TEXT = pa.large_string()
#: The usage counters, and the 1-hour part of the cache writes (``cache_write_1h``).
_USAGE = pa.struct([*((key, pa.int64()) for _, key in USAGE_KEYS),
                    ("cache_creation", pa.struct([("ephemeral_1h_input_tokens", pa.int64())]))])
#: The counters a usage row carries into the frame.
_COUNTERS = (*USAGE_COLUMNS, "cache_write_1h")
#: A tool result's part (image and document parts name their media type under ``source``).
_CC_PART = pa.struct([("type", _STR), ("text", _TEXT), ("source", pa.struct([("media_type", _STR)]))])


def _block(result_content: pa.DataType) -> pa.DataType:
    """A content block of a user or an assistant message, with a tool result's content typed as given."""
    return pa.struct([("type", _STR), ("text", _TEXT), ("thinking", _TEXT), ("id", _STR), ("name", _STR),
                      ("tool_use_id", _STR), ("content", result_content)])


def _schema(content: pa.DataType) -> pa.Schema:
    """A record with ``message.content`` typed as given; the fields the reference reads, nothing else."""
    message = pa.struct([("id", _STR), ("model", _STR), ("usage", _USAGE), ("content", content)])
    return pa.schema([
        ("type", _STR), ("subtype", _STR), ("uuid", _STR), ("isSidechain", pa.bool_()), ("sessionId", _STR),
        ("requestId", _STR), ("timestamp", _STR), ("cwd", _STR), ("agentId", _STR),
        ("isCompactSummary", pa.bool_()), ("isVisibleInTranscriptOnly", pa.bool_()),
        ("attachment", pa.struct([("type", _STR)])), ("message", message),
    ])


#: The three shapes of a line: ``message.content`` a string; a list whose tool results hold
#: a list of parts; a list whose tool results (if any) hold a string. Other records parse
#: with any of them (their ``message`` is absent).
_SHAPES = {
    "string": _schema(_TEXT),
    "result parts": _schema(pa.list_(_block(pa.list_(_CC_PART)))),
    "list": _schema(pa.list_(_block(_TEXT))),
}
_STRING_CONTENT = r'"role"\s*:\s*"user"\s*,\s*"content"\s*:\s*"'
_RESULT_PARTS = r'"tool_result"\s*(?:,\s*"\w+"\s*:\s*(?:"[^"\\]*"|true|false)\s*)*,\s*"content"\s*:\s*\['
#: A lone surrogate escape: Arrow reads it, orjson (the reference) refuses the line.
_SURROGATE = r"\\u[dD][89a-fA-F]"
_BLOCK_BYTES = 1 << 22


def read_frames(sources: list[SourceFile]) -> list[pl.DataFrame | None]:
    """The message frame of each clean transcript, or None to fall back to :func:`.reference.parse`.

    Each accepted source gets the session metadata and the report entries
    the reference would have given it.
    """
    data, spans = read_together(sources)
    good = [k for k, span in enumerate(spans) if span is not None]
    frames: list[pl.DataFrame | None] = [None] * len(sources)
    if not good:
        return frames
    lines = _Lines(data, [cast("tuple[int, int]", spans[k]) for k in good])
    for k, frame in zip(good, _frames([sources[k] for k in good], lines, np.arange(len(good)))):
        frames[k] = frame
    # The parse's Arrow memory is free now: hand it back rather than keep it cached for the next batch.
    pa.default_memory_pool().release_unused()
    return frames


def _frames(sources: list[SourceFile], lines: _Lines, files: np.ndarray) -> list[pl.DataFrame | None]:
    """The frames of ``files`` (indices into ``lines``' files); a batch Arrow refuses is halved until the file is found."""
    return by_halving(lambda part: _read_batch([sources[k] for k in part], lines, files[part]), len(files))


# -- lines ----------------------------------------------------------------------------

#: A run of brackets this long starts nesting that may go deeper than orjson parses (see :func:`_too_deep`).
_DEEP_RUN = b"[" * 64


def _too_deep(data: bytearray, array: pa.LargeBinaryArray) -> np.ndarray:
    """Which lines the reference refuses for nesting deeper than orjson's limit (Arrow has none).

    Only lines with a long run of ``[`` are checked (by orjson itself), and
    only when the buffer has one at all: one memchr-speed search. Deep nesting
    built otherwise (``{"a":[{"a":[`` ...) inside a field neither parser
    reads for the message is not caught: the one known case where the fast
    path reads a line the reference refuses.
    """
    deep = np.zeros(len(array), dtype=bool)
    if data.find(_DEEP_RUN) < 0:
        return deep
    for row in np.flatnonzero(np.asarray(pc.match_substring(array, _DEEP_RUN.decode()))):
        try:
            orjson.loads(array[int(row)].as_py())
        except orjson.JSONDecodeError:
            deep[row] = True
    return deep


class _Lines:
    """The non-blank lines of many files in one buffer, each with its file and line number.

    ``array`` holds every line as one binary value without a copy of the
    buffer (a blank line after it, or its newline, is JSON whitespace at its
    end); ``odd`` says which files have a line that is not blank and does not
    start with ``{`` (the reference judges those: whitespace, a JSON value
    that is not an object, pretty-printed JSON), or have no line that is not
    blank (the reference reads those as empty sessions; there is nothing to
    parse).
    """

    def __init__(self, data: bytearray, spans: list[tuple[int, int]]):
        self.data = data
        raw = np.frombuffer(data, dtype=np.uint8)
        ends = _newlines(raw)   # every file ends with a newline (read_together)
        starts = np.concatenate(([0], ends[:-1] + 1))
        per_file = np.diff(np.searchsorted(ends, [spans[0][0], *(end for _, end in spans)]))
        file_of = np.repeat(np.arange(len(spans)), per_file)
        line_no = np.arange(len(ends)) - np.repeat(np.cumsum(per_file) - per_file, per_file) + 1
        keep = ends > starts
        self.odd = np.zeros(len(spans), dtype=bool)
        self.odd[file_of[keep & (raw[np.minimum(starts, len(raw) - 1)] != ord("{"))]] = True
        self.odd[np.bincount(file_of[keep], minlength=len(spans)) == 0] = True
        self.starts, self.ends = starts[keep], ends[keep]
        offsets = np.concatenate((self.starts, [len(data)])).astype(np.int64)
        self.array = cast(pa.LargeBinaryArray, pa.Array.from_buffers(
            pa.large_binary(), len(self.starts), [None, pa.py_buffer(offsets), pa.py_buffer(data)]))
        self.file_of, self.line_no = file_of[keep], line_no[keep]

    def of(self, files: np.ndarray) -> tuple[pa.LargeBinaryArray, np.ndarray]:
        """The lines of ``files`` (a copy unless they are all) and their rows in :attr:`array`."""
        rows = np.flatnonzero(np.isin(self.file_of, files))
        if len(rows) == len(self.array):
            return self.array, rows
        return cast(pa.LargeBinaryArray, self.array.take(pa.array(rows))), rows

    def records(self, rows: np.ndarray) -> Iterator[memoryview]:
        """The bytes of ``rows`` of :attr:`array`, one at a time, without a copy (for orjson)."""
        view = memoryview(self.data)
        for start, end in zip(self.starts[rows].tolist(), self.ends[rows].tolist()):
            yield view[start:end]

    def blank_out(self, rows: np.ndarray) -> np.ndarray:
        """Overwrite ``rows`` of :attr:`array` with ``{}`` and spaces; returns what :meth:`restore` needs."""
        at = _ranges(self.starts[rows], self.ends[rows])
        raw = np.frombuffer(self.data, dtype=np.uint8)
        saved = raw[at]
        raw[at] = ord(" ")
        raw[self.starts[rows]], raw[self.starts[rows] + 1] = ord("{"), ord("}")
        return np.stack((at, saved.astype(np.int64)))

    def restore(self, saved: np.ndarray) -> None:
        np.frombuffer(self.data, dtype=np.uint8)[saved[0]] = saved[1].astype(np.uint8)


def _newlines(raw: np.ndarray, step: int = 1 << 22) -> np.ndarray:
    """Where the newlines are, found a few MB at a time (a mask of the whole buffer costs more than the search).

    >>> _newlines(np.frombuffer(b"a\\nbc\\n\\n", dtype=np.uint8), step=2).tolist()
    [1, 4, 5]
    """
    found = [np.flatnonzero(raw[at:at + step] == 10) + at for at in range(0, len(raw), step)]
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


def _ranges(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Every index of ``[starts[i], ends[i])`` for all i, concatenated.

    >>> _ranges(np.array([0, 5]), np.array([2, 8])).tolist()
    [0, 1, 5, 6, 7]
    """
    lengths = ends - starts
    return np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths) + np.arange(lengths.sum())


_Parsed = tuple[str, np.ndarray, pa.StructArray, np.ndarray]


def _parse(lines: _Lines, array: pa.LargeBinaryArray) -> list[_Parsed] | None:
    """Every line parsed in its shape, or None if Arrow refuses a line.

    Each shape gives ``(shape, rows, records, own)``: the rows of ``array``
    parsed, their records, and which of them are this shape's (the others
    were blanked out: empty records, no blocks).

    The lines of the rare shapes are copied out; when ``array`` is all the
    lines, the common shape is parsed in place, over every line, with the
    others blanked out (and restored after), which saves copying nearly all
    the bytes.
    """
    string = np.asarray(pc.match_substring_regex(array, _STRING_CONTENT))
    parts = np.asarray(pc.match_substring_regex(array, _RESULT_PARTS)) & ~string
    in_place = array is lines.array
    shapes = []
    for name, mask in (("string", string), ("result parts", parts), ("list", ~string & ~parts)):
        rows = np.flatnonzero(mask)
        if not len(rows):
            continue
        if name == "list" and in_place:
            saved = lines.blank_out(np.flatnonzero(~mask))
            try:
                records = _read_json(array, name)
            finally:
                lines.restore(saved)
            rows, own = np.arange(len(array)), mask
        else:
            records = _read_json(array if len(rows) == len(array) else array.take(pa.array(rows)), name)
            own = np.ones(len(rows), dtype=bool)
        if records is None:
            return None
        shapes.append((name, rows, records, own))
    return shapes


def _read_json(lines: pa.LargeBinaryArray, shape: str) -> pa.StructArray | None:
    """``lines`` parsed with the schema of ``shape``, one record each; None if Arrow refuses one."""
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64)[lines.offset:lines.offset + len(lines) + 1]
    body = lines.buffers()[2][int(offsets[0]):int(offsets[-1])]
    try:
        table = pa_json.read_json(pa.BufferReader(body), read_options=pa_json.ReadOptions(block_size=_BLOCK_BYTES),
                                  parse_options=pa_json.ParseOptions(explicit_schema=_SHAPES[shape],
                                                                     unexpected_field_behavior="ignore"))
    except (pa.ArrowException, ValueError):
        return None
    if table.num_rows != len(lines):
        return None
    return table.to_struct_array().combine_chunks()


def _is(values: pa.Array, *names: str) -> np.ndarray:
    """Whether each value is one of ``names`` (null: no)."""
    return np.asarray(pc.fill_null(pc.is_in(values, pa.array(names, values.type)), False))


def _valid(values: pa.Array) -> np.ndarray:
    return np.asarray(pc.is_valid(values))


def _mask(values: np.ndarray) -> pa.BooleanArray:
    return pa.array(values, pa.bool_())


# -- blocks ---------------------------------------------------------------------------

#: Canonical block types by code; a block the reference drops gets the last (null), and no message.
_KINDS = pa.array(["text", "thinking", "tool_use", "tool_result", "compaction_summary", None], _STR)
_AS_TEXT, _AS_THINKING, _AS_TOOL_USE, _AS_RESULT, _AS_SUMMARY, _DROPPED = range(6)


class _Blocks:
    """The content blocks of one shape's records as canonical blocks, each with its line and its verdict.

    ``line``: the batch row of each block; ``code``: its canonical type
    (``_DROPPED`` for a block the reference drops); ``bad``: the reference
    refuses it; ``tool_use``: a tool call, whose ``input`` is added later;
    ``dropped``: ``(row, label)`` of each block or part the reference drops
    and counts under that label; ``bad_rows``: records whose content the
    reference refuses as a whole.
    """

    def __init__(self, shape: str, rows: np.ndarray, records: pa.StructArray, is_user: np.ndarray):
        content = records.field("message").field("content")
        if shape == "string":
            self._strings(rows, content, is_user)
        else:
            self._lists(shape, rows, content, is_user)

    def _strings(self, rows: np.ndarray, content: pa.Array, is_user: np.ndarray) -> None:
        """``message.content`` a string: a user message's one text block; an assistant's must be a list."""
        has = _valid(content) & is_user
        n = int(has.sum())
        self.line, self.code = rows[has], np.full(n, _AS_TEXT, dtype=np.int8)
        self.bad, self.tool_use = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        self.bad_rows = rows[_valid(content) & ~is_user]
        self.dropped = (np.zeros(0, dtype=np.int64), pa.nulls(0, _STR))
        self.canonical = _text_blocks(self.code, content.filter(_mask(has)))

    def _lists(self, shape: str, rows: np.ndarray, content: pa.ListArray, is_user: np.ndarray) -> None:
        blocks = pc.list_flatten(content)
        owner = np.asarray(pc.list_parent_indices(content))
        user = is_user[owner]
        kinds = blocks.field("type")
        text, result = _is(kinds, "text"), user & _is(kinds, "tool_result")
        thinking, redacted = ~user & _is(kinds, "thinking"), ~user & _is(kinds, "redacted_thinking")
        tool_use = ~user & _is(kinds, *TOOL_USE_BLOCKS)
        code = np.full(len(blocks), _DROPPED, dtype=np.int8)
        code[text], code[result], code[thinking | redacted], code[tool_use] = _AS_TEXT, _AS_RESULT, _AS_THINKING, _AS_TOOL_USE
        server_result = ~user & np.asarray(pc.fill_null(pc.ends_with(kinds, "_tool_result"), False))
        bad = ~_valid(blocks) | ~_valid(kinds) | server_result
        bad |= text & ~_valid(blocks.field("text"))
        bad |= result & ~_valid(blocks.field("tool_use_id"))
        bad |= thinking & ~_valid(blocks.field("thinking"))
        bad |= tool_use & ~(_valid(blocks.field("id")) & _valid(blocks.field("name")))
        result_content = blocks.field("content")
        # The reference reads a content field only on a tool result: anywhere else it must not be counted.
        bad |= ~result & _valid(result_content)
        dropped = (code == _DROPPED) & _valid(kinds) & ~server_result
        prefix = pa.array(np.where(user, "user block/", "assistant block/")[dropped], _STR)
        labels = pc.binary_join_element_wise(prefix, kinds.filter(_mask(dropped)), "")
        drop_rows = rows[owner[dropped]]
        texts = pc.if_else(_mask(text), blocks.field("text"),
                           pc.if_else(_mask(thinking), blocks.field("thinking"),
                                      pc.if_else(_mask(redacted), pa.scalar("", _TEXT), pa.scalar(None, _TEXT))))
        if shape == "list":   # a tool result's content is a string (or absent): one text part
            parts = pa.ListArray.from_arrays(
                pa.array(np.arange(len(blocks) + 1, dtype=np.int32)),
                pa.StructArray.from_arrays([pa.repeat(pa.scalar("text", _STR), len(blocks)), result_content,
                                            pa.nulls(len(blocks), _STR)], fields=list(PART)))
        else:
            parts, part_bad, part_owner, part_dropped, part_labels = _parts(result_content)
            bad |= np.bincount(part_owner[part_bad], minlength=len(blocks)) > 0
            drop_rows = np.concatenate((drop_rows, rows[owner[part_owner[part_dropped]]]))
            labels = pa.concat_arrays([labels, part_labels])
        self.line, self.code, self.bad, self.tool_use = rows[owner], code, bad, tool_use
        self.bad_rows = np.zeros(0, dtype=np.int64)
        self.dropped = (drop_rows, labels)
        self.canonical = _canonical(code, texts, blocks.field("id"), blocks.field("name"),
                                    blocks.field("tool_use_id"), parts)


def _parts(content: pa.ListArray) -> tuple[pa.ListArray, np.ndarray, np.ndarray, np.ndarray, pa.Array]:
    """A tool result's parts as canonical parts: ``(parts, bad, owner block, dropped, labels of the dropped)``."""
    parts = pc.list_flatten(content)
    owner = np.asarray(pc.list_parent_indices(content))
    kinds = parts.field("type")
    text, media = _is(kinds, "text"), _is(kinds, "image", "document")
    bad = ~_valid(parts) | ~_valid(kinds) | (text & ~_valid(parts.field("text")))
    media_type = pc.coalesce(parts.field("source").field("media_type"), kinds)
    canonical = pa.StructArray.from_arrays([
        pc.if_else(_mask(media), pa.scalar("media", _STR), pa.scalar("text", _STR)),
        pc.if_else(_mask(text), parts.field("text"), pa.scalar(None, _TEXT)),
        pc.if_else(_mask(media), media_type, pa.scalar(None, _STR)),
    ], fields=list(PART))
    dropped = ~text & ~media & _valid(kinds)
    labels = pc.binary_join_element_wise(pa.repeat(pa.scalar("tool_result part/", _STR), int(dropped.sum())),
                                         kinds.filter(_mask(dropped)), "")
    counts = np.asarray(pc.fill_null(pc.list_value_length(content), 0), dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), canonical), bad, owner, dropped, labels


class _Rare:
    """Records whose fields Arrow cannot type, read again by orjson as the reference reads them.

    They are rare and short: a prompt queued mid-turn (``attachment.prompt``,
    a string or a list of blocks), a compaction boundary (its
    ``compactMetadata``) and a compact summary (its text, from a string or a
    list of blocks, :func:`.reference.text_of`). :meth:`columns` gives, per
    record: ``text`` (the prompt's or the summary's), ``prompt`` (a queued
    prompt that is a message), ``trigger`` and ``tokens_before`` (of a
    boundary), ``bad_rare`` (the reference refuses it).
    """

    def __init__(self, lines: _Lines, at: np.ndarray, records: pl.DataFrame):
        n = records.height
        self.text: list[str | None] = [None] * n
        self.trigger: list[str | None] = [None] * n
        self.tokens: list[int | None] = [None] * n
        self.prompt, self.bad = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        which = records.select("row", which=pl.when(_QUEUED).then(pl.lit("queued")).when(_BOUNDARY)
                               .then(pl.lit("boundary")).when(_SUMMARY).then(pl.lit("summary"))).drop_nulls()
        rows = which["row"].to_numpy()
        for row, kind, raw in zip(rows.tolist(), which["which"].to_list(), lines.records(at[rows])):
            try:
                self._read(row, kind, orjson.loads(raw))
            except (*BAD_RECORD, orjson.JSONDecodeError, KeyError, AttributeError):
                self.bad[row] = True

    def _read(self, row: int, kind: str, record: dict[str, Any]) -> None:
        if kind == "queued":
            prompt = record["attachment"].get("prompt")
            if prompt is not None:
                self.text[row], self.prompt[row] = text_of(prompt), True
        elif kind == "boundary":
            meta = record.get("compactMetadata")
            meta = meta if isinstance(meta, dict) else {}
            trigger, tokens = meta.get("trigger"), meta.get("preTokens")
            self.trigger[row] = trigger if isinstance(trigger, str) else None
            self.tokens[row] = tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None
        else:
            self.text[row] = text_of(record["message"].get("content"))

    def columns(self) -> dict[str, pl.Series]:
        return {"text": pl.Series(self.text, dtype=pl.String), "prompt": pl.Series(self.prompt),
                "trigger": pl.Series(self.trigger, dtype=pl.String),
                "tokens_before": pl.Series(self.tokens, dtype=pl.Int64), "bad_rare": pl.Series(self.bad)}


def _canonical(code: np.ndarray, text: pa.Array, ids: pa.Array, names: pa.Array, tool_use_ids: pa.Array,
               parts: pa.ListArray) -> pa.StructArray:
    """Canonical blocks (:data:`..columnar.BLOCK`) without the tool calls' ``input`` (see :func:`_with_inputs`)."""
    return pa.StructArray.from_arrays(
        [_KINDS.take(pa.array(code)), text.cast(_TEXT), ids, names, pa.nulls(len(code), _TEXT), tool_use_ids,
         parts], fields=list(BLOCK))


def _text_blocks(code: np.ndarray, texts: pa.Array) -> pa.StructArray:
    """Canonical blocks of the given codes holding only a text (a text block, a compaction summary)."""
    nothing = pa.nulls(len(code), _STR)
    no_parts = pa.ListArray.from_arrays(pa.array(np.zeros(len(code) + 1, dtype=np.int32)), pa.array([], PART))
    return _canonical(code, texts, nothing, nothing, nothing, no_parts)


def _with_inputs(blocks: pa.StructArray, inputs: pa.Array) -> pa.StructArray:
    """``blocks`` with their ``input`` field replaced."""
    fields = [inputs if f.name == "input" else blocks.field(f.name) for f in BLOCK]
    return pa.StructArray.from_arrays(fields, fields=list(BLOCK))


def _tool_inputs(lines: _Lines, rows: np.ndarray) -> list[list[str]] | None:
    """The compact JSON of each tool call's ``input`` on each of ``rows``, as the reference writes it.

    Arrow cannot give an object's JSON text, so these lines (assistant lines
    with a tool call: short ones) are parsed again by orjson, as the
    reference parses them. None if orjson refuses one (Arrow let it through).
    """
    out = []
    for raw in lines.records(rows):
        try:
            content = orjson.loads(raw)["message"]["content"]
            out.append([orjson.dumps(b.get("input")).decode() for b in content if b.get("type") in TOOL_USE_BLOCKS])
        except (orjson.JSONDecodeError, orjson.JSONEncodeError, KeyError, TypeError, AttributeError):
            return None
    return out


# -- records ----------------------------------------------------------------------------

_FIELDS = {"type": "type", "subtype": "subtype", "uuid": "uuid", "isSidechain": "sidechain", "sessionId": "session",
           "requestId": "request", "timestamp": "timestamp", "cwd": "cwd", "agentId": "agent",
           "isCompactSummary": "compact_summary", "isVisibleInTranscriptOnly": "transcript_only"}


def _record_columns(shape: str, rows: np.ndarray, records: pa.StructArray) -> pa.Table:
    """The fields of each record the state machine reads, under short names, with its batch row."""
    message = records.field("message")
    usage = message.field("usage")
    content = message.field("content")
    columns = {"row": pa.array(rows), **{short: records.field(name) for name, short in _FIELDS.items()},
               "attachment": records.field("attachment").field("type"),
               "has_message": pc.is_valid(message), "msg_id": message.field("id"), "model": message.field("model"),
               "has_usage": pc.is_valid(usage),
               **{column: usage.field(key) for column, key in USAGE_KEYS},
               "cache_write_1h": usage.field("cache_creation").field("ephemeral_1h_input_tokens"),
               "has_content": pc.is_valid(content), "content_is_list": pa.repeat(shape != "string", len(rows))}
    return pa.table(columns)


def _read_batch(sources: list[SourceFile], lines: _Lines, files: np.ndarray) -> list[pl.DataFrame | None] | None:
    """The frame of each of ``files`` (None: declined), or None when Arrow refuses some line of them."""
    array, at = lines.of(files)
    if not len(array):   # only files of blank lines, all declined
        return [None] * len(files)
    file_of = np.searchsorted(files, lines.file_of[at])
    declined = lines.odd[files].copy()
    declined[file_of[np.asarray(pc.match_substring_regex(array, _SURROGATE))]] = True
    if lines.data.find(PRESERVED_MARK) >= 0:   # a compaction kept a segment verbatim: its messages are moved
        declined[file_of[np.asarray(pc.match_substring(array, PRESERVED_MARK.decode()))]] = True
    declined[file_of[_too_deep(lines.data, array)]] = True
    shapes = _parse(lines, array)
    if shapes is None:
        return None
    n = len(array)
    table = pa.concat_tables([_record_columns(shape, rows, recs).filter(_mask(own)) for shape, rows, recs, own in shapes])
    records = cast(pl.DataFrame, pl.from_arrow(table)).sort("row").with_columns(file=pl.Series(file_of), line=pl.Series(lines.line_no[at]))
    is_user = np.asarray(records["type"].eq_missing("user").to_numpy(), dtype=bool)
    blocks = [_Blocks(shape, rows, recs, is_user[rows]) for shape, rows, recs, _ in shapes]
    line = np.concatenate([b.line for b in blocks])
    code = np.concatenate([b.code for b in blocks])
    bad_row = np.bincount(line[np.concatenate([b.bad for b in blocks])], minlength=n) > 0
    bad_row[np.concatenate([b.bad_rows for b in blocks])] = True
    records = records.with_columns(bad_blocks=pl.Series(bad_row), **_Rare(lines, at, records).columns(),
                                   results=pl.Series(np.bincount(line[code == _AS_RESULT], minlength=n)))
    inputs = _inputs_of(lines, at, line, np.concatenate([b.tool_use for b in blocks]))
    if inputs is None:
        return [None] * len(sources)
    canonical = _with_inputs(pa.concat_arrays([b.canonical for b in blocks]), inputs)
    records = _state(records)
    declined |= _declined(records, len(sources))
    return _assemble(sources, records, canonical, line, code, blocks, declined)


def _inputs_of(lines: _Lines, at: np.ndarray, line: np.ndarray, tool_use: np.ndarray) -> pa.Array | None:
    """The ``input`` field of every block: a tool call's compact JSON, null elsewhere."""
    inputs: list[str | None] = [None] * len(line)
    calls = np.flatnonzero(tool_use)
    if not len(calls):
        return pa.nulls(len(line), _TEXT)
    rows = np.unique(line[calls])
    found = _tool_inputs(lines, at[rows])
    if found is None:
        return None
    flat = [text for per_line in found for text in per_line]
    if len(flat) != len(calls):
        return None
    order = calls[np.argsort(line[calls], kind="stable")]
    for i, text in zip(order.tolist(), flat):
        inputs[i] = text
    return pa.array(inputs, _TEXT)


# -- the state machine ------------------------------------------------------------------

_USER, _ASSISTANT = pl.col("type") == "user", pl.col("type") == "assistant"
_QUEUED = (pl.col("type") == "attachment") & pl.col("attachment").eq_missing("queued_command")
_BOUNDARY = (pl.col("type") == "system") & pl.col("subtype").eq_missing("compact_boundary")
_SUMMARY = _USER & pl.col("compact_summary").eq_missing(True)


def _state(records: pl.DataFrame) -> pl.DataFrame:
    """Each record's part in the transcript: ``conv`` (it is or extends a message), ``opens`` (it starts
    one), ``owner`` (the message it is part of, numbered across the batch), ``counted`` (an API call),
    ``usage_row`` (of a message: the row whose usage it keeps).

    The reference's rules, as window expressions per file: a record whose
    uuid came before is a duplicate and is skipped; a call streams from an
    assistant line until a record other than a tool result; an assistant
    line with the streaming call's (message id, request id) extends it; a
    tool result written while it streams is a message of its own after it;
    a call whose key came before is a message, but not another API call, and
    its usage is not counted again; a compaction boundary is a summary
    message, which the compact summary right after it fills in (one without a
    boundary before it is its own). ``talks``: the records the reference
    takes the session's facts from (every message record but a boundary).
    """
    live = ~(pl.col("uuid").is_not_null() & ~pl.col("uuid").is_first_distinct().over("file"))
    transcript_only = _USER & pl.col("transcript_only").fill_null(False) & ~_SUMMARY
    records = records.with_columns(live=live).with_columns(
        conv=pl.col("live") & ((_USER & ~transcript_only) | _ASSISTANT | pl.col("prompt") | _BOUNDARY),
        role=pl.when(_ASSISTANT).then(pl.lit("assistant")).otherwise(pl.lit("user")),
        compaction=_BOUNDARY | _SUMMARY,
    ).with_columns(talks=pl.col("conv") & ~_BOUNDARY)
    conv = records.filter("conv").with_columns(pos=pl.int_range(pl.len(), dtype=pl.Int64))
    is_res = _USER & (pl.col("results") > 0) & ~_SUMMARY
    keyed = _ASSISTANT & pl.col("msg_id").is_not_null()
    conv = conv.with_columns(
        active=pl.when(~is_res).then(_ASSISTANT).forward_fill().over("file").fill_null(False),
        prev_call=pl.when(_ASSISTANT).then("pos").forward_fill().shift(1).over("file"),
        first_key=pl.struct("msg_id", "request").is_first_distinct().over("file", "type"),
    ).with_columns(
        streaming=pl.col("active").shift(1).over("file").fill_null(False),
        prev_id=pl.col("msg_id").gather(pl.col("prev_call")),
        prev_request=pl.col("request").gather(pl.col("prev_call")),
    )
    same_call = (keyed & pl.col("streaming") & (pl.col("msg_id") == pl.col("prev_id")).fill_null(False)
                 & pl.col("request").eq_missing(pl.col("prev_request")))
    fills_boundary = _SUMMARY & _BOUNDARY.shift(1).over("file").fill_null(False)
    conv = conv.with_columns(opens=~same_call & ~fills_boundary).with_columns(
        message=pl.col("opens").cum_sum().cast(pl.Int64) - 1,
        repeated=keyed & pl.col("opens") & ~pl.col("first_key"),
        synthetic=_ASSISTANT & pl.col("model").eq_missing(SYNTHETIC_MODEL),
    ).with_columns(
        owner=pl.when(pl.col("opens") | ~_ASSISTANT).then("message").otherwise(
            pl.when(_ASSISTANT & pl.col("opens")).then("message").forward_fill().over("file")),
        counted=_ASSISTANT & pl.col("opens") & ~pl.col("repeated") & ~pl.col("synthetic"),
        # The call's usage is its last line's that has one; a repeated call's first line has none.
        usage_pos=pl.when(_ASSISTANT & ~pl.col("synthetic") & pl.col("has_usage")
                          & ~(pl.col("opens") & pl.col("repeated"))).then("pos"),
    ).with_columns(usage_row=pl.col("row").gather(pl.col("usage_pos").max().over("owner")))
    keep = ["row", "opens", "owner", "counted", "usage_row", "synthetic"]
    return records.join(conv.select(keep), on="row", how="left").with_columns(pl.col("opens", "counted", "synthetic").fill_null(False))


def _declined(records: pl.DataFrame, n_files: int) -> np.ndarray:
    """Which files have a record the fast path leaves to the reference (refused there, or a rule not ported)."""
    live, conv, talks = pl.col("live"), pl.col("conv"), pl.col("talks")
    over_max = pl.any_horizontal([~pl.col(c).is_between(0, MAX_USAGE) for c in _COUNTERS]).fill_null(False)
    first_sidechain = pl.col("sidechain").filter(talks).first().over("file").eq_missing(True)
    refused = (
        pl.col("type").is_null()
        | (live & (_USER | _ASSISTANT) & ~pl.col("has_message"))
        | (live & _ASSISTANT & ~(pl.col("has_content") & pl.col("content_is_list")))
        | (conv & _USER & ~_SUMMARY & ~pl.col("has_content"))
        | (conv & ~pl.col("compaction") & pl.col("bad_blocks"))
        | (live & pl.col("bad_rare"))
        | (conv & ~pl.col("timestamp").str.contains(ISO_UTC).fill_null(True))
        | (live & _ASSISTANT & ~pl.col("synthetic") & pl.col("has_usage") & over_max)
        | (talks & ~first_sidechain & pl.col("sidechain").eq_missing(True))
    )
    files = records.filter(refused.fill_null(True))["file"].to_numpy()
    out = np.zeros(n_files, dtype=bool)
    out[files] = True
    return out


# -- frames, sessions, reports ------------------------------------------------------------

def _ignored(records: pl.DataFrame, blocks: list[_Blocks]) -> pl.DataFrame:
    """``(file, label, n)``: what the reference counts as ignored in each file (records, dropped blocks and parts)."""
    kind = pl.col("type")
    label = (pl.when(~pl.col("live")).then(kind + " (duplicate uuid)")
             .when(pl.col("conv")).then(pl.lit(None, pl.String))
             .when(_USER).then(pl.lit("user (transcript only)"))
             .when(kind == "system").then("system/" + pl.col("subtype").fill_null("None"))
             .when(kind == "attachment").then("attachment/" + pl.col("attachment").fill_null("None"))
             .when(kind != "assistant").then(kind))
    labels = records.select("file", label=label)
    rows = np.concatenate([b.dropped[0] for b in blocks])
    dropped = pl.DataFrame({"row": rows, "label": pl.Series(pa.concat_arrays([b.dropped[1] for b in blocks]))})
    counted = records.select("row", "file", own_blocks=pl.col("conv") & ~pl.col("compaction"))
    dropped = dropped.join(counted, on="row").filter("own_blocks").select("file", "label")
    both = pl.concat([labels, dropped.cast(labels.schema)]).drop_nulls()
    return both.group_by("file", "label").len()


def _sessions(records: pl.DataFrame, n_files: int) -> pl.DataFrame:
    """What each file says of its session, one row per file (``file`` 0 to n - 1)."""
    talks = pl.col("talks")
    facts = records.group_by("file").agg(
        session=pl.col("session").filter("live").drop_nulls().last(),
        sidechain=pl.col("sidechain").filter(talks).first(),
        agent=pl.col("agent").filter(talks).drop_nulls().last(),
        created=pl.col("timestamp").filter(talks).drop_nulls().first(),
        project=pl.col("cwd").filter(talks & (pl.col("cwd") != "")).first(),
        api_calls=pl.col("counted").sum(),
    )
    # The model of most calls; on a tie, the one called first.
    models = (records.filter(pl.col("counted") & pl.col("model").is_not_null())
              .group_by("file", "model").agg(calls=pl.len(), first=pl.col("row").min())
              .sort("file", "calls", "first", descending=[False, True, False])
              .group_by("file", maintain_order=True).first().select("file", "model"))
    files = pl.DataFrame({"file": np.arange(n_files)}).cast({"file": records.schema["file"]})
    return files.join(facts, on="file", how="left").join(models, on="file", how="left").sort("file")


def _compactions(conv: pl.DataFrame) -> pl.DataFrame:
    """One row per summary message: its ``owner`` (message), ``text``, ``uuid``, ``trigger`` and ``tokens_before``.

    A boundary's message takes the text of the compact summary that fills it
    (none: empty), and its uuid (none: the summary's); a summary without a
    boundary has no trigger.
    """
    return (conv.filter("compaction").group_by("owner", maintain_order=True)
            .agg(pl.col("file").first(), text=pl.col("text").drop_nulls().first().fill_null(""),
                 uuid=pl.col("uuid").drop_nulls().first(), trigger=pl.col("trigger").first(),
                 tokens_before=pl.col("tokens_before").first()))


def _events(compactions: pl.DataFrame, starts: np.ndarray, n_files: int) -> list[list[dict[str, Any]]]:
    """Each file's recorded compactions, as :class:`..base.SessionMeta` lists them."""
    events: list[list[dict[str, Any]]] = [[] for _ in range(n_files)]
    for file, owner, trigger, tokens in compactions.select("file", "owner", "trigger", "tokens_before").rows():
        anchor = owner - int(starts[file])
        events[file].append({"anchor_index": anchor, "trigger": trigger, "tokens_before": tokens,
                             "first_kept_index": None, "trigger_index": anchor, "kept_end_index": None})
    return events


def _meta(src: SourceFile, facts: dict[str, Any], message_ids: list[str | None],
          compactions: list[dict[str, Any]]) -> SessionMeta:
    """The session metadata the reference's ``finish`` gives the file."""
    stem = session_stem(src.path)
    session, subagent = facts["session"], facts["sidechain"] is True and facts["session"] is not None
    meta = SessionMeta(session_id=session if session is not None else stem, model=facts["model"],
                       created_at=parse_timestamp(facts["created"]), api_calls=facts["api_calls"] or 0,
                       message_ids=message_ids, compactions=compactions)
    if subagent:
        meta.parent_session_id, meta.is_subagent = session, True
        meta.session_id = f"{session}/agent-{facts['agent'] or stem.removeprefix('agent-')}"
    meta.project = facts["project"] or project_folder(src.path, meta.is_subagent)
    return meta


def _assemble(sources: list[SourceFile], records: pl.DataFrame, canonical: pa.StructArray, line: np.ndarray,
              code: np.ndarray, blocks: list[_Blocks], declined: np.ndarray) -> list[pl.DataFrame | None]:
    """The frame of every file not declined; each one's source gets its session metadata and report."""
    messages = records.filter("opens")
    n = messages.height
    conv = records.filter("conv")
    # Blocks parsed from a record count for its message; a compaction's and a queued prompt's are made here.
    row_owner = np.full(records.height, n, dtype=np.int64)
    own = conv.filter(~pl.col("compaction"))
    row_owner[own["row"].to_numpy()] = own["owner"].to_numpy()
    owner = np.where(code == _DROPPED, n, row_owner[line])
    prompts = conv.filter("prompt")
    compactions = _compactions(conv)
    made = pa.concat_arrays([
        _text_blocks(np.full(prompts.height, _AS_TEXT, dtype=np.int8), prompts["text"].to_arrow()),
        _text_blocks(np.full(compactions.height, _AS_SUMMARY, dtype=np.int8), compactions["text"].to_arrow())])
    canonical = pa.concat_arrays([canonical, _with_inputs(made, pa.nulls(len(made), _TEXT))])
    owner = np.concatenate((owner, prompts["owner"].to_numpy(), compactions["owner"].to_numpy()))
    words, has_result, has_summary = words_and_flags(canonical, owner, n + 1)
    roles = pa.concat_arrays([messages[ROLE].to_arrow().cast(_STR), pa.array(["user"], _STR)])
    size = serialized_bytes(roles, canonical, owner, n + 1)
    usage_rows = messages["usage_row"]
    # A message without a usage row has no usage; a counter missing from a usage is 0.
    has_usage = usage_rows.is_not_null()
    usage = {c: pl.select(pl.when(has_usage).then(records[c].gather(usage_rows).fill_null(0)))
             .to_series().cast(pl.UInt32, strict=False)   # out of range: only in files declined
             for c in _COUNTERS}
    facts = _sessions(records, len(sources)).rows(named=True)
    file_of = messages["file"].to_numpy()
    ids = messages["uuid"].scatter(compactions["owner"], compactions["uuid"]).to_list()
    counts = np.bincount(file_of, minlength=len(sources))
    starts = np.concatenate(([0], np.cumsum(counts)))
    events = _events(compactions, starts, len(sources))
    metas = [_meta(src, f, ids[starts[k]:starts[k + 1]], events[k]) for k, (src, f) in enumerate(zip(sources, facts))]
    def per_file(values: list[str | None]) -> pl.Series:  # a file-level value on each of its messages
        return pl.Series(values, dtype=pl.String).gather(pl.Series(file_of))

    frame = messages.select(
        session_id=per_file([m.session_id for m in metas]),
        seq=(pl.int_range(pl.len()) - pl.Series(starts[file_of])).cast(pl.UInt32),
        role=pl.col(ROLE),
        words=pl.Series(words[:n]),
        serialized_bytes=pl.Series(size[:n]),
        has_tool_result=pl.Series(has_result[:n]),
        has_summary=pl.Series(has_summary[:n]),
        bash_execution=pl.lit(False),
        **usage,
        recorded_cost=pl.lit(None, pl.Float32),
        source_format=pl.lit(NAME),
        model=pl.col("model").fill_null(per_file([m.model for m in metas])),
        timestamp=parse_timestamps(messages["timestamp"].to_arrow().cast(_STR)),
        file=per_file([str(src.path) for src in sources]),
        line=pl.col("line"),
        refs=refs_column(canonical, owner, n, file_of, [m.project for m in metas]),
    ).cast(cast("dict[Any, pl.DataType]", MESSAGE_SCHEMA))
    ignored = _ignored(records, blocks)
    out: list[pl.DataFrame | None] = [None] * len(sources)
    for k, src in enumerate(sources):
        if declined[k]:
            continue
        src.meta = metas[k]
        out[k] = frame.slice(int(starts[k]), int(counts[k]))
    for k, label, times in ignored.rows():
        if not declined[k]:
            sources[k].report.ignore(NAME, label, times)
    return out
