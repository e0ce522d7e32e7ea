"""Compaction over each session's life: the replay, under libpanto's policy or any other.

- :mod:`.engine`: :class:`~.engine.Replay`, libpanto's replay under a context window, for many budgets at once.
- :mod:`.request_size`: what each event sends to the summarizer.
- :mod:`.summary`: one row per budget (:func:`~.summary.summarize_replay`, :func:`~.summary.compare_policies`).
- :mod:`.any_policy`: the replay under any policy (``replay(..., policy=...)``, :func:`~.any_policy.replay_policies`).
- :mod:`.recorded_cuts`: each policy's cut at the recorded compactions.
- :mod:`.policies`: one module per compaction policy.

The engine's constants and :class:`~.engine.Replay` are reachable here too
(``from panto_analytics.policy.compaction import Replay``); ``replay`` itself, the
function, is :mod:`panto_analytics.policy`'s (the replay under any policy).
"""
from .engine import (
    DEFAULT_RESERVE,
    DEFAULT_SUMMARY_TOKENS,
    EVENT_SCHEMA,
    MIN_SUMMARY_TOKENS,
    REPLAY_SESSION_SCHEMA,
    Replay,
    summary_size,
    validate_parameters,
)

__all__ = ["DEFAULT_RESERVE", "DEFAULT_SUMMARY_TOKENS", "EVENT_SCHEMA", "MIN_SUMMARY_TOKENS", "REPLAY_SESSION_SCHEMA",
           "Replay", "summary_size", "validate_parameters"]
