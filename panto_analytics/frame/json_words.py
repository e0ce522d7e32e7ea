"""JSON strings read for their words and bytes from the bytes a file writes, never decoded.

A reader that needs only how many words a text holds (libpanto's
``countWords``) and how many UTF-8 bytes it takes can leave it undecoded
(``msgspec.Raw``): :func:`raw_texts` turns all the strings at once, in a few
NumPy passes, into one Arrow array whose strings hold the same words as the
texts (for :func:`~.words.count_words_arrow`), and the decoded texts' byte
lengths; decoding each into a ``str`` and encoding it again for Arrow costs
more.

Measured (2026-12-05, issue 31 item 9), on a corpus large enough that Python's start does not hide it: 450
synthetic canonical sessions, 114.9 MB (``benchmarks.synth.write_corpus(DIR, 450, 1)``), callgrind instructions of
the whole command it serves, ``python -m benchmarks.replacements DIR --replacement json_words`` (an in-process
``read_sessions(DIR, cache=False, jobs=1)``, Python's start and the imports included): 8,198.2 M with
:func:`raw_texts`, 8,861.4 M with the texts decoded by msgspec into ``str`` and made an Arrow array. It saves
7.5% of the whole command, over the 5% that keeps a replacement: kept. (On 10 files, 3.6 MB, it was 1.0%: there
the start is nine tenths of the command.)
"""
from __future__ import annotations

from typing import NamedTuple

import msgspec
import numpy as np
import pyarrow as pa

__all__ = ["RawTexts", "raw_texts"]


class RawTexts(NamedTuple):
    spaced: pa.LargeStringArray  # each string as written, its quotes and escaped separators made spaces
    utf8_bytes: np.ndarray       # the bytes of the text each string decodes to (0 for a value that is not a string)
    is_string: np.ndarray        # whether each value is a string at all (else its spaced text means nothing)


def raw_texts(raws: list[msgspec.Raw]) -> RawTexts:
    r"""JSON strings as written (quotes and escapes; msgspec checked each), read for their words and bytes.

    A string as written has the words of its text once its quotes and the
    escapes that decode to a separator (``\n``, ``\t``, ``\r``, a ``\u`` of
    space, tab, line feed or carriage return) are spaces: a JSON string holds
    no raw tab, line feed or carriage return, and any other escape is one
    character of a word, as its bytes are. A backslash starts an escape
    unless it ends one (the second of ``\\``): escapes are every other
    backslash of a run. An escape of two bytes decodes to one byte;
    ``\uXXXX`` to the UTF-8 of its code point (a surrogate pair, which
    msgspec checked is whole, to four bytes).

    >>> texts = raw_texts([msgspec.Raw(r) for r in (b'"a b"', b'" x\\ny\\t"', b'"\\u00e9\\\\n"', b'7')])
    >>> texts.spaced.to_pylist()[:3], texts.utf8_bytes[:3].tolist(), texts.is_string.tolist()  # " x<LF>y<TAB>"
    ([' a b ', '  x  y   ', ' \\u00e9\\\\n '], [3, 5, 4], [True, True, True, False])
    """
    n = len(raws)
    buf = bytearray().join(raws)
    data = np.frombuffer(buf, np.uint8)  # writable: the spaces are written into it
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, raws), dtype=np.int64, count=n), out=offsets[1:])
    is_string = data[offsets[:-1]] == _QUOTE if n else np.ones(0, dtype=bool)
    saved = np.zeros(n, dtype=np.int64)  # bytes written beyond the text's, per string
    backslashes = _positions(data, _BACKSLASH)
    if len(backslashes):
        escapes = backslashes
        if (np.diff(backslashes) == 1).any():  # a run of backslashes: every other one, from its first, starts one
            at = np.arange(len(backslashes))
            run_start = np.maximum.accumulate(np.where(np.diff(backslashes, prepend=-2) != 1, at, 0))
            escapes = backslashes[(at - run_start) % 2 == 0]
        kind = data[escapes + 1]
        separator = (kind == _N) | (kind == _T) | (kind == _R)
        sep = escapes[separator]
        data[sep] = data[sep + 1] = _SPACE
        escape_at = np.searchsorted(escapes, offsets)
        saved = np.diff(escape_at)  # two bytes that decode to one, each
        unicode = np.flatnonzero(kind == _U)
        if len(unicode):
            u = escapes[unicode]
            point = (_HEX[data[u + 2]] << 12) | (_HEX[data[u + 3]] << 8) | (_HEX[data[u + 4]] << 4) | _HEX[data[u + 5]]
            utf8 = np.select([point < 0x80, point < 0x800, (point >= 0xD800) & (point < 0xDC00),
                              (point >= 0xDC00) & (point < 0xE000)], [1, 2, 4, 0], 3)
            saved_each = np.zeros(len(escapes), dtype=np.int64)
            saved_each[unicode] = 5 - utf8  # six bytes, one counted above
            saved = saved + np.diff(np.concatenate(([0], np.cumsum(saved_each)))[escape_at])
            sep_u = u[np.isin(point, _SEPARATOR_POINTS)]
            for k in range(6):
                data[sep_u + k] = _SPACE
    if n:
        data[offsets[:-1]] = data[offsets[1:] - 1] = _SPACE
    spaced = pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(buf))
    # A value that is not a string has no text: 0 bytes (not its length less two quotes, -1 for a digit).
    return RawTexts(spaced, np.where(is_string, np.diff(offsets) - 2 - saved, 0), is_string)


def _positions(data: np.ndarray, byte: int) -> np.ndarray:
    """Where ``byte`` is in ``data``, found a cache-sized chunk at a time (no full-size temporary)."""
    found, mask = [], np.empty(min(len(data), _CHUNK), dtype=bool)
    for start in range(0, len(data), _CHUNK):
        chunk = data[start:start + _CHUNK]
        found.append(np.flatnonzero(np.equal(chunk, byte, out=mask[:len(chunk)])) + start)
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


_CHUNK = 1 << 16
_QUOTE, _BACKSLASH, _U, _SPACE, _N, _T, _R = ord('"'), ord("\\"), ord("u"), ord(" "), ord("n"), ord("t"), ord("r")
_SEPARATOR_POINTS = np.array([0x20, 0x09, 0x0A, 0x0D])
#: Each byte's value as a hexadecimal digit (msgspec checked that the four after ``\u`` are digits).
_HEX = np.array([int(chr(c), 16) if chr(c) in "0123456789abcdefABCDEF" else 0 for c in range(256)], dtype=np.int64)
