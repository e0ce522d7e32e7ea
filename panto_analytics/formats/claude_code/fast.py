"""The fast path for Claude Code transcripts: many files at once, decoded typed, the state machine as window expressions.

Each file's lines are decoded in one call (``Decoder.decode_lines``) into
the record shapes declared once in :mod:`.shapes` (``msgspec.Struct``s that
hold only the fields the reader uses; a tool call's input as raw JSON
bytes). A file with a line that does not fit them (not JSON, not an object,
a field of another type, a counter out of range, a block or part that is not
an object) is declined whole: :mod:`.reader` reads it and names the file and
line of a bad record, or counts the skips. The decoded records of every file
are turned into columns (one pass over records and blocks) and canonical
blocks.

The transcript state machine of :mod:`.reader` (API calls streamed over
several lines and merged, tool results written while a call streams,
duplicate records, repeated calls, synthetic messages, compaction
boundaries filled by their summaries, prompts queued mid-turn) then runs
as window expressions over the records of every file at once, and the
blocks of all messages are counted by :mod:`..columnar`, as for canonical
files. A tool call's input is counted as its compact JSON (the raw bytes
serialized again, as :mod:`.reader` serializes the parsed value).

What the fast path does not handle, it declines (returns None for the
file), and :mod:`.reader` reads the file: a compaction's preserved segment,
sidechain records inside a main transcript, server tool results, invalid
records or blocks, timestamps other than ISO UTC, lines that do not start
with ``{``, invalid UTF-8. msgspec refuses what orjson (the line-by-line
reader's parser) refuses, lone surrogate escapes and nesting deeper than
orjson parses included; a number beyond a double (``1e400``) in a field the
reader does not declare, which orjson refuses and msgspec skips, is found
first (:func:`..typed.beyond_double`).
``tests/formats/test_claude_code_fast.py`` checks the frame, the
session metadata and the report against :mod:`.reader`, on the fixtures,
synthetic and real transcripts, files broken one way each and random
mutations.
"""
from __future__ import annotations

import sys
from typing import Any, cast

import msgspec
import numpy as np
import orjson
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from ...frame.schema import MAX_USAGE, MESSAGE_SCHEMA, ROLE, USAGE_COLUMNS
from ...frame.tool_targets import refs_column
from ..blocks import block_words
from ..columnar import BLOCK, PART, iso_utc, parse_timestamps, read_together, serialized_bytes, words_and_flags
from ..contract import SessionMeta, SourceFile
from ..fast_columns import strings
from ..gc_pause import gc_paused
from ..record_fields import BAD_RECORD, parse_timestamp
from ..session_files import session_stem
from ..typed import DEEP, beyond_double_spans
from .shapes import Message, Record, Usage, counted_usage, decode_file
from .vocabulary import NAME, PRESERVED_MARK, RESTORED_ATTACHMENTS, SYNTHETIC_MODEL, TOOL_USE_BLOCKS, project_folder, text_of

__all__ = ["read_frames"]

_STR = pa.string()
_TEXT = pa.large_string()
#: The counters a usage row carries into the frame.
_COUNTERS = (*USAGE_COLUMNS, "cache_write_1h")

#: Canonical block types by their codes.
_KIND_NAMES = ("text", "thinking", "tool_use", "tool_result", "compaction_summary")
_AS_TEXT, _AS_THINKING, _AS_TOOL_USE, _AS_RESULT, _AS_SUMMARY = range(5)
_TOOL_USES = frozenset(TOOL_USE_BLOCKS)
_MEDIA = frozenset({"image", "document"})


def read_frames(sources: list[SourceFile]) -> list[pl.DataFrame | None]:
    """The message frame of each clean transcript, or None to leave it to :func:`.reader.parse`.

    Each accepted source gets the session metadata and the report entries
    the line-by-line reader would have given it.
    """
    data, spans = read_together(sources)
    frames: list[pl.DataFrame | None] = [None] * len(sources)
    good = [k for k, span in enumerate(spans) if span is not None]
    if not good:
        return frames
    bounds = [cast("tuple[int, int]", spans[k]) for k in good]
    lines = _lines(data, bounds)
    preserved = data.find(PRESERVED_MARK) >= 0
    deep = sys.getrecursionlimit() > DEEP
    beyond = beyond_double_spans(data, bounds)
    decoded: list[tuple[int, list[Record], np.ndarray]] = []
    with memoryview(data) as view, gc_paused():
        for k, (start, end), numbers, odd in zip(good, bounds, lines, beyond):
            if numbers is None or (preserved and data.find(PRESERVED_MARK, start, end) >= 0) or odd:
                continue   # a line the reader judges (a number orjson refuses); a compaction kept a segment verbatim
            records = decode_file(view[start:end])
            if isinstance(records, str) or len(records) != len(numbers):
                continue
            if deep and any(line.count(b"[") + line.count(b"{") >= DEEP for line in bytes(view[start:end]).split(b"\n")):
                continue
            decoded.append((k, records, numbers))
    if not decoded:
        return frames
    taken = [k for k, _, _ in decoded]
    for k, frame in zip(taken, _read([sources[k] for k in taken], decoded)):
        frames[k] = frame
    return frames


