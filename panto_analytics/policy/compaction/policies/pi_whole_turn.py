"""``pi-whole-turn``: pi's first policy, 2025-12-04 to 2025-12-09 (whole turns, sized by provider usage).

Source: badlogic/pi-mono ``packages/coding-agent/src/compaction.ts``
(``src/core/compaction.ts`` from 83a6c269): ``findTurnBoundaries`` and the
usage-difference walk and backward scan of ``findCutPoint``. The rule came with commit
c89b1ec3c2e711625cfb9100e74b804400345be7 (2025-12-04, compaction with
``/compact`` and the auto-trigger) and is modelled as it last stood, at
4227fd5996096887757de90ba22760ac9f307b30 (2025-12-09 02:45, the parent's
version of the file at a38e6190); a38e6190952c695c226a8e9f17fad770e121d183
(2025-12-09 17:18) replaced it with cuts at assistant messages (the ``pi``
policy). pi-mono added its ``before-compaction.jsonl`` fixture, whose two
compactions this rule matches exactly, four minutes after 4227fd59
(66ba6305, 2025-12-09 02:49).

- Trigger: ``contextTokens > contextWindow - reserveTokens`` (16,384).
- Turn boundaries: the user messages (``user`` and not ``bash``). A pi
  ``bashExecution`` (the user's ``!`` command, from bd0d0676; the frame's
  ``bash_execution``) starts no turn.
- Cut, only at a turn boundary: take the calls (assistant messages with usage)
  of the active window, newest first; the newest is the trigger. At the first
  older call whose context is at least ``keep_recent_tokens`` (20,000) below
  the newest's, keep from the last boundary at or before the call just newer
  than it, and then from the run of ``bashExecution`` messages just before
  that boundary (pi's backward scan over non-turn entries, which stops at an
  assistant, user or tool-result message and at the window's start). If no
  call is that far back, or the window has no boundary, nothing is cut (a
  no-op here). Without any call in the window (possible at a recorded
  compaction, never at a replay's trigger), pi keeps the last turn only, from
  its boundary (no backward scan on that path).

The window's first row is its ``first`` seq, so ``bash`` runs that reach it keep
the whole window (nothing cut). libpanto's own turns (``turn_start``) still
read a ``bashExecution`` as a user message.

>>> from panto_analytics.policy.compaction.policies.base import one_window
>>> w = one_window(user=[True, False, True, False, True, False], bash=[False] * 6, call=[False, True] * 3,
...     cum=[None, 1000, None, 30000, None, 40000])
>>> PiWholeTurn().cut(w).select("prefix_end", "kept_messages").rows()
[(2, 4)]

With a ``bashExecution`` at seq 2, just before the prompt the cut falls on, the kept block starts at it:

>>> b = one_window(user=[True, False, True, True, False, True, False], bash=[False, False, True, False, False, False, False],
...     call=[False, True, False, False, True, False, True], cum=[None, 1000, None, None, 30000, None, 40000])
>>> PiWholeTurn().cut(b).select("prefix_end", "kept_messages").rows()
[(2, 5)]
"""
from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ....frame.schema import SEQ
from .base import state_max, state_min, suffix_cut
from .pi import PiSettings

__all__ = ["PiWholeTurn"]


@dataclass(frozen=True)
class PiWholeTurn(PiSettings):
    """pi's whole-turn ``findCutPoint`` (usage differences) under ``window - reserve_tokens``."""

    name = "pi-whole-turn"
    budget_setting = "keep_recent_tokens"

    def cut(self, frame: pl.DataFrame) -> pl.DataFrame:
        seq, call = pl.col(SEQ), pl.col("call")
        boundary = pl.col("user") & ~pl.col("bash")
        newest_seq = state_max(pl.when(call).then(seq))
        newest = state_max(pl.when(seq == newest_seq).then(pl.col("cum")))
        far = state_max(pl.when(call & (seq < newest_seq) & (newest - pl.col("cum") >= self.keep_recent_tokens)).then(seq))
        last_kept = state_min(pl.when(call & (seq > far)).then(seq))
        by_usage = state_max(pl.when(boundary & (seq <= last_kept)).then(seq))
        # pi's backward scan: the bashExecution messages just before the boundary, down to the window's start.
        stop = state_max(pl.when(~pl.col("bash") & (seq < by_usage)).then(seq))
        with_bash = pl.when(by_usage.is_not_null()).then(pl.coalesce(stop + 1, pl.col("first")))
        # No call in the window (not at a replay's trigger, which is one): pi keeps the last turn only.
        last_turn = state_max(pl.when(boundary).then(seq))
        return suffix_cut(frame, pl.when(newest_seq.is_null()).then(last_turn).otherwise(with_bash))
