"""How a count of things is said: the number and its noun agree (``1 session``, ``2 sessions``).

Shared vocabulary, so that every floor (the reader's skip notes, the bill's
unpriced-model notes, the decision's reasons) says counts the same way.

>>> counted(1, "file"), counted(1_200, "call")
('1 file', '1,200 calls')
"""
from __future__ import annotations

__all__ = ["counted", "plural_of"]


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, which agree: ``1 session``, ``2 sessions``, ``1,200 files``.

    >>> counted(1, "session"), counted(0, "session"), counted(12_000, "file"), counted(2, "match", "matches")
    ('1 session', '0 sessions', '12,000 files', '2 matches')
    """
    return f"{n:,} {plural_of(n, noun, plural)}"


def plural_of(n: int, noun: str, plural: str | None = None) -> str:
    """``noun`` as it goes with ``n``: ``session`` for 1, ``sessions`` otherwise (``plural`` if irregular).

    >>> plural_of(1, "file"), plural_of(3, "file"), plural_of(0, "summary", "summaries")
    ('file', 'files', 'summaries')
    """
    return noun if n == 1 else (plural or noun + "s")
