"""libpanto's summarizer request: ``serializeTranscript``, ``buildRequestBody``, ``latestSummaryText``.

When libpanto compacts, it sends the summarized prefix
``messages[active_start:prefix_end]`` to a summarizer as
``buildRequestBody(serializeTranscript(prefix), latestSummaryText(messages))``.
This module writes that text exactly (for one session, from canonical content
blocks) and says what each message adds to it, so that the size of every
request can be summed in a frame without building a string:

- a message that holds a compaction summary contributes the UTF-8 bytes of
  its summary text (what the ``<previous-summary>`` section carries; such a
  message is never inside a summarized range, which starts after the latest
  summary);
- a system message contributes nothing (``serializeTranscript`` skips it);
- any other message contributes, per content block, the bytes of its
  labelled rendering plus 2 for the ``\\n\\n`` separator that precedes every
  block but the first.

So the transcript of a range is ``max(sum of contributions - 2, 0)`` bytes,
and the request adds :data:`REQUEST_FRAME_BYTES` (or
:data:`REQUEST_FRAME_WITH_SUMMARY_BYTES` plus the summary) around it.

>>> msgs = [("user", [{"type": "text", "text": "hi"}]), ("assistant", [{"type": "text", "text": "ok"}])]
>>> serialize_transcript(msgs)
'[User]: hi\\n\\n[Assistant]: ok'
>>> sum(serialized_bytes(r, b) for r, b in msgs) - 2 == len(serialize_transcript(msgs).encode())
True
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

__all__ = [
    "BLOCK_FIELDS",
    "MEDIA_NOTE_BYTES",
    "REQUEST_FRAME_BYTES",
    "REQUEST_FRAME_WITH_SUMMARY_BYTES",
    "RoleBlocks",
    "SEPARATOR",
    "build_request_body",
    "label_bytes",
    "latest_summary_text",
    "render_block",
    "request_bytes",
    "serialize_transcript",
    "serialized_bytes",
    "summary_text",
]

Block = dict[str, Any]
#: A message as ``(role, canonical content blocks)``.
RoleBlocks = tuple[str, Sequence[Block]]

#: Written before every block of a transcript but the first.
SEPARATOR = "\n\n"
_HEAD = "The conversation to summarize:\n\n<transcript>\n"
_SUMMARY_HEAD = "The previous compaction generated this summary:\n\n<previous-summary>\n"
_SUMMARY_TAIL = "\n</previous-summary>\n\nThe conversation since that previous compaction:\n\n<transcript>\n"
_TAIL = "\n</transcript>"

#: Bytes of ``buildRequestBody`` around the transcript without a previous summary.
REQUEST_FRAME_BYTES = len((_HEAD + _TAIL).encode())
#: Bytes around the transcript and the previous summary's text when there is one.
REQUEST_FRAME_WITH_SUMMARY_BYTES = len((_SUMMARY_HEAD + _SUMMARY_TAIL + _TAIL).encode())


def render_block(role: str, block: Block) -> str:
    """One block as ``serializeTranscript`` writes it (a system block writes nothing).

    >>> render_block("assistant", {"type": "tool_use", "id": "t1", "name": "ls", "input": "{}"})
    '[Assistant tool call: ls (t1)]: {}'
    >>> render_block("user", {"type": "tool_result", "tool_use_id": "t1",
    ...     "parts": [{"type": "text", "text": "a"}, {"type": "media", "media_type": "image/png"}]})
    '[Tool result (t1)]: a[image/png attachment]'
    """
    kind = block["type"]
    if kind == "text":
        return ("[Assistant]: " if role == "assistant" else "[User]: ") + block["text"]
    if kind == "thinking":
        return "[Assistant thinking]: " + block["text"]
    if kind == "tool_use":
        return f"[Assistant tool call: {block['name']} ({block['id']})]: {block['input']}"
    if kind == "tool_result":
        body = "".join(p["text"] if p["type"] == "text" else f"[{p['media_type']} attachment]"
                       for p in block.get("parts") or ())
        return f"[Tool result ({block['tool_use_id']})]: {body}"
    if kind == "compaction_summary":
        return "[Previous summary]: " + block["text"]
    return ""  # a system block: its separator is written, its text is not


#: The fields whose text :func:`render_block` writes, per block kind (a tool result's parts aside).
BLOCK_FIELDS: dict[str, tuple[str, ...]] = {
    "text": ("text",), "thinking": ("text",), "tool_use": ("name", "id", "input"),
    "tool_result": ("tool_use_id",), "compaction_summary": ("text",), "system": (),
}


def label_bytes(role: str, kind: str) -> int:
    """Bytes :func:`render_block` writes for a block of ``kind`` besides its fields' text.

    >>> label_bytes("user", "text"), label_bytes("assistant", "text"), label_bytes("assistant", "tool_use")
    (8, 13, 28)
    """
    empty = {"type": kind, "parts": [], **{name: "" for name in BLOCK_FIELDS[kind]}}
    return len(render_block(role, empty).encode())


#: Bytes of a media part's note besides its media type (``[<media_type> attachment]``).
MEDIA_NOTE_BYTES = len(render_block("user", {"type": "tool_result", "tool_use_id": "",
                                             "parts": [{"type": "media", "media_type": ""}]}).encode()) \
    - label_bytes("user", "tool_result")


def serialize_transcript(messages: Iterable[RoleBlocks]) -> str:
    """``serializeTranscript``: every block of every non-system message, labelled, ``\\n\\n`` between blocks."""
    return SEPARATOR.join(render_block(role, block) for role, blocks in messages if role != "system"
                          for block in blocks)


def build_request_body(transcript: str, previous_summary: str | None) -> str:
    """``buildRequestBody``: the framing, the previous summary's section if any, and the transcript.

    >>> len(build_request_body("", None).encode()) == REQUEST_FRAME_BYTES
    True
    """
    if previous_summary is None:
        return _HEAD + transcript + _TAIL
    return _SUMMARY_HEAD + previous_summary + _SUMMARY_TAIL + transcript + _TAIL


def summary_text(blocks: Sequence[Block]) -> str | None:
    """The text of a message's first compaction-summary block, or None."""
    return next((b["text"] for b in blocks if b["type"] == "compaction_summary"), None)


