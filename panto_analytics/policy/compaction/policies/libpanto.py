"""``libpanto``: libpanto's own whole-turn policy, ``computeSplit``, exactly (the :func:`~panto_analytics.policy.compaction.engine` engine).

Source: ``compaction.zig`` (``computeSplit``; ``../shared/reference/compaction.zig``). Trigger:
the simulated context exceeds ``window - reserve``; the cut keeps the newest
whole turns whose cost (cumulative-usage deltas, else words) fits ``budget``.
``reserve`` defaults to the replay's :data:`~panto_analytics.policy.compaction.engine.DEFAULT_RESERVE`
(16,384, the same reserve pi ships); ``budget`` is the replay's budget list.

>>> LibPanto.parse("reserve=8k").spec()
'libpanto:reserve=8000'
"""
from __future__ import annotations

from dataclasses import dataclass

from ..engine import DEFAULT_RESERVE
from .base import Policy

__all__ = ["LibPanto"]


@dataclass(frozen=True)
class LibPanto(Policy):
    """libpanto's ``computeSplit`` under ``window - reserve`` (replayed by :class:`~panto_analytics.policy.Replay`'s engine)."""

    name = "libpanto"
    budget_setting = "keep_verbatim"
    reserve: int = DEFAULT_RESERVE

    def threshold(self, window: int) -> int:
        return window - self.reserve

    def budget(self) -> int:
        return 0  # keep_verbatim is the replay's budget list, not a setting
