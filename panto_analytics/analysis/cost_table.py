"""What compaction costs: a billed replay's totals per (policy, budget) against the recorded bill.

From the session rows of ``pa.replay(..., prices=...)`` (the billing rules:
``docs/replay.md``), one row per (policy, budget):

- ``sessions``, ``compactions``;
- ``recorded_usd``: what the sessions cost as recorded; ``replayed_usd``: the
  replayed calls plus the summarizer's (``total_cost_usd``); ``change_usd``:
  their difference (negative: compaction saves);
- ``summarizer_usd`` and ``summarizer_share`` (of ``replayed_usd``);
- ``cache_write_change_usd``: simulated minus recorded cache-write cost. It
  adds the cache misses the compactions cause (after each one the next call
  writes the summary and the kept suffix anew) to what shorter prompts save
  where the recording rewrote its whole prompt (a cache past its lifetime),
  so it can be negative; ``cache_read_change_usd``: simulated minus recorded
  cache-read cost, the shorter prompts read after a compaction (negative:
  saved);
- ``cache_miss_usd``: what the compactions' cache misses cost, the sum of
  every event's ``cache_miss_usd`` (``docs/cost.md``: what the first call
  to each model after a compaction pays to write the cache beyond what the
  recorded call wrote); ``cache_miss_per_compaction_usd``: that over
  ``compactions`` (null without any).

Sums are null when any session of the row is unpriced (never a partial sum); dollars are added up as every
total of dollars is (:func:`~panto_analytics.outcomes.cost.dollars_total`: whole picodollars, exact), so the
table is the same whatever the order of the rows: a dataset's report computes it from the rows its tasks
spilled to Parquet (a lazy frame, read a few columns at a time), equal to the report's in memory.

>>> import polars as pl
>>> s = pl.DataFrame({"policy": ["pi"] * 2, "session_id": ["a", "b"], "budget": [20_000] * 2, "n_compactions": [1, 0],
...     "recorded_cost_usd": [3.0, 1.0], "total_cost_usd": [2.5, 1.0], "summarizer_cost_usd": [0.25, 0.0],
...     "recorded_cache_write_usd": [0.5, 0.1], "simulated_cache_write_usd": [0.9, 0.1],
...     "recorded_cache_read_usd": [1.5, 0.4], "simulated_cache_read_usd": [0.6, 0.4], "cache_miss_usd": [0.3, 0.0]})
>>> row = compaction_costs(s).row(0, named=True)
>>> [round(row[c], 4) for c in ("change_usd", "summarizer_share", "cache_write_change_usd", "cache_read_change_usd")]
[-0.5, 0.0714, 0.4, -0.9]
>>> row["cache_miss_usd"], row["cache_miss_per_compaction_usd"]
(0.3, 0.3)
"""
from __future__ import annotations

import polars as pl

from ..frame.schema import BUDGET
from ..outcomes.cost import dollars_total
from ..outcomes.group_tables import grouped

__all__ = ["COMPACTION_COST_COLUMNS", "COMPACTION_COST_INPUTS", "compaction_costs"]

COMPACTION_COST_COLUMNS = ("policy", BUDGET, "sessions", "compactions", "recorded_usd", "replayed_usd",
                           "change_usd", "summarizer_usd", "summarizer_share", "cache_write_change_usd",
                           "cache_read_change_usd", "cache_miss_usd", "cache_miss_per_compaction_usd")

#: The columns of a billed replay's session rows that :func:`compaction_costs` reads (and ``policy``, where
#: present).
COMPACTION_COST_INPUTS = ("n_compactions", "recorded_cost_usd", "total_cost_usd", "summarizer_cost_usd",
                          "simulated_cache_write_usd", "recorded_cache_write_usd", "simulated_cache_read_usd",
                          "recorded_cache_read_usd", "cache_miss_usd")


def _total(column: str) -> pl.Expr:
    """The sum in dollars (:func:`~panto_analytics.outcomes.cost.dollars_total`), null when any value is (an
    unpriced session)."""
    return pl.when(pl.col(column).is_null().any()).then(None).otherwise(dollars_total(column))


def compaction_costs(replay_sessions: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """One row per (policy, budget) of a billed replay's session rows (see the module docstring).

    Parameters
    ----------
    replay_sessions
        ``Replay.sessions`` of ``pa.replay(..., prices=...)``; without a ``policy`` column the policy is
        ``libpanto``.

    Returns
    -------
    pl.DataFrame
        :data:`COMPACTION_COST_COLUMNS`, sorted by policy (in order of appearance) and budget.
    """
    lf = replay_sessions.lazy()
    policy = pl.col("policy").cast(pl.String) if "policy" in lf.collect_schema().names() else pl.lit("libpanto")
    aggs = {"sessions": pl.len(), "compactions": pl.col("n_compactions").sum().cast(pl.UInt64),
            "recorded_usd": _total("recorded_cost_usd"), "replayed_usd": _total("total_cost_usd"),
            "summarizer_usd": _total("summarizer_cost_usd"),
            "_sim_write": _total("simulated_cache_write_usd"), "_rec_write": _total("recorded_cache_write_usd"),
            "_sim_read": _total("simulated_cache_read_usd"), "_rec_read": _total("recorded_cache_read_usd"),
            "cache_miss_usd": _total("cache_miss_usd")}
    # A lazy frame (a scan of Parquet) is read a few columns at a time; the groups in the order they appear.
    table = grouped(lf.with_columns(policy.alias("policy")), ["policy", BUDGET], aggs,
                    column_at_a_time=isinstance(replay_sessions, pl.LazyFrame))
    order = pl.Enum(table["policy"].unique(maintain_order=True).to_list())
    return (table.with_columns(change_usd=pl.col("replayed_usd") - pl.col("recorded_usd"),
                               summarizer_share=pl.col("summarizer_usd") / pl.col("replayed_usd"),
                               cache_write_change_usd=pl.col("_sim_write") - pl.col("_rec_write"),
                               cache_read_change_usd=pl.col("_sim_read") - pl.col("_rec_read"),
                               cache_miss_per_compaction_usd=pl.when(pl.col("compactions") > 0)
                               .then(pl.col("cache_miss_usd") / pl.col("compactions")))
            .sort(pl.col("policy").cast(order), BUDGET)
            .select(COMPACTION_COST_COLUMNS))
