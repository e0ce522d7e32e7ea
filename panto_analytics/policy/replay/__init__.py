"""Compaction over each session's life: the replay, under libpanto's policy or any other.

- :mod:`.engine`: :class:`~.engine.Replay`, libpanto's replay under a context window, for many budgets at once.
- :mod:`.request`: what each event sends to the summarizer.
- :mod:`.summary`: one row per budget (:func:`~.summary.summarize_replay`, :func:`~.summary.compare_policies`).
- :mod:`.any_policy`: the replay under any policy (``replay(..., policy=...)``, :func:`~.any_policy.replay_policies`).
- :mod:`.recorded_cuts`: each policy's cut at the recorded compactions.
- :mod:`.policies`: one module per compaction policy.

``panto_analytics.policy`` re-exports the public names; this package exports none itself.
"""

__all__ = []