def _lines(data: bytearray, spans: list[tuple[int, int]]) -> list[np.ndarray | None]:
    """The numbers of each file's non-blank lines; None for a file with none, or with a line that does not start
    with ``{`` and end with ``}`` (the line-by-line reader judges those: whitespace, a carriage return, a JSON
    value that is not an object, pretty-printed JSON, a record over two lines).

    :meth:`msgspec.json.Decoder.decode_lines` needs no line break between two
    records, but inside a JSON value a line break can follow ``}`` only before
    ``,``, ``}`` or ``]``, never before ``{`` (blank lines between change
    nothing), and a string holds no raw line break: so each such line holds
    whole records, and a file that decodes into as many records as it has
    non-blank lines holds one a line, as the line-by-line reader reads it.

    >>> _lines(bytearray(b'{}\\n\\n{}\\n{}\\n {}\\n\\n{"a":\\n{}}\\n{}\\r\\n'), [(0, 7), (7, 14), (14, 15), (15, 25),
    ...                                                                      (25, 29)])
    [array([1, 3]), None, None, None, None]
    """
    raw = np.frombuffer(data, dtype=np.uint8)
    ends = _newlines(raw)   # every file ends with a newline (read_together)
    starts = np.concatenate(([0], ends[:-1] + 1))
    bounds = np.searchsorted(ends, [spans[0][0], *(end - 1 for _, end in spans)])
    bounds[1:] += 1
    keep = ends > starts
    odd = keep & ((raw[np.minimum(starts, len(raw) - 1)] != 0x7B) | (raw[ends - 1] != 0x7D))   # "{" ... "}"
    # Every file's lines at once: each line's file, the files with an odd line, each kept line's number in its file.
    first, last = int(bounds[0]), int(bounds[-1])
    file_of = np.repeat(np.arange(len(spans)), np.diff(bounds))
    has_odd = np.bincount(file_of[np.flatnonzero(odd[first:last])], minlength=len(spans)) > 0
    kept = np.flatnonzero(keep[first:last])
    numbers = kept + first - bounds[file_of[kept]] + 1
    counts = np.bincount(file_of[kept], minlength=len(spans))
    return [None if bad or not n else part
            for bad, n, part in zip(has_odd.tolist(), counts.tolist(), np.split(numbers, np.cumsum(counts)[:-1]))]


def _newlines(raw: np.ndarray, step: int = 1 << 22) -> np.ndarray:
    """Where the newlines are, found a few MB at a time (a mask of the whole buffer costs more than the search).

    >>> _newlines(np.frombuffer(b"a\\nbc\\n\\n", dtype=np.uint8), step=2).tolist()
    [1, 4, 5]
    """
    found = [np.flatnonzero(raw[at:at + step] == 10) + at for at in range(0, len(raw), step)]
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


# -- records and blocks into columns -------------------------------------------------------

_NO_MESSAGE = Message()
_NO_USAGE = Usage()


