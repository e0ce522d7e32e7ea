"""What a session costs and what compaction loses: frames in, frames out, no I/O beyond price tables.

- :mod:`~panto_analytics.outcomes.prices`: ``load_prices``, the price table (genai-prices offline, or a
  LiteLLM price file);
- :mod:`~panto_analytics.outcomes.cost`: ``bill``, the one definition of a call's cost, and ``costs``,
  the recorded sessions' bill per group;
- :mod:`~panto_analytics.frame.tool_targets`: what each tool call touches (``references``), hashed at ingest;
- :mod:`~panto_analytics.outcomes.orphan_loss`: what every compaction loses (``loss``: orphan references among the
  next tool calls), and :mod:`~panto_analytics.outcomes.recorded_refetch`: what agents really fetched again after the
  compactions they recorded.
- :mod:`~panto_analytics.outcomes.billing`: the tokens of every call a replay simulates (the cache rule,
  the summarizer call) and ``bill_replay``, a replay's sessions and events priced.

This floor sits below ``policy``, so that the replay can bill the calls it simulates.
"""
from ..frame.tool_targets import references
from .cost import COST_COLUMNS, GROUPINGS, UnpricedWarning, bill, costs, unpriced
from .orphan_loss import Loss, loss
from .prices import Prices, load_prices
from .recorded_refetch import refetch, refetch_summary

__all__ = ["COST_COLUMNS", "GROUPINGS", "Loss", "Prices", "UnpricedWarning", "bill", "costs", "load_prices", "loss",
           "references", "refetch", "refetch_summary", "unpriced"]
