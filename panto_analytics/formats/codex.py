"""Codex CLI rollouts (``~/.codex/sessions/**/rollout-*.jsonl``) as libpanto messages.

Two layouts are read:

- current rollouts: one ``{"timestamp", "type", "payload"}`` envelope per line,
  ``type`` one of ``session_meta``, ``turn_context``, ``response_item``,
  ``event_msg`` and ``compacted`` (other types are ignored and counted);
- legacy rollouts (Codex CLI before the envelope): a bare
  ``{"id", "timestamp", "instructions"}`` first line, then bare response items
  and ``{"record_type": "state"}`` markers, and no token counts.

Response items become messages. The assistant items of one model call
(reasoning, text, tool calls) form one assistant message, whose usage is the
call's ``last_token_usage``; a call is what lies between two ``token_count``
events with new totals (repeats are dropped). Tool outputs become
``tool_result`` blocks of user messages. A ``compacted`` record becomes a
``compaction_summary`` message followed by its replacement history. Every rule,
with its reason, is in ``docs/formats.md`` (section Codex).

Each line is decoded into :class:`_Line`, a ``msgspec.Struct`` that declares
what the reader uses of an envelope and its payload (a response item, an
event, a turn context) and nothing else, so the bulk Codex writes and never
needs (``encrypted_content``, rate limits, metadata) is skipped unparsed;
whole chunks of lines decode at once (:class:`.typed.TypedLines`). The typed
rules (``_Rollout.typed``) hand a line back to the plain checks
(``_Rollout.record``, over orjson's dict, whose errors name the file's own
fields) wherever they must decide: a missing or null field, a header, a
compaction, a legacy line, a tool whose input is re-serialized, a line of
another shape. The line-by-line reader, ``reference/codex_lines.py``, is the
differential oracle (``tests/formats/test_codex_differential.py``).
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from typing import Annotated, Any, cast

import msgspec
import orjson
from msgspec import UNSET, UnsetType

from .base import BAD_RECORD, Invalid, Message, Postprocess, ReadFrames, SourceFile, bad_record, parse_timestamp, usage_counter
from .jsonl import json_type, malformed, require_string
from .typed import Fallback, TypedLines

__all__ = ["CONTEXTUAL_USER_FRAGMENTS", "ENVELOPES", "NAME", "is_contextual_fragment", "parse", "postprocess", "read_frames",
           "sniff"]

NAME = "codex"

#: No columnar fast path and no cross-file rules (see :class:`.base.Adapter`).
read_frames: ReadFrames | None = None
postprocess: Postprocess | None = None

#: Top-level record types of the envelope layout.
ENVELOPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})

#: Response items whose payload is a model output of the call (besides assistant messages).
_CALL_ITEMS = frozenset({"reasoning", "function_call", "custom_tool_call", "local_shell_call",
                         "web_search_call", "tool_search_call"})
#: Response items that answer a tool call.
_OUTPUT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output"})
#: Opaque compaction items (the server-side summary): the anchor stands for them.
_SUMMARY_ITEMS = frozenset({"compaction", "compaction_summary", "context_compaction"})
#: Response item types a bare legacy line may have.
_LEGACY_ITEMS = _CALL_ITEMS | _OUTPUT_ITEMS | {"message"}

#: Content parts that carry text, and the key their text is under.
_TEXT_PARTS = {"input_text": "text", "output_text": "text", "text": "text", "summary_text": "text",
               "reasoning_text": "text", "refusal": "refusal"}
_IMAGE_PARTS = frozenset({"input_image", "output_image"})

#: The user-role messages Codex writes itself (openai/codex 07247fbfe770a94b82734c8b268c46fece4ae4ba,
#: ``codex-rs/core/src/contextual_user_message.rs``, ``CONTEXTUAL_USER_FRAGMENTS``): a text part that,
#: trimmed, starts and ends with one of these markers (ASCII case-insensitive) is AGENTS.md instructions,
#: the environment context, a skill, a ``!`` shell command's record, an aborted turn's note, a subagent's
#: notification or editor context, not the person's words. Codex does not count them as user messages
#: (``parse_turn_item``), leaves them out of a compacted history's user messages and inserts them afresh.
CONTEXTUAL_USER_FRAGMENTS = (
    ("# agents.md instructions for ", "</instructions>"), ("<environment_context>", "</environment_context>"),
    ("<skill>", "</skill>"), ("<user_shell_command>", "</user_shell_command>"),
    ("<turn_aborted>", "</turn_aborted>"), ("<subagent_notification>", "</subagent_notification>"),
    ("<additional_context>", "</additional_context>"),
)

#: Messages held back waiting for a token count, at most (only a rollout
#: whose calls record no token count reaches it; memory stays bounded).
_MAX_PENDING = 4096


def sniff(record: Any) -> bool:
    """A Codex rollout line: an envelope, or a legacy header, state marker or bare response item.

    >>> sniff({"timestamp": "t", "type": "session_meta", "payload": {"id": "x"}})
    True
    >>> sniff({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]})
    True
    >>> sniff({"type": "message", "role": "user", "content": [{"type": "text", "text": "hi"}]})
    False
    """
    if not isinstance(record, dict):
        return False
    kind = record.get("type")
    if kind in ENVELOPES:
        return isinstance(record.get("payload"), dict)
    if kind is None:
        return "record_type" in record or ("id" in record and "timestamp" in record)
    if kind == "message":
        content = record.get("content")
        return isinstance(content, list) and any(
            isinstance(p, dict) and (p.get("type") in _IMAGE_PARTS or p.get("type") in ("input_text", "output_text"))
            for p in content)
    return kind in _LEGACY_ITEMS


# -- the record shapes read (only the fields used; the file's own names) --------------------------

#: An integer orjson reads as one (beyond 64 bits it reads a float; from 2**63 the line is read plain).
_Int = Annotated[int, msgspec.Meta(ge=-(1 << 63), le=(1 << 63) - 1)]


class _Part(msgspec.Struct, gc=False):
    """A content part (text, refusal, image) of a message, a reasoning item or a tool output."""

    type: str | None = None
    text: str | None = None
    refusal: str | None = None
    image_url: msgspec.Raw | UnsetType = UNSET  # only its media type is read (a data URL may be megabytes)


class _OldOutput(msgspec.Struct, gc=False):
    """The old tool output object, ``{content, success}``."""

    content: str | list[_Part] | None | UnsetType = UNSET


class _Payload(msgspec.Struct, gc=False):
    """An envelope's payload: a response item, an event or a turn context (absent stays ``UNSET`` where the
    plain checks tell absent from null)."""

    type: str | None = None
    role: str | None = None
    content: list[_Part] | None | UnsetType = UNSET
    summary: list[_Part] | str | None | UnsetType = UNSET  # a turn_context's is a setting ("auto")
    name: str | None = None
    arguments: msgspec.Raw | UnsetType = UNSET  # a string for function_call, any JSON for tool_search_call
    input: str | None = None
    call_id: str | None = None
    output: str | list[_Part] | _OldOutput | None | UnsetType = UNSET
    info: msgspec.Raw | UnsetType = UNSET  # token_count: read plain (its totals are compared whole)
    model_context_window: _Int | None = None
    model: str | None = None


class _Line(msgspec.Struct, gc=False):
    """A rollout line: the envelope (a legacy line declares nothing more and is read plain)."""

    type: str | None = None
    timestamp: str | int | float | bool | None = None
    payload: _Payload | None | UnsetType = UNSET


_LINE = msgspec.json.Decoder(_Line)
_STRING = msgspec.json.Decoder(str)

#: Lines the typed rules leave to the plain checks whole: headers, compactions, legacy lines.
_PLAIN_TYPES = frozenset({"session_meta", "compacted"}) | _LEGACY_ITEMS | _SUMMARY_ITEMS
#: Response items whose structured input is re-serialized (:func:`_json`): read plain, as orjson reads numbers.
_DUMPED_ITEMS = frozenset({"local_shell_call", "web_search_call", "tool_search_call", "tool_search_output"})


def parse(src: SourceFile) -> Iterator[Message]:
    """Yield the messages of one Codex rollout; fills ``src.meta`` as it goes."""
    rollout = _Rollout(src)
    lines = TypedLines(src, _LINE)
    for lineno, rec in lines:
        try:
            if isinstance(rec, _Line):
                try:
                    rollout.typed(lineno, rec)
                except Fallback:  # raised before any effect: the plain checks decide (and word the error)
                    plain = _plain(src, lines.raw(lineno), lineno)
                    if plain is not None:
                        rollout.record(lineno, plain)
            else:
                rollout.record(lineno, rec)
        except BAD_RECORD as e:
            src.invalid(lineno, bad_record(e))
        if rollout.ready:
            yield from rollout.take()
    rollout.finish()
    yield from rollout.take()


def _plain(src: SourceFile, raw: bytes, lineno: int) -> Any:
    """A typed line read as plain JSON; None where orjson finds it malformed (reported as the plain reader
    reports it: msgspec skips a number beyond a double in a field the reader does not declare)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        if not raw.endswith(b"\n"):
            src.truncated(lineno)
        else:
            src.invalid(lineno, malformed(raw, e))
        return None


