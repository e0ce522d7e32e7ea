"""``gemini-cli``: Gemini CLI's chat compression: keep the newest 30% of the history by characters.

Source: google-gemini/gemini-cli ``packages/core/src/services/chatCompressionService.ts``
(read at commit 02b2885cb824fecd2f9ed666aa6c7e397fc26384:
``DEFAULT_COMPRESSION_TOKEN_THRESHOLD`` 0.5, ``COMPRESSION_PRESERVE_THRESHOLD`` 0.3,
``findCompressSplitPoint``, ``ChatCompressionService.compress``). Not reproduced:
that version first truncates tool responses older than a 50,000-token budget
(``truncateHistoryToBudget``) before it splits, and the split here counts the
untruncated characters; some forks split at tool calls too.

- Trigger: the prompt's token count reaches ``threshold`` (0.5) of the window
  (``>=``; here: the context exceeds ``ceil(0.5 * window) - 1``).
- Cut: with each message's characters and ``target = total * (1 - preserve)``,
  the first user message that is not a tool result and has at least
  ``target`` characters before it; if none, everything when the newest
  message is an assistant's that calls no tool, else the last such user
  message (the window's start, i.e. nothing, when there is none). Characters
  are the frame's ``serialized_bytes`` (Gemini counts ``JSON.stringify`` of
  each content); a call is taken to call a tool when a tool result follows it.

>>> from panto_analytics.policy.compaction.policies.base import one_window
>>> w = one_window(user=[True, False, True, False], role=["user", "assistant"] * 2, chars=[100, 600, 100, 200],
...     next_tool_result=[False] * 4)
>>> GeminiCli().cut(w).select("prefix_end").rows()
[(2,)]
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import polars as pl

from ....frame.schema import ROLE, SEQ
from .base import Policy, state_max, state_min, suffix_cut

__all__ = ["GeminiCli"]


@dataclass(frozen=True)
class GeminiCli(Policy):
    """Gemini CLI's ``findCompressSplitPoint`` at ``threshold`` of the window."""

    name = "gemini-cli"
    threshold_ratio: float = 0.5
    preserve: float = 0.3

    def threshold(self, window: int) -> int:
        return math.ceil(window * self.threshold_ratio) - 1

    def cut(self, frame: pl.DataFrame) -> pl.DataFrame:
        seq, chars = pl.col(SEQ), pl.col("chars").cast(pl.Int64)
        before = chars.cum_sum().over("state") - chars
        target = chars.sum().over("state").cast(pl.Float64) * (1 - self.preserve)
        candidate = pl.col("user")
        first_past = state_min(pl.when(candidate & (before.cast(pl.Float64) >= target)).then(seq))
        at_trigger = seq == pl.col("trigger")
        ends_clean = state_max(pl.when(at_trigger).then((pl.col(ROLE) == "assistant") & ~pl.col("next_tool_result")))
        fallback = pl.when(ends_clean).then(pl.col("trigger") + 1).otherwise(state_max(pl.when(candidate).then(seq)))
        return suffix_cut(frame, pl.coalesce(first_past, fallback))
