"""Turning splits into a decision: the numbers behind plots, the plots, a recommendation, a report.

- :mod:`.plot_data`: tidy frames, one row per point (testable without pixels).
- :mod:`.plots`: matplotlib figures of those frames.
- :mod:`.recommendation`: :func:`recommend`, the budget a stated rule picks, with reasons and warnings.
- :mod:`.decision`: the decision under a context window: per-session outcomes (cost, loss, kept turns) for
  every (policy, budget), rules over sessions, budgets past the trigger never proposed, the frontier.
- :mod:`.report`: one folder (HTML, Markdown, PNGs, Parquet) that answers "what does each budget do?".
- :mod:`.worst`: the sessions a budget serves worst, with the file and line to open.
- :mod:`.request`: :func:`~.request.summary_request`, the exact summarizer request of one split, re-read from the files.
- :mod:`.cost_table`: what compaction costs, per policy and budget.
- :mod:`.formatting`: how token counts are written for people.

:mod:`.plots` and :mod:`.report` load matplotlib: import them when you draw.
"""
from .recommendation import Criteria, Recommendation, recommend
from .request import summary_request
from .worst import worst_served

__all__ = ["Criteria", "Recommendation", "recommend", "summary_request", "worst_served"]
