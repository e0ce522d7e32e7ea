"""libpanto's ``countWords``: whitespace-delimited words over a message's blocks.

Only the four ASCII bytes ``' '``, ``'\\t'``, ``'\\n'`` and ``'\\r'`` separate
words (libpanto scans UTF-8 bytes), so a vertical tab, a form feed or a
non-breaking space is part of a word. A media part of a tool result counts as
a fixed :data:`MEDIA_PART_WORDS` words.

Measured (2026-12-04, issue 31 item 9): ``python -m benchmarks.replacements C``, C the first 10 files by
name (3.6 MB) of ``python -m benchmarks.synth DIR --sessions 150 --seed 1``; callgrind instructions of the
whole in-process ingest ``read_sessions(C, cache=False, jobs=1)``, Python's start and the imports included
(2,552.5 M for an empty corpus): 2,798.2 M with :func:`count_words_arrow`'s packed-bit count, 2,982.3 M with
Polars' ``str.count_matches`` of runs of non-separators in its place. It saves 6.2% of the whole command
(42.8% of the command less its start): over the 5% that keeps a hand-written replacement.

>>> count_words("  hello   there\\x0bworld ")
2
>>> message_words([{"type": "tool_result", "tool_use_id": "t",
...                 "parts": [{"type": "text", "text": "ok"}, {"type": "media"}]}])
801
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["MEDIA_PART_WORDS", "WORD_TO_TOKEN_FACTOR", "block_words", "count_words", "count_words_arrow", "message_words"]

#: libpanto's ``media_part_word_estimate``.
MEDIA_PART_WORDS = 800

#: libpanto's ``word_to_token_factor``.
WORD_TO_TOKEN_FACTOR = 1.3

_SEPARATORS = b" \t\n\r"
# Map every separator byte to b" " and every other byte to b"x": a word then
# starts wherever b" x" occurs, or at offset 0 when the text starts with b"x".
# bytes.translate and bytes.count run in C, so counting never splits strings.
# (count_words_arrow takes the same four bytes as separators, by their values.)
_WORD_TABLE = bytes(0x20 if c in _SEPARATORS else 0x78 for c in range(256))

#: Block types whose ``text`` field is counted.
_TEXT_BLOCKS = frozenset({"text", "thinking", "system", "compaction_summary"})


def count_words(text: str) -> int:
    """Words in ``text`` as libpanto's ``countWordsIn`` counts them.

    >>> count_words(""), count_words(" \\t\\r\\n"), count_words("a  b\\u00a0c")
    (0, 0, 2)
    """
    marks = text.encode("utf-8", "surrogatepass").translate(_WORD_TABLE)
    return marks.count(b" x") + (marks[:1] == b"x")


def block_words(block: dict) -> int:
    """Words libpanto charges for one canonical content block."""
    kind = block["type"]
    if kind in _TEXT_BLOCKS:
        return count_words(block["text"])
    if kind == "tool_use":
        return count_words(block["input"])
    # tool_result: text parts by words, media parts at a fixed estimate.
    return sum(
        count_words(part["text"]) if part["type"] == "text" else MEDIA_PART_WORDS
        for part in block["parts"]
    )


def message_words(blocks: list[dict]) -> int:
    """libpanto's ``countWords`` over all blocks of one message."""
    return sum(block_words(b) for b in blocks)


def count_words_arrow(strings: pa.Array) -> np.ndarray:
    """:func:`count_words` of every string of an Arrow string array at once (nulls count 0).

    Works on the array's UTF-8 buffer, read in place: a byte is a word byte
    unless it is one of the four separators. A word starts at each word byte
    that follows a separator, or at a string's first byte when that is a word
    byte. The starts are kept as bits, 64 to a machine word, so a string's
    count is the difference of two prefix counts of set bits, taken at its
    offsets (a running sum of each word's bits, plus the bits of one masked
    word).

    >>> count_words_arrow(pa.array(["a b", None, "", " x\\x0by ", "c", "d"])).tolist()
    [2, 0, 0, 1, 1, 1]
    """
    strings = strings.cast(pa.large_string())
    _, offsets_buf, data_buf = strings.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[strings.offset:strings.offset + len(strings) + 1]
    if data_buf is None or not len(strings) or offsets[-1] == offsets[0]:
        return np.zeros(len(strings), dtype=np.int64)
    first, last = int(offsets[0]), int(offsets[-1])
    data = np.frombuffer(data_buf, dtype=np.uint8, count=last - first, offset=first)
    # The word bytes as bits (bit i of the buffer is bit i % 64 of machine word i // 64), a zero word after the
    # last; found a cache-sized chunk at a time, in two reused buffers (no pages of a full-size temporary).
    packed = np.zeros((len(data) + 127) // 64 * 8, dtype=np.uint8)
    size = min(len(data), _CHUNK)
    word_buf, other_buf, ored_buf = np.empty(size, dtype=bool), np.empty(size, dtype=bool), np.empty(size, dtype=np.uint8)
    for start in range(0, len(data), _CHUNK):
        chunk = data[start:start + _CHUNK]
        word, other, ored = word_buf[:len(chunk)], other_buf[:len(chunk)], ored_buf[:len(chunk)]
        np.not_equal(chunk, 0x20, out=word)
        np.logical_and(word, np.not_equal(chunk, 0x0A, out=other), out=word)
        np.bitwise_or(chunk, 0x04, out=ored)   # b"\t" and b"\r", and no other byte, become b"\r"
        np.logical_and(word, np.not_equal(ored, 0x0D, out=other), out=word)
        packed[start // 8:(start + len(chunk) + 7) // 8] = np.packbits(word, bitorder="little")
    bits = packed.view("<u8")
    carry = np.zeros_like(bits)   # each word's lowest bit follows the top bit of the word before
    np.right_shift(bits[:-1], 63, out=carry[1:])
    starts = bits & ~((bits << 1) | carry)
    before = np.zeros(len(bits) + 1, dtype=np.int64)   # starts in the machine words before each
    np.cumsum(np.bitwise_count(starts), out=before[1:])
    rel = (offsets - first).astype(np.uint64)
    at = (rel >> 6).astype(np.intp)
    below_bit = (np.uint64(1) << (rel & np.uint64(63))) - np.uint64(1)
    counts = np.diff(before[at] + np.bitwise_count(starts[at] & below_bit).astype(np.int64))
    # A string's first byte, a word byte right after the previous string's word byte: a start no bit marks.
    opening = offsets[:-1] - first
    inner = np.flatnonzero((opening > 0) & (offsets[1:] > offsets[:-1]))
    o = opening[inner]
    counts[inner] += _bit(packed, o) & _bit(packed, o - 1)
    if strings.null_count:
        counts[~np.asarray(strings.is_valid())] = 0
    return counts


#: Bytes :func:`count_words_arrow` classifies at once (a multiple of 8: whole bytes of bits).
_CHUNK = 1 << 16


def _bit(packed: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Bit ``at`` of little-endian packed bits, as 0 or 1."""
    return (packed[at >> 3] >> (at & 7).astype(np.uint8)) & 1