class _Rollout:
    """The state of one rollout being read: the current call, messages held for usage, metadata."""

    def __init__(self, src: SourceFile):
        self.src = src
        self.meta = src.meta
        self.model: str | None = None
        self.models: Counter[str | None] = Counter()  # assistant messages per model
        #: Envelope layout: messages wait for the token count of their call.
        self.windowed = False
        #: Without token counts (legacy rollouts, replacement histories) a
        #: tool result ends the call: the next assistant item starts a new one.
        self.split_at_results = True
        self.seen_meta = False
        # The current call: tool results before its first assistant item (the
        # previous call's), its assistant message, tool results after it.
        self.before: Message | None = None
        self.assistant: Message | None = None
        self.after: Message | None = None
        #: Messages in order since the last token count, waiting for its usage.
        self.pending: list[Message] = []
        self.ready: list[Message] = []
        self.count = 0  # messages appended so far: the index of the next one
        self.totals: Any = None  # total_token_usage of the last call
        self.calls = 0
        self.last_call_tokens: int | None = None

    # -- records -------------------------------------------------------------

    def record(self, lineno: int, rec: dict[str, Any]) -> None:
        kind = rec.get("type")
        if kind in ENVELOPES:
            if "payload" not in rec:
                raise Invalid(f"{kind} record has no 'payload'")
            payload = rec["payload"]
            if not isinstance(payload, dict):
                raise Invalid(f"{kind}.payload must be an object, got {json_type(payload)}")
            self.windowed, self.split_at_results = True, False
            ts = parse_timestamp(rec.get("timestamp"))
            if kind == "response_item":
                self.item(payload, lineno, ts)
            elif kind == "event_msg":
                self.event(payload)
            elif kind == "turn_context":
                self.turn_context(payload)
            elif kind == "compacted":
                self.compacted(payload, lineno, ts)
            else:
                self.session_meta(payload, ts)
        elif kind is None:
            if "record_type" in rec:
                self.src.ignore(f"record_type:{rec['record_type']}")
            elif "id" in rec:
                self.session_meta(rec, None)
            else:
                raise Invalid("record has no 'type'")
        elif kind in _LEGACY_ITEMS or kind in _SUMMARY_ITEMS:
            self.item(rec, lineno, None)
        else:
            self.src.ignore(str(kind))

    def session_meta(self, payload: dict[str, Any], ts: datetime | None) -> None:
        if self.seen_meta:
            # A resumed or forked rollout may repeat its origin's header: the first one is this session's.
            self.src.ignore("session_meta (repeated)")
            return
        sid = payload.get("id")
        if not isinstance(sid, str) or not sid:
            raise Invalid(f"session_meta.id must be a non-empty string, got {json_type(sid)}")
        self.seen_meta = True
        self.meta.session_id = sid
        self.meta.created_at = parse_timestamp(payload.get("timestamp")) or ts
        self.meta.parent_session_id = _parent_id(payload)
        self.meta.is_subagent = _spawned_by(payload) is not None
        if isinstance(payload.get("cwd"), str) and payload["cwd"]:
            self.meta.project = payload["cwd"]
        if isinstance(payload.get("model"), str):
            self.set_model(payload["model"])

    def turn_context(self, payload: dict[str, Any]) -> None:
        model = payload.get("model")
        if model is not None:
            if not isinstance(model, str):
                raise Invalid(f"turn_context.model must be a string, got {json_type(model)}")
            self.set_model(model)
        self.src.ignore("turn_context")

    def set_model(self, model: str) -> None:
        self.model = model
        if self.meta.model is None:
            self.meta.model = model  # until an assistant message names the session's model

    def event(self, payload: dict[str, Any]) -> None:
        kind = payload.get("type")
        if not isinstance(kind, str):
            raise Invalid("event_msg.payload has no 'type'")
        if kind == "token_count":
            self.token_count(payload)
            return
        self.context_window(payload.get("model_context_window"))
        self.src.ignore(f"event_msg:{kind}")

    def context_window(self, value: Any) -> None:
        """The first context window recorded (``task_started``, ``token_count``) is the session's."""
        if self.meta.context_window is None and isinstance(value, int) and not isinstance(value, bool) and value > 0:
            self.meta.context_window = value

    def token_count(self, payload: dict[str, Any]) -> None:
        info = payload.get("info")
        if info is None:
            self.src.ignore("event_msg:token_count (no usage)")
            return
        if not isinstance(info, dict):
            raise Invalid(f"token_count.info must be an object, got {json_type(info)}")
        total = info.get("total_token_usage")
        if total is not None and total == self.totals:
            # Codex repeats the last count (rate-limit updates, turn starts): same call.
            self.src.ignore("event_msg:token_count (repeated)")
            return
        last = info.get("last_token_usage")
        if last is None:
            if total is None:
                raise Invalid("token_count.info has neither last_token_usage nor total_token_usage")
            last = total if self.totals is None else _difference(total, self.totals)
        usage = _usage(last, "token_count.info.last_token_usage")
        self.context_window(info.get("model_context_window"))
        self.totals = total
        self.calls += 1
        self.last_call_tokens = usage["input"] + usage["cache_read"] + usage["output"]
        self.close_call()
        # The call's assistant message is the last one since the previous count.
        for msg in reversed(self.pending):
            if msg.role == "assistant":
                if msg.usage is None:
                    msg.usage = usage
                break
        self.release()

    def compacted(self, payload: dict[str, Any], lineno: int, ts: datetime | None) -> None:
        summary = payload.get("message")
        if summary is None:
            summary = ""
        if not isinstance(summary, str):
            raise Invalid(f"compacted.message must be a string, got {json_type(summary)}")
        history = payload.get("replacement_history")
        if history is None:
            history = []
        if not isinstance(history, list):
            raise Invalid(f"compacted.replacement_history must be a list, got {json_type(history)}")
        items = []
        for i, item in enumerate(history):
            if not isinstance(item, dict):
                raise Invalid(f"compacted.replacement_history[{i}] must be an object")
            converted = self.convert(item, f"compacted.replacement_history[{i}]")
            if not _is_summary(converted, summary):
                items.append(converted)
        self.close_call()
        anchor = self.append(Message("user", [{"type": "compaction_summary", "text": summary}], None, lineno, ts,
                                     self.model))
        # The replacement history has no token counts: consecutive assistant items group.
        split, self.split_at_results = self.split_at_results, True
        for converted in items:
            self.apply(converted, lineno, ts)
        self.close_call()
        self.split_at_results = split
        trigger = payload.get("trigger")
        self.meta.compactions.append({
            "anchor_index": anchor,
            "trigger": trigger if isinstance(trigger, str) else None,
            "tokens_before": self.last_call_tokens,
            "first_kept_index": anchor + 1 if self.count > anchor + 1 else None,
            # The replacement history is a copy after the anchor: the conversation compacted ends before it.
            "trigger_index": anchor,
            "kept_end_index": self.count if self.count > anchor + 1 else None,
        })

    # -- the typed rules: the same over the declared shapes; Fallback (before any effect) where the plain
    # checks must decide ------------------------------------------------------------------------------

    def typed(self, lineno: int, line: _Line) -> None:
        """:meth:`record` over a declared line."""
        kind = line.type
        payload = line.payload
        if kind == "response_item":
            if payload is None or payload is UNSET:
                raise Fallback
            converted, ignored = self.typed_item(payload)
            self.windowed, self.split_at_results = True, False
            for what in ignored:
                self.src.ignore(what)
            self.apply(converted, lineno, parse_timestamp(line.timestamp))
        elif kind == "event_msg":
            if payload is None or payload is UNSET or payload.type is None:
                raise Fallback
            if payload.type == "token_count":
                try:
                    info = None if payload.info is UNSET else orjson.loads(memoryview(payload.info))
                except orjson.JSONDecodeError:
                    raise Fallback from None
                self.windowed, self.split_at_results = True, False
                self.token_count({"info": info})
                return
            self.windowed, self.split_at_results = True, False
            self.context_window(payload.model_context_window)
            self.src.ignore(f"event_msg:{payload.type}")
        elif kind == "turn_context":
            if payload is None or payload is UNSET:
                raise Fallback
            self.windowed, self.split_at_results = True, False
            if payload.model is not None:
                self.set_model(payload.model)
            self.src.ignore("turn_context")
        elif kind is None or kind in _PLAIN_TYPES:
            raise Fallback
        else:
            self.src.ignore(kind)

    def typed_item(self, item: _Payload) -> tuple[tuple[Any, ...], list[str]]:
        """:meth:`convert` over a declared item, and what it ignored (counted by the caller)."""
        kind = item.type
        ignored: list[str] = []
        if kind == "message":
            if item.content is None or item.content is UNSET:
                raise Fallback
            role = item.role
            texts = _typed_texts(item.content, ignored, role)
            if role == "assistant":
                return ("call", [{"type": "text", "text": t} for t in texts]), ignored
            if role == "user" and not any(map(is_contextual_fragment, texts)):
                return ("message", "user", [{"type": "text", "text": t} for t in texts]), ignored
            if role in ("developer", "system", "user"):
                return ("message", "system", [{"type": "system", "text": t, "mode": "append"} for t in texts]), ignored
            raise Fallback
        if kind == "reasoning":
            summary = [] if item.summary is UNSET else item.summary
            if not isinstance(summary, list):
                raise Fallback
            content = item.content or []
            texts = _typed_texts(summary, ignored, None) + _typed_texts(content, ignored, None)
            return ("call", [{"type": "thinking", "text": "\n".join(texts)}]), ignored
        if kind in ("function_call", "custom_tool_call"):
            if kind == "function_call":
                if item.arguments is UNSET:
                    raise Fallback
                try:
                    text: str | None = _STRING.decode(item.arguments)
                except msgspec.ValidationError:
                    raise Fallback from None
            else:
                text = item.input
            if item.name is None or text is None or item.call_id is None:
                raise Fallback
            return ("call", [{"type": "tool_use", "id": item.call_id, "name": item.name, "input": text}]), ignored
        if kind in ("function_call_output", "custom_tool_call_output"):
            if item.call_id is None or item.output is None or item.output is UNSET:
                raise Fallback
            return ("output", {"type": "tool_result", "tool_use_id": item.call_id,
                               "parts": _typed_output(item.output, ignored)}), ignored
        if kind in _SUMMARY_ITEMS:
            return ("summary", ""), ignored
        if kind == "agent_message":
            if item.content is None:
                raise Fallback
            texts = [] if item.content is UNSET else _typed_texts(item.content, ignored, None)
            return ("message", "user", [{"type": "text", "text": t} for t in texts]), ignored
        if kind is None or kind in _DUMPED_ITEMS:
            raise Fallback
        return ("ignore", f"response_item:{kind}"), ignored

    # -- response items --------------------------------------------------------

    def item(self, payload: dict[str, Any], lineno: int, ts: datetime | None) -> None:
        self.apply(self.convert(payload, "response_item"), lineno, ts)

    def convert(self, item: dict[str, Any], where: str) -> tuple[Any, ...]:
        """One response item as ``(kind, ...)``; validates, changes no state but ignore counts.

        Kinds: ``("call", blocks)`` for a model output, ``("output", block)``
        for a tool result, ``("message", role, blocks)`` for an input message,
        ``("summary", "")`` for an opaque compaction item, ``("ignore", type)``.
        """
        kind = item.get("type")
        if kind == "message":
            return self.message_item(item, where)
        if kind == "reasoning":
            summary = item.get("summary", [])
            content = item.get("content") or []
            texts = self.texts(summary, f"{where}.summary") + self.texts(content, f"{where}.content")
            return ("call", [{"type": "thinking", "text": "\n".join(texts)}])
        if kind == "function_call":
            return ("call", [_tool_use(item, "call_id", require_string(item.get("name"), f"{where}.name"),
                                       require_string(item.get("arguments"), f"{where}.arguments"), where)])
        if kind == "custom_tool_call":
            return ("call", [_tool_use(item, "call_id", require_string(item.get("name"), f"{where}.name"),
                                       require_string(item.get("input"), f"{where}.input"), where)])
        if kind == "local_shell_call":
            key = "call_id" if isinstance(item.get("call_id"), str) else "id"
            return ("call", [_tool_use(item, key, "local_shell", _json(item.get("action")), where)])
        if kind == "web_search_call":
            return ("call", [{"type": "tool_use", "id": item.get("id") if isinstance(item.get("id"), str) else "",
                              "name": "web_search", "input": _json(item.get("action"))}])
        if kind == "tool_search_call":
            return ("call", [_tool_use(item, "call_id", "tool_search", _json(item.get("arguments")), where)])
        if kind in ("function_call_output", "custom_tool_call_output"):
            call_id = require_string(item.get("call_id"), f"{where}.call_id")
            if "output" not in item:
                raise Invalid(f"{where}.output is missing")
            return ("output", {"type": "tool_result", "tool_use_id": call_id,
                               "parts": self.output_parts(item["output"], f"{where}.output")})
        if kind == "tool_search_output":
            call_id = require_string(item.get("call_id"), f"{where}.call_id")
            return ("output", {"type": "tool_result", "tool_use_id": call_id,
                               "parts": [{"type": "text", "text": _json(item.get("tools"))}]})
        if kind in _SUMMARY_ITEMS:
            return ("summary", "")
        if kind == "agent_message":
            return ("message", "user", [{"type": "text", "text": t}
                                        for t in self.texts(item.get("content", []), f"{where}.content")])
        if not isinstance(kind, str):
            raise Invalid(f"{where} has no 'type'")
        return ("ignore", f"response_item:{kind}")

    def message_item(self, item: dict[str, Any], where: str) -> tuple[Any, ...]:
        role = item.get("role")
        texts = self.texts(item.get("content"), f"{where}.content", images_in=role)
        if role == "assistant":
            return ("call", [{"type": "text", "text": t} for t in texts])
        if role == "user" and not any(map(is_contextual_fragment, texts)):
            return ("message", "user", [{"type": "text", "text": t} for t in texts])
        if role in ("developer", "system", "user"):  # a user-role message Codex wrote itself: its context
            return ("message", "system", [{"type": "system", "text": t, "mode": "append"} for t in texts])
        raise Invalid(f"{where}.role must be user, assistant, developer or system, got {role!r}")

    def texts(self, content: Any, where: str, images_in: str | None = None) -> list[str]:
        """The texts of a content list; images and unknown parts are counted as ignored."""
        if not isinstance(content, list):
            raise Invalid(f"{where} must be a list, got {json_type(content)}")
        out = []
        for i, part in enumerate(content):
            if not isinstance(part, dict):
                raise Invalid(f"{where}[{i}] must be an object, got {json_type(part)}")
            kind = part.get("type")
            if kind in _TEXT_PARTS:
                out.append(require_string(part.get(_TEXT_PARTS[kind]), f"{where}[{i}].{_TEXT_PARTS[kind]}"))
            elif kind in _IMAGE_PARTS:
                # libpanto has media only inside tool results.
                self.src.ignore(f"image in a {images_in or 'content'} message")
            else:
                self.src.ignore(f"content part:{kind}")
        return out

    def output_parts(self, output: Any, where: str) -> list[dict[str, Any]]:
        """A tool output (a string, content items, or the old ``{content, success}``) as result parts."""
        if isinstance(output, str):
            return [{"type": "text", "text": output}]
        if isinstance(output, dict) and "content" in output:
            return self.output_parts(output["content"], f"{where}.content")
        if not isinstance(output, list):
            raise Invalid(f"{where} must be a string or a list, got {json_type(output)}")
        parts = []
        for i, part in enumerate(output):
            if not isinstance(part, dict):
                raise Invalid(f"{where}[{i}] must be an object, got {json_type(part)}")
            kind = part.get("type")
            if kind in _TEXT_PARTS:
                parts.append({"type": "text", "text": require_string(part.get(_TEXT_PARTS[kind]), f"{where}[{i}].text")})
            elif kind in _IMAGE_PARTS:
                parts.append({"type": "media", "media_type": _media_type(part.get("image_url"))})
            else:
                self.src.ignore(f"content part:{kind}")
        return parts

    # -- grouping ----------------------------------------------------------------

    def apply(self, converted: tuple[Any, ...], lineno: int, ts: datetime | None) -> None:
        kind = converted[0]
        if kind == "call":
            if self.after is not None and self.split_at_results:
                self.close_call()
            if self.assistant is None:
                self.assistant = Message("assistant", [], None, lineno, ts, self.model)
                self.models[self.model] += 1
            self.assistant.content.extend(converted[1])
        elif kind == "output":
            if self.assistant is None:
                if self.before is None:
                    self.before = Message("user", [], None, lineno, ts, self.model)
                self.before.content.append(converted[1])
            else:
                if self.after is None:
                    self.after = Message("user", [], None, lineno, ts, self.model)
                self.after.content.append(converted[1])
        elif kind == "message":
            self.close_call()
            self.append(Message(converted[1], converted[2], None, lineno, ts, self.model))
        elif kind == "summary":
            # An opaque compaction item outside a compacted record: an anchor, nothing kept recorded.
            self.close_call()
            anchor = self.append(Message("user", [{"type": "compaction_summary", "text": ""}], None, lineno, ts,
                                         self.model))
            self.meta.compactions.append({"anchor_index": anchor, "trigger": None,
                                          "tokens_before": self.last_call_tokens, "first_kept_index": None,
                                          "trigger_index": anchor, "kept_end_index": None})
        else:
            self.src.ignore(converted[1])

    def close_call(self) -> None:
        """Move the current call's messages, in order, to the pending list."""
        for msg in (self.before, self.assistant, self.after):
            if msg is not None:
                self.append(msg)
        self.before = self.assistant = self.after = None

    def append(self, msg: Message) -> int:
        """Append a message after all earlier ones; returns its index in the session."""
        self.pending.append(msg)
        self.count += 1
        if not self.windowed or len(self.pending) > _MAX_PENDING:
            self.release()
        return self.count - 1

    def release(self) -> None:
        self.ready.extend(self.pending)
        self.pending.clear()

    def take(self) -> list[Message]:
        out, self.ready = self.ready, []
        return out

    def finish(self) -> None:
        self.close_call()
        self.release()
        self.meta.api_calls = self.calls if self.windowed else None
        self.models.pop(None, None)
        if self.models:
            # The session's model: the one that answered most (first among equals).
            self.meta.model = self.models.most_common(1)[0][0]


