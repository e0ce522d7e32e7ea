"""libpanto's compaction policy over whole corpora: frames in, frames out, no I/O.

- :mod:`.expressions`: the column expressions (one definition of a turn start, of a cost).
- :mod:`.turns`: :func:`annotate`, :func:`turns`, :func:`session_turns`.
- :mod:`.splits`: :func:`splits`, one row per (session, budget), equal to ``computeSplit``.
- :mod:`.sweep`: :func:`summarize_splits`, one row per budget.
"""
from .splits import budget_series, splits
from .sweep import summarize_splits
from .turns import annotate, check_order, session_turns, turns

__all__ = ["annotate", "budget_series", "check_order", "session_turns", "splits", "summarize_splits", "turns"]
