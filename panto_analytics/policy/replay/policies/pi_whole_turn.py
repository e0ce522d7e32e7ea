"""``pi-whole-turn``: pi's policy before 2025-12-09 (whole turns, sized by provider usage).

Source: badlogic/pi-mono ``packages/coding-agent/src/compaction.ts`` as it stood
before commit c89b1ec3 (which introduced cuts at assistant messages); the
version read here is the index's copy with ``findTurnBoundaries`` and the
usage-difference walk (``findCutPoint``), not pinned to a commit hash by
the search tool.

- Trigger: ``contextTokens > contextWindow - reserveTokens`` (16,384).
- Cut, only at a user message (a turn boundary): take the calls (assistant
  messages with usage) of the active window, newest first; the newest is the
  trigger. At the first older call whose context is at least
  ``keep_recent_tokens`` (20,000) below the newest's, keep from the last user
  message at or before the call just newer than it. If no call is that far
  back, or the window has no user message, nothing is cut (a no-op here).
  Without any call in the window (possible at a recorded compaction, never at
  a replay's trigger), pi keeps the last turn only.

>>> import polars as pl
>>> w = pl.DataFrame({"state": [0] * 6, "seq": [0, 1, 2, 3, 4, 5],
...     "user": [True, False, True, False, True, False], "call": [False, True] * 3,
...     "cum": [None, 1000, None, 30000, None, 40000], "first": [0] * 6, "trigger": [5] * 6})
>>> PiWholeTurn().cut(w).select("prefix_end", "kept_messages").rows()
[(2, 4)]
"""
from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from .base import state_max, state_min, suffix_cut
from .pi import PiSettings

__all__ = ["PiWholeTurn"]


@dataclass(frozen=True)
class PiWholeTurn(PiSettings):
    """pi's whole-turn ``findCutPoint`` (usage differences) under ``window - reserve_tokens``."""

    name = "pi-whole-turn"

    def cut(self, frame: pl.DataFrame) -> pl.DataFrame:
        seq, call = pl.col("seq"), pl.col("call")
        newest_seq = state_max(pl.when(call).then(seq))
        newest = state_max(pl.when(seq == newest_seq).then(pl.col("cum")))
        far = state_max(pl.when(call & (seq < newest_seq) & (newest - pl.col("cum") >= self.keep_recent_tokens)).then(seq))
        last_kept = state_min(pl.when(call & (seq > far)).then(seq))
        by_usage = state_max(pl.when(pl.col("user") & (seq <= last_kept)).then(seq))
        # No call in the window (not at a replay's trigger, which is one): pi keeps the last turn only.
        last_turn = state_max(pl.when(pl.col("user")).then(seq))
        return suffix_cut(frame, pl.when(newest_seq.is_null()).then(last_turn).otherwise(by_usage))
