"""The compaction policies a replay can run, by name: ``NAME[:k=v,...]``.

Each policy is one module with a frozen dataclass of its settings, its
defaults and its source cited in the docstring (:mod:`.base` states the
contract).

>>> parse_policy("pi:keep_recent_tokens=30k")
Pi(reserve_tokens=16384, keep_recent_tokens=30000)
>>> sorted(POLICIES)[:4]
['claude-code', 'claude-code-microcompact', 'clear-tool-uses', 'codex']
"""
from __future__ import annotations

from .base import Policy
from .claude_code import ClaudeCode
from .clearing import ClaudeCodeMicrocompact, Clearing, ClearToolUses, ObservationMasking, OpencodePrune
from .codex import Codex
from .gemini_cli import GeminiCli
from .last_n_turns import LastNTurns
from .libpanto import LibPanto
from .pi import Pi
from .pi_whole_turn import PiWholeTurn

__all__ = ["POLICIES", "ClaudeCode", "ClaudeCodeMicrocompact", "ClearToolUses", "Clearing", "Codex", "GeminiCli",
           "LastNTurns", "LibPanto", "ObservationMasking", "OpencodePrune", "Pi", "PiWholeTurn", "Policy", "parse_policy"]

#: Every policy by name, in the order comparisons list them.
POLICIES: dict[str, type[Policy]] = {p.name: p for p in (LibPanto, Pi, PiWholeTurn, Codex, ClaudeCode, GeminiCli,
                                                         LastNTurns, ClearToolUses, ClaudeCodeMicrocompact,
                                                         ObservationMasking, OpencodePrune)}


def parse_policy(spec: str | Policy) -> Policy:
    """A policy from ``NAME`` or ``NAME:k=v,...`` (a :class:`Policy` is returned as it is). ValueError in one line."""
    if isinstance(spec, Policy):
        return spec
    name, _, settings = spec.strip().partition(":")
    if name not in POLICIES:
        raise ValueError(f"unknown policy {name!r}; policies: {', '.join(POLICIES)}")
    return POLICIES[name].parse(settings)
