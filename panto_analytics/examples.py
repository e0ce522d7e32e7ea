"""A tiny message frame for examples and doctests: two sessions, four turns, built in memory.

Session ``a`` has three turns whose provider usage grows to 1,000, 2,000 and
5,000 tokens (turn costs 1,000, 1,000 and 3,000); session ``b`` has one turn
of 400 tokens. ``serialized_bytes`` is made up (6 bytes a word plus 10), so
request sizes computed from it are illustrations, not libpanto's.

>>> messages().group_by("session_id", maintain_order=True).len().rows()
[('a', 6), ('b', 2)]
"""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl

from .frame.schema import MESSAGE_SCHEMA, ROLE, SEQ, SESSION

__all__ = ["messages"]

#: (session, role, words, input, output) per message; usage only on assistant messages.
_ROWS = (
    ("a", "user", 12, None, None), ("a", "assistant", 40, 900, 100),
    ("a", "user", 8, None, None), ("a", "assistant", 35, 1_850, 150),
    ("a", "user", 30, None, None), ("a", "assistant", 220, 4_600, 400),
    ("b", "user", 5, None, None), ("b", "assistant", 20, 350, 50),
)


def messages() -> pl.DataFrame:
    """The example message frame (:data:`~panto_analytics.frame.schema.MESSAGE_SCHEMA`).

    Returns
    -------
    pl.DataFrame
        Eight messages of sessions ``a`` and ``b``, ordered by ``(session_id, seq)``.

    Examples
    --------
    >>> messages().select("session_id", "seq", "role", "input", "output").head(2).rows()
    [('a', 0, 'user', None, None), ('a', 1, 'assistant', 900, 100)]
    """
    start = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
    seq = {"a": 0, "b": 0}
    cols: dict[str, list] = {name: [] for name in MESSAGE_SCHEMA}
    for i, (sid, role, words, inp, out) in enumerate(_ROWS):
        calls = inp is not None
        row = {SESSION: sid, SEQ: seq[sid], ROLE: role, "words": words, "serialized_bytes": 6 * words + 10,
               "has_tool_result": False, "has_summary": False, "bash_execution": False, "input": inp, "output": out,
               "cache_read": 0 if calls else None, "cache_write": 0 if calls else None,
               "cache_write_1h": 0 if calls else None, "recorded_cost": None, "source_format": "canonical",
               "model": "example-model" if calls else None, "timestamp": start + timedelta(minutes=i),
               "file": f"{sid}.jsonl", "line": seq[sid] + 1, "refs": None}
        seq[sid] += 1
        for name, value in row.items():
            cols[name].append(value)
    return pl.DataFrame(cols, schema=MESSAGE_SCHEMA)
