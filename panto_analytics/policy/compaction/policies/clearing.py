"""Policies that clear old tool results in place instead of summarizing a prefix.

A clearing policy replaces the results of old tool calls by a short
placeholder and leaves every user and assistant message, and the tool
calls' inputs, as they were; no summarizer runs. Which results it clears at
a call is a :class:`ClearRule` (the replay, :mod:`..clearing`, applies it to
every call of every session at once). One rule, four sets of settings:

- ``clear-tool-uses``: Anthropic's ``clear_tool_uses_20250919`` context edit
  (platform.claude.com/docs/en/build-with-claude/context-editing; defaults
  also in LangChain's ``ClearToolUsesEdit(trigger=100000, clear_at_least=0,
  keep=3)`` and the Ruby SDK's ``BetaClearToolUses20250919Edit``): applied by
  the server to each request whose input exceeds ``trigger`` (100,000
  tokens); it clears the results of every tool use but the newest ``keep``
  (3), oldest first, not those of ``exclude`` kinds; ``clear_at_least``: the
  edit is not applied unless it clears at least that many tokens. The client
  keeps its whole history, so every request past the trigger is edited again
  (the cleared set grows with the conversation).
- ``claude-code-microcompact``: Claude Code's API microcompact
  (``services/compact/apiMicrocompact.ts``: ``DEFAULT_MAX_INPUT_TOKENS =
  180_000`` as the trigger, ``DEFAULT_TARGET_INPUT_TOKENS = 40_000`` kept, sent
  as ``clear_at_least`` = 180,000 - 40,000; the edit tools' uses excluded):
  the same edit at trigger 180,000, clear_at_least 140,000, writes excluded.
- ``claude-code-time-microcompact``: Claude Code's time-based microcompact
  (``services/compact/timeBasedMCConfig.ts``, gap 60 minutes, keep 5, shipped
  off behind a feature gate; secondary: write-ups of the March-2026 source
  dump): when more than 60 minutes passed since the last assistant message
  (the server cache has expired), the results of every compactable tool
  (Read, Bash, Grep, Glob, WebSearch, WebFetch, Edit, Write: every kind but
  ``other`` here) but the newest 5 are replaced, in the agent's own history:
  they stay cleared.
- ``observation-masking``: SWE-agent's ``last_n_observations`` history
  processor, the JetBrains baseline ("The Complexity Trap", arXiv 2508.21433,
  M = 10): every call, the results of all tool uses but the newest ``m`` are
  replaced by a placeholder; no trigger.
- ``openclaw-cache-ttl``: OpenClaw's client-side ``cache-ttl`` context
  pruning (:class:`OpenclawCacheTtl`; read in the ``openclaw`` npm package
  2026.9.6, ``dist/tool-result-truncation-*.mjs``, region
  ``src/agents/embedded-agent-runner/tool-result-truncation.ts``,
  ``pruneExpiredCacheTtlToolResults``): at a request at least ``ttl`` minutes
  (5) after the last one, with the context at 0.3 of the window or more, the
  results older than the last 3 assistant messages over 4,000 characters are
  trimmed to their first and last 1,500; then, at 0.5 of the window or more
  with at least 50,000 characters of them left, they are cleared oldest
  first until the context is below 0.5. What it trimmed or cleared stays so.
- ``opencode-prune``: opencode's prune (``session/compaction.ts``,
  ``PRUNE_PROTECT = 40_000``, ``PRUNE_MINIMUM = 20_000``): the tool outputs of
  the last two turns are never touched; walking back from there, outputs
  beyond the newest 40,000 tokens of them are pruned, when more than 20,000
  tokens are prunable.

The frame keeps no tool names, only what each call does (its reference
``kind``: read, write, run, fetch, other; :mod:`~panto_analytics.frame.tool_targets`),
so ``exclude`` names kinds (``write``, ``read/run``, ...). A result's size is
its ``tokens`` (libpanto's word estimate of the result, as the loss measure
counts it); a call whose recording holds no result has nothing to clear.

>>> ClearToolUses.parse("trigger=50k,keep=5").spec()
'clear-tool-uses:trigger=50000,keep=5'
>>> ObservationMasking(m=10).rule().keep
10
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import polars as pl

from ....frame.schema import REF_KINDS
from .base import Policy

__all__ = ["PLACEHOLDER_TOKENS", "TRIMMED_TOKENS", "TRIM_OVER_TOKENS", "ClaudeCodeMicrocompact", "ClaudeCodeTimeMicrocompact",
           "ClearRule", "ClearToolUses", "Clearing", "ObservationMasking", "OpenclawCacheTtl", "OpencodePrune",
           "parse_kinds"]

#: Tokens of the placeholder that replaces a cleared result: ``[Old tool result content cleared]`` (Claude Code's
#: text), 34 characters at 4 per token.
PLACEHOLDER_TOKENS = 9

#: OpenClaw's soft trim: a result over 4,000 characters (at 4 per token) ...
TRIM_OVER_TOKENS = 1_000
#: ... keeps its first and last 1,500 characters, joined by ``\n...\n`` and followed by its note
#: (``\n\n[Tool result trimmed: kept first 1500 chars and last 1500 chars of N chars.]``, 82 characters for a
#: five-digit N): 3,087 characters, 772 tokens.
TRIMMED_TOKENS = 772


class ClearRule(NamedTuple):
    """What a clearing policy clears at a call (every field a setting; the replay reads nothing else).

    ``trigger``: the call's prompt (its recorded input, cached or not) must exceed it (0: every call).
    ``keep``: the newest tool uses kept. ``keep_tokens``: walking back from the newest kept use, the uses whose
    results' running total stays within it are kept too (0: no such rule). ``keep_turns``: the tool uses of the
    newest turns never cleared. ``clear_at_least``: the edit applies only when it clears at least this many tokens.
    ``exclude``: kinds never cleared. ``inputs``: the calls' inputs are cleared too (for the loss measure).
    """

    trigger: int = 0
    keep: int = 0
    keep_tokens: int = 0
    keep_turns: int = 0
    clear_at_least: int = 0
    exclude: tuple[str, ...] = ()
    inputs: bool = False
    #: Fire only at a call more than this many minutes after the session's previous assistant message (0: any
    #: call); what such an edit cleared stays cleared (the agent edits its own history).
    gap_minutes: int = 0


def parse_kinds(text: str) -> tuple[str, ...]:
    """``read/write`` as reference kinds; ValueError, in one line, for an unknown one.

    >>> parse_kinds("write/run")
    ('write', 'run')
    >>> parse_kinds("")
    ()
    """
    kinds = tuple(k.strip() for k in text.split("/") if k.strip())
    bad = [k for k in kinds if k not in REF_KINDS]
    if bad:
        raise ValueError(f"unknown tool kind {bad[0]!r}; kinds: {', '.join(REF_KINDS)} (joined by /)")
    return kinds


@dataclass(frozen=True)
class Clearing(Policy):
    """A policy that clears tool results (:attr:`Policy.clears`); subclasses give :meth:`rule`."""

    clears = True

    def rule(self) -> ClearRule:  # pragma: no cover - abstract
        raise NotImplementedError

    def threshold(self, window: int) -> int:
        """The prompt past which the policy edits a call (0 where it edits every call)."""
        return self.rule().trigger

    def cut(self, frame: pl.DataFrame) -> pl.DataFrame:
        raise TypeError(f"{self.name} clears tool results in place: it has no cut")


@dataclass(frozen=True)
class ClearToolUses(Clearing):
    """Anthropic's ``clear_tool_uses_20250919`` edit with its defaults."""

    name = "clear-tool-uses"
    ranges = {"clear_tool_inputs": (0, 1, False)}
    trigger: int = 100_000
    keep: int = 3
    clear_at_least: int = 0
    clear_tool_inputs: int = 0
    exclude: str = ""

    def __post_init__(self) -> None:
        super().__post_init__()
        parse_kinds(self.exclude)

    def rule(self) -> ClearRule:
        return ClearRule(trigger=self.trigger, keep=self.keep, clear_at_least=self.clear_at_least,
                         exclude=parse_kinds(self.exclude), inputs=bool(self.clear_tool_inputs))


