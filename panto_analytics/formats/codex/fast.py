"""The fast path for Codex rollouts: many files at once, each decoded in one call, its columns built in one pass.

Each file is decoded in one ``Decoder.decode_lines`` call into :class:`_Line`
(the envelope and what the reader uses of its payload; the bulk Codex writes
and never needs is skipped unparsed), then read as :mod:`.reader` reads it,
each message appended straight to the frame's columns (:mod:`.fast_columns`).
A file with anything else is declined whole (None, :func:`.reader.parse` then
reads it): a line not of the shape or not one JSON object per line, a legacy
line, a compaction, a tool input re-serialized, a header past line 1, a
missing or null field, anything the line reader counts as invalid.
``tests/formats/test_codex_fast.py`` checks it against :func:`.reader.parse` and ``reference/codex_lines.py``.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from itertools import chain
from operator import attrgetter
from typing import Any

import msgspec
import orjson
import polars as pl
from msgspec import UNSET, UnsetType

from ..contract import SessionMeta, SourceFile
from ..fast_columns import RESULT, SYSTEM, TEXT, THINKING, TOOL_USE, Columns, read_batch
from ..record_fields import BAD_RECORD, parse_timestamp
from ..session_files import session_stem
from ..typed import Counter as Count
from ..typed import JsonInt as _Int
from .shapes import LEGACY_ITEMS, MAX_PENDING, NAME, SUMMARY_ITEMS, TEXT_PARTS, is_contextual_fragment, media_type, read_header

__all__ = ["read_frames"]

class _Part(msgspec.Struct, gc=False):
    """A content part (text, refusal, image) of a message, a reasoning item or a tool output."""

    type: str | None = None
    text: str | None = None
    refusal: str | None = None
    image_url: Any = None


class _Usage(msgspec.Struct, gc=False):
    """A call's ``last_token_usage`` (absent stays ``UNSET`` where the line reader tells absent from null)."""

    input_tokens: Count | None | UnsetType = UNSET
    cached_input_tokens: Count | None = None
    output_tokens: Count | None | UnsetType = UNSET


class _Info(msgspec.Struct, gc=False):
    """A token count's ``info``: its totals compared whole (integers orjson reads as such)."""

    total_token_usage: dict[str, _Int] | None = None
    last_token_usage: _Usage | None = None
    model_context_window: _Int | None = None


class _Payload(msgspec.Struct, gc=False):
    """An envelope's payload: a response item, an event or a turn context (absent ``UNSET`` where it matters)."""

    type: str | None = None
    role: str | None = None
    content: list[_Part] | None | UnsetType = UNSET
    summary: list[_Part] | str | None | UnsetType = UNSET  # a turn_context's is a setting ("auto")
    name: str | None = None
    arguments: str | None = None  # a function call's (any other JSON: the line reader's)
    input: str | None = None
    call_id: str | None = None
    output: str | list[_Part] | None | UnsetType = UNSET  # the old ``{content, success}``: the line reader's
    info: _Info | None = None
    model_context_window: _Int | None = None
    model: str | None = None


class _Line(msgspec.Struct, gc=False):
    """A rollout line: the envelope."""

    type: str | None = None
    timestamp: str | int | float | bool | None = None
    payload: _Payload | None | UnsetType = UNSET


_LINES = msgspec.json.Decoder(_Line)
#: Top-level types the fast path leaves to the line reader: legacy lines and compactions.
_DECLINED = frozenset({"compacted"}) | LEGACY_ITEMS | SUMMARY_ITEMS
#: Response items left to the line reader: compactions, inputs it re-serializes, agent messages.
_DECLINED_ITEMS = SUMMARY_ITEMS | {"local_shell_call", "web_search_call", "tool_search_call", "tool_search_output", "agent_message"}
_ENVELOPES = frozenset({"response_item", "event_msg", "turn_context", "session_meta"})
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})


class _Decline(Exception):
    """The file has something the fast path leaves to :func:`.reader.parse`."""


def read_frames(sources: list[SourceFile]) -> list[pl.DataFrame | None]:
    """The message frame of each clean Codex rollout (its metadata and report as :func:`.reader.parse` gives them), or
    None to leave it to :func:`.reader.parse`."""
    return read_batch(sources, _LINES, NAME, _read_file, (_Decline, *BAD_RECORD))


#: A block: code, text, id, name, input, tool_use_id, and a tool result's parts ``(type, text, media_type)``.
_Block = tuple[int, str | None, str | None, str | None, str | None, str | None, list[tuple[str, str | None, str | None]]]
#: A message being gathered: its line, timestamp (as recorded), model and blocks.
_Message = tuple[int, Any, str | None, list[_Block]]
_NO_PARTS: list[tuple[str, str | None, str | None]] = []


