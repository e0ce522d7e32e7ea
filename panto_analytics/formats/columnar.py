"""What the columnar fast paths share: whole files in, canonical blocks held in Arrow arrays counted at once.

A fast path (canonical, Claude Code) reads whole clean files, parses their
lines with Arrow's JSON reader, and maps each source's blocks onto the
canonical block struct (``type``, ``text``, ``id``, ``name``, ``input``,
``tool_use_id``, ``parts``). What follows is the same for every format:
libpanto's word count and the summarizer-request bytes of each message
(:func:`words_and_flags`, :func:`serialized_bytes`, which reproduce
:func:`~panto_analytics.frame.words.message_words` and
:func:`~panto_analytics.transcript.serialized_bytes` over whole arrays),
and the timestamps the fast paths take (:func:`iso_utc`, :func:`checked_timestamps`,
:func:`parse_timestamps`).

>>> blocks = pa.array([{"type": "text", "text": "a b", "id": None, "name": None, "input": None,
...                     "tool_use_id": None, "parts": []}], type=BLOCK)
>>> words, has_result, has_summary = words_and_flags(blocks, np.array([0]), 1)
>>> words.tolist(), serialized_bytes(pa.array(["user"]), blocks, np.array([0]), 1).tolist()
([2], [13])
"""
from __future__ import annotations

import os

import numpy as np
import polars as pl
import pyarrow as pa

from ..pathnames import path_suffix
from .blocks import BLOCK, PART, byte_lengths, per_owner, serialized_bytes, words_and_flags
from .contract import SourceFile
from .session_files import BOM, COMPRESSED_SUFFIXES, open_session_file

__all__ = ["BLOCK", "ISO_UTC", "MAX_FILE_BYTES", "PART", "RECORDED_FORMAT", "byte_lengths", "checked_timestamps",
           "iso_utc", "parse_timestamps", "per_owner", "read_datetimes", "read_together", "read_whole", "serialized_bytes",
           "to_datetime", "valid_utf8", "words_and_flags"]

#: The shape of the timestamps the fast paths parse themselves (ASCII digits, seconds 00-59: Polars reads a
#: 60th second, Python does not); :func:`iso_utc` is the whole check.
ISO_UTC = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-5][0-9](\.[0-9]{1,6})?(Z|\+00:00)$"


#: Larger files take the reference path, which streams them line by line in
#: bounded memory; the fast path holds a file's bytes and its Arrow table at once.
MAX_FILE_BYTES = 64_000_000


def read_whole(src: SourceFile) -> bytes | None:
    """The file's bytes, newline-terminated; None for an empty, a very large or a damaged compressed file (the line
    reader reports the damage, in file order, or counts it once under ``skip_invalid``)."""
    if src.size() > MAX_FILE_BYTES:
        return None
    damage: list[str] = []
    with open_session_file(src.file, on_damage=damage.append) as f:
        data = f.read()
    if damage or (not data.isascii() and not valid_utf8(data)):
        return None
    if data and not data.endswith(b"\n"):
        data += b"\n"
    return data or None


def read_together(sources: list[SourceFile]) -> tuple[bytearray, list[tuple[int, int] | None]]:
    """The bytes of many files in one writable buffer, each newline-terminated, and each one's ``(start, end)``.

    A file :func:`read_whole` would not take (empty, very large, damaged, not UTF-8)
    gets None. Plain files are read straight into the buffer (no copy per
    file); compressed ones are decompressed first.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "a.jsonl").write_bytes(b"{}"), (d / "b.jsonl").write_bytes(b""), (d / "c.jsonl").write_bytes(b"[]\\n")
    >>> data, spans = read_together([SourceFile(d / name, "canonical") for name in ("a.jsonl", "b.jsonl", "c.jsonl")])
    >>> bytes(data), spans
    (b'{}\\n[]\\n', [(0, 3), None, (3, 6)])
    """
    decompressed: dict[int, bytes | None] = {}
    sizes = []
    for k, src in enumerate(sources):
        if path_suffix(src.file) in COMPRESSED_SUFFIXES:
            decompressed[k] = read_whole(src)
            sizes.append(len(decompressed[k] or b""))
        else:
            size = src.size()
            sizes.append(size if size <= MAX_FILE_BYTES else 0)
    data = bytearray(sum(sizes) + len(sizes))
    view = memoryview(data)
    spans: list[tuple[int, int] | None] = []
    pos = 0
    for k, (src, size) in enumerate(zip(sources, sizes)):
        if k in decompressed:
            chunk = decompressed[k] or b""
            view[pos:pos + len(chunk)] = chunk
            n = len(chunk)
        elif size:
            n = _read_plain(src.file, view[pos:pos + size])
        else:
            n = 0
        if n == 0:
            spans.append(None)
            continue
        if data[pos + n - 1] != 10:
            data[pos + n] = 10
            n += 1
        spans.append((pos, pos + n))
        pos += n
    view.release()
    del data[pos:]
    if data.isascii() or valid_utf8(data):
        return data, spans
    # Some file is not UTF-8: the buffer is built again without it (rare, so a copy is fine).
    kept = [span if span is not None and valid_utf8(memoryview(data)[span[0]:span[1]]) else None for span in spans]
    rebuilt, pos, spans = bytearray(), 0, []
    for span in kept:
        if span is None:
            spans.append(None)
            continue
        rebuilt += data[span[0]:span[1]]
        spans.append((pos, len(rebuilt)))
        pos = len(rebuilt)
    return rebuilt, spans


