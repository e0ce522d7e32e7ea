"""Reading JSON Lines into declared record shapes (``msgspec.Struct``), with the plain checks as the fallback.

An adapter declares the records it reads as Structs holding only the fields
it uses and decodes each line with a typed ``msgspec.json.Decoder``: fields it
does not declare are skipped unparsed, so a line costs little more than its
bytes. A line whose typed decoding fails (a field of another type, a value out
of range, not an object, not JSON) is read as plain JSON by
:func:`.jsonl.records`'s rules and the adapter's own checks, which name the
file's fields and line in their errors, so the typed path changes speed,
never what a file reads as. A line is decoded typed only where msgspec and
orjson agree on whether it is JSON at all (:func:`plain`).

>>> import tempfile, pathlib
>>> from panto_analytics.formats.base import SourceFile
>>> class Rec(msgspec.Struct):
...     a: int
>>> p = pathlib.Path(tempfile.mkdtemp()) / "s.jsonl"
>>> _ = p.write_text('{"a": 1, "b": [2]}\\n{"a": "x"}\\n')
>>> list(typed_records(SourceFile(p, "pi"), msgspec.json.Decoder(Rec), lambda r: {"a": r.a}))
[(1, {'a': 1}), (2, {'a': 'x'})]
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Annotated, Any, TypeVar

import msgspec
import orjson

from ..schema import MAX_USAGE
from .base import SourceFile
from .jsonl import records

__all__ = ["Counter", "Fallback", "TYPED_ERRORS", "plain", "raw_json", "typed_records", "typed_reread"]

#: A usage counter as the file holds it: a JSON integer in libpanto's range (anything else: the plain checks).
Counter = Annotated[int, msgspec.Meta(ge=0, le=MAX_USAGE)]

#: What typed decoding raises on a line of another shape: the line is then read as plain JSON.
TYPED_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)

T = TypeVar("T")


class Fallback(Exception):  # noqa: N818 (a signal, not an error)
    """Raised by a typed converter, before any effect, where the plain checks must decide (and word the error)."""


#: orjson's nesting limit is 1024; msgspec's is Python's recursion limit (1000 unless raised). Where that
#: is raised, a line with this many brackets is read plain.
_DEEP = 1000


def plain(raw: bytes) -> bool:
    """Whether msgspec's verdict on ``raw`` (JSON or not) is orjson's, so a typed decode may be trusted.

    msgspec checks the syntax and escapes of the fields it skips, but not
    their UTF-8 (nor, where Python's recursion limit was raised above 1000,
    their depth); orjson checks both. One difference is left, on purpose: a number
    beyond a double (``1e400``) in a field the reader does not declare, which
    orjson rejects as malformed JSON and msgspec skips (finding it costs a
    regular expression over every line, three times what orjson's whole
    parse costs).

    >>> plain(b'{"a": "caf\\xc3\\xa9"}'), plain(b'{"a": "caf\\xe9"}')
    (True, False)
    """
    if not raw.isascii():
        try:
            raw.decode()
        except UnicodeDecodeError:
            return False
    return sys.getrecursionlimit() <= _DEEP or raw.count(b"[") + raw.count(b"{") < _DEEP


def raw_json(raw: msgspec.Raw) -> str:
    """A JSON value's text as orjson's compact serialization of it (what the line-by-line readers stored).

    The recordings' own bytes are that already in every real case seen, but not in an edited file
    (spaces, ``1.50``, ``\\/``); telling the two apart (a regular expression) costs four times the
    re-serialization, so the value is re-serialized, from its bytes, without a Python object per field
    of the line around it.

    >>> raw_json(msgspec.Raw(b'{"a":[1,"x y"]}')), raw_json(msgspec.Raw(b'{"a": 1.50}'))
    ('{"a":[1,"x y"]}', '{"a":1.5}')
    """
    return orjson.dumps(orjson.loads(bytes(raw))).decode()


def typed_records(src: SourceFile, decoder: msgspec.json.Decoder[T],
                  convert: Callable[[T], Any]) -> Iterator[tuple[int, Any]]:
    """``(line number, object)`` as :func:`.jsonl.records` yields them, each decoded typed where it can be.

    ``convert`` turns a decoded record into what the adapter's checks read (a
    dict of the fields they need, or a record that reads like one), or None to
    read that line as plain JSON (then a dict, as orjson reads it).
    Blank, truncated, malformed and pretty-printed lines are reported exactly
    as :func:`.jsonl.records` reports them.
    """
    def first(raw: bytes) -> Any:
        if not plain(raw):
            return None
        try:
            return convert(decoder.decode(raw))
        except TYPED_ERRORS:
            return None

    return records(src, first)


def typed_reread(src: SourceFile, wanted: set[int],
                 decoder: msgspec.json.Decoder[T]) -> Iterator[tuple[int, T | None, bytes]]:
    """``(line number, typed record or None, bytes)`` for the ``wanted`` lines, which a first pass found JSON
    objects; None where the line is of another shape (read it plain from its bytes)."""
    if not wanted:
        return
    last = max(wanted)
    with src.open() as f:
        for lineno, raw in enumerate(f, 1):
            if lineno in wanted:
                rec: T | None = None
                if plain(raw):
                    try:
                        rec = decoder.decode(raw)
                    except TYPED_ERRORS:
                        rec = None
                yield lineno, rec, raw
                if lineno == last:
                    return
