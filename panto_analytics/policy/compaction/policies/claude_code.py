"""``claude-code``: Claude Code's auto-compact, by version: a summary plus, where the version keeps one, a preserved segment.

Claude Code is closed source; the rules here come from its recordings, the
source published in March 2026 (v2.1.88, mirrored in many repositories:
``src/services/compact/sessionMemoryCompact.ts``, ``autoCompact.ts``) and the
SDK's record types. ``docs/replay.md`` states what was read where.

- Trigger: the context exceeds ``window - output_reserve - buffer``, i.e.
  ``window - min(max output, 20,000) - 13,000`` (``AUTOCOMPACT_BUFFER_TOKENS``):
  167,000 of a 200k window, 967,000 of 1M.
- Cut, versions that record no preserved segment (before ``preserved_since``,
  and a recording that names no version): everything is summarized, nothing
  kept (a ``compact_boundary`` record, one summary, nothing after it).
- Cut, versions from ``preserved_since`` on (their ``compact_boundary`` carries
  ``compactMetadata.preservedSegment`` / ``preservedMessages``): the summary
  plus the newest messages, chosen as ``calculateMessagesToKeepIndex`` does
  with no summarized-message mark: walk back from the newest message adding
  each message's estimate (``ceil(round(chars / 4) * 4 / 3)``, here
  ``ceil(ceil(bytes / 4) * 4 / 3)``) until the kept part holds at least
  ``min_tokens`` (10,000) and ``min_text_messages`` (5) messages with text, or
  ``max_tokens`` (40,000); never past the window's start (the last boundary);
  then back to the call whose tool result it would orphan
  (``adjustIndexToPreserveAPIInvariants``). A message "with text" is a
  user prompt or an assistant message that calls no tool (the frame keeps no
  block types).
- ``version``: empty, each recording's own (the message frame's
  ``agent_version``, Claude Code's ``version`` field); set, it is forced
  (``claude-code:version=2.1.185``).

>>> from panto_analytics.policy.compaction.policies.base import one_window
>>> w = one_window(4, role=["user", "assistant"] * 2, user=[True, False] * 2, tool_result=[False] * 4,
...     next_tool_result=[False] * 4, chars=[30_000] * 4, version=["2.1.112"] * 4)
>>> ClaudeCode().cut(w).select("prefix_end", "kept_messages").rows()  # a version that keeps nothing
[(8, 0)]
>>> ClaudeCode(version="2.1.185").cut(w).select("prefix_end", "kept_messages").rows()  # 5 text messages: here all 4
[(4, 4)]
>>> ClaudeCode(version="2.1.185", min_text_messages=2).cut(w).select("prefix_end", "kept_messages").rows()
[(6, 2)]
>>> ClaudeCode().threshold(200_000)
167000
>>> ClaudeCode.parse("version=2.1.185").spec()
'claude-code:version=2.1.185'
"""
from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ....frame.schema import ROLE, SEQ
from .base import Policy, at_or_after, chars_to_tokens, state_max, suffix_cut

__all__ = ["ClaudeCode", "version_key"]


def version_key(version: pl.Expr) -> pl.Expr:
    """``MAJOR.MINOR.PATCH`` (a suffix ignored) as one comparable integer; null for anything else.

    >>> pl.DataFrame({"v": ["2.1.185", "2.1.22", "1.0.17-beta", "x", None]}).select(
    ...     version_key(pl.col("v"))).to_series().to_list()
    [2000001000185, 2000001000022, 1000000000017, None, None]
    """
    parts = version.str.extract_groups(r"^(\d{1,6})\.(\d{1,6})\.(\d{1,6})")
    number = [parts.struct.field(str(i)).cast(pl.Int64) for i in (1, 2, 3)]
    return number[0] * 10**12 + number[1] * 10**6 + number[2]


def _key(version: str) -> int | None:
    """:func:`version_key` of one string."""
    key = pl.select(version_key(pl.lit(version, pl.String))).item()
    return None if key is None else int(key)


@dataclass(frozen=True)
class ClaudeCode(Policy):
    """A summary at ``window - output_reserve - buffer``; from ``preserved_since`` on, the newest messages kept."""

    name = "claude-code"
    ranges = {"min_text_messages": (0, None, False)}
    output_reserve: int = 20_000
    buffer: int = 13_000
    version: str = ""
    preserved_since: str = "2.1.150"
    min_tokens: int = 10_000
    min_text_messages: int = 5
    max_tokens: int = 40_000

    def __post_init__(self) -> None:
        super().__post_init__()
        for key in ("version", "preserved_since"):
            value = getattr(self, key)
            if (value or key == "preserved_since") and _key(value) is None:
                raise ValueError(f"claude-code: {key}={value!r} is not a version: give MAJOR.MINOR.PATCH (2.1.185)")

    def threshold(self, window: int) -> int:
        return window - self.output_reserve - self.buffer

    def cut(self, frame: pl.DataFrame) -> pl.DataFrame:
        seq = pl.col(SEQ)
        version = pl.lit(self.version, pl.String) if self.version else pl.col("version")
        at_trigger = pl.when(seq == pl.col("trigger")).then(version_key(version) >= _key(self.preserved_since))
        preserves = state_max(at_trigger).fill_null(False)  # the version that recorded the trigger call
        chars = pl.col("chars").cast(pl.Int64)
        tokens = pl.when(pl.col(ROLE) == "system").then(0).otherwise((chars_to_tokens(chars) * 4 + 2) // 3)
        text = (pl.col("user") | ((pl.col(ROLE) == "assistant") & ~pl.col("next_tool_result").fill_null(False)))
        kept_tokens, kept_text = at_or_after(tokens), at_or_after(text.cast(pl.Int64))
        enough = (kept_tokens >= self.max_tokens) | ((kept_tokens >= self.min_tokens)
                                                     & (kept_text >= self.min_text_messages))
        walked = pl.coalesce(state_max(pl.when(enough).then(seq)), pl.col("first"))
        at_walked = state_max(pl.when(seq == walked).then(pl.col("tool_result")))
        caller = state_max(pl.when((pl.col(ROLE) == "assistant") & (seq < walked)).then(seq))
        start = pl.when(at_walked & caller.is_not_null()).then(caller).otherwise(walked)
        return suffix_cut(frame, pl.when(preserves).then(start).otherwise(pl.col("trigger") + 1))