def latest_summary_text(messages: Sequence[RoleBlocks]) -> str | None:
    """``latestSummaryText``: the summary of the latest message (of any role) that holds one, or None."""
    for _, blocks in reversed(messages):
        text = summary_text(blocks)
        if text is not None:
            return text
    return None


def serialized_bytes(role: str, blocks: Sequence[Block]) -> int:
    """What one message adds to a summarizer request, in UTF-8 bytes (see the module docstring).

    >>> serialized_bytes("user", [{"type": "text", "text": "hé"}])  # "[User]: hé" + separator
    13
    >>> serialized_bytes("user", [{"type": "compaction_summary", "text": "so far"}])
    6
    """
    summary = summary_text(blocks)
    if summary is not None:
        return len(summary.encode())
    if role == "system":
        return 0
    return sum(len(render_block(role, b).encode()) + len(SEPARATOR) for b in blocks)


def request_bytes(contributions: int, previous_summary_bytes: int | None) -> int:
    """Bytes of the request whose summarized messages' :func:`serialized_bytes` sum to ``contributions``.

    >>> msgs = [("user", [{"type": "text", "text": "q"}]), ("assistant", [])]
    >>> request_bytes(sum(serialized_bytes(r, b) for r, b in msgs), None) == len(
    ...     build_request_body(serialize_transcript(msgs), None).encode())
    True
    """
    transcript = max(contributions - len(SEPARATOR), 0)
    if previous_summary_bytes is None:
        return REQUEST_FRAME_BYTES + transcript
    return REQUEST_FRAME_WITH_SUMMARY_BYTES + previous_summary_bytes + transcript
