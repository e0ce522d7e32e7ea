"""libpanto's compaction policy over whole corpora: frames in, frames out, no I/O.

- :mod:`.expressions`: the column expressions (one definition of a turn start, of a cost).
- :mod:`.turns`: :func:`annotate`, :func:`turns`, :func:`session_turns`.
- :mod:`.splits`: :func:`splits`, one row per (session, budget), equal to ``computeSplit``.
- :mod:`.cuts`: :func:`splits_at`, the split at given moments (an agent's recorded compactions).
- :mod:`.sweep`: :func:`summarize_splits`, one row per budget.
- :mod:`.replay`: :func:`replay`, compaction over each session's life under a context window;
  :mod:`.replay.request`, what each event sends to the summarizer; :mod:`.replay.summary`,
  :func:`summarize_replay`, one row per budget.
- :mod:`.policies`: the compaction policies agents ship (pi, Codex, Claude Code, Gemini CLI, ...);
  :mod:`.replay.any_policy`: :func:`replay_policies`, the replay under any of them (``replay(..., policy=...)``).
"""
from .cuts import splits_at
from .replay.any_policy import replay, replay_policies
from .replay.engine import Replay
from .replay.summary import compare_policies, events_as_splits, summarize_replay
from .splits import budget_series, splits
from .sweep import summarize_splits
from .turns import annotate, check_order, session_turns, turns

__all__ = [
    "Replay", "annotate", "budget_series", "check_order", "compare_policies", "events_as_splits", "replay",
    "replay_policies", "session_turns", "splits", "splits_at", "summarize_replay", "summarize_splits", "turns",
]
