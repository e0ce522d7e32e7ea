"""The words and bytes of JSON strings, counted from their bytes as a file writes them, never decoded.

A reader that needs only how many words a text holds (libpanto's
``countWords``, :func:`~.words.count_words`) and how many UTF-8 bytes it
takes can leave it undecoded (``msgspec.Raw``): :func:`raw_text_sizes`
counts both, escapes and all, in a few NumPy passes over all the strings at
once, where decoding each into a ``str`` and encoding it again for Arrow cost
more than the counting.
"""
from __future__ import annotations

import msgspec
import numpy as np

__all__ = ["raw_text_sizes"]


def raw_text_sizes(raws: list[msgspec.Raw]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Of each JSON string in ``raws`` (quotes and escapes as written), the words (libpanto's ``countWords``,
    :func:`~.words.count_words`) and the UTF-8 bytes of the text it decodes to, and whether it is a string.

    The strings are joined into one buffer, looked at in a few NumPy passes.
    Each is valid JSON (msgspec checked it), so a backslash starts an escape
    unless it ends one (the second of ``\\``): escapes are found as every other
    backslash of each run. A word starts where a separator (space, tab, line
    feed, carriage return) is followed by anything else; the opening quote
    counts as a separator, an escaped ``\"`` as a character, ``\n``, ``\t``,
    ``\r`` and ``\u`` of one of the four as separators. An escape of two bytes
    decodes to one; ``\uXXXX`` to the UTF-8 of its code point (a surrogate pair,
    which msgspec checked is whole, to four bytes). A value that is not a
    string (a number, say) reads ``False``, its sizes are meaningless.

    >>> words, sizes, ok = raw_text_sizes([msgspec.Raw(r) for r in (b'"a b"', b'" x\\ny\\t"', b'"\\u00e9\\\\n"', b'7')])
    >>> words[:3].tolist(), sizes[:3].tolist(), ok.tolist()  # " x<LF>y<TAB>": 2 words, 5 bytes; "é\\n": 1, 4
    ([2, 2, 1], [3, 5, 4], [True, True, True, False])
    """
    n = len(raws)
    data = np.frombuffer(b"".join(raws), np.uint8)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, raws), dtype=np.int64, count=n), out=offsets[1:])
    is_string = data[offsets[:-1]] == _QUOTE if len(data) else np.ones(n, dtype=bool)
    # A JSON string holds no raw tab, line feed or carriage return: its separators are spaces (and escapes).
    word = np.bitwise_or(data, 2) != _QUOTE  # neither a space (0x20) nor a quote (0x22)
    saved = np.zeros(n, dtype=np.int64)
    backslashes = np.flatnonzero(data == _BACKSLASH)
    if len(backslashes):
        at = np.arange(len(backslashes))
        run_start = np.maximum.accumulate(np.where(np.diff(backslashes, prepend=-2) != 1, at, 0))
        escapes = backslashes[(at - run_start) % 2 == 0]
        kind = data[escapes + 1]
        saved_each = np.ones(len(escapes), dtype=np.int64)  # two bytes that decode to one
        separator = np.isin(kind, _SEPARATOR_ESCAPES)
        unicode = np.flatnonzero(kind == _U)
        if len(unicode):
            u = escapes[unicode]
            point = (_HEX[data[u + 2]] << 12) | (_HEX[data[u + 3]] << 8) | (_HEX[data[u + 4]] << 4) | _HEX[data[u + 5]]
            utf8 = np.select([point < 0x80, point < 0x800, (point >= 0xD800) & (point < 0xDC00),
                              (point >= 0xDC00) & (point < 0xE000)], [1, 2, 4, 0], 3)
            saved_each[unicode] = 6 - utf8
            separator[unicode] = np.isin(point, _SEPARATOR_POINTS)
        word[escapes[kind == _QUOTE] + 1] = True  # an escaped quote is a character
        sep = escapes[separator]
        width = np.where(kind[separator] == _U, 6, 2)
        word[np.repeat(sep, width) + (np.arange(width.sum()) - np.repeat(np.cumsum(width) - width, width))] = False
        saved = np.bincount(np.searchsorted(offsets, escapes, side="right") - 1, weights=saved_each,
                            minlength=n).astype(np.int64)
    # Words start where a separator is followed by a word's byte; counted per string by popcounts of the packed
    # starts (a prefix sum per byte of them), not by listing each start.
    starts = np.zeros(len(data) + 8, dtype=bool)
    np.greater(word[1:], word[:-1], out=starts[1:len(data)])
    packed = np.packbits(starts, bitorder="little")
    before = np.zeros(len(packed) + 1, dtype=np.int64)
    np.cumsum(_POPCOUNT[packed], out=before[1:])
    up_to = before[offsets >> 3] + _POPCOUNT[packed[offsets >> 3] & ((1 << (offsets & 7)) - 1)]  # starts before each
    return np.diff(up_to), np.diff(offsets) - 2 - saved, is_string


_QUOTE, _BACKSLASH, _U = ord('"'), ord("\\"), ord("u")
_SEPARATOR_ESCAPES = np.frombuffer(b"ntr", np.uint8)
_SEPARATOR_POINTS = np.array([0x20, 0x09, 0x0A, 0x0D])
#: Each byte's value as a hexadecimal digit (msgspec checked that the four after ``\u`` are digits).
_HEX = np.array([int(chr(c), 16) if chr(c) in "0123456789abcdefABCDEF" else 0 for c in range(256)], dtype=np.int64)
#: The set bits of each byte.
_POPCOUNT = np.array([bin(c).count("1") for c in range(256)], dtype=np.int64)
