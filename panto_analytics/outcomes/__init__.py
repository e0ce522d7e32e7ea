"""What a session costs (and, later, what compaction loses): frames in, frames out, no I/O beyond price tables.

- :mod:`~panto_analytics.outcomes.prices`: ``load_prices``, the price table (genai-prices offline, or a
  LiteLLM price file);
- :mod:`~panto_analytics.outcomes.cost`: ``bill``, the one definition of a call's cost, and ``costs``,
  the recorded sessions' bill per group;
- :mod:`~panto_analytics.outcomes.billing`: the tokens of every call a replay simulates (the cache rule,
  the summarizer call) and ``bill_replay``, a replay's sessions and events priced.

This floor sits below ``policy``, so that the replay can bill the calls it simulates.
"""
from .cost import COST_COLUMNS, GROUPINGS, UnpricedWarning, bill, costs, unpriced
from .prices import Prices, load_prices

__all__ = ["COST_COLUMNS", "GROUPINGS", "Prices", "UnpricedWarning", "bill", "costs", "load_prices", "unpriced"]
