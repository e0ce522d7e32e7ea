"""libpanto's ``countWords``: whitespace-delimited words over a message's blocks.

Only the four ASCII bytes ``' '``, ``'\\t'``, ``'\\n'`` and ``'\\r'`` separate
words (libpanto scans UTF-8 bytes), so a vertical tab, a form feed or a
non-breaking space is part of a word. A media part of a tool result counts as
a fixed :data:`MEDIA_PART_WORDS` words.

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

    Works on the array's UTF-8 buffer: translated to ``b" "``/``b"x"`` marks
    as in :func:`count_words`, a word starts at each rise from a separator to
    a word byte, or at a string's first byte when that is a word byte no rise
    marks (the buffer's start, or right after the previous string's word).
    A binary search of the rises against the string offsets counts them per
    string.

    >>> count_words_arrow(pa.array(["a b", None, "", " x\\x0by ", "c", "d"])).tolist()
    [2, 0, 0, 1, 1, 1]
    """
    strings = strings.cast(pa.large_string())
    _, offsets_buf, data_buf = strings.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[strings.offset:strings.offset + len(strings) + 1]
    if data_buf is None or not len(strings) or offsets[-1] == offsets[0]:
        return np.zeros(len(strings), dtype=np.int64)
    first, last = int(offsets[0]), int(offsets[-1])
    marks = np.frombuffer(memoryview(data_buf)[first:last].tobytes().translate(_WORD_TABLE), dtype=np.uint8)
    rel = offsets - first
    rises = np.flatnonzero(marks[1:] > marks[:-1]) + 1  # b" " (0x20) followed by b"x" (0x78)
    counts = np.diff(np.searchsorted(rises, rel))
    opening = rel[:-1]
    nonempty = np.flatnonzero(np.diff(rel) > 0)
    o = opening[nonempty]
    unmarked = (marks[o] == 0x78) & ((o == 0) | (marks[np.maximum(o - 1, 0)] == 0x78))
    counts[nonempty] += unmarked
    if strings.null_count:
        counts[~np.asarray(strings.is_valid())] = 0
    return counts
