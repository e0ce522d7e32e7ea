"""The one fork on the context window: without one, a budget from the splits; with one, from a billed replay.

``recommend`` (the command), :func:`~panto_analytics.analysis.report.build_report` and ``pa.choose_budget``
all choose through :func:`choose_budget`, each with its own inputs (the report replays libpanto beside the
policies it compares; the command passes the summarizer mode it was given).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import polars as pl

from ...policy import splits as split_table
from ...policy import turns as turn_table
from ...policy.compaction.engine import DEFAULT_RESERVE, Replay
from .bootstrap import RESAMPLES, SEED
from .choice import Choice
from .from_replay import choose_from_replay, replay_outcomes
from .from_splits import recommend
from .rule import Rule

__all__ = ["choose_budget"]


def choose_budget(messages: pl.DataFrame, budgets: Any, rule: Rule | None = None, *, window: int | None = None,
                  splits: pl.DataFrame | None = None, turns: pl.DataFrame | None = None,
                  windows: Iterable[int | None] | None = None, reserve: int = DEFAULT_RESERVE,
                  summary_tokens: int | None = None, policy: Any = None, prices: Any = True,
                  summarizer: str | None = None, horizon: int | None = None, resamples: int = RESAMPLES,
                  seed: int = SEED) -> tuple[Choice, Replay | None]:
    """The budget ``rule`` picks: from the end-of-session splits without a ``window``, from a billed replay
    (every call billed, the loss of every compaction measured) under one.

    Parameters
    ----------
    messages
        The message frame.
    budgets
        The budgets to try (a list, or a range like ``"0:16k:9"``).
    rule
        The rule (:class:`~panto_analytics.analysis.choose.rule.Rule`); None: ``-k 2 -p 90%``.
    window
        None: :func:`~panto_analytics.analysis.choose.from_splits.recommend` on ``splits`` (computed when not
        given) with ``turns`` and the recorded context ``windows``. A context window: the replay under it
        (:func:`~panto_analytics.analysis.choose.from_replay.replay_outcomes`, with ``reserve``,
        ``summary_tokens``, ``policy``, ``prices``, ``summarizer`` and ``horizon``), judged by
        :func:`~panto_analytics.analysis.choose.from_replay.choose_from_replay`.
    splits, turns, windows, reserve, summary_tokens, policy, prices, summarizer, horizon
        As above.
    resamples, seed
        The bootstrap over sessions (:mod:`~panto_analytics.analysis.choose.bootstrap`): how many resamples
        (0: none) and the generator's seed.

    Returns
    -------
    tuple
        The :class:`~panto_analytics.analysis.choose.choice.Choice`, and the replay it was judged on (None
        without a window).

    Examples
    --------
    >>> import panto_analytics as pa
    >>> choice, replayed = pa.choose_budget(pa.examples.messages(), [500, 1_000, 3_000], pa.Rule(min_kept_turns=1),
    ...                                     window=8_000, reserve=4_000, summary_tokens=500, prices=None)
    >>> choice.budget, choice.policy, replayed.window
    (3000, 'libpanto', 8000)
    """
    if window is None:
        per_session = splits if splits is not None else split_table(messages, budgets)
        return recommend(per_session, rule, turns=turns if turns is not None else turn_table(messages),
                         windows=windows, resamples=resamples, seed=seed), None
    outcomes = replay_outcomes(messages, budgets, window=window, reserve=reserve, summary_tokens=summary_tokens,
                               policy=policy, prices=prices, summarizer=summarizer, horizon=horizon)
    return choose_from_replay(outcomes, rule, resamples=resamples, seed=seed), outcomes