def _read_plain(name: str, into: memoryview) -> int:
    """A plain file's bytes read into ``into`` (sized before), a UTF-8 BOM dropped: how many; 0 if the file grew
    since (it is then judged alone). ``open_session_file`` and ``readinto`` in system calls (no file object)."""
    fd = os.open(name, os.O_RDONLY)
    try:
        n = 0
        while n < len(into) and (got := os.readv(fd, [into[n:]])):
            n += got
        if os.read(fd, 1):
            return 0
    finally:
        os.close(fd)
    if n >= 3 and into[:3] == BOM:
        into[:n - 3] = into[3:n]
        n -= 3
    return n


def valid_utf8(data: bytes | bytearray | memoryview) -> bool:
    """Whether ``data`` is valid UTF-8, checked by Arrow's SIMD validator without a copy.

    Arrow's JSON reader does not check it, and the reference (orjson) refuses
    a line with bad bytes anywhere, ignored fields included. Python's strict
    rules: no surrogates, nothing above U+10FFFF; a tenth of ``bytes.decode``'s
    time on non-ASCII text (a caller tests ``isascii()`` first, faster still).

    >>> valid_utf8(b"caf\\xc3\\xa9"), valid_utf8(b"caf\\xe9"), valid_utf8(b"\\xed\\xa0\\x80"), valid_utf8(b"\\xc0\\xaf")
    (True, False, False, False)
    """
    offsets = np.array([0, len(data)], dtype=np.int64)
    as_string = pa.Array.from_buffers(pa.large_string(), 1, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    try:
        as_string.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True



def to_datetime(text: pl.Expr) -> pl.Expr:
    """The vectorized parse of ISO-8601 UTC strings, in UTC milliseconds; null where it reads no time."""
    return text.str.replace(r"\+00:00$", "Z").str.to_datetime(
        "%Y-%m-%dT%H:%M:%S%.fZ", time_unit="ms", time_zone="UTC", strict=False)


#: The recorders' one shape (``2025-01-01T00:00:00.000Z``) as a fixed-width format, which Polars parses with its own
#: parser; a ``%.f`` format (any fraction) takes chrono's, about 3.5x the CPU (500k strings: 0.037 s against 0.131 s).
RECORDED_FORMAT = "%Y-%m-%dT%H:%M:%S.%3fZ"


def read_datetimes(text: pl.Series) -> pl.Series:
    """:func:`to_datetime` of ``text``: the recorders' shape by Polars' fixed-width parser (:data:`RECORDED_FORMAT`),
    and :func:`to_datetime` of the whole only where a string of another shape is left unread.

    Issue 31 item 10: the timestamps read by ``%.f`` alone (8925538) cost a cold canonical ingest of 300 sessions
    (20 MB) 54.6 M instructions of 1,190 M (callgrind, ``python -m benchmarks.against --instructions``).

    >>> read_datetimes(pl.Series("t", ["1970-01-01T00:00:01.500Z", "1970-01-01T00:00:02.5+00:00", None])).dt.epoch(
    ...     "ms").to_list()
    [1500, 2500, None]
    """
    fast = text.str.to_datetime(RECORDED_FORMAT, time_unit="ms", time_zone="UTC", strict=False)
    if fast.null_count() == text.null_count():
        return fast
    return text.to_frame().select(pl.coalesce(fast, to_datetime(pl.col(text.name)))).to_series().rename(text.name)


def iso_utc(text: pl.Expr, parsed: pl.Expr | None = None) -> pl.Expr:
    """Whether :func:`to_datetime` reads ``text`` as :func:`.record_fields.parse_timestamp` does (null stays null).

    The one check every fast path takes a timestamp by: of :data:`ISO_UTC`'s
    shape, a real date and time (no month 13, no April 31 or February 29 of a
    common year, no hour 24: Polars reads no time, Python neither), and not year 0
    (Polars reads it, Python does not).
    A file with any other timestamp goes to the line-by-line reader.

    >>> pl.Series(["2024-02-29T23:59:59.5Z", "2025-02-29T00:00:00Z", "2025-01-01T00:00:60Z", "0000-01-01T00:00:00Z",
    ...            "2025-01-01T00:00:00+01:00", None]).to_frame("t").select(iso_utc(pl.col("t")))["t"].to_list()
    [True, False, False, False, False, None]
    """
    parsed = to_datetime(text) if parsed is None else parsed  # ``to_datetime(text)``, where the caller has it
    return text.str.contains(ISO_UTC) & ~text.str.starts_with("0000") & (parsed.is_not_null() | text.is_null())


def parse_timestamps(values: pa.Array) -> pl.Series:
    """:func:`to_datetime` of ``values``; rows of a file with a bad timestamp may read null (the file is declined).

    >>> parse_timestamps(pa.array(["1970-01-01T00:00:01.500Z", None])).dt.epoch("ms").to_list()
    [1500, None]
    """
    return read_datetimes(pl.Series("t", values))


def checked_timestamps(values: pa.Array) -> tuple[pl.Series, np.ndarray]:
    """:func:`parse_timestamps` of ``values``, and which of them :func:`iso_utc` refuses (nulls are not bad), from one
    reading."""
    text = pl.Series("t", values)
    frame = pl.DataFrame([text, read_datetimes(text).rename("parsed")])
    ok = frame.select(iso_utc(pl.col("t"), pl.col("parsed")).fill_null(True))["t"]
    return frame["parsed"].rename("t"), ~ok.to_numpy()
