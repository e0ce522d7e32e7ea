"""``openai-compact``: OpenAI's ``POST /responses/compact``: every user message kept verbatim, the rest one opaque item.

Source: https://developers.openai.com/api/docs/guides/compaction (the
standalone endpoint returns a new window in which user messages are kept
verbatim and prior assistant messages, tool calls, tool results and reasoning
are replaced by one encrypted ``compaction`` item); Codex calls it for its
remote compaction (``remote_compacted`` records). The endpoint has no trigger
of its own: the client calls it; here at Codex's, ``trigger_ratio`` (0.9) of
the window.

Where it differs from ``codex`` (Codex's local compaction): no 20,000-token
cap on the user messages kept and no truncation of the one that overflows
(all of them are kept); the summary is opaque (its size is the replay's
``summary_tokens`` as for the others). Like ``codex`` it keeps copies that
are read again at the next compaction (``from_anchor``), measures them by
``ceil(bytes / 4)``, and the request is the conversation itself
(``summarizer_cached``).

>>> from panto_analytics.policy.compaction.policies.base import one_window
>>> w = one_window(user=[True, False, True], summary=[False] * 3, chars=[400, 4000, 800])
>>> OpenAiCompact().cut(w).select("prefix_end", "kept_start", "kept_messages", "kept_tokens").rows()
[(3, 0, 2, 300)]
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import polars as pl

from ....frame.schema import SEQ
from .base import Policy, chars_to_tokens

__all__ = ["OpenAiCompact"]


@dataclass(frozen=True)
class OpenAiCompact(Policy):
    """All user messages kept, the rest replaced, at ``trigger_ratio`` of the window."""

    name = "openai-compact"
    summarizer_cached = True
    from_anchor = True
    trigger_ratio: float = 0.9

    def threshold(self, window: int) -> int:
        return math.floor(window * self.trigger_ratio)

    def cut(self, frame: pl.DataFrame) -> pl.DataFrame:
        kept = pl.col("user") & ~pl.col("summary")
        return frame.group_by("state", maintain_order=True).agg(
            prefix_end=pl.col("trigger").first().cast(pl.Int64) + 1,
            kept_start=pl.col(SEQ).filter(kept).min().cast(pl.Int64),
            kept_messages=kept.sum().cast(pl.Int64),
            kept_tokens=chars_to_tokens(pl.col("chars")).filter(kept).sum().cast(pl.Int64),
            split_turn=pl.lit(False))
