"""Staged policies: a pipeline of stages, each with its own trigger, written ``A+B`` (``clear-tool-uses+libpanto``).

Agents and frameworks put a cheap stage in front of a summarizer: opencode
prunes old tool outputs before it summarizes at the window, Microsoft's
agent framework collapses old tool groups before it truncates, Claude Code
clears tool results (its microcompacts) long before its auto-compact. A
staged policy is such a pipeline: every stage but the last clears tool
results in place (:mod:`.clearing`); the last clears too, or cuts and
summarizes. Each stage sees the conversation as the stages before it leave
it: the clearing stages edit every call's prompt (and its usage, as the
provider would bill it), and the last stage's trigger and cut run on those
edited calls (``docs/replay.md``).

>>> from panto_analytics.policy.compaction.policies import parse_policy
>>> s = parse_policy("clear-tool-uses:trigger=100k+libpanto")
>>> s.spec(), s.threshold(200_000), s.budget()
('clear-tool-uses+libpanto', 183616, 0)
>>> parse_policy("opencode-prune+opencode").spec()
'opencode-prune+opencode'
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

from .base import Policy

__all__ = ["STAGE_SEPARATOR", "Staged"]

#: What joins the stages of a staged policy's spec.
STAGE_SEPARATOR = "+"


@dataclass(frozen=True)
class Staged(Policy):
    """Stages applied in order; every one but the last clears tool results (``Policy.clears``)."""

    name = "staged"
    stages: tuple[Policy, ...] = ()

    def __post_init__(self) -> None:
        if len(self.stages) < 2:
            raise ValueError("a staged policy needs two stages or more (A+B)")
        for stage in self.stages[:-1]:
            if not stage.clears:
                raise ValueError(f"stage {stage.spec()} summarizes: only the last stage of a staged policy may "
                                 "(the others clear tool results)")

    @property
    def last(self) -> Policy:
        return self.stages[-1]

    @property
    def clearing(self) -> tuple[Policy, ...]:
        """The stages that clear tool results: all of them where the last clears too."""
        return self.stages if self.last.clears else self.stages[:-1]

    @property
    def clears(self) -> bool:  # type: ignore[override]
        return False

    def threshold(self, window: int) -> int:
        return self.last.threshold(window)

    def budget(self) -> int:
        return self.last.budget()

    def budget_name(self) -> str | None:
        """The last stage's: ``clear-tool-uses+libpanto`` runs at libpanto's budgets."""
        return self.last.budget_name()

    def cut(self, frame: pl.DataFrame) -> pl.DataFrame:
        return self.last.cut(frame)

    def spec(self) -> str:
        return STAGE_SEPARATOR.join(s.spec() for s in self.stages)

    @classmethod
    def parse(cls, settings: str, parse_stage: Callable[[str], Policy] | None = None) -> Policy:
        """The pipeline of ``A+B+...``, each stage ``NAME[:k=v,...]`` read by ``parse_stage`` (the package's
        ``parse_policy``, which reads a staged spec this way)."""
        if parse_stage is None:
            raise ValueError("a staged policy reads its stages with parse_policy: parse_policy('A+B')")
        return cls(stages=tuple(parse_stage(part) for part in settings.split(STAGE_SEPARATOR)))

