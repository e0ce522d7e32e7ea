"""``claude-code``: Claude Code's auto-compact: summarize everything, keep nothing verbatim.

Source: Claude Code is not open source; its rules here come from its observed
behaviour and its recordings (a ``compact_boundary`` record followed by one
summary message and nothing kept; see ``docs/formats.md``). Trigger: the
context exceeds ``window - output_reserve - buffer``, about 167k of a 200k
window with the defaults (``output_reserve`` 20,000, ``buffer`` 13,000).
**Not verified against source**: both defaults are the commonly reported
values, not read from code.

>>> import polars as pl
>>> w = pl.DataFrame({"state": [0, 0], "seq": [4, 5], "first": [4, 4], "trigger": [5, 5]})
>>> ClaudeCode().cut(w).select("prefix_end", "kept_messages").rows()
[(6, 0)]
>>> ClaudeCode().threshold(200_000)
167000
"""
from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from .base import Policy, suffix_cut

__all__ = ["ClaudeCode"]


@dataclass(frozen=True)
class ClaudeCode(Policy):
    """Everything summarized at ``window - output_reserve - buffer``."""

    name = "claude-code"
    output_reserve: int = 20_000
    buffer: int = 13_000

    def threshold(self, window: int) -> int:
        return window - self.output_reserve - self.buffer

    def cut(self, frame: pl.DataFrame) -> pl.DataFrame:
        return suffix_cut(frame, pl.col("trigger") + 1)