@dataclass(frozen=True)
class ClaudeCodeMicrocompact(ClearToolUses):
    """Claude Code's API microcompact: the edit at 180,000, clearing at least 180,000 - 40,000, writes kept."""

    name = "claude-code-microcompact"
    trigger: int = 180_000
    clear_at_least: int = 140_000
    exclude: str = "write"


@dataclass(frozen=True)
class ClaudeCodeTimeMicrocompact(Clearing):
    """Claude Code's time-based microcompact: after ``gap_minutes`` (60) idle since the last assistant message, the
    results of all compactable tools (not ``other``) but the newest ``keep`` (5) are cleared, and stay cleared."""

    name = "claude-code-time-microcompact"
    ranges = {"gap_minutes": (0, None, True)}
    gap_minutes: int = 60
    keep: int = 5

    def rule(self) -> ClearRule:
        return ClearRule(keep=self.keep, exclude=("other",), gap_minutes=self.gap_minutes)


@dataclass(frozen=True)
class ObservationMasking(Clearing):
    """SWE-agent's ``last_n_observations``: every call, all tool results but the newest ``m`` masked."""

    name = "observation-masking"
    ranges = {"m": (0, None, False)}
    m: int = 10

    def rule(self) -> ClearRule:
        return ClearRule(keep=self.m)


