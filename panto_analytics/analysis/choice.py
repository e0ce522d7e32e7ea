"""The one fork on the context window: without one, a budget from the splits; with one, a decision from a replay.

``recommend`` (the command) and :func:`~panto_analytics.analysis.report.build_report`
both choose through :func:`choose_budget`, each with its own inputs (the
report replays libpanto beside the policies it compares; the command passes
the summarizer mode it was given).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import polars as pl

from ..policy import splits as split_table
from ..policy import turns as turn_table
from ..policy.compaction.engine import DEFAULT_RESERVE, Replay
from .decision import Decision, DecisionRule, decision_from_replay, replay_outcomes
from .recommendation import Criteria, Recommendation, recommend

__all__ = ["choose_budget"]


def choose_budget(messages: pl.DataFrame, budgets: Any, criteria: Criteria | None = None, *, window: int | None = None,
                  splits: pl.DataFrame | None = None, turns: pl.DataFrame | None = None,
                  windows: Iterable[int | None] | None = None, reserve: int = DEFAULT_RESERVE,
                  summary_tokens: int | None = None, policy: Any = None, prices: Any = True,
                  summarizer: str | None = None, horizon: int | None = None,
                  max_orphan_rate: float | None = None) -> tuple[Recommendation | Decision, Replay | None]:
    """The budget ``criteria`` picks: from the splits without a ``window``, from a billed replay with one.

    Parameters
    ----------
    messages
        The message frame.
    budgets
        The budgets to try.
    criteria
        The rule (:class:`~panto_analytics.analysis.recommendation.Criteria`; the default rule when None).
    window
        None: :func:`~panto_analytics.analysis.recommendation.recommend` on ``splits`` (computed when not
        given) with ``turns`` and the recorded context ``windows``. A context window: the replay under it
        (:func:`~panto_analytics.analysis.decision.replay_outcomes`, with ``reserve``, ``summary_tokens``,
        ``policy``, ``prices``, ``summarizer`` and ``horizon``), judged by
        :func:`~panto_analytics.analysis.decision.decision_from_replay` under the same rule plus
        ``max_orphan_rate``.
    splits, turns, windows, reserve, summary_tokens, policy, prices, summarizer, horizon, max_orphan_rate
        As above.

    Returns
    -------
    tuple
        The recommendation (without a window) or the decision (with one), and the replay it was judged on
        (None without a window).

    Examples
    --------
    >>> from panto_analytics.examples import messages
    >>> rec, replayed = choose_budget(messages(), [0, 8_000])
    >>> rec.budget in (0, 8_000, None), replayed is None
    (True, True)
    """
    if window is None:
        per_session = splits if splits is not None else split_table(messages, budgets)
        return recommend(per_session, criteria, turns=turns if turns is not None else turn_table(messages),
                         windows=windows), None
    outcomes = replay_outcomes(messages, budgets, window=window, reserve=reserve, summary_tokens=summary_tokens,
                               policy=policy, prices=prices, summarizer=summarizer, horizon=horizon)
    c = criteria or Criteria()
    rule = DecisionRule(min_kept_turns=c.min_kept_turns, coverage=c.coverage, max_kept_share=c.max_kept_share,
                        max_orphan_rate=max_orphan_rate)
    return decision_from_replay(outcomes, rule), outcomes
