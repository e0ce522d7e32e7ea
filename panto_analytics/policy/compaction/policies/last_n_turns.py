"""``last-n-turns``: keep the newest ``n`` whole turns verbatim, summarize the rest; a plain baseline.

No agent ships this; it is the simplest whole-turn rule, to compare the
others with. Turns are libpanto's (a turn starts at a user message that is
not a tool result and follows a non-user message). Trigger: as libpanto's,
``window - reserve`` with ``reserve`` 16,384. ``n`` defaults to 2 (our choice:
the default rule of ``recommend`` asks for two kept turns). When the active
window holds ``n`` turns or fewer, nothing is summarized (a no-op).

>>> from panto_analytics.policy.compaction.policies.base import one_window
>>> w = one_window(turn_start=[True, False, True, False])
>>> LastNTurns(n=1).cut(w).select("prefix_end", "kept_messages").rows()
[(2, 2)]
"""
from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ....frame.schema import SEQ
from ..engine import DEFAULT_RESERVE
from .base import Policy, at_or_after, state_max, suffix_cut

__all__ = ["LastNTurns"]


@dataclass(frozen=True)
class LastNTurns(Policy):
    """Keep the newest ``n`` whole turns; trigger at ``window - reserve``."""

    name = "last-n-turns"
    ranges = {"n": (1, None, False)}
    n: int = 2
    reserve: int = DEFAULT_RESERVE

    def threshold(self, window: int) -> int:
        return window - self.reserve

    def cut(self, frame: pl.DataFrame) -> pl.DataFrame:
        start = pl.col("turn_start").cast(pl.Int64)
        nth_newest = state_max(pl.when(pl.col("turn_start") & (at_or_after(start) == self.n)).then(pl.col(SEQ)))
        keep_all = start.sum().over("state") <= self.n
        return suffix_cut(frame, pl.when(keep_all).then(pl.lit(None, pl.Int64)).otherwise(nth_newest))
