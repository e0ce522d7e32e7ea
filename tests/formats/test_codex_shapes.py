"""Codex's shared rules (``formats/codex/shapes.py``) against the oracle ``reference/codex_lines.py``."""
from __future__ import annotations

import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from panto_analytics.formats.codex.shapes import CONTEXTUAL_USER_FRAGMENTS, is_contextual_fragment
from reference import codex_lines

#: Characters whose lowering is unusual: U+0130 (two characters, one ASCII), the Kelvin sign (to ``k``), a
#: capital sigma (final or not by its neighbours), the dotless i, and whitespace ``str.strip`` removes.
_ODD = "\u0130\u212a\u03a3\u0131 \t\n\u3000\x1cKIS"
_MARKERS = [m for pair in CONTEXTUAL_USER_FRAGMENTS for m in pair]


def _cased(marker: str, draw: st.DrawFn) -> str:
    """``marker`` with some letters upper-cased or put as a character that lowers to them."""
    look = {"k": "\u212a", "i": "\u0130"}
    return "".join(draw(st.sampled_from([c, c.upper(), look.get(c, c)])) for c in marker)


@st.composite
def texts(draw: st.DrawFn) -> str:
    start, end = draw(st.sampled_from(CONTEXTUAL_USER_FRAGMENTS))
    middle = draw(st.text(alphabet=st.sampled_from(_ODD + "ab<>/"), max_size=20))
    pieces = [draw(st.text(alphabet=st.sampled_from(_ODD), max_size=3)), _cased(start, draw), middle,
              _cased(end, draw), draw(st.text(alphabet=st.sampled_from(_ODD), max_size=3))]
    if draw(st.booleans()):   # cut a piece short, or drop it
        k = draw(st.integers(0, len(pieces) - 1))
        pieces[k] = pieces[k][:draw(st.integers(0, len(pieces[k])))]
    return "".join(pieces)


@settings(max_examples=examples(500), deadline=None)
@given(text=st.one_of(texts(), st.text(alphabet=st.sampled_from(_ODD + "<>/#. " + "".join(_MARKERS)), max_size=80)))
def test_contextual_fragment_as_the_oracle(text):
    assert is_contextual_fragment(text) == codex_lines.is_contextual_fragment(text)


@pytest.mark.parametrize("text, expected", [
    ("<environment_context>x</environment_context>", True),
    ("  <ENVIRONMENT_CONTEXT>\n</Environment_Context>\n", True),
    ("<s\u212aill>x</s\u212aill>", True),              # the Kelvin sign lowers to k
    ("# agents.md \u0130nstructions for x</instructions>", False),  # U+0130 lowers to i and a combining dot
    ("<skill>" + "\u03a3" * 50 + "x" * 5000 + "</skill>", True),  # a long text: only its ends are looked at
    ("<skill>" + "x" * 5000 + "</skill> and more", False),
    ("<skill>", False),
    ("", False),
])
def test_contextual_fragment_cases(text, expected):
    assert is_contextual_fragment(text) is expected is codex_lines.is_contextual_fragment(text)
