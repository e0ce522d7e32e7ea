"""The canonical records, declared once as ``msgspec.Struct``s: only the fields the reader uses, by the file's names.

A canonical file (``docs/formats.md``) is an optional ``session`` header
and ``message`` records; a message holds content blocks, a tool result
holds parts. Each is a Struct tagged by its ``type``, so decoding a line
checks everything :mod:`.reader`'s plain checks check by hand (the record and block types,
the required strings, the roles, the system modes, the usage counters) and
skips every undeclared field unparsed. A line that decodes passes every
check the plain checks make on a line, but for the header's own checks, its
place (first line only) and the timestamps' form, which :mod:`.reader` and
:mod:`.fast` check on the records. What does not decode (msgspec names the JSON path, e.g.
``$[3].content[0].text``) is read plain by :mod:`.reader`, which words the error in
the file's own field names with its line number. The Structs opt out of
the garbage collector (``gc=False``: they hold no cycles), which is what
makes decoding many of them cheap.

>>> msgspec.json.Decoder(Record).decode_lines(b'{"type":"message","role":"user","content":[{"type":"text","text":5}]}\\n')
Traceback (most recent call last):
...
msgspec.ValidationError: Expected `str`, got `int` - at `$[0].content[0].text`
"""
from __future__ import annotations

from typing import Any, ClassVar, Generic, Literal, TypeVar

import msgspec

from ..typed import TYPED_ERRORS, Counter, JsonInt, beyond_double_spans, one_per_line

__all__ = ["TEXT_BLOCKS", "TYPE_OF", "Block", "Header", "MediaPart", "MessageRecord", "Part", "RawRecord", "Record",
           "SummaryBlock", "SystemBlock", "TextBlock", "TextPart", "ThinkingBlock", "ToolResultBlock", "ToolUseBlock",
           "decode_files"]

#: The type of a text (a text-like block's ``text``, a text part's ``text``): ``str`` where the text is read
#: (:mod:`.reader`), ``msgspec.Raw`` where only its words and bytes are counted (:mod:`.fast`: the JSON string as
#: the file writes it, quotes and escapes included, checked by msgspec but not made into a ``str``).
T = TypeVar("T")


class TextBlock(msgspec.Struct, Generic[T], tag_field="type", tag="text", gc=False):
    text: T


class ThinkingBlock(msgspec.Struct, Generic[T], tag_field="type", tag="thinking", gc=False):
    text: T


class SummaryBlock(msgspec.Struct, Generic[T], tag_field="type", tag="compaction_summary", gc=False):
    text: T


class SystemBlock(msgspec.Struct, Generic[T], tag_field="type", tag="system", gc=False):
    text: T
    mode: Literal["append", "replace"] = "append"


class ToolUseBlock(msgspec.Struct, tag_field="type", tag="tool_use", gc=False):
    id: str
    name: str
    input: str


class TextPart(msgspec.Struct, Generic[T], tag_field="type", tag="text", gc=False):
    text: T
    #: Not a field (a text part's ``media_type`` is not read): None, so that every part has both names.
    media_type: ClassVar[None] = None


class MediaPart(msgspec.Struct, tag_field="type", tag="media", gc=False):
    media_type: str
    #: Not a field (a media part's ``text`` is not read): None, so that every part has both names.
    text: ClassVar[None] = None


#: A tool result's part.
Part = TextPart[T] | MediaPart


class ToolResultBlock(msgspec.Struct, Generic[T], tag_field="type", tag="tool_result", gc=False):
    tool_use_id: str
    parts: list[Part[T]]


#: A content block.
Block = TextBlock[T] | ThinkingBlock[T] | SummaryBlock[T] | SystemBlock[T] | ToolUseBlock | ToolResultBlock[T]


class _Usage(msgspec.Struct, gc=False):
    """A missing or null counter is 0 (as :func:`~..record_fields.usage_counter` reads it)."""

    input: Counter | None = None
    output: Counter | None = None
    cache_read: Counter | None = None
    cache_write: Counter | None = None


