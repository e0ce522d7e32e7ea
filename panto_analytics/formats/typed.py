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
>>> from panto_analytics.formats.contract import SourceFile
>>> class Rec(msgspec.Struct):
...     a: int
>>> p = pathlib.Path(tempfile.mkdtemp()) / "s.jsonl"
>>> _ = p.write_text('{"a": 1, "b": [2]}\\n{"a": "x"}\\n')
>>> list(typed_records(SourceFile(p, "pi"), msgspec.json.Decoder(Rec), lambda r: {"a": r.a}))
[(1, {'a': 1}), (2, {'a': 'x'})]
"""
from __future__ import annotations

import mmap
import sys
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from typing import Annotated, Any, Generic, TypeVar

import msgspec
import orjson

from ..frame.schema import MAX_USAGE
from .columnar import valid_utf8
from .contract import SourceFile
from .gc_pause import gc_paused
from .jsonl import records
from .session_files import COMPRESSED_SUFFIXES

__all__ = ["DEEP", "Counter", "JsonInt", "TYPED_ERRORS", "TypedLines", "beyond_double", "beyond_double_spans", "one_per_line",
           "plain", "raw_json", "typed_records"]

#: A usage counter as the file holds it: a JSON integer in libpanto's range (anything else: the plain checks).
Counter = Annotated[int, msgspec.Meta(ge=0, le=MAX_USAGE)]

#: An integer orjson reads as one (beyond 64 bits, a float; msgspec bounds at int64): else a typed decode declines.
JsonInt = Annotated[int, msgspec.Meta(ge=-(1 << 63), le=(1 << 63) - 1)]

#: What typed decoding raises on a line of another shape: the line is then read as plain JSON.
TYPED_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)

T = TypeVar("T")


#: orjson's nesting limit is 1024; msgspec's is Python's recursion limit (1000 unless raised). Where that
#: is raised, a line (a fast path: a file) with this many brackets is read plain.
DEEP = 1000


def plain(raw: bytes, numbers: bool = True) -> bool:
    """Whether msgspec's verdict on ``raw`` (JSON or not) is orjson's, so a typed decode may be trusted.

    msgspec checks the syntax and escapes of the fields it skips, but not their UTF-8 (nor, where Python's
    recursion limit was raised above 1000, their depth), nor that a number fits a double (:func:`beyond_double`;
    ``numbers=False`` where the whole file was found to hold none beyond).

    >>> plain(b'{"a": "caf\\xc3\\xa9"}'), plain(b'{"a": "caf\\xe9"}'), plain(b'{"a": 1, "b": 1e400}')
    (True, False, False)
    """
    if not raw.isascii():
        try:
            raw.decode()
        except UnicodeDecodeError:
            return False
    return (sys.getrecursionlimit() <= DEEP or raw.count(b"[") + raw.count(b"{") < DEEP) \
        and not (numbers and beyond_double(raw))


def beyond_double(raw: bytes | bytearray, start: int = 0, end: int | None = None) -> bool:
    """Whether ``raw[start:end]`` may hold a JSON number beyond a double (orjson refuses it, msgspec skips it in a
    field it does not declare): 210 digits in a row, or an exponent of three digits (after a sign or not) ending
    a number that starts a value (after ``:``, ``,``, ``[`` or nothing, and spaces: so a hex id, ``"3e456"``, is
    no number).

    A line is translated and searched (:func:`_translated`), a file scanned in blocks with NumPy (:func:`_scanned`).

    >>> beyond_double(b'{"a":[1, -2.5E+308]}'), beyond_double(b'{"id":"3e456","a":1e+99}')
    (True, False)
    """
    end = len(raw) if end is None else end
    return _translated(raw, start, end) if end - start < _SCAN else _scanned(raw, [(start, end)])[0]


def beyond_double_spans(data: bytes | bytearray, spans: Sequence[tuple[int, int]]) -> list[bool]:
    """:func:`beyond_double` of each ``(start, end)`` of ``data`` (in order, not overlapping), in one scan.

    >>> data = b'{"a":"12e456"}\\n{"b":1e400}\\n{"c":[1,-2.5E+308]}\\n'
    >>> beyond_double_spans(data, [(0, 15), (15, 27), (27, 46)])
    [False, True, True]
    """
    edges = [edge for span in spans for edge in span]
    if any(later < earlier for earlier, later in zip(edges, edges[1:])):
        raise ValueError("spans must be in order and not overlap")
    return _scanned(data, spans) if spans else []


#: Each byte as :func:`_translated` sees it: a digit ``0``, a point or sign ``1``, an exponent's letter ``e``.
_SHAPE = bytes(48 if c in b"0123456789" else 49 if c in b".+-" else 101 if c in b"eE" else 120 for c in range(256))
#: Bytes from which :func:`beyond_double` scans in blocks, and the block.
_SCAN, _BLOCK = 1 << 14, 1 << 17


def _translated(raw: bytes | bytearray, start: int, end: int) -> bool:
    raw = raw[start:end] if start or end != len(raw) else raw
    if b"0" * 64 in (shape := raw.translate(_SHAPE)) and b"0" * 210 in shape:  # the short search skips faster
        return True
    for candidate in (b"0e0", b"0e1"):  # an exponent's letter after a digit, before a digit or a sign
        at = shape.find(candidate)
        while at >= 0:
            if _exponent(raw, at + 1, 0, len(raw)):
                return True
            at = shape.find(candidate, at + 1)
    return False


def _scanned(raw: bytes | bytearray, spans: Sequence[tuple[int, int]]) -> list[bool]:
    """:func:`beyond_double` of each span, in one scan of blocks of :data:`_BLOCK` bytes, a few NumPy operations
    each: every ``e`` or ``E`` after a digit and before a digit or sign and two digits (judged then all at once,
    :func:`_exponents`), and every 32 aligned bytes of digits (a run of 210 holds some; few, looked at in Python
    within their span)."""
    import numpy as np

    starts, ends = [s for s, _ in spans], [e for _, e in spans]
    found = [False] * len(spans)
    first, last = starts[0], ends[-1]
    data = np.frombuffer(raw, np.uint8)
    size = min(_BLOCK, last - first) + 5
    block, tmp = np.zeros(size, np.uint8), np.empty(size, np.uint8)
    digit, letter = np.empty(size, bool), np.empty(size, bool)
    candidates: list[np.ndarray] = []

    def span_of(at: int) -> int | None:  # the span at ``at`` and not yet found, or None
        k = bisect_right(starts, at) - 1
        return k if k >= 0 and at < ends[k] and not found[k] else None

    for at in range(first, last, _BLOCK):  # block[p] is raw[at - 1 + p]
        n, ahead = min(last - at, _BLOCK), min(last - at, _BLOCK + 3)
        block[0] = data[at - 1] if at > first else 0
        block[1:ahead + 1] = data[at:at + ahead]
        block[ahead + 1:] = 0
        np.less(np.subtract(block, 48, out=tmp), 10, out=digit)
        np.equal(np.bitwise_or(block, 32, out=tmp), 101, out=letter)
        exponent = letter[1:n + 1]
        exponent &= digit[:n]
        near = np.flatnonzero(exponent)   # few: the rest is looked at only there
        after = block[near + 2]
        near = near[(digit[near + 2] | ((after & 0xF9) == 0x29)) & digit[near + 3] & digit[near + 4]]  # + and - (and ) /)
        if len(near):
            candidates.append(near + at)
        runs = digit[1:n + 1 - n % 32].view(np.uint64) == 0x0101010101010101
        for b in (np.flatnonzero(runs.view(np.uint32) == 0x01010101) * 32 + at).tolist():
            if (k := span_of(b)) is not None:
                found[k] = b"0" * 210 in bytes(raw[max(starts[k], b - 210):min(ends[k], b + 242)]).translate(_DIGITS)
    if candidates:
        at_e, begin, stop = np.concatenate(candidates), np.array(starts, np.int64), np.array(ends, np.int64)
        owner = np.searchsorted(begin, at_e, side="right") - 1
        inside = (owner >= 0) & (at_e < stop[np.maximum(owner, 0)])
        at_e, owner = at_e[inside], owner[inside]
        hit = _exponents(raw, data, at_e, begin[owner], stop[owner])
        for j in np.unique(owner[hit]).tolist():
            found[j] = True
    return found


#: How far :func:`_exponents` walks back over a number's bytes, and then over spaces, with NumPy (beyond: Python).
_WALK = 64
_NUMBER_BYTES, _SPACES, _VALUE_START = b"0123456789.+-", b" \t\r\n", b":,["


def _exponents(raw: bytes | bytearray, data: Any, e: Any, start: Any, end: Any) -> Any:
    """:func:`_exponent` of each position ``e`` (NumPy arrays) in its span ``start``-``end``, at once: booleans."""
    import numpy as np

    def byte(at: Any) -> Any:
        return data[np.clip(at, 0, len(data) - 1)]

    def is_digit(b: Any) -> Any:
        return (b >= 48) & (b <= 57)

    sign = np.isin(byte(e + 1), (43, 45))   # + -
    lead = e + 1 + sign
    at = np.flatnonzero((lead + 2 < end) & is_digit(byte(lead)) & is_digit(byte(lead + 1)) & is_digit(byte(lead + 2))
                        & (e > start) & is_digit(byte(e - 1)))
    token, low = e[at] - 1, start[at]
    # Back over the digits, point and sign, then over spaces: each as far as it goes, or its span's start.
    for kind in (_NUMBER_BYTES, _SPACES):
        walking = np.arange(len(token))
        for _ in range(_WALK):
            t = token[walking]
            walking = walking[(t > low[walking]) & np.isin(byte(t - 1), tuple(kind))]
            if not len(walking):
                break
            token[walking] -= 1
        for i in walking.tolist():   # a run longer than the walk: on in Python
            t, lo = int(token[i]), int(low[i])
            while t > lo and raw[t - 1] in kind:
                t -= 1
            token[i] = t
    verdict = np.zeros(len(e), bool)
    verdict[at] = (token == low) | np.isin(byte(token - 1), tuple(_VALUE_START))
    return verdict


_DIGITS = bytes(48 if c in b"0123456789" else 120 for c in range(256))


def _exponent(raw: bytes | bytearray, e: int, start: int, end: int) -> bool:
    """Whether the ``e`` at ``e`` is followed by three digits (after a sign or not) in ``raw[:end]`` and ends the
    digits of a number that starts a value in ``raw[start:]``."""
    after = raw[e + 1:min(e + 5, end)]
    digits = after[1:4] if after[:1] in (b"+", b"-") else after[:3]
    if len(digits) < 3 or not digits.isdigit() or e == start or not raw[e - 1:e].isdigit():
        return False
    token = e - 1
    while token > start and raw[token - 1] in b"0123456789.+-":  # back over the digits, point and sign, then spaces
        token -= 1
    while token > start and raw[token - 1] in b" \t\r\n":
        token -= 1
    return token == start or raw[token - 1] in b":,["


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
    numbers = not _numbers_fit(src)   # else no line needs :func:`beyond_double` of its own

    def first(raw: bytes) -> Any:
        if not plain(raw, numbers):
            return None
        try:
            return convert(decoder.decode(raw))
        except TYPED_ERRORS:
            return None

    return records(src, first)


def _numbers_fit(src: SourceFile) -> bool:
    """Whether a plain file holds no number beyond a double (:func:`beyond_double` of the file, mapped, not read)."""
    if src.path.suffix in COMPRESSED_SUFFIXES:
        return False
    try:
        with open(src.file, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as whole:
            return not beyond_double(whole if len(whole) >= _SCAN else whole[:])  # type: ignore[arg-type]
    except (OSError, ValueError):   # an empty file (nothing to map), one that is gone: the lines judge
        return False


def one_per_line(chunk: bytes | bytearray, start: int = 0, end: int | None = None) -> int | None:
    """How many lines ``chunk[start:end]`` has, when each provably holds at most one JSON value and none is
    blank: every line starts with ``{`` and ends with ``}`` (no carriage return); else None.

    A line break inside a JSON value can follow ``}`` only before ``,``, ``}`` or ``]``, never before ``{``,
    and a string holds no raw line break, so each ``}\\n{`` ends one top-level value and starts the next:
    a chunk of *n* such lines that decodes as *n* values (:meth:`msgspec.json.Decoder.decode_lines`) holds
    one value per line, as a line-by-line reader reads it. ``start`` and ``end`` look at a part of a larger
    buffer without copying it.

    >>> one_per_line(b'{"a":1}\\n{"b":2}\\n'), one_per_line(b'{"a":1}\\n{"b":2}'), one_per_line(b'{}')
    (2, 2, 1)
    >>> one_per_line(b'{"a":1}\\n\\n{"b":2}\\n'), one_per_line(b'{"a":1}\\r\\n'), one_per_line(b'{\\n"a":1}\\n')
    (None, None, None)
    >>> one_per_line(b'x{"a":1}\\n{}\\ny', 1, 12), one_per_line(b'{}\\n', 1, 3), one_per_line(b'{}', 1, 1)
    (2, None, None)
    """
    end = len(chunk) if end is None else end
    if start >= end or chunk[start] != _OPEN:
        return None
    # One find per line (a C scan): on Codex lines a third of the time numpy takes, a tenth of bytes.count(b"}\n{").
    find = chunk.find
    lines = 0
    at = find(b"\n", start, end)
    while at >= 0:
        lines += 1
        if chunk[at - 1] != _CLOSE:
            return None
        at += 1
        if at == end:
            return lines
        if chunk[at] != _OPEN:
            return None
        at = find(b"\n", at, end)
    return lines + 1 if chunk[end - 1] == _CLOSE else None


_OPEN, _CLOSE = ord("{"), ord("}")


class TypedLines(Generic[T]):
    """The records of one JSON Lines file, decoded into ``decoder``'s declared shape wherever it fits, read
    plain (a dict, as :func:`.jsonl.records` reads it) elsewhere.

    Iterating yields ``(line number, record)`` as :func:`.jsonl.records` does, with every blank,
    truncated, malformed or pretty-printed line reported as it reports them. Whole chunks of lines
    (:data:`.jsonl.CHUNK` bytes) are decoded at once where :func:`one_per_line` and :func:`valid_utf8` hold
    and every line fits the shape (one ``decode_lines`` call, the garbage collector paused: the records
    hold no cycles); a chunk that does not, and a compressed file, is read line by line, each line typed where it fits
    (:func:`plain`). :meth:`raw` gives the bytes of the line just yielded.

    >>> import tempfile, pathlib
    >>> from panto_analytics.formats.contract import SourceFile
    >>> class Rec(msgspec.Struct):
    ...     a: int
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "s.jsonl"
    >>> _ = p.write_text('{"a":1}\\n{"a":2}\\n')
    >>> lines = TypedLines(SourceFile(p, "codex"), msgspec.json.Decoder(Rec))
    >>> [(n, rec, lines.raw(n)) for n, rec in lines]
    [(1, Rec(a=1), b'{"a":1}\\n'), (2, Rec(a=2), b'{"a":2}\\n')]
    >>> _ = p.write_text('{"a":1}\\n{"a":"x"}\\n')
    >>> list(TypedLines(SourceFile(p, "codex"), msgspec.json.Decoder(Rec)))
    [(1, Rec(a=1)), (2, {'a': 'x'})]
    """

    def __init__(self, src: SourceFile, decoder: msgspec.json.Decoder[T]):
        self.src, self.decoder = src, decoder
        self._line = b""  # the line last decoded alone
        self._chunk: bytes | None = None  # the chunk last decoded whole
        self._at = (0, 0)  # a line of it and where that line starts

    def __iter__(self) -> Iterator[tuple[int, T | Any]]:
        # A compressed file is read line by line: a damaged one must fail (or stop) where the lines before the
        # damage have been read, as the line-by-line reader does, not a chunk ahead.
        compressed = self.src.path.suffix in COMPRESSED_SUFFIXES
        return records(self.src, self._one, None if compressed else self._bulk)

    def raw(self, lineno: int) -> bytes:
        """The bytes of line ``lineno``, the line of the record last yielded."""
        if self._chunk is None:
            return self._line
        chunk = self._chunk
        # Lines are asked for in order: walk on from the last one found.
        line, start = self._at
        while line < lineno:
            start = chunk.index(b"\n", start) + 1
            line += 1
        self._at = (line, start)
        end = chunk.find(b"\n", start)
        return chunk[start:] if end < 0 else chunk[start:end + 1]

    def _one(self, raw: bytes) -> T | None:
        self._line, self._chunk = raw, None
        if not plain(raw):
            return None
        try:
            return self.decoder.decode(raw)
        except TYPED_ERRORS:
            return None

    def _bulk(self, chunk: bytes, start: int) -> Sequence[T] | None:
        lines = one_per_line(chunk)
        if lines is None or not (chunk.isascii() or valid_utf8(chunk)) or beyond_double(chunk) \
                or (sys.getrecursionlimit() > DEEP and not plain(chunk, numbers=False)):  # numbers: checked just before
            return None
        try:
            with gc_paused():
                decoded = self.decoder.decode_lines(chunk)
        except TYPED_ERRORS:
            return None
        if len(decoded) != lines:
            return None
        self._chunk, self._at = chunk, (start, 0)
        return decoded