@dataclass(frozen=True)
class OpenclawCacheTtl(Clearing):
    """OpenClaw's ``cache-ttl`` pruning: after ``ttl`` minutes idle, at ``soft_ratio`` of the window, results older
    than the last ``keep_assistants`` assistant messages over :data:`TRIM_OVER_TOKENS` are trimmed to
    :data:`TRIMMED_TOKENS`; at ``hard_ratio`` with at least ``min_prunable`` tokens of them (50,000 characters),
    they are cleared oldest first until the context is below it (``hard_clear=0``: never). ``exclude``: kinds
    never pruned (its ``tools.deny``). Replayed by :mod:`..cache_ttl`, rounds of firings.

    >>> OpenclawCacheTtl.parse("ttl=60").spec()
    'openclaw-cache-ttl:ttl=60'
    """

    name = "openclaw-cache-ttl"
    ranges = {"ttl": (0, None, True), "hard_clear": (0, 1, False), "keep_assistants": (1, None, False)}
    ttl: int = 5  # minutes idle
    soft_ratio: float = 0.3  # of the window
    hard_ratio: float = 0.5  # of the window
    min_prunable: int = 12_500  # tokens: 50,000 characters
    keep_assistants: int = 3  # assistant messages
    hard_clear: int = 1  # 0 or 1
    exclude: str = ""  # kinds, as parse_kinds reads them

    def __post_init__(self) -> None:
        super().__post_init__()
        parse_kinds(self.exclude)

    def rule(self) -> ClearRule:
        """The settings the common clearing columns read (the kinds excluded); the firings are :mod:`..cache_ttl`'s."""
        return ClearRule(exclude=parse_kinds(self.exclude))

    def threshold(self, window: int) -> int:
        """The context below which it never prunes: ``soft_ratio`` of the window."""
        return int(self.soft_ratio * window)


@dataclass(frozen=True)
class OpencodePrune(Clearing):
    """opencode's prune: outputs older than the last ``protect_turns`` turns and beyond the newest ``protect``
    tokens of them cleared, when more than ``minimum`` tokens are."""

    name = "opencode-prune"
    ranges = {"protect_turns": (0, None, False)}
    protect: int = 40_000
    minimum: int = 20_000
    protect_turns: int = 2

    def rule(self) -> ClearRule:
        return ClearRule(keep_tokens=self.protect, keep_turns=self.protect_turns, clear_at_least=self.minimum + 1)