class _Columns:
    """The decoded records of a batch as the columns the state machine reads, and their canonical blocks.

    ``records``: one row per record (``row``, its ``file`` and ``line``, the
    fields under short names, and per record: ``bad_blocks`` (its content
    is refused by the line-by-line reader), ``results`` (its tool results),
    ``text``, ``prompt``, ``trigger``, ``tokens_before`` and ``bad_rare`` (a
    queued prompt, a boundary, a compact summary: see :meth:`_rare`)).
    ``canonical``: the canonical blocks (:data:`..columnar.BLOCK`) of every
    record, ``line`` the row of each, ``code`` its canonical type;
    ``dropped``: ``(row, label)`` of each block or part dropped and counted
    under that label.
    """

    def __init__(self, decoded: list[tuple[int, list[Record], np.ndarray]]):
        recs = [r for _, rs, _ in decoded for r in rs]
        n = len(recs)
        self.n = n
        has_message = [r.message is not None for r in recs]
        msgs = [m if (m := r.message) is not None else _NO_MESSAGE for r in recs]
        has_usage = [m.usage is not None for m in msgs]
        # A usage with iterations may count them (counted_usage); the rest, nearly all, as they are.
        usages = [(counted_usage(u) if u.iterations else u) if (u := m.usage) is not None else _NO_USAGE for m in msgs]
        contents = [m.content for m in msgs]
        self.bad = np.zeros(n, dtype=bool)
        self.text: list[str | None] = [None] * n
        self.prompt = np.zeros(n, dtype=bool)
        self.trigger: list[str | None] = [None] * n
        self.tokens: list[int | None] = [None] * n
        self.bad_rare = np.zeros(n, dtype=bool)
        self.failed = False
        self._blocks(recs, contents)
        self._rare(recs, contents)
        self.records = pl.DataFrame({
            "row": np.arange(n),
            "type": pl.Series([r.type for r in recs], dtype=pl.String),
            "subtype": pl.Series([r.subtype for r in recs], dtype=pl.String),
            "uuid": pl.Series([r.uuid for r in recs], dtype=pl.String),
            "sidechain": pl.Series([r.isSidechain for r in recs], dtype=pl.Boolean),
            "session": pl.Series([r.sessionId for r in recs], dtype=pl.String),
            "request": pl.Series([r.requestId for r in recs], dtype=pl.String),
            "timestamp": pl.Series([r.timestamp for r in recs], dtype=pl.String),
            "cwd": pl.Series([r.cwd for r in recs], dtype=pl.String),
            "agent": pl.Series([r.agentId for r in recs], dtype=pl.String),
            "compact_summary": pl.Series([r.isCompactSummary for r in recs], dtype=pl.Boolean),
            "transcript_only": pl.Series([r.isVisibleInTranscriptOnly for r in recs], dtype=pl.Boolean),
            "attachment": pl.Series([a.type if (a := r.attachment) is not None else None for r in recs], dtype=pl.String),
            "has_message": pl.Series(has_message, dtype=pl.Boolean),
            "msg_id": pl.Series([m.id for m in msgs], dtype=pl.String),
            "model": pl.Series([m.model for m in msgs], dtype=pl.String),
            "has_usage": pl.Series(has_usage, dtype=pl.Boolean),
            "input": pl.Series([u.input_tokens for u in usages], dtype=pl.Int64),
            "output": pl.Series([u.output_tokens for u in usages], dtype=pl.Int64),
            "cache_read": pl.Series([u.cache_read_input_tokens for u in usages], dtype=pl.Int64),
            "cache_write": pl.Series([u.cache_creation_input_tokens for u in usages], dtype=pl.Int64),
            "cache_write_1h": pl.Series([s.ephemeral_1h_input_tokens if (s := u.cache_creation) is not None else None
                                         for u in usages], dtype=pl.Int64),
            "has_content": pl.Series([c is not None for c in contents], dtype=pl.Boolean),
            "content_is_list": pl.Series([isinstance(c, list) for c in contents], dtype=pl.Boolean),
            "file": np.repeat(np.arange(len(decoded)), [len(rs) for _, rs, _ in decoded]),
            "line": np.concatenate([lines for _, _, lines in decoded]),
            "bad_blocks": self.bad,
            "text": pl.Series(self.text, dtype=pl.String),
            "prompt": self.prompt,
            "trigger": pl.Series(self.trigger, dtype=pl.String),
            "tokens_before": pl.Series(self.tokens, dtype=pl.Int64),
            "bad_rare": self.bad_rare,
            "results": np.bincount(self.line[self.code == _AS_RESULT], minlength=n),
        })

    def _blocks(self, recs: list[Record], contents: list[Any]) -> None:
        """Every content block as a canonical block, with the verdict of the line-by-line reader's checks.

        Each block is gathered as one tuple ``(row, code, text, id, name, tool_use_id, parts)`` (a part as
        ``(kind, text, media)``), the columns taken apart once at the end: one append a block, not seven.
        """
        blocks: list[tuple[int, int, str | None, str | None, str | None, str | None, int]] = []
        parts: list[tuple[str, str | None, str | None]] = []
        drop_rows: list[int] = []
        labels: list[str] = []
        bad: list[int] = []
        calls: list[int] = []
        raw_inputs: list[msgspec.Raw] = []
        block, part = blocks.append, parts.append
        for row, (rec, content) in enumerate(zip(recs, contents)):
            if content is None:
                continue
            user = rec.type == "user"
            if isinstance(content, str):
                if not user:
                    bad.append(row)     # an assistant's content must be a list
                    continue
                block((row, _AS_TEXT, content, None, None, None, 0))
                continue
            for b in content:
                kind = b.type
                result = b.content
                if kind == "text":
                    value = b.text
                    if value is None or result is not None:
                        bad.append(row)
                    block((row, _AS_TEXT, value, None, None, None, 0))
                elif kind == "tool_result" and user:
                    if b.tool_use_id is None:
                        bad.append(row)
                    if result is None:
                        k = 0
                    elif isinstance(result, str):
                        k = 1
                        part(("text", result, None))
                    else:
                        k = 0
                        for p in result:
                            pk = p.type
                            if pk == "text":
                                if p.text is None:
                                    bad.append(row)
                                part(("text", p.text, None))
                                k += 1
                            elif pk in _MEDIA:
                                media = p.source.media_type if p.source is not None else None
                                part(("media", None, media if media is not None else pk))
                                k += 1
                            elif pk is None:
                                bad.append(row)
                            else:
                                drop_rows.append(row)
                                labels.append("tool_result part/" + pk)
                    block((row, _AS_RESULT, None, None, None, b.tool_use_id, k))
                elif user:
                    # A block with no libpanto equivalent (an image outside a tool result, ...): dropped, counted.
                    if kind is None or result is not None:
                        bad.append(row)
                    else:
                        drop_rows.append(row)
                        labels.append("user block/" + kind)
                elif kind == "thinking" or kind == "redacted_thinking":
                    value = b.thinking if kind == "thinking" else ""
                    if value is None or result is not None:
                        bad.append(row)
                    block((row, _AS_THINKING, value, None, None, None, 0))
                elif kind in _TOOL_USES:
                    if b.id is None or b.name is None or result is not None:
                        bad.append(row)
                    calls.append(len(blocks))
                    raw_inputs.append(b.input)
                    block((row, _AS_TOOL_USE, None, b.id, b.name, None, 0))
                elif kind is None or kind.endswith("_tool_result") or result is not None:
                    bad.append(row)     # a server tool's result (in the assistant message itself): the reader's
                else:
                    drop_rows.append(row)
                    labels.append("assistant block/" + kind)
        self.bad[bad] = True
        line, code, text, ids, names, tool_use_ids, n_parts = zip(*blocks) if blocks else ((),) * 7
        part_kind, part_text, part_media = zip(*parts) if parts else ((),) * 3
        self.line = np.array(line, dtype=np.int64)
        self.code = np.array(code, dtype=np.int8)
        offsets = np.zeros(len(n_parts) + 1, dtype=np.int32)
        np.cumsum(n_parts, out=offsets[1:])
        arrays = pa.StructArray.from_arrays([strings(part_kind, _STR), strings(part_text, _TEXT),
                                             strings(part_media, _STR)], fields=list(PART))
        self.canonical = pa.StructArray.from_arrays(
            [_KINDS.take(_arrow(pl.Series(self.code, dtype=pl.Int8))), strings(text, _TEXT), strings(ids, _STR),
             strings(names, _STR), self._inputs(len(code), calls, raw_inputs), strings(tool_use_ids, _STR),
             pa.ListArray.from_arrays(_arrow(pl.Series(offsets)), arrays)], fields=list(BLOCK))
        self.dropped = pl.DataFrame({"row": pl.Series(drop_rows, dtype=pl.Int64), "label": pl.Series(labels, dtype=pl.String)})

    def _inputs(self, n: int, calls: list[int], raw: list[msgspec.Raw]) -> pa.Array:
        """The ``input`` of ``n`` blocks: a tool call's compact JSON (as orjson serializes its value), null elsewhere.

        The raw inputs are parsed in one call, as the items of one JSON array
        (one by one where that fails: an input nested as deep as orjson
        allows, or one it refuses), and that array is serialized again in one
        call. Where it comes back byte for byte (as in every real recording:
        the agent writes compact JSON), so does each item, each between the
        same top-level commas, and the raw bytes are each input's compact
        JSON as they are; otherwise each is serialized again on its own.
        """
        joined = b"[" + b",".join(raw) + b"]"
        compact: list[bytes] | None = None
        values: list[Any] = []
        try:
            try:
                values = orjson.loads(joined)
                same = len(values) == len(raw) and orjson.dumps(values) == joined
            except orjson.JSONDecodeError:
                values, same = [orjson.loads(bytes(value)) for value in raw], False
            if not same:
                compact = [orjson.dumps(value) for value in values]
        except (orjson.JSONDecodeError, orjson.JSONEncodeError):   # msgspec let it through (1e400): the reader refuses it
            self.failed = True
            raw, compact = [], []
        del values
        at = np.full(n, -1, dtype=np.int64)
        at[calls[:len(raw)]] = np.arange(len(raw))
        if compact is None:   # the raw bytes, end to end, cut where each input ends
            lengths = np.fromiter(map(len, raw), dtype=np.int64, count=len(raw))
            offsets = np.zeros(len(raw) + 1, dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
            texts = pa.Array.from_buffers(_TEXT, len(raw), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(raw))])
        else:
            texts = pa.array(compact, pa.large_binary()).view(_TEXT)   # orjson writes UTF-8
        return texts.take(pa.array(at, mask=at < 0))

    def _rare(self, recs: list[Record], contents: list[Any]) -> None:
        """The fields of the rare records, read as :mod:`.reader` reads them: a prompt queued mid-turn (its
        text), a compaction boundary (``compactMetadata``'s trigger and tokens), a compact summary (its text)."""
        for row, rec in enumerate(recs):
            kind = rec.type
            if kind == "attachment":
                att = rec.attachment
                if att is None or att.type != "queued_command" or att.prompt is None:
                    continue
                try:
                    self.text[row], self.prompt[row] = text_of(att.prompt), True
                except BAD_RECORD:
                    self.bad_rare[row] = True
            elif kind == "system":
                if rec.subtype != "compact_boundary":
                    continue
                meta = rec.compactMetadata
                meta = meta if isinstance(meta, dict) else {}
                trigger, tokens = meta.get("trigger"), meta.get("preTokens")
                self.trigger[row] = trigger if isinstance(trigger, str) else None
                # orjson reads an integer beyond [-2**63, 2**64) as a float (no count); Int64 ends at 2**63 - 1
                if not isinstance(tokens, int) or isinstance(tokens, bool) or not -(1 << 63) <= tokens < 1 << 64:
                    tokens = None
                elif tokens >= 1 << 63:
                    tokens, self.bad_rare[row] = None, True   # Int64 holds no such count: :mod:`.reader` reads it
                self.tokens[row] = tokens
            elif kind == "user" and rec.isCompactSummary is True:
                content = contents[row]
                if isinstance(content, str):
                    self.text[row] = content
                elif isinstance(content, list):
                    self.text[row] = "\n".join(b.text for b in content if b.type == "text" and b.text is not None)
                else:
                    self.bad_rare[row] = True   # no message, or no content: the reader refuses it


