"""The canonical records, declared once as ``msgspec.Struct``s: only the fields the reader uses, by the file's names.

A canonical file (``docs/formats.md``) is an optional ``session`` header
and ``message`` records; a message holds content blocks, a tool result
holds parts. Each is a Struct tagged by its ``type``, so decoding a line
checks everything :mod:`.lines` checks by hand (the record and block types,
the required strings, the roles, the system modes, the usage counters) and
skips every undeclared field unparsed. A line that decodes passes every
check the reference makes on a line, but for the header's own checks, its
place (first line only) and the timestamps' form, which :mod:`.fast` checks
on the records. What does not decode (msgspec names the JSON path, e.g.
``$[3].content[0].text``) is left to :mod:`.lines`, which words the error in
the file's own field names with its line number. The Structs opt out of
the garbage collector (``gc=False``: they hold no cycles), which is what
makes decoding many of them cheap.

>>> header, msg = decode_file(b'{"type":"session","id":"s"}\\n'
...                           b'{"type":"message","role":"user","content":[{"type":"text","text":"hi"}]}\\n')
>>> header.id, msg.role, msg.content[0].text, msg.usage is None
('s', 'user', 'hi', True)
>>> decode_file(b'{"type":"message","role":"user","content":[{"type":"text","text":5}]}\\n')
Traceback (most recent call last):
...
msgspec.ValidationError: Expected `str`, got `int` - at `$[0].content[0].text`
"""
from __future__ import annotations

from typing import Any, Literal

import msgspec

from ..typed import Counter

__all__ = ["DECODE_ERRORS", "TEXT_BLOCKS", "TYPE_OF", "Block", "Header", "MediaPart", "MessageRecord", "Part", "Record",
           "SummaryBlock", "SystemBlock", "TextBlock", "TextPart", "ThinkingBlock", "ToolResultBlock", "ToolUseBlock",
           "decode_file", "decode_files"]


class TextBlock(msgspec.Struct, tag_field="type", tag="text", gc=False):
    text: str


class ThinkingBlock(msgspec.Struct, tag_field="type", tag="thinking", gc=False):
    text: str


class SummaryBlock(msgspec.Struct, tag_field="type", tag="compaction_summary", gc=False):
    text: str


class SystemBlock(msgspec.Struct, tag_field="type", tag="system", gc=False):
    text: str
    mode: Literal["append", "replace"] = "append"


class ToolUseBlock(msgspec.Struct, tag_field="type", tag="tool_use", gc=False):
    id: str
    name: str
    input: str


class TextPart(msgspec.Struct, tag_field="type", tag="text", gc=False):
    text: str


class MediaPart(msgspec.Struct, tag_field="type", tag="media", gc=False):
    media_type: str


#: A tool result's part.
Part = TextPart | MediaPart


class ToolResultBlock(msgspec.Struct, tag_field="type", tag="tool_result", gc=False):
    tool_use_id: str
    parts: list[Part]


#: A content block.
Block = TextBlock | ThinkingBlock | SummaryBlock | SystemBlock | ToolUseBlock | ToolResultBlock


class _Usage(msgspec.Struct, gc=False):
    """A missing or null counter is 0 (as :func:`~..base.usage_counter` reads it)."""

    input: Counter | None = None
    output: Counter | None = None
    cache_read: Counter | None = None
    cache_write: Counter | None = None


class MessageRecord(msgspec.Struct, tag_field="type", tag="message", gc=False):
    """A message; ``content`` absent is ``[]`` (null is refused), ``usage`` absent or null is none."""

    role: Literal["system", "user", "assistant"]
    content: list[Block] = []
    usage: _Usage | None = None
    timestamp: str | None = None


class Header(msgspec.Struct, tag_field="type", tag="session", gc=False):
    """The session header, its fields as the file holds them: :func:`.lines.header` checks them."""

    id: Any = None
    model: Any = None
    context_window: Any = None
    created_at: Any = None

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "model": self.model, "context_window": self.context_window,
                "created_at": self.created_at}


#: A line of a canonical file.
Record = Header | MessageRecord

#: The blocks whose ``text`` is counted.
TEXT_BLOCKS = (TextBlock, ThinkingBlock, SummaryBlock, SystemBlock)

#: The ``type`` of each block and part shape (a tag is not an attribute of the decoded record).
TYPE_OF: dict[type, str] = {shape: str(shape.__struct_config__.tag)
                            for shape in (*TEXT_BLOCKS, ToolUseBlock, ToolResultBlock, TextPart, MediaPart)}

_FILE = msgspec.json.Decoder(list[Record])

#: What decoding raises on a file of another shape (the reference then reads it).
DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)


def decode_files(data: bytes | bytearray, spans: list[tuple[int, int] | None]) -> list[list[Record] | None]:
    """The records of each file whose newline-terminated lines are ``data[start:end]``; None where they do not decode.

    A file's lines are decoded as one JSON array, each newline read as a
    comma: so a blank line, a record spread over lines or two on one line is
    not an array and does not decode, nor does anything of another shape
    (msgspec's error names the JSON path, e.g. ``$[3].content[0].text``:
    record 3, the file's own field names).
    """
    commas = data.replace(b"\n", b",")
    view = memoryview(commas)
    out: list[list[Record] | None] = []
    for span in spans:
        if span is None:
            out.append(None)
            continue
        try:
            out.append(_FILE.decode(b"".join((b"[", view[span[0]:span[1] - 1], b"]"))))
        except DECODE_ERRORS:
            out.append(None)
    view.release()
    return out


def decode_file(lines: bytes) -> list[Record]:
    """The records of one file's newline-terminated lines; raises one of :data:`DECODE_ERRORS` where they do not decode."""
    return _FILE.decode(b"[" + lines[:-1].replace(b"\n", b",") + b"]")
