"""``codex``: Codex CLI's local compaction: keep the user messages, newest first, up to 20,000 tokens.

Source: openai/codex ``codex-rs/core/src/compact.rs`` (read at commit
0100b103625752f6a10c21b79a8c423761dc4c6a: ``COMPACT_USER_MESSAGE_MAX_TOKENS``,
``collect_user_messages``, ``build_compacted_history_with_limit``).

- Trigger: the context exceeds ``trigger_ratio`` (0.9) of the window: Codex's
  ``auto_compact_token_limit`` is, unless the model's catalog entry or the
  user's ``model_auto_compact_token_limit`` sets one, 90% of the model's
  ``context_window`` (``(context_window * 9) / 10`` in
  ``codex-rs/protocol/src/openai_models.rs`` at openai/codex
  0d4367d0e6a976082b36d9eea8f8a579fca368cb; later versions take the smaller
  of a configured limit and that 90%), and a compaction runs after a call
  whose context reached it (``total_usage_tokens >= auto_compact_limit``).
  The window here is the model's whole window (272k for gpt-5.x): Codex
  records in ``token_count`` the *effective* window, 95% of it
  (``effective_context_window_percent``: 258,400 of 272,000), so at a
  recorded ``model_context_window`` the same rule is
  ``codex:trigger_ratio=0.947``. A compaction seen at 82% of the recorded
  window is not this default (a per-model or configured limit lowers it);
  none of the real Codex recordings read here holds a compaction to check
  it on.
- Cut: the whole history is summarized; the new history is the summary plus
  the user messages (not tool results, not earlier summaries), newest first,
  while they fit ``user_tokens`` (20,000) by ``approx_token_count``
  (bytes / 4, rounded up); the first that does not fit is truncated to what is
  left, and the walk stops. All assistant messages and tool traffic go to the
  summary. Since the kept user messages stay in the history, the next
  compaction collects again from the latest recorded summary on
  (``from_anchor``). The user-role messages Codex writes itself (AGENTS.md
  instructions, ``<environment_context>``, ...) are not user messages here:
  the Codex reader makes them system messages
  (:data:`~panto_analytics.formats.codex.reader.CONTEXTUAL_USER_FRAGMENTS`), as
  Codex leaves them out of the user messages it keeps and inserts them
  afresh. Bytes are the frame's ``serialized_bytes``; the truncation marker's
  few tokens are not counted.
- Summarizer: on the cached conversation (``summarizer_cached``). Codex's
  local compaction records the compact prompt into a clone of the history and
  streams ``history.get_history_for_prompt()`` as an ordinary turn
  (``run_compact_task_inner``), so the request's prefix is the conversation
  the previous call sent, read from OpenAI's prefix cache ("Trim from the
  beginning to preserve cache (prefix-based)", ibid.).

>>> from panto_analytics.policy.compaction.policies.base import one_window
>>> w = one_window(user=[True, False, True, False], summary=[False] * 4, chars=[40_000, 10, 40_000, 10])
>>> Codex(user_tokens=15_000).cut(w).select("prefix_end", "kept_start", "kept_messages", "kept_tokens").rows()
[(4, 0, 2, 15000)]
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import polars as pl

from ....frame.schema import SEQ
from .base import Policy, at_or_after, chars_to_tokens

__all__ = ["Codex"]


@dataclass(frozen=True)
class Codex(Policy):
    """Codex's ``build_compacted_history``: user messages up to ``user_tokens``, at ``trigger_ratio`` of the window."""

    name = "codex"
    budget_setting = "user_tokens"
    summarizer_cached = True
    from_anchor = True
    trigger_ratio: float = 0.9
    user_tokens: int = 20_000

    def threshold(self, window: int) -> int:
        return math.floor(window * self.trigger_ratio)


    def cut(self, frame: pl.DataFrame) -> pl.DataFrame:
        kept = pl.col("user") & ~pl.col("summary")
        tokens = pl.when(kept).then(chars_to_tokens(pl.col("chars"))).otherwise(0)
        newer = at_or_after(tokens) - tokens  # tokens of the newer user messages
        selected = kept & (newer < self.user_tokens)
        rows = frame.with_columns(
            _selected=selected, _seq=pl.when(selected).then(pl.col(SEQ)), _total=tokens.sum().over("state"))
        return rows.filter(pl.col("state").is_first_distinct()).select(
            "state", prefix_end=pl.col("trigger").cast(pl.Int64) + 1).join(
            rows.group_by("state").agg(kept_start=pl.col("_seq").min().cast(pl.Int64),
                                       kept_messages=pl.col("_selected").sum().cast(pl.Int64),
                                       _total=pl.col("_total").first()),
            on="state", how="left", maintain_order="left").select(
            "state", "prefix_end", "kept_start", "kept_messages",
            kept_tokens=pl.min_horizontal(pl.col("_total"), pl.lit(self.user_tokens)).cast(pl.Int64),
            split_turn=pl.lit(False))