def _arrow(series: pl.Series) -> pa.Array:
    """A Polars series as one Arrow array (Polars converts without loading pandas, as ``pa.array`` does)."""
    return series.to_arrow()


#: Canonical block types by code.
_KINDS = strings(list(_KIND_NAMES), _STR)


def _read(sources: list[SourceFile], decoded: list[tuple[int, list[Record], np.ndarray]]) -> list[pl.DataFrame | None]:
    """The frame of each decoded file (None: declined)."""
    with gc_paused():
        columns = _Columns(decoded)
    if columns.failed:
        return [None] * len(sources)
    records = _state(columns.records)
    declined = _declined(records, len(sources))
    return _assemble(sources, records, columns.canonical, columns.line, columns.dropped, declined)


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
    carries no usage: the call's first message has the usage of its last line
    that has one (each call billed once, with its final usage); a compaction boundary is a summary
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
        usage_pos=pl.when(_ASSISTANT & ~pl.col("synthetic") & pl.col("has_usage")).then("pos"),
    ).with_columns(
        # A call is billed once: its usage is its last line's that has one, wherever that line is (other messages
        # may come between its lines), and it goes to the call's first message; a keyed call's later messages
        # (``repeated``) carry none.
        billed=pl.when(keyed).then(pl.col("owner").first().over("file", "type", "msg_id", "request"))
        .otherwise("owner"),
    ).with_columns(usage_row=pl.when(~pl.col("repeated")).then(
        pl.col("row").gather(pl.col("usage_pos").max().over("billed"))))
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
        | (conv & ~iso_utc(pl.col("timestamp")).fill_null(True))
        | (live & _ASSISTANT & ~pl.col("synthetic") & pl.col("has_usage") & over_max)
        | (talks & ~first_sidechain & pl.col("sidechain").eq_missing(True))
        # a file re-attached after a compaction: the reader records it on the compaction
        | (live & (pl.col("type") == "attachment") & pl.col("attachment").is_in(list(RESTORED_ATTACHMENTS))
           & _BOUNDARY.any().over("file"))
    )
    files = records.filter(refused.fill_null(True))["file"].to_numpy()
    out = np.zeros(n_files, dtype=bool)
    out[files] = True
    return out


