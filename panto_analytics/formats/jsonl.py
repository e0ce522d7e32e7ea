"""Reading JSON Lines: one JSON object per line, every bad line reported with its number.

The adapters of real recordings (pi, Codex) read their files through
:func:`records`, so that a line that is not JSON, a line that is not an
object, and a file that is not JSONL at all are reported the same way, with
reasons stable enough to group skips by.

>>> import tempfile, pathlib
>>> from panto_analytics.formats.contract import SourceFile
>>> p = pathlib.Path(tempfile.mkdtemp()) / "s.jsonl"
>>> _ = p.write_text('{"a": 1}\\n\\n[2]\\n{"b": 3}\\n')
>>> src = SourceFile(p, "pi", skip_invalid=True)
>>> list(records(src))
[(1, {'a': 1}), (4, {'b': 3})]
>>> dict(src.report.skipped).popitem()[0][1]
'expected a JSON object, got array'
"""
from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any

import orjson

from .contract import SourceFile
from .record_fields import Invalid

__all__ = ["CHUNK", "NOT_JSONL", "content_parts", "json_type", "malformed", "records", "require_string", "reread", "utf16",
           "wanted_lines"]

#: Why a pretty-printed JSON file is rejected (one reason for all its lines).
NOT_JSONL = ("not JSONL: the file looks like pretty-printed JSON (one document over many lines), "
             "not one JSON object per line")

#: Bytes read at a time where a reader decodes whole chunks (``bulk``; a longer line is read whole). Below
#: the C allocator's threshold for mapping fresh pages (128 KiB): a megabyte at a time costs a third more.
CHUNK = 1 << 16

