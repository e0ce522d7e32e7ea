"""libpanto's compaction policy over whole corpora: frames in, frames out, no I/O.

- the column expressions it computes with are the frame's (:mod:`panto_analytics.frame.expressions`).
- :mod:`.turn_costs`: :func:`annotate`, :func:`turns`, :func:`session_turns`.
- :mod:`.compute_split`: :func:`splits`, one row per (session, budget), equal to ``computeSplit``.
- :mod:`.cuts`: :func:`splits_at`, the split at given moments (an agent's recorded compactions).
- :mod:`.budget_sweep`: :func:`sweep`, one row per budget.
- :mod:`.compaction`: :func:`replay`, compaction over each session's life under a context window;
  :mod:`.compaction.request_size`, what each event sends to the summarizer; :mod:`.compaction.summary`,
  :func:`summarize_replay`, one row per budget.
- :mod:`.compaction.policies`: the compaction policies agents ship (pi, Codex, Claude Code, Gemini CLI, ...);
  :mod:`.compaction.any_policy`: :func:`replay_policies`, the replay under any of them (``replay(..., policy=...)``).
"""
from .budget_sweep import sweep
from .compaction.any_policy import replay, replay_policies
from .compaction.engine import Replay
from .compaction.summary import budgets_shown, compare_policies, events_as_splits, summarize_replay
from .compute_split import budget_series, splits
from .cuts import splits_at
from .turn_costs import annotate, check_order, session_turns, turns

__all__ = [
    "Replay", "annotate", "budget_series", "budgets_shown", "check_order", "compare_policies", "events_as_splits", "replay",
    "replay_policies", "session_turns", "splits", "splits_at", "summarize_replay", "sweep", "turns",
]
