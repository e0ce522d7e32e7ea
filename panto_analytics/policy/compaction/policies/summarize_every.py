"""``summarize-every``: SWE-agent's ``summarize_every_n_turns`` (the JetBrains LLM-summary baseline).

Source: the history processor ``SummarizeEveryNTurns`` of the SWE-agent fork
behind JetBrains Research, "The Complexity Trap" (arXiv 2508.21433; configs in
Recursive-Safeguarding/the-complexity-trap @ adfaa1a18b8b, ``config/*.yaml``:
``n=21, keep_last_m_turns=10``). A turn is one (action, observation) pair;
"when there are >= n + keep_last_m_turns unprocessed turns, only the first n
turns will be summarized, while the last keep_last_m_turns will be kept".

- Turns: each assistant message starts one (its tool results belong to it).
- Trigger: checked after every call: the messages since the previous cut hold
  ``n + keep`` turns (31 by default); no token trigger.
- Cut: the first ``n`` of them are summarized: the kept part starts at the
  ``n + 1``-th turn. Differences from the processor: its summaries accumulate
  (one per step of ``n`` turns, unless static checkpointing), the replay keeps
  one summary of ``summary_tokens``; it never summarizes the task prompt (the
  first two entries), the replay summarizes what precedes the first kept turn.

>>> from panto_analytics.policy.compaction.policies.base import one_window
>>> w = one_window(role=["user"] + ["assistant", "user"] * 3 + ["assistant"], start=[0] * 8)
>>> SummarizeEvery(n=2, keep=2).cut(w).select("prefix_end", "kept_messages").rows()
[(5, 3)]
"""
from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ....frame.schema import ROLE, SEQ
from .base import Policy, state_max, suffix_cut

__all__ = ["SummarizeEvery"]


@dataclass(frozen=True)
class SummarizeEvery(Policy):
    """Every ``n + keep`` turns, summarize the first ``n`` of them."""

    name = "summarize-every"
    ranges = {"n": (1, None, False)}
    n: int = 21
    keep: int = 10

    def threshold(self, window: int) -> int:
        return 0  # every call is checked; the cut counts turns

    def token_limit(self, window: int) -> int:
        return window  # no token trigger: only an overflow makes it ineffective

    def cut(self, frame: pl.DataFrame) -> pl.DataFrame:
        turn = (pl.col(ROLE) == "assistant") & (pl.col(SEQ) >= pl.col("start"))
        number = turn.cast(pl.Int64).cum_sum().over("state")
        due = number.max().over("state") >= self.n + self.keep
        kept_from = state_max(pl.when(turn & (number == self.n + 1)).then(pl.col(SEQ)))
        return suffix_cut(frame, pl.when(due).then(pl.coalesce(kept_from, pl.col("trigger") + 1))
                          .otherwise(pl.col("start")))