def is_contextual_fragment(text: str) -> bool:
    """Whether ``text`` is one of the user-role messages Codex writes itself (:data:`CONTEXTUAL_USER_FRAGMENTS`).

    >>> is_contextual_fragment("<environment_context>\\n  <cwd>/w</cwd>\\n</environment_context>\\n")
    True
    >>> is_contextual_fragment("what does <environment_context> hold?")
    False
    """
    lowered = text.strip().lower()
    return any(lowered.startswith(start) and lowered.endswith(end) for start, end in CONTEXTUAL_USER_FRAGMENTS)


def _is_summary(converted: tuple[Any, ...], summary: str) -> bool:
    """Is this replacement-history item the summary itself (which the anchor stands for)?"""
    if converted[0] == "summary":
        return True
    text = summary.strip()
    return bool(text) and converted[0] == "message" and converted[1] == "user" and any(
        text in b.get("text", "") for b in converted[2])


def _typed_text(part: _Part) -> str | None:
    """The text of a declared text or refusal part (:data:`_TEXT_PARTS`); None for any other kind of part.

    Raises :class:`Fallback` when a text part lacks its text (the plain checks decide and word the error)."""
    key = _TEXT_PARTS.get(part.type) if part.type is not None else None
    if key is None:
        return None
    text = part.text if key == "text" else part.refusal
    if text is None:
        raise Fallback
    return text


