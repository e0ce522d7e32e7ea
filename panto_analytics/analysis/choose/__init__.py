"""Which budget: one rule type (:class:`Rule`), one result type (:class:`Choice`), each module named by its input.

- :mod:`.rule`: :class:`Rule`, what a chosen budget must do (``-k``, ``-p``, ``-s``, ``--max-orphan-rate``);
- :mod:`.choice`: :class:`Choice`, what it chose, why, the table it read, as text and JSON;
- :mod:`.from_splits`: a budget from end-of-session splits (:func:`recommend`, the coverage table);
- :mod:`.from_replay`: a (policy, budget) from a replay under a window (per-session outcomes, the frontier,
  the agents' recorded points);
- :mod:`.budget`: :func:`choose_budget`, the one fork on the window (``pa.choose_budget``).

>>> import panto_analytics as pa
>>> pa.choose_budget(pa.examples.messages(), [500, 5_000])[0].budget
5000
"""
from .budget import choose_budget
from .choice import Choice
from .from_splits import recommend
from .rule import Rule

__all__ = ["Choice", "Rule", "choose_budget", "recommend"]