def _read_file(src: SourceFile, records: list[_Line], raw: bytes, cols: Columns) -> tuple[SessionMeta, Counter[str]]:
    """One decoded rollout read as :class:`.reader._Rollout` reads it, its messages appended to ``cols``.

    One loop with the state in local variables (the common records handled inline, without a call each): a
    call's messages are gathered as :data:`_Message` (tool results before its first assistant item, its
    assistant message, tool results after it), then appended in that order to the file's rows, where they wait
    for the call's token count (``pending``: the first row without one).
    """
    meta = SessionMeta(session_id=session_stem(src.file))
    ignored: Counter[str] = Counter()
    models: Counter[str | None] = Counter()   # assistant messages per model
    model: str | None = None
    calls, totals, windowed, seen_meta = 0, None, False, False
    before: _Message | None = None
    assistant: _Message | None = None
    after: _Message | None = None
    # The file's messages: (role, model, timestamp, line), their usage, and their blocks with each one's row
    # in the batch (the file's rows follow those of the files before it: ``first``).
    first = cols.rows
    rows: list[tuple[str, str | None, Any, int]] = []
    usage: list[tuple[int, int, int, int] | None] = []
    owner: list[int] = []
    blocks: list[_Block] = []
    pending, last_assistant = 0, -1   # the first row waiting for a token count; the last assistant message's row

    def append(role: str, msg: _Message) -> None:
        row = len(rows)
        if row - pending >= MAX_PENDING:  # the line reader would let go of them before their count
            raise _Decline
        line, ts, by, content = msg
        rows.append((role, by, ts, line))
        usage.append(None)
        owner.extend([first + row] * len(content))
        blocks.extend(content)

    def close_call() -> None:  # the current call's messages appended, in order
        nonlocal before, assistant, after, last_assistant
        if before is not None:
            append("user", before)
        if assistant is not None:
            last_assistant = len(rows)
            append("assistant", assistant)
        if after is not None:
            append("user", after)
        before = assistant = after = None

    def texts(content: list[_Part], images_in: str | None) -> list[str]:  # images and unknown parts: ignored
        out = []
        for part in content:
            if (text_of := _TEXT_OF.get(part.type)) is not None:
                if (text := text_of(part)) is None:   # a text part without: the line reader's error
                    raise _Decline
                out.append(text)
            elif part.type == "input_image" or part.type == "output_image":
                ignored[f"image in a {images_in or 'content'} message"] += 1
            else:
                ignored[f"content part:{part.type}"] += 1
        return out

    for lineno, rec in enumerate(records, 1):
        kind, payload = rec.type, rec.payload
        if not payload:   # None or UNSET (a Struct is true): an envelope's declines, another record is ignored
            if kind is None or kind in _DECLINED or kind in _ENVELOPES:
                raise _Decline
            ignored[kind] += 1
            continue
        if kind == "response_item":
            windowed = True
            item = payload.type
            if item == "custom_tool_call_output" or item == "function_call_output":
                output = payload.output
                if payload.call_id is None or output is None or output is UNSET:
                    raise _Decline
                block: _Block = (RESULT, None, None, None, None, payload.call_id,
                                 [("text", output, None)] if isinstance(output, str) else _output_parts(output, ignored))
                if assistant is None:
                    if before is None:
                        before = (lineno, rec.timestamp, model, [block])
                    else:
                        before[3].append(block)
                elif after is None:
                    after = (lineno, rec.timestamp, model, [block])
                else:
                    after[3].append(block)
                continue
            if item == "reasoning":
                summary = payload.summary
                if summary is UNSET:
                    summary = []
                elif not isinstance(summary, list):
                    raise _Decline
                found = texts(summary, None) if summary else []
                if payload.content:
                    found += texts(payload.content, None)
                block = (THINKING, "\n".join(found), None, None, None, None, _NO_PARTS)
            elif item == "custom_tool_call" or item == "function_call":
                text = payload.input if item == "custom_tool_call" else payload.arguments
                if payload.name is None or text is None or payload.call_id is None:
                    raise _Decline
                block = (TOOL_USE, None, payload.call_id, payload.name, text, None, _NO_PARTS)
            elif item == "message":
                content = payload.content
                if content is None or content is UNSET:
                    raise _Decline
                role = payload.role
                found = texts(content, role)
                new: list[_Block]
                if role == "assistant":
                    new = [(TEXT, t, None, None, None, None, _NO_PARTS) for t in found]
                    if assistant is None:
                        assistant = (lineno, rec.timestamp, model, new)
                        models[model] += 1
                    else:
                        assistant[3].extend(new)
                    continue
                if role == "user" and not any(map(is_contextual_fragment, found)):
                    new = [(TEXT, t, None, None, None, None, _NO_PARTS) for t in found]
                elif role in ("developer", "system", "user"):
                    role = "system"
                    new = [(SYSTEM, t, None, None, None, None, _NO_PARTS) for t in found]
                else:
                    raise _Decline
                close_call()
                append(role, (lineno, rec.timestamp, model, new))
                continue
            elif item is None or item in _DECLINED_ITEMS:
                raise _Decline
            else:
                ignored["response_item:" + item] += 1
                continue
            # A model output of the call (reasoning, a tool call): onto its assistant message.
            if assistant is None:
                assistant = (lineno, rec.timestamp, model, [block])
                models[model] += 1
            else:
                assistant[3].append(block)
        elif kind == "event_msg":
            windowed = True
            event = payload.type
            if event == "token_count":
                info = payload.info
                if info is None:
                    ignored["event_msg:token_count (no usage)"] += 1
                    continue
                total = info.total_token_usage
                if total is not None and total == totals:
                    ignored["event_msg:token_count (repeated)"] += 1
                    continue
                last = info.last_token_usage
                if last is None or last.input_tokens is UNSET or last.output_tokens is UNSET:
                    raise _Decline
                inp, cached = last.input_tokens or 0, last.cached_input_tokens or 0
                if cached > inp:
                    raise _Decline
                _context_window(meta, info.model_context_window)
                totals = total
                calls += 1
                if before is not None or assistant is not None or after is not None:
                    close_call()
                # The call's assistant message is the last one since the previous count.
                if last_assistant >= pending:
                    usage[last_assistant] = (inp - cached, last.output_tokens or 0, cached, 0)
                pending = len(rows)
            elif event is None:
                raise _Decline
            else:
                _context_window(meta, payload.model_context_window)
                ignored["event_msg:" + event] += 1
        elif kind == "turn_context":
            windowed = True
            if payload.model is not None:
                model, meta.model = payload.model, meta.model or payload.model
            ignored["turn_context"] += 1
        elif kind == "session_meta":
            windowed = True
            if seen_meta:
                ignored["session_meta (repeated)"] += 1
                continue
            if lineno != 1:
                raise _Decline
            # The header, read as the line reader reads it.
            end = raw.find(b"\n")
            try:
                header = orjson.loads(raw[:end] if end >= 0 else raw)
            except orjson.JSONDecodeError:
                raise _Decline from None
            named = read_header(meta, header["payload"], parse_timestamp(header.get("timestamp")))
            seen_meta = True
            if named is not None:
                model, meta.model = named, meta.model or named
        elif kind is None or kind in _DECLINED:
            raise _Decline
        else:
            ignored[kind] += 1
    close_call()
    _flush(cols, rows, usage, owner, blocks)
    meta.api_calls = calls if windowed else None
    models.pop(None, None)
    if models:
        meta.model = models.most_common(1)[0][0]
    return meta, ignored