def _typed_texts(content: list[_Part], ignored: list[str], images_in: str | None) -> list[str]:
    """:meth:`_Rollout.texts` over declared parts; what it ignores goes to ``ignored``."""
    out = []
    for part in content:
        kind = part.type
        text = _typed_text(part)
        if text is not None:
            out.append(text)
        elif kind in _IMAGE_PARTS:
            ignored.append(f"image in a {images_in or 'content'} message")
        else:
            ignored.append(f"content part:{kind}")
    return out


def _typed_output(output: str | list[_Part] | _OldOutput, ignored: list[str]) -> list[dict[str, Any]]:
    """:meth:`_Rollout.output_parts` over a declared output; what it ignores goes to ``ignored``."""
    if isinstance(output, str):
        return [{"type": "text", "text": output}]
    if isinstance(output, _OldOutput):
        if output.content is None or output.content is UNSET:
            raise Fallback
        return _typed_output(output.content, ignored)
    parts = []
    for part in output:
        kind = part.type
        text = _typed_text(part)
        if text is not None:
            parts.append({"type": "text", "text": text})
        elif kind in _IMAGE_PARTS:
            parts.append({"type": "media", "media_type": _raw_media_type(part.image_url)})
        else:
            ignored.append(f"content part:{kind}")
    return parts


