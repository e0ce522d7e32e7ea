"""``pi``: pi's current policy (cut at a user or assistant message, chars/4 estimates).

Source: badlogic/pi-mono ``packages/coding-agent/src/core/compaction/compaction.ts``
(read at commit 0430917881c87bcba8b8ca4c450d67219a3b86cf: ``DEFAULT_COMPACTION_SETTINGS``,
``shouldCompact``, ``estimateTokens``, ``findValidCutPoints``, ``findCutPoint``).

- Trigger: ``contextTokens > contextWindow - reserveTokens`` (``reserve_tokens`` 16,384).
- Cut: walk back from the newest message of the active window summing each
  message's ``ceil(chars / 4)``; at the first message where the sum reaches
  ``keep_recent_tokens`` (20,000), cut at the nearest valid cut point at or
  after it (a user or assistant message, never a tool result); if the sum
  never reaches it, or no valid point lies after it, at the window's first
  valid cut point. A cut at an assistant message *splits a turn*: pi
  summarizes that turn's start separately (``split_turn``).
- Here a message's chars are its ``serialized_bytes`` (the size of its text in
  libpanto's transcript, a byte count with role framing, not pi's per-block
  character count); pi's 4,800 chars per image are not counted (the frame
  keeps no image count).

>>> from panto_analytics.policy.compaction.policies.base import one_window
>>> w = one_window(role=["user", "assistant", "user", "assistant"], user=[True, False, False, False],
...     tool_result=[False, False, True, False], chars=[400, 400, 400, 400])
>>> Pi(keep_recent_tokens=250).cut(w).select("prefix_end", "split_turn").rows()
[(1, True)]
"""
from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ....frame.schema import ROLE, SEQ
from .base import Policy, at_or_after, chars_to_tokens, state_max, state_min, suffix_cut

__all__ = ["Pi", "PiSettings"]


@dataclass(frozen=True)
class PiSettings(Policy):
    """pi's compaction settings, shared by its current and its whole-turn policy (``DEFAULT_COMPACTION_SETTINGS``)."""

    reserve_tokens: int = 16_384
    keep_recent_tokens: int = 20_000

    def threshold(self, window: int) -> int:
        return window - self.reserve_tokens



@dataclass(frozen=True)
class Pi(PiSettings):
    """pi's ``findCutPoint`` under ``window - reserve_tokens``."""

    name = "pi"
    budget_setting = "keep_recent_tokens"

    def cut(self, frame: pl.DataFrame) -> pl.DataFrame:
        seq = pl.col(SEQ)
        newest_first = at_or_after(chars_to_tokens(pl.col("chars")))
        reached = state_max(pl.when(newest_first >= self.keep_recent_tokens).then(seq))
        prompt = (pl.col(ROLE) == "user") & ~pl.col("tool_result")
        valid = prompt | (pl.col(ROLE) == "assistant")
        first_valid = state_min(pl.when(valid).then(seq))
        cut = pl.coalesce(state_min(pl.when(valid & (seq >= reached)).then(seq)), first_valid)
        at_assistant = state_max(pl.when(seq == cut).then(pl.col(ROLE) == "assistant"))
        turn_before = state_min(pl.when(prompt).then(seq)) <= cut
        return suffix_cut(frame, cut, split_turn=at_assistant & turn_before)