_JSON_TYPES = {list: "array", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


def utf16(raw: bytes) -> str | None:
    """``"little-endian"`` or ``"big-endian"`` when a line is UTF-16 text (a byte-order mark, or every other
    byte NUL), else None.

    >>> utf16('{"a": 1}'.encode("utf-16")), utf16('{"a": 1}'.encode("utf-16-be")), utf16(b'{"a": 1}')
    ('little-endian', 'big-endian', None)
    """
    if raw.startswith(b"\xff\xfe"):
        return "little-endian"
    if raw.startswith(b"\xfe\xff"):
        return "big-endian"
    text = raw.rstrip(b"\r\n\x00")
    if len(text) >= 4:
        if text[1::2].count(0) * 4 >= len(text) * 3 // 2 and not text[0::2].count(0):
            return "little-endian"
        if text[0::2].count(0) * 4 >= len(text) * 3 // 2 and not text[1::2].count(0):
            return "big-endian"
    return None


def malformed(raw: bytes, error: orjson.JSONDecodeError) -> str:
    """Why a line is not JSON, in the file's terms: UTF-16 text, a byte that is not UTF-8 (and where), or
    the JSON error.

    >>> malformed(b'{"a": "caf\\xe9"}\\n', orjson.JSONDecodeError("str is not valid UTF-8: surrogates not allowed", "", 0))
    'not UTF-8: byte 0xe9 at byte 10 of the line'
    >>> malformed('{"a": 1}\\n'.encode("utf-16-le"), orjson.JSONDecodeError("x", "", 0))
    'the file is UTF-16 (little-endian), not UTF-8: convert it, e.g. iconv -f UTF-16 -t UTF-8'
    """
    endian = utf16(raw)
    if endian is not None:
        return f"the file is UTF-16 ({endian}), not UTF-8: convert it, e.g. iconv -f UTF-16 -t UTF-8"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"not UTF-8: byte 0x{raw[e.start]:02x} at byte {e.start} of the line"
    return f"malformed JSON: {error.msg}"


def records(src: SourceFile, first: Callable[[bytes], Any] | None = None,
            bulk: Callable[[bytes, int], Sequence[Any] | None] | None = None) -> Iterator[tuple[int, Any]]:
    """``(line number, object)`` for every line of ``src`` that holds a JSON object.

    ``first``, when given, is tried on each line before the plain parse: what it returns (not None) is
    yielded as the line's record (the typed readers' fast path, :mod:`.typed`); None sends the line
    through everything below. ``bulk``, when given, is tried first on each chunk of whole lines
    (about :data:`CHUNK` bytes) with the number of its first line: a sequence it returns holds one
    record per line of the chunk, yielded as they are; None sends the chunk's lines one by one
    through ``first`` and everything below.

    Blank lines are skipped. The last line, when it has no newline and is
    not a JSON object, is being written: it is counted as a skip
    (:meth:`SourceFile.truncated`), never an error. A line that is not JSON, or is JSON but not an
    object, goes through :meth:`SourceFile.invalid`. When the first line is
    not JSON but a lone ``{`` or ``[``, the file is pretty-printed JSON: the
    error names line 1, and under ``skip_invalid`` every non-blank line of
    the file is counted as skipped for that one reason.
    """
    seen_any = False
    with src.open() as f:
        lines: Iterator[Any] = iter(f) if bulk is None else _chunks(f, bulk)
        lineno = 0
        for raw in lines:
            if raw.__class__ is not bytes:  # a chunk decoded whole, one record per line
                for rec in raw:
                    lineno += 1
                    yield lineno, rec
                seen_any = seen_any or bool(raw)
                continue
            lineno += 1
            if first is not None and (rec := first(raw)) is not None:
                seen_any = True
                yield lineno, rec
                continue
            # Parse first: blank lines are rare, so strip only when parsing fails.
            try:
                rec = orjson.loads(raw)
            except orjson.JSONDecodeError as e:
                stripped = raw.strip()
                if not stripped:
                    continue
                if not raw.endswith(b"\n"):  # the last line, cut short: a session still being written
                    src.truncated(lineno)
                    continue
                if not seen_any and stripped in (b"{", b"["):
                    _reject_file(src, lines, lineno)
                    return
                seen_any = True
                src.invalid(lineno, malformed(raw, e))
                continue
            seen_any = True
            if isinstance(rec, dict):
                yield lineno, rec
            elif not raw.endswith(b"\n"):
                src.truncated(lineno)
            else:
                src.invalid(lineno, f"expected a JSON object, got {json_type(rec)}")


def reread(src: SourceFile, wanted: set[int]) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` again for the ``wanted`` lines, which :func:`records` already yielded.

    For adapters that need a second pass: lines are parsed only when wanted,
    and nothing is reported twice. The first pass read each wanted line plain or typed, and typed only where
    orjson reads it too (:func:`.typed.plain`), so orjson reads it again; a line that it refuses all the same (the
    file changed in between) is reported as :func:`records` reports it (:meth:`.SourceFile.invalid`) and skipped.
    """
    for lineno, raw in wanted_lines(src, wanted):
        try:
            yield lineno, orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            src.invalid(lineno, malformed(raw, e))


def wanted_lines(src: SourceFile, wanted: set[int]) -> Iterator[tuple[int, bytes]]:
    """``(line number, bytes)`` of the ``wanted`` lines, in file order; reading stops at the last of them."""
    if not wanted:
        return
    last = max(wanted)
    with src.open() as f:
        for lineno, raw in enumerate(f, 1):
            if lineno in wanted:
                yield lineno, raw
                if lineno == last:
                    return


def _chunks(f: IO[bytes], bulk: Callable[[bytes, int], Sequence[Any] | None]) -> Iterator[Sequence[Any] | bytes]:
    """The file as chunks of whole lines: each one ``bulk`` decodes, else its lines (bytes) one by one."""
    lineno = 1
    while chunk := f.read(CHUNK):
        if not chunk.endswith(b"\n"):
            chunk += f.readline()
        decoded = bulk(chunk, lineno)
        if decoded is not None:
            yield decoded
            lineno += len(decoded)
            continue
        for raw in io.BytesIO(chunk):  # split at b"\n" only, as iterating the file does
            yield raw
            lineno += 1


def _reject_file(src: SourceFile, rest: Iterable[Any], first: int) -> None:
    src.invalid(first, NOT_JSONL)  # raises unless skip_invalid
    lineno = first
    for raw in rest:
        for line in (raw,) if raw.__class__ is bytes else raw:  # a decoded chunk: one record per line
            lineno += 1
            if line.__class__ is not bytes or line.strip():
                src.invalid(lineno, NOT_JSONL)


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type, for error messages.

    >>> json_type([]), json_type(None), json_type({})
    ('array', 'null', 'object')
    """
    return "object" if isinstance(value, dict) else _JSON_TYPES.get(type(value), type(value).__name__)


def require_string(value: Any, where: str) -> str:
    """``value`` if it is a string, else :class:`~.record_fields.Invalid` naming ``where`` and the JSON type found.

    >>> require_string("a", "text")
    'a'
    >>> require_string(5, "content[0].text")
    Traceback (most recent call last):
    ...
    panto_analytics.formats.record_fields.Invalid: content[0].text must be a string, got number
    """
    if not isinstance(value, str):
        raise Invalid(f"{where} must be a string, got {json_type(value)}")
    return value


def content_parts(content: Any, where: str, *, or_string: bool = False) -> Iterator[tuple[str, Any, dict[str, Any]]]:
    """Each object of the content list ``content``: ``(its place, its type, the object)``.

    :class:`~.record_fields.Invalid` names ``where`` when ``content`` is not a list (saying that a string
    would do, with ``or_string``: the caller took a string before), and the part when one is not an object.

    >>> [(here, kind) for here, kind, _ in content_parts([{"type": "text"}, {}], "content")]
    [('content[0]', 'text'), ('content[1]', None)]
    >>> list(content_parts([{}, 5], "message.content"))
    Traceback (most recent call last):
    ...
    panto_analytics.formats.record_fields.Invalid: message.content[1] must be an object, got number
    """
    if not isinstance(content, list):
        raise Invalid(f"{where} must be {'a string or ' if or_string else ''}a list, got {json_type(content)}")
    for i, part in enumerate(content):
        here = f"{where}[{i}]"
        if not isinstance(part, dict):
            raise Invalid(f"{here} must be an object, got {json_type(part)}")
        yield here, part.get("type"), part