#: The media type of a ``data:`` URL at the start of a JSON string, without escapes.
_DATA_URL = re.compile(rb'"data:([^;,"\\]*)[;,"]')
#: Bytes of an image URL looked at (a media type is short; a longer one is read plain).
_URL_HEAD = 256


def _raw_media_type(url: msgspec.Raw | UnsetType) -> str:
    """:func:`_media_type` of an image URL from its JSON bytes, without decoding the (base64) rest.

    >>> _raw_media_type(msgspec.Raw(b'"data:image/png;base64,iVBO"')), _raw_media_type(msgspec.Raw(b'"https://x/y.jpg"'))
    ('image/png', 'image')
    >>> _raw_media_type(msgspec.Raw(b'"data:,x"')), _raw_media_type(msgspec.Raw(b'null')), _raw_media_type(UNSET)
    ('image', 'image', 'image')
    """
    if url is UNSET:
        return "image"
    head = bytes(memoryview(url)[:_URL_HEAD])
    if head[:1] != b'"':
        return "image"  # not a string
    if head.startswith(b'"data:'):
        match = _DATA_URL.match(head)
        if match is None:  # an escape, or longer than the head
            raise Fallback
        return match.group(1).decode() or "image"
    if b"\\" in head[:6]:  # an escape may spell "data:"
        raise Fallback
    return "image"


