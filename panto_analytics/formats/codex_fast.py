"""The fast path for Codex rollouts: many files at once, each decoded in one call, its columns built in one pass.

Each file is decoded in one ``Decoder.decode_lines`` call into :class:`_Line`
(the envelope and what the reader uses of its payload; the bulk Codex writes
and never needs is skipped unparsed), then read as :mod:`.codex` reads it,
each message appended straight to the frame's columns (:mod:`.fast_columns`).
A file with anything else is declined whole (None, :func:`.codex.parse` then
reads it): a line not of the shape or not one JSON object per line, a legacy
line, a compaction, a tool input re-serialized, a header past line 1, a
missing or null field, anything the line reader counts as invalid.
``tests/formats/test_codex_fast.py`` checks it against :func:`.codex.parse` and ``reference/codex_lines.py``.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from itertools import chain
from typing import Any

import msgspec
import orjson
import polars as pl
from msgspec import UNSET, UnsetType

from .base import BAD_RECORD, SessionMeta, SourceFile, parse_timestamp, session_stem
from .codex_shapes import LEGACY_ITEMS, MAX_PENDING, NAME, SUMMARY_ITEMS, TEXT_PARTS, is_contextual_fragment, media_type, read_header
from .fast_columns import RESULT, SYSTEM, TEXT, THINKING, TOOL_USE, Columns, read_batch
from .typed import Counter as Count
from .typed import JsonInt as _Int

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
    """The file has something the fast path leaves to :func:`.codex.parse`."""


def read_frames(sources: list[SourceFile]) -> list[pl.DataFrame | None]:
    """The message frame of each clean Codex rollout (its metadata and report as :func:`.codex.parse` gives them), or
    None to leave it to :func:`.codex.parse`."""
    return read_batch(sources, _LINES, NAME, lambda src, records, raw, cols: _File(src, records, raw, cols).read(),
                      (_Decline, *BAD_RECORD))


#: A block: code, text, id, name, input, tool_use_id, and a tool result's parts ``(type, text, media_type)``.
_Block = tuple[int, str | None, str | None, str | None, str | None, str | None, list[tuple[str, str | None, str | None]]]
_NO_PARTS: list[tuple[str, str | None, str | None]] = []


class _File:
    """One decoded rollout read as :class:`.codex._Rollout` reads it (a message: ``[line, ts, model, blocks]``)."""

    def __init__(self, src: SourceFile, records: list[_Line], raw: bytes, cols: Columns):
        self.records, self.raw, self.cols = records, raw, cols
        self.meta = SessionMeta(session_id=session_stem(src.file))
        self.ignored: Counter[str] = Counter()
        self.model: str | None = None
        self.models: Counter[str | None] = Counter()
        self.calls = 0
        self.totals: Any = None
        self.before: list[Any] | None = None
        self.assistant: list[Any] | None = None
        self.after: list[Any] | None = None
        # The messages read, appended to the columns at the end: (role, model, timestamp, line), usage, blocks.
        self.rows: list[tuple[str, str | None, Any, int]] = []
        self.usage: list[tuple[int, int, int, int] | None] = []
        self.owner: list[int] = []
        self.blocks: list[_Block] = []
        self.pending = 0               # the first row waiting for a token count
        self.last_assistant = -1       # the row of the last assistant message appended

    def read(self) -> tuple[SessionMeta, Counter[str]]:
        ignored, windowed, seen_meta = self.ignored, False, False
        for lineno, rec in enumerate(self.records, 1):
            kind, payload = rec.type, rec.payload
            if kind is None or kind in _DECLINED:
                raise _Decline
            if kind not in _ENVELOPES:
                ignored[kind] += 1
                continue
            if payload is None or payload is UNSET:
                raise _Decline
            windowed = True
            if kind == "response_item":
                self.item(payload, lineno, rec.timestamp)
            elif kind == "event_msg":
                if payload.type is None:
                    raise _Decline
                if payload.type == "token_count":
                    self.token_count(payload.info)
                else:
                    self.context_window(payload.model_context_window)
                    ignored["event_msg:" + payload.type] += 1
            elif kind == "turn_context":
                if payload.model is not None:
                    self.set_model(payload.model)
                ignored["turn_context"] += 1
            elif seen_meta:
                ignored["session_meta (repeated)"] += 1
            elif lineno != 1:
                raise _Decline
            else:  # the header, read as the line reader reads it
                end = self.raw.find(b"\n")
                try:
                    header = orjson.loads(self.raw[:end] if end >= 0 else self.raw)
                except orjson.JSONDecodeError:
                    raise _Decline from None
                model = read_header(self.meta, header["payload"], parse_timestamp(header.get("timestamp")))
                seen_meta = True
                if model is not None:
                    self.set_model(model)
        self.close_call()
        self.flush()
        meta = self.meta
        meta.api_calls = self.calls if windowed else None
        self.models.pop(None, None)
        if self.models:
            meta.model = self.models.most_common(1)[0][0]
        return meta, ignored

    def set_model(self, model: str) -> None:
        self.model, self.meta.model = model, self.meta.model or model

    def context_window(self, value: Any) -> None:
        if self.meta.context_window is None and isinstance(value, int) and not isinstance(value, bool) and value > 0:
            self.meta.context_window = value

    def token_count(self, info: _Info | None) -> None:
        if info is None:
            self.ignored["event_msg:token_count (no usage)"] += 1
            return
        total = info.total_token_usage
        if total is not None and total == self.totals:
            self.ignored["event_msg:token_count (repeated)"] += 1
            return
        last = info.last_token_usage
        if last is None or last.input_tokens is UNSET or last.output_tokens is UNSET:
            raise _Decline
        inp, cached = last.input_tokens or 0, last.cached_input_tokens or 0
        if cached > inp:
            raise _Decline
        self.context_window(info.model_context_window)
        self.totals = total
        self.calls += 1
        self.close_call()
        # The call's assistant message is the last one since the previous count.
        if self.last_assistant >= self.pending:
            self.usage[self.last_assistant] = (inp - cached, last.output_tokens or 0, cached, 0)
        self.pending = len(self.rows)

    # -- response items --------------------------------------------------------------------------------

    def item(self, item: _Payload, lineno: int, ts: Any) -> None:
        kind = item.type
        if kind in _OUTPUTS:
            if item.call_id is None or item.output is None or item.output is UNSET:
                raise _Decline
            block: _Block = (RESULT, None, None, None, None, item.call_id, self.output_parts(item.output))
            if self.assistant is None:
                if self.before is None:
                    self.before = [lineno, ts, self.model, []]
                self.before[3].append(block)
            else:
                if self.after is None:
                    self.after = [lineno, ts, self.model, []]
                self.after[3].append(block)
            return
        if kind == "message":
            if item.content is None or item.content is UNSET:
                raise _Decline
            role = item.role
            texts = self.texts(item.content, role)
            if role == "assistant":
                self.call([(TEXT, t, None, None, None, None, _NO_PARTS) for t in texts], lineno, ts)
            elif role == "user" and not any(map(is_contextual_fragment, texts)):
                self.message("user", [(TEXT, t, None, None, None, None, _NO_PARTS) for t in texts], lineno, ts)
            elif role in ("developer", "system", "user"):
                self.message("system", [(SYSTEM, t, None, None, None, None, _NO_PARTS) for t in texts], lineno, ts)
            else:
                raise _Decline
        elif kind == "reasoning":
            summary = [] if item.summary is UNSET else item.summary
            if not isinstance(summary, list):
                raise _Decline
            texts = self.texts(summary, None) + self.texts(item.content or [], None)
            self.call([(THINKING, "\n".join(texts), None, None, None, None, _NO_PARTS)], lineno, ts)
        elif kind == "function_call" or kind == "custom_tool_call":
            text = item.arguments if kind == "function_call" else item.input
            if item.name is None or text is None or item.call_id is None:
                raise _Decline
            self.call([(TOOL_USE, None, item.call_id, item.name, text, None, _NO_PARTS)], lineno, ts)
        elif kind is None or kind in _DECLINED_ITEMS:
            raise _Decline
        else:
            self.ignored["response_item:" + kind] += 1

    def texts(self, content: list[_Part], images_in: str | None) -> list[str]:
        """The texts of a content list; images and unknown parts are counted as ignored."""
        out = []
        for part in content:
            text = _text(part)
            if text is not None:
                out.append(text)
            elif part.type == "input_image" or part.type == "output_image":
                self.ignored[f"image in a {images_in or 'content'} message"] += 1
            else:
                self.ignored[f"content part:{part.type}"] += 1
        return out

    def output_parts(self, output: str | list[_Part]) -> list[tuple[str, str | None, str | None]]:
        """A tool output (a string or content items) as result parts."""
        if isinstance(output, str):
            return [("text", output, None)]
        parts: list[tuple[str, str | None, str | None]] = []
        for part in output:
            text = _text(part)
            if text is not None:
                parts.append(("text", text, None))
            elif part.type == "input_image" or part.type == "output_image":
                parts.append(("media", None, media_type(part.image_url)))
            else:
                self.ignored[f"content part:{part.type}"] += 1
        return parts

    # -- grouping ----------------------------------------------------------------------------------------

    def call(self, blocks: list[_Block], lineno: int, ts: Any) -> None:
        if self.assistant is None:
            self.assistant = [lineno, ts, self.model, blocks]
            self.models[self.model] += 1
        else:
            self.assistant[3].extend(blocks)

    def message(self, role: str, blocks: list[_Block], lineno: int, ts: Any) -> None:
        self.close_call()
        self.append(role, [lineno, ts, self.model, blocks])

    def close_call(self) -> None:
        """Append the current call's messages, in order."""
        if self.before is not None:
            self.append("user", self.before)
        if self.assistant is not None:
            self.last_assistant = len(self.rows)
            self.append("assistant", self.assistant)
        if self.after is not None:
            self.append("user", self.after)
        self.before = self.assistant = self.after = None

    def append(self, role: str, msg: list[Any]) -> None:
        row = len(self.rows)
        if row - self.pending >= MAX_PENDING:  # the line reader would let go of them before their count
            raise _Decline
        lineno, ts, model, blocks = msg
        self.rows.append((role, model, ts, lineno))
        self.usage.append(None)
        self.owner.extend([row] * len(blocks))
        self.blocks.extend(blocks)

    def flush(self) -> None:
        """The file's messages and blocks onto the columns, a column at a time."""
        cols, n = self.cols, len(self.rows)
        if not n:
            return
        role, model, ts, line = zip(*self.rows)
        rows: list[tuple[list[Any], Iterable[Any]]] = [
            (cols.role, role), (cols.model, model), (cols.ts, ts), (cols.line, line), (cols.usage, self.usage),
            (cols.bash, [False] * n), (cols.cost, [None] * n), (cols.ts_msg, [None] * n)]
        for col, values in rows:
            col.extend(values)
        if not self.blocks:
            return
        start = len(cols.role) - n
        cols.owner.extend([start + row for row in self.owner] if start else self.owner)
        code, text, ids, names, inputs, tool_use_ids, parts = zip(*self.blocks)
        blocks: list[tuple[list[Any], Iterable[Any]]] = [
            (cols.code, code), (cols.text, text), (cols.ids, ids), (cols.names, names), (cols.inputs, inputs),
            (cols.tool_use_ids, tool_use_ids), (cols.n_parts, map(len, parts))]
        for col, values in blocks:
            col.extend(values)
        flat = list(chain.from_iterable(parts))
        if flat:
            kinds, texts, media = zip(*flat)
            cols.part_kind.extend(kinds)
            cols.part_text.extend(texts)
            cols.part_media.extend(media)


def _text(part: _Part) -> str | None:
    """A text or refusal part's text (declined where it has none); None for any other part."""
    key = TEXT_PARTS.get(part.type) if part.type is not None else None
    if key is None:
        return None
    text = part.text if key == "text" else part.refusal
    if text is None:
        raise _Decline
    return text