class MessageRecord(msgspec.Struct, Generic[T], tag_field="type", tag="message", gc=False):
    """A message; ``content`` absent is ``[]`` (null is refused), ``usage`` absent or null is none."""

    role: Literal["system", "user", "assistant"]
    content: list[Block[T]] = []
    usage: _Usage | None = None
    timestamp: str | None = None


class Header(msgspec.Struct, tag_field="type", tag="session", gc=False):
    """The session header, its fields as the file holds them (:func:`.reader.header` checks them); any other
    value (an integer beyond a machine word) fails to decode, so the line is read plain, as the oracle reads it."""

    id: str | None = None
    model: str | None = None
    context_window: JsonInt | float | None = None
    created_at: str | JsonInt | float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "model": self.model, "context_window": self.context_window,
                "created_at": self.created_at}


#: A line of a canonical file.
Record = Header | MessageRecord[str]
#: A line of a canonical file, its texts left as their JSON (:data:`T`).
RawRecord = Header | MessageRecord[msgspec.Raw]

#: The blocks whose ``text`` is counted.
TEXT_BLOCKS = (TextBlock, ThinkingBlock, SummaryBlock, SystemBlock)

#: The ``type`` of each block and part shape (a tag is not an attribute of the decoded record).
TYPE_OF: dict[type, str] = {shape: str(shape.__struct_config__.tag)
                            for shape in (*TEXT_BLOCKS, ToolUseBlock, ToolResultBlock, TextPart, MediaPart)}

_LINES = msgspec.json.Decoder(RawRecord)


def decode_files(data: bytes | bytearray, spans: list[tuple[int, int] | None]) -> list[list[RawRecord] | None]:
    """The records of each file whose newline-terminated lines are ``data[start:end]``, one a line; None for a
    file of another shape.

    A file is taken where every line starts with ``{`` and ends with ``}``
    (:func:`~..typed.one_per_line`: so no line is blank or ends in a carriage return), holds no number beyond a
    double (:func:`~..typed.beyond_double`, of every such file of ``data`` in one scan:
    :func:`~..typed.beyond_double_spans`; the spans must not overlap), its lines decode
    (:meth:`msgspec.json.Decoder.decode_lines`) and they hold as many records
    as lines. ``decode_lines`` needs no line break between two values, but
    a line break inside a value can follow ``}`` only before ``,``, ``}`` or
    ``]``, never before ``{``, and a string holds no raw line break: so each
    line holds whole records, and as many records as lines means one a line,
    as :mod:`.reader` reads them (record *k* is line *k + 1*). Two records on
    one line (``{...},{...}`` or ``{...}{...}``), a record spread over lines,
    a blank line or anything of another shape is left to :mod:`.reader`.

    >>> m = b'{"type":"message","role":"user","content":[{"type":"text","text":"hi"}]}'
    >>> data = b'{"type":"session","id":"s"}\\n' + m + b"\\n" + m + b"," + m + b"\\n" + m + b"\\n\\n"
    >>> (header, msg), two_on_a_line, blank = decode_files(data, [(0, 101), (101, 247), (247, 321)])
    >>> header.id, msg.role, bytes(msg.content[0].text), msg.usage is None, two_on_a_line, blank
    ('s', 'user', b'"hi"', True, None, None)
    """
    counts = [None if span is None else one_per_line(data, *span) for span in spans]
    taken = sorted((span, k) for k, (span, lines) in enumerate(zip(spans, counts)) if span is not None and lines is not None)
    # one scan of the whole buffer's taken files, not one per file (a file's own scan costs NumPy's fixed cost per call)
    for (_, k), beyond in zip(taken, beyond_double_spans(data, [span for span, _ in taken])):
        if beyond:
            counts[k] = None
    out: list[list[RawRecord] | None] = []
    with memoryview(data) as view:
        for span, lines in zip(spans, counts):
            if lines is None or span is None:
                out.append(None)
                continue
            try:
                records = _LINES.decode_lines(view[span[0]:span[1]])
            except TYPED_ERRORS:  # a file of another shape: :mod:`.reader` reads it alone
                out.append(None)
                continue
            out.append(records if len(records) == lines else None)
    return out
