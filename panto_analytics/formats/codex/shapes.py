"""Codex's vocabulary and header rules, shared by the line reader (:mod:`.reader`) and the fast path (:mod:`.fast`).

The record types and content parts read, the user-role messages Codex writes
itself (:data:`CONTEXTUAL_USER_FRAGMENTS`), a header's metadata
(:func:`read_header`) and a call's usage (:func:`call_usage`), as
``docs/formats.md`` (section Codex) states them.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from ..contract import SessionMeta
from ..jsonl import json_type
from ..record_fields import Invalid, parse_timestamp, usage_counter

__all__ = ["CALL_ITEMS", "CONTEXTUAL_USER_FRAGMENTS", "ENVELOPES", "IMAGE_PARTS", "LEGACY_ITEMS", "MAX_PENDING", "NAME",
           "OUTPUT_ITEMS", "SUMMARY_ITEMS", "TEXT_PARTS", "call_usage", "is_contextual_fragment", "media_type",
           "read_header"]

NAME = "codex"

#: Top-level record types of the envelope layout.
ENVELOPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})

#: Response items whose payload is a model output of the call (besides assistant messages).
CALL_ITEMS = frozenset({"reasoning", "function_call", "custom_tool_call", "local_shell_call",
                        "web_search_call", "tool_search_call"})
#: Response items that answer a tool call.
OUTPUT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output"})
#: Opaque compaction items (the server-side summary): the anchor stands for them.
SUMMARY_ITEMS = frozenset({"compaction", "compaction_summary", "context_compaction"})
#: Response item types a bare legacy line may have.
LEGACY_ITEMS = CALL_ITEMS | OUTPUT_ITEMS | {"message"}

#: Content parts that carry text, and the key their text is under.
TEXT_PARTS = {"input_text": "text", "output_text": "text", "text": "text", "summary_text": "text",
              "reasoning_text": "text", "refusal": "refusal"}
IMAGE_PARTS = frozenset({"input_image", "output_image"})

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
MAX_PENDING = 4096


def is_contextual_fragment(text: str) -> bool:
    """Whether ``text`` is one of the user-role messages Codex writes itself (:data:`CONTEXTUAL_USER_FRAGMENTS`).

    >>> is_contextual_fragment("<environment_context>\\n  <cwd>/w</cwd>\\n</environment_context>\\n")
    True
    >>> is_contextual_fragment("what does <environment_context> hold?")
    False
    """
    stripped = text.strip()
    # Only the ends are lowered (all of a long text cost more than the rest of its message): lowering maps each
    # character alone to one, but U+0130 to i and a combining dot (in no marker), so the ASCII markers match alike.
    head, tail = stripped[:_MARKER].lower(), stripped[-_MARKER:].lower()
    return any(head.startswith(start) and tail.endswith(end) for start, end in CONTEXTUAL_USER_FRAGMENTS)


#: The longest marker: the characters of a text's ends :func:`is_contextual_fragment` lowers.
_MARKER = max(len(marker) for pair in CONTEXTUAL_USER_FRAGMENTS for marker in pair)


def read_header(meta: SessionMeta, payload: dict[str, Any], ts: datetime | None) -> str | None:
    """A rollout's (first) ``session_meta`` payload into ``meta``; returns the model it names, if any."""
    sid = payload.get("id")
    if not isinstance(sid, str) or not sid:
        raise Invalid(f"session_meta.id must be a non-empty string, got {json_type(sid)}")
    meta.session_id = sid
    meta.created_at = parse_timestamp(payload.get("timestamp")) or ts
    meta.parent_session_id = _parent_id(payload)
    meta.is_subagent = _spawned_by(payload) is not None
    if isinstance(payload.get("cwd"), str) and payload["cwd"]:
        meta.project = payload["cwd"]
    return payload["model"] if isinstance(payload.get("model"), str) else None


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


def call_usage(last: Any, where: str) -> dict[str, int]:
    """A call's usage: ``input_tokens`` includes the cached ones, which become ``cache_read``.

    >>> call_usage({"input_tokens": 100, "cached_input_tokens": 60, "output_tokens": 7}, "u")
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


def media_type(url: Any) -> str:
    """The media type of an image URL: from a ``data:`` URL, else ``image``.

    >>> media_type("data:image/png;base64,iVBO"), media_type("https://x/y.jpg")
    ('image/png', 'image')
    """
    if isinstance(url, str) and url.startswith("data:"):
        found = url[5:].split(";", 1)[0].split(",", 1)[0]
        if found:
            return found
    return "image"
