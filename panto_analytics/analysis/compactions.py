"""What real agents kept at their recorded compactions, beside libpanto's split at the same moment.

:func:`agent_vs_libpanto` reads the compactions table of a
:class:`~panto_analytics.ingest.Corpus` and returns
:func:`~panto_analytics.policy.cuts.splits_at`'s rows (one per compaction and
budget); :func:`compaction_table` turns them into one row per compaction with
the agent's kept messages and tokens and, per budget, libpanto's kept turns
and tokens, for people.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import polars as pl

from ..frame.expressions import median
from ..frame.schema import BUDGET, SESSION
from ..ingest.corpus import Corpus
from ..policy.compaction.policies import POLICIES, Policy
from ..policy.compaction.recorded_cuts import policy_cuts_at
from ..policy.cuts import splits_at
from .formatting import format_tokens

__all__ = ["AGENT_POLICIES", "agent_vs_libpanto", "compaction_table", "policies_vs_agents", "recorded_cut_summary"]

#: The policies each format's agent ran (pi's whole-turn version wrote the v1 files with ``firstKeptEntryIndex``).
AGENT_POLICIES: dict[str, tuple[str, ...]] = {
    "pi": ("pi", "pi-whole-turn"), "codex": ("codex",), "claude-code": ("claude-code",), "canonical": ()}


def agent_vs_libpanto(corpus: Corpus, budgets: Iterable[int]) -> pl.DataFrame:
    """One row per (recorded compaction, budget): libpanto's split of the conversation the agent
    compacted, and what the agent kept (``splits_at``'s columns, plus ``source_format`` and
    ``tokens_before``)."""
    rows = splits_at(corpus.messages, corpus.compactions, budgets)
    recorded = corpus.compactions.with_row_index("cut").select(
        pl.col("cut").cast(pl.UInt32), "tokens_before")
    formats = corpus.sessions.select(pl.col(SESSION).cast(pl.String), "source_format")
    return (rows.join(recorded, on="cut", how="left")
            .join(formats, on=SESSION, how="left")
            .select("cut", SESSION, "source_format", "anchor_seq", "tokens_before",
                    *[c for c in rows.columns if c not in ("cut", SESSION, "anchor_seq")]))


def compaction_table(rows: pl.DataFrame) -> pl.DataFrame:
    """One row per compaction: session, format, anchor, tokens before, the agent's first kept message,
    kept messages and tokens, then libpanto's kept turns and tokens at each budget (``turns@20k``,
    ``tokens@20k``)."""
    keys = ["cut", SESSION, "source_format", "anchor_seq", "tokens_before",
            "agent_first_kept_seq", "agent_kept_messages", "agent_kept_tokens"]
    base = rows.select(keys).unique("cut", keep="first", maintain_order=True)
    out = base
    for budget in rows[BUDGET].unique(maintain_order=True).sort().to_list():
        label = format_tokens(budget)
        per = rows.filter(pl.col(BUDGET) == budget).select(
            "cut", pl.col("kept_turns").alias(f"turns@{label}"), pl.col("kept_tokens").alias(f"tokens@{label}"))
        out = out.join(per, on="cut", how="left", maintain_order="left")
    return out.drop("cut").rename({SESSION: "session", "anchor_seq": "anchor",
                                   "agent_first_kept_seq": "agent_first_kept",
                                   "agent_kept_messages": "agent_messages", "agent_kept_tokens": "agent_tokens"})


def policies_vs_agents(corpus: Corpus, policies: Sequence[str | Policy] | None = None) -> pl.DataFrame:
    """One row per (recorded compaction, policy): the policy's cut at that moment beside the agent's.

    :func:`~panto_analytics.policy.compaction.recorded_cuts.policy_cuts_at`'s columns, plus
    ``source_format`` and ``own`` (the policy is one the format's agent ran,
    :data:`AGENT_POLICIES`). ``policies`` defaults to every policy but
    libpanto (whose split at these moments is :func:`agent_vs_libpanto`'s).
    """
    chosen = list(policies) if policies is not None else [p for p, c in POLICIES.items() if p != "libpanto" and not c.clears]
    rows = policy_cuts_at(corpus.messages, corpus.compactions, chosen)
    formats = corpus.sessions.select(pl.col(SESSION).cast(pl.String), pl.col("source_format").cast(pl.String))
    own = [f"{f}/{p}" for f, ps in AGENT_POLICIES.items() for p in ps]
    base = pl.col("policy").str.split(":").list.first()
    return (rows.join(formats, on=SESSION, how="left", maintain_order="left")
            .with_columns(own=pl.concat_str(pl.col("source_format"), pl.lit("/"), base).is_in(own).fill_null(False)))


def recorded_cut_summary(rows: pl.DataFrame) -> pl.DataFrame:
    """Per (policy, source format): recorded compactions, exact matches, and the distance where they differ.

    ``rows``: :func:`policies_vs_agents`'s. ``distance_messages_p50`` /
    ``_max`` and ``distance_tokens_p50`` / ``_max`` are over the compactions
    the policy does not match (null when it matches all). A ``_p50`` is the
    median (:func:`~panto_analytics.frame.expressions.median`): of an even count, the mean of the middle two (of 7 and 22: 14.5,
    never the larger one).

    >>> rows = pl.DataFrame({"policy": ["pi"] * 3, "source_format": ["pi"] * 3, "own": [True] * 3,
    ...     "exact": [True, False, False], "distance_messages": [0, 7, 22], "distance_tokens": [0, 510, 2372]})
    >>> recorded_cut_summary(rows).select("recorded", "exact", "distance_messages_p50", "distance_messages_max").rows()
    [(3, 1, 14.5, 22)]
    """
    differ = ~pl.col("exact")
    return rows.group_by("policy", "source_format", maintain_order=True).agg(
        own=pl.col("own").first(), recorded=pl.len(), exact=pl.col("exact").sum(),
        distance_messages_p50=median(pl.col("distance_messages").filter(differ)),
        distance_messages_max=pl.col("distance_messages").filter(differ).max(),
        distance_tokens_p50=median(pl.col("distance_tokens").filter(differ)),
        distance_tokens_max=pl.col("distance_tokens").filter(differ).max(),
    )
