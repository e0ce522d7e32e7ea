"""The compaction policies a replay can run, by name: ``NAME[:k=v,...]``.

Each policy is one module with a frozen dataclass of its settings, its
defaults and its source cited in the docstring (:mod:`.base` states the
contract).

>>> parse_policy("pi:keep_recent_tokens=30k")
Pi(reserve_tokens=16384, keep_recent_tokens=30000)
>>> len(POLICIES), sorted(POLICIES)[:4]
(19, ['anthropic-compact', 'claude-code', 'claude-code-microcompact', 'claude-code-time-microcompact'])
"""
from __future__ import annotations

from .anthropic_compact import AnthropicCompact
from .base import Policy
from .claude_code import ClaudeCode
from .clearing import (
    ClaudeCodeMicrocompact,
    ClaudeCodeTimeMicrocompact,
    Clearing,
    ClearToolUses,
    ObservationMasking,
    OpenclawCacheTtl,
    OpencodePrune,
)
from .cline import Cline
from .codex import Codex
from .gemini_cli import GeminiCli
from .last_n_turns import LastNTurns
from .libpanto import LibPanto
from .openai_compact import OpenAiCompact
from .opencode import Opencode
from .openhands import OpenHands
from .pi import Pi
from .pi_whole_turn import PiWholeTurn
from .staged import STAGE_SEPARATOR, Staged
from .summarize_every import SummarizeEvery

__all__ = ["POLICIES", "AnthropicCompact", "ClaudeCode", "ClaudeCodeMicrocompact", "ClaudeCodeTimeMicrocompact",
           "ClearToolUses", "Clearing", "Cline", "Codex", "GeminiCli", "LastNTurns", "LibPanto", "ObservationMasking",
           "OpenAiCompact", "OpenHands", "OpenclawCacheTtl", "Opencode", "OpencodePrune", "Pi", "PiWholeTurn", "Policy", "Staged",
           "SummarizeEvery", "parse_policy"]

#: Every policy by name, in the order comparisons list them.
POLICIES: dict[str, type[Policy]] = {p.name: p for p in (
    LibPanto, Pi, PiWholeTurn, Codex, ClaudeCode, GeminiCli, LastNTurns, AnthropicCompact, OpenAiCompact, Cline,
    OpenHands, Opencode, SummarizeEvery, ClearToolUses, ClaudeCodeMicrocompact, ClaudeCodeTimeMicrocompact,
    ObservationMasking, OpencodePrune, OpenclawCacheTtl)}


def parse_policy(spec: str | Policy) -> Policy:
    """A policy from ``NAME`` or ``NAME:k=v,...``, or a staged one, ``A+B`` (:class:`.staged.Staged`); a
    :class:`Policy` is returned as it is. ValueError in one line."""
    if isinstance(spec, Policy):
        return spec
    if STAGE_SEPARATOR in spec:
        return Staged.parse(spec, parse_policy)
    name, _, settings = spec.strip().partition(":")
    if name not in POLICIES:
        raise ValueError(f"unknown policy {name!r}; policies: {', '.join(POLICIES)}")
    return POLICIES[name].parse(settings)
