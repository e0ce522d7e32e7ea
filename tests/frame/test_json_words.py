"""raw_texts: JSON strings read for their words and bytes from their bytes, against decoding them (msgspec) and
counting the text (``words.count_words``, ``len(text.encode())``)."""
from __future__ import annotations

import msgspec
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from panto_analytics.frame.json_words import raw_texts
from panto_analytics.frame.words import count_words, count_words_arrow

# Characters whose spelling in JSON varies: the separators, the quote and backslash, controls, non-ASCII (two, three
# and four UTF-8 bytes: the last a surrogate pair when escaped), and the rest of what a text may hold.
_TRICKY = " \t\n\r\"\\/\x00\x08\x0b\x0c\x1f\x7fa-é→\U0001f600\u2028"
_SHORT = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


@st.composite
def json_spellings(draw) -> tuple[str, bytes]:
    """A text and one of its JSON spellings: each character as itself where JSON allows, or escaped (short form or
    ``\\uXXXX`` in either case, a surrogate pair beyond the BMP)."""
    text = draw(st.text(st.sampled_from(_TRICKY) | st.sampled_from(_TRICKY) | st.characters(codec="utf-8"), max_size=12))
    out = []
    for c in text:
        style = draw(st.sampled_from(["plain", "short", "u", "U"]))
        if style == "plain" and c not in '"\\' and ord(c) >= 0x20:
            out.append(c)
        elif style == "short" and c in _SHORT:
            out.append(_SHORT[c])
        else:
            units = c.encode("utf-16-be")
            hexes = [units[k:k + 2].hex() for k in range(0, len(units), 2)]
            out.append("".join("\\u" + (h.upper() if style == "U" else h) for h in hexes))
    return text, ('"' + "".join(out) + '"').encode()


@settings(max_examples=examples(300), deadline=None)
@given(texts=st.lists(json_spellings(), max_size=6), others=st.lists(st.sampled_from([b"7", b"null", b"{}", b"[1]"])))
def test_raw_texts_hold_the_words_and_bytes_of_the_decoded_texts(texts, others):
    """Each JSON string's words (``count_words``) and UTF-8 bytes, from its bytes as written, as msgspec takes them;
    a value that is not a string is told apart (its file is declined)."""
    raws = [msgspec.json.decode(b"[" + spelled + b"]", type=list[msgspec.Raw])[0] for _, spelled in texts]
    raws += [msgspec.json.decode(b"[" + other + b"]", type=list[msgspec.Raw])[0] for other in others]
    for (text, spelled), raw in zip(texts, raws):
        assert bytes(raw) == spelled and msgspec.json.decode(raw, type=str) == text
    got = raw_texts(raws)
    words, sizes, is_string = count_words_arrow(got.spaced), got.utf8_bytes, got.is_string
    assert is_string.tolist() == [True] * len(texts) + [False] * len(others)
    assert words[:len(texts)].tolist() == [count_words(text) for text, _ in texts]
    assert sizes[:len(texts)].tolist() == [len(text.encode()) for text, _ in texts]


# Every kind of escape between two words, and runs of backslashes (which of them start an escape).
SPELLINGS = [r'a\"b', r'a\u0022b', r'a\nb', r'a\tb', r'a\rb', r'a\u000Ab', r'a\u000ab', r'a\u000Db', r'a\u000db',
             r'a\u0009b', r'a\u0020b', r'a\u00a0b', r'a\/b', r'a\bb', r'a\fb', r'a\\\\nb', r'a\\\\\\nb', r'a\\\\\"b',
             r'a\\\\', r'\\\\\\\\ \\', r'\uD83D\uDE00 \ud83d\ude00x', r'\u00e9\u2192 a', r' \n\t\r ', r'', r'\u0000\u001f']


@pytest.mark.parametrize("spelled", SPELLINGS)
def test_raw_texts_of_each_escape(spelled):
    raw = msgspec.json.decode(b'["' + spelled.encode() + b'"]', type=list[msgspec.Raw])[0]
    text = msgspec.json.decode(raw, type=str)
    got = raw_texts([raw, raw])
    words, sizes, is_string = count_words_arrow(got.spaced), got.utf8_bytes, got.is_string
    assert words.tolist() == [count_words(text)] * 2 and sizes.tolist() == [len(text.encode())] * 2
    assert is_string.all()


def test_raw_texts_read_alike_in_chunks_of_any_size(monkeypatch):
    """The backslashes are found a chunk at a time: a chunk boundary anywhere (inside an escape, a run) changes
    nothing."""
    from panto_analytics.frame import json_words

    raws = [msgspec.json.decode(b'["' + spelled.encode() + b'"]', type=list[msgspec.Raw])[0] for spelled in SPELLINGS]
    whole = raw_texts(raws)
    for chunk in (1, 2, 3, 7, 64):
        monkeypatch.setattr(json_words, "_CHUNK", chunk)
        got = raw_texts(raws)
        assert got.spaced.equals(whole.spaced) and got.utf8_bytes.tolist() == whole.utf8_bytes.tolist()
