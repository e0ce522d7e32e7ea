"""The record shapes of a Claude Code transcript, declared once (``msgspec.Struct``s), and what decodes them.

Each Struct holds only the fields the reader uses, under the file's own
names; every other field of a line is skipped unparsed. A tool call's
``input`` is kept as its raw JSON bytes (:class:`msgspec.Raw`); the fields
whose type varies in real files and that only rare records carry (a queued
prompt, a boundary's ``compactMetadata``) are decoded plain (``Any``) and
judged by the readers' own checks.

A line whose fields do not fit these shapes (a field of another type, a
counter out of libpanto's range, a block or part that is not an object) fails
typed decoding: :func:`decode_file` then returns the error, which names the
JSON path (``$[3].message.content[0].text``) and the line, and the fast path
leaves the file to the one-file reader (:mod:`.reader`), which names the
file and line of a bad record or counts its skips.

>>> decode_file(b'{"type":"user","uuid":"u1","message":{"role":"user","content":"hi"}}\\n')[0].message.content
'hi'
>>> decode_file(b'{"type":"user"}\\n{"type":"assistant","message":{"usage":{"input_tokens":-1}}}\\n')
'line 2: Expected `int` >= 0 - at `$.message.usage.input_tokens`'
"""
from __future__ import annotations

import re
from typing import Any

import msgspec

from ..typed import TYPED_ERRORS, Counter

__all__ = ["COUNTERS", "DECODER", "Attachment", "Block", "CacheSplit", "Iteration", "Message", "Part", "MediaSource", "Record", "Usage",
           "counted_usage", "decode_file"]


class MediaSource(msgspec.Struct, gc=False):
    """An image's or a document's ``source``: only its media type is read."""

    media_type: str | None = None


class Part(msgspec.Struct, gc=False):
    """A part of a tool result's ``content`` list: text, or an image or a document (media)."""

    type: str | None = None
    text: str | None = None
    source: MediaSource | None = None


class Block(msgspec.Struct, gc=False):
    """A content block of a user or an assistant message (every type's fields; the absent ones None).

    ``input``: a tool call's input, its raw JSON bytes (``null`` when absent,
    as the line-by-line reader serializes a missing input).
    """

    type: str | None = None
    text: str | None = None
    thinking: str | None = None
    id: str | None = None
    name: str | None = None
    input: msgspec.Raw = msgspec.Raw(b"null")
    tool_use_id: str | None = None
    content: str | list[Part] | None = None


class CacheSplit(msgspec.Struct, gc=False):
    """``usage.cache_creation``: the part of the cache writes made to the 1-hour cache."""

    ephemeral_1h_input_tokens: Counter | None = None


class Iteration(msgspec.Struct, gc=False):
    """An item of ``usage.iterations`` (Claude Code 2.1.18x): the counters of one step of the call."""

    input_tokens: Counter | None = None
    output_tokens: Counter | None = None
    cache_read_input_tokens: Counter | None = None
    cache_creation_input_tokens: Counter | None = None
    cache_creation: CacheSplit | None = None


class Usage(msgspec.Struct, gc=False):
    """``message.usage``: the four counters in libpanto's range (anything else: the line-by-line reader judges),
    and ``iterations``, which count where the four are all zero (:func:`counted_usage`)."""

    input_tokens: Counter | None = None
    output_tokens: Counter | None = None
    cache_read_input_tokens: Counter | None = None
    cache_creation_input_tokens: Counter | None = None
    cache_creation: CacheSplit | None = None
    iterations: list[Iteration] | None = None


