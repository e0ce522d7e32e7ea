"""``anthropic-compact``: Anthropic's server-side compaction ``compact_20260112``: a summary, nothing kept verbatim.

Source: https://platform.claude.com/docs/en/build-with-claude/compaction
(beta header ``compact-2026-01-12``): ``trigger {type: input_tokens, value}``,
default 150,000, minimum 50,000. When the input passes it, the API writes a
``compaction`` block holding a summary and ignores every block before it on
later requests: nothing of the old history is kept verbatim; the current
turn continues after the summary.

- Trigger: the context exceeds ``trigger`` (a fixed token count, not a share
  of the window: at a window below it, it never fires).
- Cut: everything summarized, nothing kept (as ``claude-code`` before its
  preserved segment).
- Summarizer: on the cached conversation (``summarizer_cached``): the
  compaction is an extra sampling step of the same request, whose prefix is
  the conversation as sent (the docs bill it as an iteration of that request;
  not verified against a bill).

>>> AnthropicCompact().threshold(200_000), AnthropicCompact(trigger=60_000).threshold(50_000)
(150000, 60000)
"""
from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from .base import Policy, suffix_cut

__all__ = ["AnthropicCompact"]


@dataclass(frozen=True)
class AnthropicCompact(Policy):
    """Everything summarized once the context passes ``trigger`` tokens (at least 50,000)."""

    name = "anthropic-compact"
    ranges = {"trigger": (50_000, None, False)}
    summarizer_cached = True
    trigger: int = 150_000

    def threshold(self, window: int) -> int:
        return self.trigger

    def cut(self, frame: pl.DataFrame) -> pl.DataFrame:
        return suffix_cut(frame, pl.col("trigger") + 1)