# -- frames, sessions, reports ------------------------------------------------------------

def _text_blocks(code: np.ndarray, texts: pa.Array) -> pa.StructArray:
    """Canonical blocks of the given codes holding only a text (a queued prompt, a compaction summary)."""
    nothing = pa.nulls(len(code), _STR)
    no_parts = pa.ListArray.from_arrays(_arrow(pl.Series(np.zeros(len(code) + 1, dtype=np.int32))),
                                        pa.StructArray.from_arrays([pa.nulls(0, f.type) for f in PART], fields=list(PART)))
    return pa.StructArray.from_arrays(
        [_KINDS.take(_arrow(pl.Series(code, dtype=pl.Int8))), texts.cast(_TEXT), nothing, nothing,
         pa.nulls(len(code), _TEXT), nothing, no_parts], fields=list(BLOCK))


def _ignored(records: pl.DataFrame, dropped: pl.DataFrame) -> pl.DataFrame:
    """``(file, label, n)``: what the reference counts as ignored in each file (records, dropped blocks and parts)."""
    kind = pl.col("type")
    label = (pl.when(~pl.col("live")).then(kind + " (duplicate uuid)")
             .when(pl.col("conv")).then(pl.lit(None, pl.String))
             .when(_USER).then(pl.lit("user (transcript only)"))
             .when(kind == "system").then("system/" + pl.col("subtype").fill_null("None"))
             .when(kind == "attachment").then("attachment/" + pl.col("attachment").fill_null("None"))
             .when(kind != "assistant").then(kind))
    labels = records.select("file", label=label)
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
    """Each file's recorded compactions, as :class:`..contract.SessionMeta` lists them."""
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