#: The counters of a usage and of an iteration, by their names in the record.
COUNTERS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def counted_usage(usage: Usage) -> Usage:
    """The usage a call is billed with: ``usage`` itself, or, where its four counters are all zero (or absent) and
    it has ``iterations`` (Claude Code 2.1.18x writes the first call after a compaction so), the sum of the
    iterations' counters and of their 1-hour writes. A sum may pass :data:`~panto_analytics.frame.schema.MAX_USAGE`:
    the readers' range checks judge it.

    >>> u = Usage(0, 0, 0, 0, CacheSplit(0), [Iteration(3, 5, 100, 20, CacheSplit(20)), Iteration(1, 2, 0, 0)])
    >>> s = counted_usage(u)
    >>> (s.input_tokens, s.output_tokens, s.cache_read_input_tokens, s.cache_creation_input_tokens,
    ...  s.cache_creation.ephemeral_1h_input_tokens)
    (4, 7, 100, 20, 20)
    >>> counted_usage(Usage(1, 0, 0, 0, None, [Iteration(3)])).input_tokens   # the top level counts
    1
    """
    steps = usage.iterations
    if not steps or usage.input_tokens or usage.output_tokens or usage.cache_read_input_tokens \
            or usage.cache_creation_input_tokens:
        return usage
    def total(name: str) -> int:
        return sum(getattr(step, name) or 0 for step in steps)

    one_hour = sum((step.cache_creation.ephemeral_1h_input_tokens or 0) if step.cache_creation is not None else 0
                   for step in steps)
    return Usage(total("input_tokens"), total("output_tokens"), total("cache_read_input_tokens"),
                 total("cache_creation_input_tokens"), CacheSplit(one_hour))


class Message(msgspec.Struct, gc=False):
    """A user or an assistant record's ``message``."""

    id: str | None = None
    model: str | None = None
    usage: Usage | None = None
    content: str | list[Block] | None = None


class Attachment(msgspec.Struct, gc=False):
    """An attachment record's ``attachment``: its type, a queued prompt (a string or a list of blocks), and a
    file's name and whether it came back truncated (a file re-attached after a compaction)."""

    type: str | None = None
    prompt: Any = None
    filename: Any = None
    truncated: Any = None


class Record(msgspec.Struct, gc=False):
    """One line of a transcript: the fields the reader uses, under the file's own names."""

    type: str | None = None
    subtype: str | None = None
    uuid: str | None = None
    isSidechain: bool | None = None  # noqa: N815 (the file's names)
    sessionId: str | None = None  # noqa: N815
    requestId: str | None = None  # noqa: N815
    timestamp: str | None = None
    cwd: str | None = None
    agentId: str | None = None  # noqa: N815
    isCompactSummary: bool | None = None  # noqa: N815
    isVisibleInTranscriptOnly: bool | None = None  # noqa: N815
    attachment: Attachment | None = None
    message: Message | None = None
    compactMetadata: Any = None  # noqa: N815


#: The one decoder of :class:`Record`: a file at once (:func:`decode_file`) or a line or chunk at a time (:mod:`.reader`).
DECODER = msgspec.json.Decoder(Record)
_LINE_OF = re.compile(r"\$\[(\d+)\]")
_BYTE = re.compile(r"\(byte (\d+)\)")


def decode_file(data: bytes | bytearray | memoryview) -> list[Record] | str:
    """Every non-blank line of ``data`` decoded as a :class:`Record`, or why one does not fit.

    The reason names the line (of a field that does not fit: counted over
    the non-blank lines) and the JSON path of the field, in the file's own
    field names.

    >>> decode_file(b'{"type":"user"}\\n\\n{"type":"user",}\\n')
    'line 3: JSON is malformed: trailing comma in object (byte 32)'
    """
    try:
        return DECODER.decode_lines(data)
    except TYPED_ERRORS as e:
        text = str(e)
        where = _LINE_OF.search(text)
        if where is not None:
            return f"line {int(where.group(1)) + 1}: {_LINE_OF.sub('$', text, count=1)}"
        at = _BYTE.search(text)
        if at is not None:   # malformed JSON: the line of that byte (blank lines counted)
            line = bytes(data[:int(at.group(1))]).count(b"\n") + 1
            return f"line {line}: {text}"
        return text
