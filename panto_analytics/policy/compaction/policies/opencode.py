"""``opencode``: opencode's summarize step: a summary plus a recent tail of whole turns (or a turn's newest steps).

Source: sst/opencode ``packages/opencode/src/session/compaction.ts`` and
``overflow.ts`` (read at 31e22f65a23c498639b8cef24b90e6ae193cdcb6:
``COMPACTION_BUFFER`` 20,000, ``MAX_PRESERVE_RECENT_TOKENS`` 15,000,
``isOverflow``, ``usable``, ``select``, ``splitTurn``). opencode's other step,
``prune`` (tool outputs beyond the newest 40,000 tokens of them erased when
more than 20,000 are prunable), is tool-output clearing, not a cut: it is not
modelled here.

- Trigger: the last call's tokens reach ``usable = window - max_output -
  min(buffer, max_output)`` (``max_output`` 32,000, opencode's default output
  cap; ``buffer`` 20,000): 148,000 of a 200k window (here: the context
  exceeds ``usable - 1``).
- Cut (``select``): turns start at the user's prompts; walking back from the
  newest turn, whole turns are kept while their ``ceil(chars / 4)`` sum stays
  within ``preserve_recent_tokens`` (opencode: ``min(15,000, max(2,000,
  usable / 4))``, 15,000 at any window from 112k); in the first turn that does
  not fit, the tail keeps its newest steps from the first assistant message
  whose rest of the turn fits what is left (``splitTurn``). A tail that would
  start at the window's first message, or no tail at all, keeps nothing: the
  whole window is summarized.

>>> from panto_analytics.policy.compaction.policies.base import one_window
>>> w = one_window(user=[True, False, False, True, False, False],
...     role=["user", "assistant", "assistant", "user", "assistant", "assistant"],
...     chars=[4_000, 40_000, 4_000, 4_000, 40_000, 8_000])
>>> Opencode(preserve_recent_tokens=20_000).cut(w).select("prefix_end", "kept_messages").rows()
[(2, 4)]
"""
from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ....frame.schema import ROLE, SEQ
from .base import Policy, at_or_after, chars_to_tokens, state_max, state_min, suffix_cut

__all__ = ["Opencode"]


@dataclass(frozen=True)
class Opencode(Policy):
    """opencode's ``select`` tail at ``window - max_output - min(buffer, max_output)``."""

    name = "opencode"
    budget_setting = "preserve_recent_tokens"
    max_output: int = 32_000  # opencode's default output cap
    buffer: int = 20_000  # COMPACTION_BUFFER
    preserve_recent_tokens: int = 15_000  # MAX_PRESERVE_RECENT_TOKENS

    def threshold(self, window: int) -> int:
        return window - self.max_output - min(self.buffer, self.max_output) - 1


    def cut(self, frame: pl.DataFrame) -> pl.DataFrame:
        seq, budget = pl.col(SEQ), self.preserve_recent_tokens
        tokens = chars_to_tokens(pl.col("chars"))
        turn = pl.col("user").cast(pl.Int64).cum_sum().over("state")  # 0: before the first prompt, no turn
        rows = frame.with_columns(_turn=turn, _tok=tokens)
        in_turn = pl.col("_turn") > 0
        size = pl.col("_tok").sum().over("state", "_turn")
        rest_of_turn = at_or_after(pl.col("_tok"), "_turn")
        # Per turn, the tokens of it and every newer turn (on each row: the sum over rows of turns >= its turn).
        newer = pl.when(in_turn).then(at_or_after(pl.col("_tok")) - (rest_of_turn - size))
        rows = rows.with_columns(_newer=newer, _size=size, _rest=rest_of_turn)
        fits = in_turn & (pl.col("_newer") <= budget)
        whole = state_min(pl.when(fits).then(seq))
        failing = state_max(pl.when(in_turn & (pl.col("_newer") > budget)).then(pl.col("_turn")))
        left = budget - state_max(pl.when(pl.col("_turn") == failing).then(pl.col("_newer") - pl.col("_size")))
        split = state_min(pl.when((pl.col("_turn") == failing) & (pl.col(ROLE) == "assistant") & ~pl.col("user")
                                  & (pl.col("_rest") <= left) & (left > 0)).then(seq))
        keep = pl.coalesce(split, whole)
        everything = keep.is_null() | (keep <= pl.col("first"))
        return suffix_cut(rows, pl.when(everything).then(pl.col("trigger") + 1).otherwise(keep))
