"""``cline``: Cline's SDK compaction ("agentic"): keep the newest 20,000 tokens and the whole current turn.

Source: cline/cline ``sdk/packages/core/src/extensions/context/compaction-shared.ts``
(read at 03297ec284b0e0a0fa5b100937fd55b19a7fe301: ``COMPACTION_TRIGGER_RATIO``
0.9, ``CONTEXT_WINDOW_INPUT_RATIO`` 0.9, ``DEFAULT_PRESERVE_RECENT_TOKENS``
20,000, ``resolveEffectiveMaxInputTokens``, ``findCutIndex``).

- Trigger: the request's tokens reach ``trigger_ratio`` (0.9) of the model's
  usable input; with only a window known that input is ``input_ratio`` (0.9)
  of it, so 0.81 of the window by default (``>=``; here: the context exceeds
  ``ceil(0.81 * window) - 1``).
- Cut (``findCutIndex``): no cut when the window's last turn start (a user
  message that is not a tool result or a summary) is its first message; else
  walk back from the newest message adding each one's ``ceil(chars / 4)``
  until ``preserve_recent_tokens`` are reached (no cut if that takes the
  whole window), take the earlier of that message and the last turn start,
  and move back to the nearest turn start: the current turn is always kept
  whole and a tool call never loses its result. Characters are the frame's
  ``serialized_bytes`` (Cline counts ``JSON.stringify`` of each message).

>>> from panto_analytics.policy.compaction.policies.base import one_window
>>> w = one_window(user=[True, False, True, False], chars=[80_000, 80_000, 40_000, 40_000])
>>> Cline().cut(w).select("prefix_end", "kept_messages").rows()
[(2, 2)]
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import polars as pl

from ....frame.schema import SEQ
from .base import Policy, at_or_after, chars_to_tokens, state_max, suffix_cut

__all__ = ["Cline"]


@dataclass(frozen=True)
class Cline(Policy):
    """``findCutIndex`` at ``trigger_ratio * input_ratio`` of the window."""

    name = "cline"
    budget_setting = "preserve_recent_tokens"
    trigger_ratio: float = 0.9  # COMPACTION_TRIGGER_RATIO
    input_ratio: float = 0.9  # CONTEXT_WINDOW_INPUT_RATIO
    preserve_recent_tokens: int = 20_000  # DEFAULT_PRESERVE_RECENT_TOKENS

    def threshold(self, window: int) -> int:
        return math.ceil(window * self.input_ratio * self.trigger_ratio) - 1


    def cut(self, frame: pl.DataFrame) -> pl.DataFrame:
        seq, turn_start = pl.col(SEQ), pl.col("user")
        last_turn = state_max(pl.when(turn_start).then(seq))
        reached = state_max(pl.when(at_or_after(chars_to_tokens(pl.col("chars"))) >= self.preserve_recent_tokens)
                            .then(seq))
        candidate = pl.min_horizontal(reached, last_turn)
        snapped = state_max(pl.when(turn_start & (seq <= candidate)).then(seq))
        none = last_turn.is_null() | (last_turn <= pl.col("first")) | reached.is_null() | (reached <= pl.col("first"))
        return suffix_cut(frame, pl.when(none).then(pl.col("first")).otherwise(pl.coalesce(snapped, pl.col("first"))))
