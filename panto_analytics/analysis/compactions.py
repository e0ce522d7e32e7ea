"""What real agents kept at their recorded compactions, beside libpanto's split at the same moment.

:func:`agent_vs_libpanto` reads the compactions table of a
:class:`~panto_analytics.Corpus` and returns
:func:`~panto_analytics.policy.cuts.splits_at`'s rows (one per compaction and
budget); :func:`compaction_table` turns them into one row per compaction with
the agent's kept messages and tokens and, per budget, libpanto's kept turns
and tokens, for people.
"""
from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from ..ingest.corpus import Corpus
from ..policy.cuts import splits_at
from .formatting import format_tokens

__all__ = ["agent_vs_libpanto", "compaction_table"]


def agent_vs_libpanto(corpus: Corpus, budgets: Iterable[int]) -> pl.DataFrame:
    """One row per (recorded compaction, budget): libpanto's split of the conversation the agent
    compacted, and what the agent kept (``splits_at``'s columns, plus ``source_format`` and
    ``tokens_before``)."""
    rows = splits_at(corpus.messages, corpus.compactions, budgets)
    recorded = corpus.compactions.with_row_index("cut").select(
        pl.col("cut").cast(pl.UInt32), "tokens_before")
    formats = corpus.sessions.select(pl.col("session_id").cast(pl.String), "source_format")
    return (rows.join(recorded, on="cut", how="left")
            .join(formats, on="session_id", how="left")
            .select("cut", "session_id", "source_format", "anchor_seq", "tokens_before",
                    *[c for c in rows.columns if c not in ("cut", "session_id", "anchor_seq")]))


def compaction_table(rows: pl.DataFrame) -> pl.DataFrame:
    """One row per compaction: session, format, anchor, tokens before, the agent's first kept message,
    kept messages and tokens, then libpanto's kept turns and tokens at each budget (``turns@20k``,
    ``tokens@20k``)."""
    keys = ["cut", "session_id", "source_format", "anchor_seq", "tokens_before",
            "agent_first_kept_seq", "agent_kept_messages", "agent_kept_tokens"]
    base = rows.select(keys).unique("cut", keep="first", maintain_order=True)
    out = base
    for budget in rows["budget"].unique(maintain_order=True).sort().to_list():
        label = format_tokens(budget)
        per = rows.filter(pl.col("budget") == budget).select(
            "cut", pl.col("kept_turns").alias(f"turns@{label}"), pl.col("kept_tokens").alias(f"tokens@{label}"))
        out = out.join(per, on="cut", how="left", maintain_order="left")
    return out.drop("cut").rename({"session_id": "session", "anchor_seq": "anchor",
                                   "agent_first_kept_seq": "agent_first_kept",
                                   "agent_kept_messages": "agent_messages", "agent_kept_tokens": "agent_tokens"})
