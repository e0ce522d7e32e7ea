"""How numbers are shown to people: one way to write a token count.

>>> format_tokens(20_000), format_tokens(1_500_000), format_tokens(950)
('20k', '1.5M', '950')
"""
from __future__ import annotations

import math

__all__ = ["counted", "format_tokens"]


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, which agree: ``1 session``, ``2 sessions``, ``1,200 files``.

    >>> counted(1, "session"), counted(0, "session"), counted(12_000, "file"), counted(2, "match", "matches")
    ('1 session', '0 sessions', '12,000 files', '2 matches')
    """
    return f"{n:,} {noun if n == 1 else (plural or noun + 's')}"


def format_tokens(n: float | int | None) -> str:
    """A token count as people say it: ``950``, ``2.5k``, ``20k``, ``1.5M``.

    >>> [format_tokens(x) for x in (0, 1000, 2500, 12_345, 200_000, 2_000_000)]
    ['0', '1k', '2.5k', '12.3k', '200k', '2M']
    """
    if n is None or (isinstance(n, float) and math.isnan(n)):
        return "-"
    for scale, suffix in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if abs(n) >= scale:
            value = n / scale
            text = f"{value:.1f}" if value < 100 else f"{value:.0f}"
            return text.removesuffix(".0") + suffix
    return f"{n:.0f}"
