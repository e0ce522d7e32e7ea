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

Clean rollouts are read by the fast path (:mod:`.fast`); this line reader takes the rest, each line
read as plain JSON and checked field by field. Its oracle: ``reference/codex_lines.py``.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import orjson

from ..contract import Message, Postprocess, ReadFrames, SourceFile
from ..jsonl import content_parts, json_type, records, require_string
from ..record_fields import BAD_RECORD, Invalid, bad_record, parse_timestamp
from .fast import read_frames as _read_frames
from .shapes import (
    CONTEXTUAL_USER_FRAGMENTS,
    ENVELOPES,
    IMAGE_PARTS,
    LEGACY_ITEMS,
    MAX_PENDING,
    NAME,
    SUMMARY_ITEMS,
    TEXT_PARTS,
    call_usage,
    is_contextual_fragment,
    media_type,
    read_header,
)

__all__ = ["CONTEXTUAL_USER_FRAGMENTS", "ENVELOPES", "NAME", "is_contextual_fragment", "parse", "postprocess", "read_frames",
           "sniff"]

#: The columnar fast path (:mod:`.fast`); no cross-file rules (see :class:`.contract.Adapter`).
read_frames: ReadFrames | None = _read_frames
postprocess: Postprocess | None = None


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
            isinstance(p, dict) and (p.get("type") in IMAGE_PARTS or p.get("type") in ("input_text", "output_text"))
            for p in content)
    return kind in LEGACY_ITEMS


def parse(src: SourceFile) -> Iterator[Message]:
    """Yield the messages of one Codex rollout; fills ``src.meta`` as it goes."""
    rollout = _Rollout(src)
    for lineno, rec in records(src):
        try:
            rollout.record(lineno, rec)
        except BAD_RECORD as e:
            src.invalid(lineno, bad_record(e))
        if rollout.ready:
            yield from rollout.take()
    rollout.finish()
    yield from rollout.take()


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
        elif kind in LEGACY_ITEMS or kind in SUMMARY_ITEMS:
            self.item(rec, lineno, None)
        else:
            self.src.ignore(str(kind))

    def session_meta(self, payload: dict[str, Any], ts: datetime | None) -> None:
        if self.seen_meta:
            # A resumed or forked rollout may repeat its origin's header: the first one is this session's.
            self.src.ignore("session_meta (repeated)")
            return
        self.seen_meta = True
        model = read_header(self.meta, payload, ts)
        if model is not None:
            self.set_model(model)

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
        usage = call_usage(last, "token_count.info.last_token_usage")
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
        if kind in SUMMARY_ITEMS:
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
        out = []
        for here, kind, part in content_parts(content, where):
            if kind in TEXT_PARTS:
                out.append(require_string(part.get(TEXT_PARTS[kind]), f"{here}.{TEXT_PARTS[kind]}"))
            elif kind in IMAGE_PARTS:
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
        parts = []
        for here, kind, part in content_parts(output, where, or_string=True):
            if kind in TEXT_PARTS:
                parts.append({"type": "text", "text": require_string(part.get(TEXT_PARTS[kind]), f"{here}.text")})
            elif kind in IMAGE_PARTS:
                parts.append({"type": "media", "media_type": media_type(part.get("image_url"))})
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
        if not self.windowed or len(self.pending) > MAX_PENDING:
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


def _is_summary(converted: tuple[Any, ...], summary: str) -> bool:
    """Is this replacement-history item the summary itself (which the anchor stands for)?"""
    if converted[0] == "summary":
        return True
    text = summary.strip()
    return bool(text) and converted[0] == "message" and converted[1] == "user" and any(
        text in b.get("text", "") for b in converted[2])


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
