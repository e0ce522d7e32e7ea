"""The sessions a budget serves worst, with the file and line to open.

A budget serves a session badly when its last turn does not fit: libpanto
then keeps nothing verbatim (``kept_turns == 0``) and the agent loses the
turn it is in the middle of. :func:`worst_served` ranks sessions by the share
of their last turn the budget covers (``budget / last_turn_tokens``, capped at
1), then by what they keep, and points at the line where that last turn starts.

>>> import polars as pl
>>> msgs = pl.DataFrame({
...     "session_id": ["a", "a", "b", "b"], "seq": [0, 1, 0, 1],
...     "role": ["user", "assistant"] * 2, "words": [1] * 4,
...     "has_tool_result": [False] * 4, "has_summary": [False] * 4,
...     "input": [0, 900, 0, 90], "output": [0, 100, 0, 10], "cache_read": [0] * 4, "cache_write": [0] * 4,
...     "file": ["a.jsonl"] * 2 + ["b.jsonl"] * 2, "line": [1, 2, 1, 2]})
>>> worst_served(msgs, 500, 1).select("session_id", "last_turn_tokens", "last_turn_share", "file", "line").rows()
[('a', 1000, 0.5, 'a.jsonl', 1)]
"""
from __future__ import annotations

import polars as pl

from ..frame.schema import SEQ, SESSION
from ..policy import splits, turns

__all__ = ["worst_served"]


def worst_served(messages: pl.DataFrame | pl.LazyFrame, budget: int, n: int | None = None) -> pl.DataFrame:
    """The ``n`` sessions ``budget`` serves worst (all, ranked, when ``n`` is None).

    Parameters
    ----------
    messages
        A message frame (with ``file`` and ``line`` to point at the last turn).
    budget
        The ``keep_verbatim`` budget, in tokens.
    n
        How many sessions to return.

    Returns
    -------
    pl.DataFrame
        One row per session, worst first: ``session_id``, ``n_turns``,
        ``last_turn_tokens`` (libpanto's cost of the last turn),
        ``last_turn_share`` (how much of it the budget covers, at most 1),
        ``kept_turns``, ``kept_tokens``, ``noop`` and ``file``/``line`` where
        the last turn starts. Sessions without turns are left out.

    Examples
    --------
    >>> from panto_analytics import examples
    >>> worst_served(examples.messages(), 2_000).select("session_id", "last_turn_share", "line").rows()
    [('a', 0.6666666666666666, 5), ('b', 1.0, 1)]
    """
    lf = messages.lazy()
    last = (turns(lf).group_by(SESSION).agg(pl.all().sort_by("turn").last())
            .select(SESSION, pl.col("start_seq").alias(SEQ), pl.col("tokens").alias("last_turn_tokens")))
    where = lf.select(SESSION, SEQ, pl.col("file").cast(pl.String), "line")
    split = splits(lf, budget).select(SESSION, "n_turns", "kept_turns", "kept_tokens", "noop")
    share = pl.when(pl.col("last_turn_tokens") == 0).then(1.0).otherwise(
        pl.min_horizontal(pl.lit(budget, pl.Float64) / pl.col("last_turn_tokens"), pl.lit(1.0)))
    ranked = (last.join(split, on=SESSION).join(where, on=[SESSION, SEQ], how="left")
              .with_columns(last_turn_share=share)
              .sort(["last_turn_share", "kept_tokens", "last_turn_tokens", SESSION],
                    descending=[False, False, True, False])
              .select(SESSION, "n_turns", "last_turn_tokens", "last_turn_share", "kept_turns", "kept_tokens",
                      "noop", "file", "line"))
    return (ranked if n is None else ranked.head(n)).collect()