def _message_cwds(cwds: pl.Series, owner: np.ndarray) -> pa.Array:
    """The ``cwd`` of the record that opens each block's message (a call's own working directory: the Bash tool
    moves it), null for a block of no message."""
    return cwds.to_arrow().take(pa.array(owner, mask=owner >= len(cwds)))


def _assemble(sources: list[SourceFile], records: pl.DataFrame, canonical: pa.StructArray, line: np.ndarray,
              dropped: pl.DataFrame, declined: np.ndarray) -> list[pl.DataFrame | None]:
    """The frame of every file not declined; each one's source gets its session metadata and report."""
    messages = records.filter("opens")
    n = messages.height
    conv = records.filter("conv")
    # Blocks parsed from a record count for its message; a compaction's and a queued prompt's are made here.
    row_owner = np.full(records.height, n, dtype=np.int64)
    own = conv.filter(~pl.col("compaction"))
    row_owner[own["row"].to_numpy()] = own["owner"].to_numpy()
    owner = row_owner[line]
    prompts = conv.filter("prompt")
    compactions = _compactions(conv)
    made = pa.concat_arrays([
        _text_blocks(np.full(prompts.height, _AS_TEXT, dtype=np.int8), prompts["text"].to_arrow()),
        _text_blocks(np.full(compactions.height, _AS_SUMMARY, dtype=np.int8), compactions["text"].to_arrow())])
    canonical = pa.concat_arrays([canonical, made])
    owner = np.concatenate((owner, prompts["owner"].to_numpy(), compactions["owner"].to_numpy()))
    per_block = block_words(canonical)
    words, has_result, has_summary = words_and_flags(canonical, owner, n + 1, per_block)
    # The words of each tool result of the n messages, in block order, for the refs column.
    result_words = per_block[pc.fill_null(pc.equal(canonical.field("type"), "tool_result"), False).to_numpy(
        zero_copy_only=False) & (owner < n)]
    roles = pa.concat_arrays([messages[ROLE].to_arrow().cast(_STR), strings(["user"], _STR)])
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
        refs=refs_column(canonical, owner, n, file_of, [m.project for m in metas], result_words,
                         _message_cwds(messages["cwd"], owner)),
    ).cast(cast("dict[Any, pl.DataType]", MESSAGE_SCHEMA))
    ignored = _ignored(records, dropped)
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
