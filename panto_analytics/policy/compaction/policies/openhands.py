"""``openhands``: OpenHands' ``LLMSummarizingCondenser``: the first events and a tail kept, the middle summarized.

Source: OpenHands/software-agent-sdk
``openhands-sdk/openhands/sdk/context/condenser/llm_summarizing_condenser.py``
(read at 611629e6999a, 2026-08-22; the default agent's
``LLMSummarizingCondenser(max_size=80, keep_first=4)``; ``max_tokens`` the
LLM's effective max input, the hard token trigger since #1380).

- Events: one per message of the frame (OpenHands counts an action and its
  observation as two events; an assistant message with several tool calls is
  several actions there, one message here).
- The view the agent sends: before any condensation, the messages from the
  latest recorded summary on; after one, the first ``keep_first`` of them,
  the summary, and the messages from the previous cut on.
- Trigger: checked after every call: the view holds more than ``max_size``
  events, or (hard) its context exceeds ``max_tokens_ratio`` (1.0) of the
  window. (The token trigger needs the replay's window: at a compaction an
  agent recorded, only the event trigger runs.)
- Cut: the first ``keep_first`` events stay; of the rest, the tail kept is the
  newest ``max_size // 2 - keep_first - 1`` events (35 by default) for the
  event trigger, and for the token trigger the newest messages whose recorded
  context stays within half the limit; with both, the smaller tail. The tail's
  start moves forward past tool results (an observation never loses its
  action). Kept tokens: the tail's recorded context (usage) plus
  ``ceil(bytes / 4)`` of the first events.

>>> from panto_analytics.policy.compaction.policies.base import one_window
>>> n = 90
>>> w = one_window(role=["user", "assistant"] * (n // 2), tool_result=[False] * n, chars=[400] * n, cum=[None] * n,
...     before=[10 * i for i in range(n)], start=[0] * n, context=[900] * n, window=[100_000] * n)
>>> OpenHands().cut(w).select("prefix_end", "kept_start", "kept_messages", "kept_tokens").rows()
[(55, 55, 39, 400)]
"""
from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ....frame.schema import SEQ
from .base import Policy, chars_to_tokens, state_max, state_min

__all__ = ["OpenHands"]


@dataclass(frozen=True)
class OpenHands(Policy):
    """Condense when the view passes ``max_size`` events or the token limit; keep ``keep_first`` and a tail."""

    name = "openhands"
    ranges = {"max_size": (1, None, False), "max_tokens_ratio": (0, None, True)}
    from_anchor = True
    max_size: int = 80
    keep_first: int = 4
    max_tokens_ratio: float = 1.0

    def threshold(self, window: int) -> int:
        return 0  # every call is checked; the cut decides (events or tokens)

    def token_limit(self, window: int) -> int:
        return int(window * self.max_tokens_ratio)  # its hard trigger

    def cut(self, frame: pl.DataFrame) -> pl.DataFrame:
        seq, first, start, trigger = pl.col(SEQ), pl.col("first"), pl.col("start"), pl.col("trigger")
        head_end = first + self.keep_first
        condensed = start > first
        view = pl.when(condensed).then(self.keep_first + 1 + trigger + 1 - start).otherwise(trigger + 1 - first)
        limit = pl.col("window").cast(pl.Float64) * self.max_tokens_ratio
        by_tokens = (pl.col("context").cast(pl.Float64) > limit).fill_null(False)
        by_events = view > self.max_size
        tail = max(self.max_size // 2 - self.keep_first - 1, 0)
        events_start = trigger + 1 - tail
        newest = state_max(pl.when(seq == trigger).then(pl.col("cum")))
        within_half = (newest - pl.col("before")).cast(pl.Float64) <= limit / 2
        tokens_start = pl.coalesce(state_min(pl.when(within_half & (seq >= head_end)).then(seq)), trigger + 1)
        raw = pl.max_horizontal(
            pl.when(by_events).then(events_start), pl.when(by_tokens).then(tokens_start), head_end, start)
        snapped = pl.coalesce(state_min(pl.when((seq >= raw) & ~pl.col("tool_result")).then(seq)), trigger + 1)
        fires = by_events | by_tokens
        cut = pl.when(fires).then(snapped).otherwise(start).cast(pl.Int64)
        head = (seq < head_end) & (seq < cut)
        rows = frame.with_columns(_cut=cut, _fires=fires, _head=head,
                                  _tail_before=pl.when(seq == cut).then(pl.col("before")), _newest=newest)
        one = rows.group_by("state", maintain_order=True).agg(
            prefix_end=pl.col("_cut").first(), fires=pl.col("_fires").first(), trigger=pl.col("trigger").first(),
            head_messages=pl.col("_head").sum().cast(pl.Int64),
            head_tokens=chars_to_tokens(pl.col("chars")).filter(pl.col("_head")).sum().cast(pl.Int64),
            tail_before=pl.col("_tail_before").drop_nulls().first(), newest=pl.col("_newest").first())
        kept_tail = (pl.col("trigger") + 1 - pl.col("prefix_end")).clip(0)
        tail_tokens = pl.when(kept_tail > 0).then((pl.col("newest").fill_null(0) - pl.col("tail_before").fill_null(0))
                                                 .clip(0)).otherwise(0)
        return one.select(
            "state", prefix_end=pl.col("prefix_end").cast(pl.Int64),
            kept_start=pl.when(kept_tail > 0).then(pl.col("prefix_end").cast(pl.Int64)),
            kept_messages=pl.when(pl.col("fires")).then(kept_tail + pl.col("head_messages")).otherwise(kept_tail)
            .cast(pl.Int64),
            kept_tokens=pl.when(pl.col("fires")).then(tail_tokens + pl.col("head_tokens")).cast(pl.Int64),
            split_turn=pl.lit(False))