def _context_window(meta: SessionMeta, value: int | None) -> None:
    """The first context window recorded (``task_started``, ``token_count``) is the session's."""
    if meta.context_window is None and value is not None and value > 0:
        meta.context_window = value


def _output_parts(output: list[_Part], ignored: Counter[str]) -> list[tuple[str, str | None, str | None]]:
    """A tool output's content items as result parts."""
    parts: list[tuple[str, str | None, str | None]] = []
    for part in output:
        if (text_of := _TEXT_OF.get(part.type)) is not None:
            if (text := text_of(part)) is None:
                raise _Decline
            parts.append(("text", text, None))
        elif part.type == "input_image" or part.type == "output_image":
            parts.append(("media", None, media_type(part.image_url)))
        else:
            ignored[f"content part:{part.type}"] += 1
    return parts


def _flush(cols: Columns, rows: list[tuple[str, str | None, Any, int]], usage: list[tuple[int, int, int, int] | None],
           owner: list[int], blocks: list[_Block]) -> None:
    """A file's messages and blocks onto the columns, a column at a time (``owner``: each block's row in them)."""
    n = len(rows)
    if not n:
        return
    role, model, ts, line = zip(*rows)
    columns: list[tuple[list[Any], Iterable[Any]]] = [
        (cols.role, role), (cols.model, model), (cols.ts, ts), (cols.line, line), (cols.usage, usage),
        (cols.bash, [False] * n), (cols.cost, [None] * n), (cols.ts_msg, [None] * n)]
    for col, values in columns:
        col.extend(values)
    if not blocks:
        return
    cols.owner.extend(owner)
    code, text, ids, names, inputs, tool_use_ids, parts = zip(*blocks)
    columns = [(cols.code, code), (cols.text, text), (cols.ids, ids), (cols.names, names), (cols.inputs, inputs),
               (cols.tool_use_ids, tool_use_ids), (cols.n_parts, map(len, parts))]
    for col, values in columns:
        col.extend(values)
    flat = list(chain.from_iterable(parts))
    if flat:
        kinds, texts, media = zip(*flat)
        cols.part_kind.extend(kinds)
        cols.part_text.extend(texts)
        cols.part_media.extend(media)


#: The text of a text or refusal part, by the part's type.
_TEXT_OF: dict[str | None, Callable[[_Part], str | None]] = {kind: attrgetter(key) for kind, key in TEXT_PARTS.items()}
