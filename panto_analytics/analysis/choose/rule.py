"""What a chosen budget must do: :class:`Rule`, the one rule type, judged on splits or on a replay.

Three rules, alone or together, each counting sessions:

``min_kept_turns=K`` with ``coverage=P``
    the *smallest* budget at which at least P of sessions keep K or more whole turns verbatim (on splits: at
    the session's end, a session with fewer turns counting when it keeps them all; under a window: at every
    compaction the session has);
``max_kept_share=S`` of ``context_window=W``
    the *largest* budget at which the kept suffix stays within ``S * W`` tokens for at least P of sessions
    (under a window, W is the window replayed);
``max_orphan_rate=R`` (under a window only)
    the cheapest point of the frontier (median cost per session against the pooled orphan rate) whose
    orphan rate is at most R.

No rule set: ``-k 2 -p 90%`` (:data:`~panto_analytics.defaults.DEFAULT_MIN_KEPT_TURNS`,
:data:`~panto_analytics.defaults.DEFAULT_COVERAGE`).

>>> Rule().or_default()
Rule(min_kept_turns=2, coverage=0.9, max_kept_share=None, context_window=None, max_orphan_rate=None, policy=None)
>>> Rule(max_kept_share=0.25, context_window=200_000).limit
50000
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...defaults import DEFAULT_COVERAGE, DEFAULT_MIN_KEPT_TURNS
from ..formatting import format_tokens

__all__ = ["FEW_SESSIONS", "Rule"]

#: Fewer sessions (or compaction events) than this behind a figure: a warning with the count.
FEW_SESSIONS = 30


@dataclass(frozen=True)
class Rule:
    """What a good budget must do; see the module docstring for the rules.

    ``policy``: under a window, choose among this policy's budgets only (None: libpanto's when it was
    replayed, else any; the frontier rule looks at every policy).
    """

    min_kept_turns: int | None = None
    coverage: float = DEFAULT_COVERAGE
    max_kept_share: float | None = None
    context_window: int | None = None
    max_orphan_rate: float | None = None
    policy: str | None = None

    def __post_init__(self):
        if not 0 < self.coverage <= 1:
            raise ValueError(f"coverage is a share of sessions in (0, 1], got {self.coverage}")
        if self.min_kept_turns is not None and self.min_kept_turns < 1:
            raise ValueError(f"min_kept_turns must be at least 1, got {self.min_kept_turns}")
        if self.max_kept_share is not None and not 0 < self.max_kept_share <= 1:
            raise ValueError(f"max_kept_share is a share of the window in (0, 1], got {self.max_kept_share}")
        if self.context_window is not None and self.context_window < 1:
            raise ValueError(f"context_window is a number of tokens, got {self.context_window}")
        if self.max_orphan_rate is not None and not 0 <= self.max_orphan_rate <= 1:
            raise ValueError(f"max_orphan_rate is a share of calls in [0, 1], got {self.max_orphan_rate}")

    def or_default(self) -> Rule:
        """This rule, or ``-k 2`` (with this coverage and policy) when no rule is set."""
        if self.min_kept_turns is None and self.max_kept_share is None and self.max_orphan_rate is None:
            return dataclasses.replace(self, min_kept_turns=DEFAULT_MIN_KEPT_TURNS)
        return self

    def on_splits(self) -> Rule:
        """This rule (or the default), checked for end-of-session splits: the kept-share rule needs a
        ``context_window``; the frontier and policy rules need a replay.

        >>> Rule(max_kept_share=0.3).on_splits()
        Traceback (most recent call last):
        ...
        ValueError: max_kept_share needs a context_window (tokens)
        """
        if self.max_orphan_rate is not None or self.policy is not None:
            raise ValueError("max_orphan_rate and policy judge a replay under a window: choose_budget(..., window=W)")
        if self.max_kept_share is not None and self.context_window is None:
            raise ValueError("max_kept_share needs a context_window (tokens)")
        return self.or_default()

    def under(self, window: int) -> Rule:
        """This rule (or the default) judged under a replayed ``window``: the kept-share limit is of it."""
        return dataclasses.replace(self.or_default(), context_window=window)

    @property
    def limit(self) -> int | None:
        """``max_kept_share * context_window`` in whole tokens, or None."""
        if self.max_kept_share is None or self.context_window is None:
            return None
        return int(self.max_kept_share * self.context_window)

    def describe(self, replayed: bool = False) -> list[str]:
        """Each rule as a sentence: of end-of-session splits, or (``replayed``) of the compactions under a window.

        >>> Rule(min_kept_turns=1, coverage=0.5).describe(replayed=True)[0][:60]
        'the smallest budget at which at least 50% of the sessions th'
        """
        who = "the sessions that reach the trigger" if replayed else "sessions"
        out = []
        if self.min_kept_turns is not None:
            k = self.min_kept_turns
            where = " at every compaction they have" if replayed else " (or all of theirs, when they have fewer)"
            out.append(f"the smallest budget at which at least {self.coverage:.0%} of {who} keep {k} or more "
                       f"whole turn{'s' if k > 1 else ''} verbatim{where}")
        if self.max_kept_share is not None:
            where = " at every compaction" if replayed else ""
            out.append(f"the largest budget at which the kept suffix stays within {self.max_kept_share:.0%} of a "
                       f"{format_tokens(self.context_window)}-token context window ({format_tokens(self.limit)} "
                       f"tokens){where} for at least {self.coverage:.0%} of {who}")
        if self.max_orphan_rate is not None:
            out.append(f"the cheapest point of the frontier (median cost per session against orphan rate) whose "
                       f"orphan rate is at most {self.max_orphan_rate:.1%}")
        if replayed:
            out.append("never a budget at or above the policy's trigger (window - reserve)")
        return out