def _parent_id(payload: dict[str, Any]) -> str | None:
    """The thread a subagent (or fork) was spawned from, where the header records it."""
    parent = payload.get("parent_thread_id")
    if parent is None:
        spawn = _spawned_by(payload)
        parent = spawn.get("parent_thread_id") if isinstance(spawn, dict) else None
    if parent is None:
        parent = payload.get("forked_from_id")
    return parent if isinstance(parent, str) and parent else None


def _spawned_by(payload: dict[str, Any]) -> dict[str, Any] | str | None:
    """What a subagent's header says spawned it (``source: {"subagent": ...}``); None for a main thread.

    >>> _spawned_by({"source": {"subagent": {"thread_spawn": {"parent_thread_id": "t"}}}})
    {'parent_thread_id': 't'}
    >>> _spawned_by({"source": {"subagent": "review"}}), _spawned_by({"source": "cli"})
    ('review', None)
    """
    source = payload.get("source")
    spawn = source.get("subagent") if isinstance(source, dict) else None
    if isinstance(spawn, dict) and isinstance(spawn.get("thread_spawn"), dict):
        return cast("dict[str, Any]", spawn["thread_spawn"])
    return spawn if isinstance(spawn, (dict, str)) else None


def _usage(last: Any, where: str) -> dict[str, int]:
    """A call's usage: ``input_tokens`` includes the cached ones, which become ``cache_read``.

    >>> _usage({"input_tokens": 100, "cached_input_tokens": 60, "output_tokens": 7}, "u")
    {'input': 40, 'output': 7, 'cache_read': 60, 'cache_write': 0}
    """
    if not isinstance(last, dict):
        raise Invalid(f"{where} must be an object, got {json_type(last)}")
    for key in ("input_tokens", "output_tokens"):
        if key not in last:
            raise Invalid(f"{where}.{key} is missing")
    inp = usage_counter(last["input_tokens"], f"{where}.input_tokens")
    cached = usage_counter(last.get("cached_input_tokens"), f"{where}.cached_input_tokens")
    if cached > inp:
        raise Invalid(f"{where}.cached_input_tokens ({cached}) is more than input_tokens ({inp})")
    return {"input": inp - cached, "output": usage_counter(last["output_tokens"], f"{where}.output_tokens"),
            "cache_read": cached, "cache_write": 0}


def _difference(total: Any, previous: Any) -> dict[str, Any]:
    if not isinstance(total, dict) or not isinstance(previous, dict):
        raise Invalid("token_count.info.total_token_usage must be an object")
    return {k: v - previous.get(k, 0) if isinstance(v, int) and isinstance(previous.get(k, 0), int) else v
            for k, v in total.items()}


def _tool_use(item: dict[str, Any], id_key: str, name: str, text: str, where: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": require_string(item.get(id_key), f"{where}.{id_key}"), "name": name, "input": text}


def _json(value: Any) -> str:
    """Structured tool input as compact JSON text ("" when absent)."""
    return "" if value is None else orjson.dumps(value).decode()


def _media_type(url: Any) -> str:
    """The media type of an image URL: from a ``data:`` URL, else ``image``.

    >>> _media_type("data:image/png;base64,iVBO"), _media_type("https://x/y.jpg")
    ('image/png', 'image')
    """
    if isinstance(url, str) and url.startswith("data:"):
        media_type = url[5:].split(";", 1)[0].split(",", 1)[0]
        if media_type:
            return media_type
    return "image"


