"""Turning splits into a decision: the numbers behind plots, the plots, a recommendation, a report.

- :mod:`.plot_data`: tidy frames, one row per point (testable without pixels).
- :mod:`.plots`: matplotlib figures of those frames.
- :mod:`.choose`: which budget: one :class:`Rule`, one :class:`Choice`; :func:`recommend` judges end-of-session
  splits, :func:`choose_budget` forks on the window (under one: per-session outcomes of a billed replay, cost,
  loss and kept turns for every (policy, budget), budgets past the trigger never proposed, the frontier).
- :mod:`.report`: one folder (HTML, Markdown, PNGs, Parquet) that answers "what does each budget do?".
- :mod:`.worst`: the sessions a budget serves worst, with the file and line to open.
- :mod:`.exact_request`: :func:`~.exact_request.summary_request`, the exact summarizer request of one split, re-read from the files.
- :mod:`.cost_table`: what compaction costs, per policy and budget.
- :mod:`.formatting`: how token counts are written for people.

:mod:`.plots` and :mod:`.report` load matplotlib: import them when you draw.
"""
from .choose import Choice, Rule, choose_budget, recommend
from .exact_request import summary_request
from .timeline import session_timeline
from .worst import worst_served

__all__ = ["Choice", "Rule", "choose_budget", "recommend", "session_timeline", "summary_request", "worst_served"]
