"""panto_analytics.frame.words against the port of libpanto's countWordsIn / countWords."""
from __future__ import annotations

import pyarrow as pa
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import ALPHABET, blocks, texts

from panto_analytics.frame.words import MEDIA_PART_WORDS, WORD_TO_TOKEN_FACTOR, count_words, count_words_arrow, message_words
from reference import port as ref


@settings(max_examples=examples(500), deadline=None)
@given(st.one_of(texts, st.text(st.characters(codec="utf-8"))))
def test_count_words_equals_count_words_in(text):
    assert count_words(text) == ref.count_words_in(text)


@pytest.mark.slow
@settings(max_examples=examples(300), deadline=None)
@given(st.lists(blocks(), max_size=6))
def test_message_words_equals_count_words(content):
    assert message_words(content) == ref.count_words({"role": "user", "content": content})


@pytest.mark.parametrize(("text", "words"), [
    ("", 0), (" \t\r\n", 0), ("a", 1), ("  hello   there  world ", 3),
    ("a\x0bb", 1), ("a\x0cb", 1), ("a\u00a0b", 1), ("a\u3000b", 1), ("a\x85b", 1), ("a\u2028b", 1),
    ("a\tb\nc\rd e", 5), ("\r\na", 1), ("語 😀", 2),
])
def test_only_four_ascii_bytes_separate_words(text, words):
    assert count_words(text) == ref.count_words_in(text) == words


def test_constants_are_libpanto_s():
    assert (MEDIA_PART_WORDS, WORD_TO_TOKEN_FACTOR) == (ref.media_part_word_estimate, ref.word_to_token_factor)


def test_every_whitespace_like_character_of_the_alphabet_is_covered():
    # The strategies must draw the separators and the look-alikes that are not.
    assert {" ", "\t", "\n", "\r", "\x0b", "\x0c", "\u00a0", "\u3000"} <= set(ALPHABET)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.one_of(st.none(), texts, st.text(st.characters(codec="utf-8"))), max_size=8),
       st.integers(0, 3))
def test_count_words_arrow_equals_count_words(values, offset):
    # Sliced arrays start mid-buffer: the first string's byte may follow another string's word.
    array = pa.array(values, type=pa.string()).slice(min(offset, len(values)))
    expected = [0 if v is None else count_words(v) for v in array.to_pylist()]
    assert count_words_arrow(array).tolist() == expected


#: Texts long enough to cross the 64-byte machine words ``count_words_arrow`` keeps its bits in.
_long_texts = st.lists(st.sampled_from(ALPHABET + ["abc", "   ", "\x1b[0m", "\x7f", "\x1f"]), max_size=90).map("".join)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.one_of(st.none(), _long_texts, texts), max_size=12), st.integers(0, 3), st.booleans(),
       st.data())
def test_count_words_arrow_equals_count_words_across_machine_words(values, offset, large, data):
    # Strings spanning and ending on 64-byte boundaries, in string or large_string arrays, sliced.
    whole = pa.array(values, type=pa.large_string() if large else pa.string())
    array = whole.slice(min(offset, len(values)))
    expected = [0 if v is None else count_words(v) for v in array.to_pylist()]
    assert count_words_arrow(array).tolist() == expected
    # Null slots that still span bytes of the buffer (Arrow allows it): their bytes count for no string.
    hidden = data.draw(st.lists(st.booleans(), min_size=len(whole), max_size=len(whole)))
    valid = pa.array([v is not None and not h for v, h in zip(values, hidden)], pa.bool_())
    masked = pa.Array.from_buffers(whole.type, len(whole), [valid.buffers()[1], *whole.buffers()[1:]])
    masked = masked.slice(min(offset, len(values)))
    assert masked.null_count == sum(1 for v in masked.to_pylist() if v is None)
    expected = [0 if v is None else count_words(v) for v in masked.to_pylist()]
    assert count_words_arrow(masked).tolist() == expected


@settings(max_examples=examples(20), deadline=None)
@given(st.lists(st.sampled_from(["ab", " ", "\n", "\x1b", "語"]), min_size=1, max_size=40), st.integers(0, 70_000))
def test_count_words_arrow_across_chunks(pieces, shift):
    # Buffers longer than the chunk count_words_arrow classifies at once: strings cross its edges.
    text = "x" * shift + "".join(pieces)
    values = [text[:shift], text[shift:], text * 2, None, text]
    assert count_words_arrow(pa.array(values)).tolist() == [0 if v is None else count_words(v) for v in values]
