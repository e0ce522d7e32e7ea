"""What real agents kept at their recorded compactions, beside libpanto's split at the same moment.

:func:`agent_vs_libpanto` reads the compactions table of a
:class:`~panto_analytics.ingest.Corpus` and returns
:func:`~panto_analytics.policy.cuts.splits_at`'s rows (one per compaction and
budget); :func:`compaction_table` turns them into one row per compaction with
the agent's kept messages and tokens and, per budget, libpanto's kept turns
and tokens, for people.

Past a few hundred compactions a row each is no longer read, and what holds them grows with the corpus: the
report then shows a summary per agent, from counts that merge exactly over disjoint sets of compactions (a
dataset's tasks): :func:`kept_counts` and :func:`kept_summary` for :func:`agent_vs_libpanto`'s rows,
:func:`cut_counts` and :func:`cut_summary` for :func:`policies_vs_agents`'s. Token counts are counted per value
rounded to three significant digits (:func:`~panto_analytics.frame.expressions.rounded_tokens`), turns and
messages as they are; :func:`merged_counts` adds them up.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import cast

import polars as pl

from ..frame.expressions import counted_quantile, median, rounded_tokens
from ..frame.schema import BUDGET, SESSION
from ..ingest.corpus import Corpus
from ..policy.compaction.policies import POLICIES, Policy
from ..policy.compaction.recorded_cuts import policy_cuts_at
from ..policy.cuts import splits_at
from .formatting import format_tokens
from .plot_data import summed_counts

__all__ = [
    "AGENT_POLICIES", "agent_vs_libpanto", "compaction_table", "compactions_counted", "cut_counts", "cut_summary",
    "kept_counts", "kept_summary", "merged_counts", "policies_vs_agents", "recorded_cut_summary",
]

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


#: The keys of :func:`kept_counts` and :func:`cut_counts`, before ``metric``, ``value`` and ``count``.
_KEPT_KEYS = ("source_format", BUDGET)
_CUT_KEYS = ("policy", "source_format", "own")
_COUNTS = {"metric": pl.String, "value": pl.Int64, "count": pl.UInt64}


def _counted(rows: pl.DataFrame, keys: Sequence[str], metrics: dict[str, pl.Expr]) -> pl.DataFrame:
    """Per ``keys``, each metric's non-null values counted (``metric``, ``value``, ``count``), in key order."""
    if not metrics or rows.is_empty():
        return pl.DataFrame(schema={**rows.select(keys).schema, **_COUNTS})
    long = pl.concat([rows.select(*keys, metric=pl.lit(name), value=expr.cast(pl.Int64)) for name, expr in metrics.items()])
    return summed_counts(long.drop_nulls("value").with_columns(count=pl.lit(1, pl.UInt64)))


def merged_counts(parts: Iterable[pl.DataFrame]) -> pl.DataFrame:
    """The counts of the union of disjoint sets of compactions: ``parts`` (:func:`kept_counts` or
    :func:`cut_counts` of each set) added up; merged again with more, the same as merged at once.

    >>> a = pl.DataFrame({"k": ["x"], "metric": ["m"], "value": [3], "count": [2]})
    >>> merged_counts([a, a]).rows()
    [('x', 'm', 3, 4)]
    """
    return summed_counts(pl.concat(list(parts), how="vertical_relaxed"))


def kept_counts(rows: pl.DataFrame) -> pl.DataFrame:
    """What :func:`kept_summary` shows of :func:`agent_vs_libpanto`'s ``rows``, as counts that merge
    (:func:`merged_counts`): per (``source_format``, ``budget``), the ``compactions`` (value 0, counted), the
    compactions where libpanto keeps more tokens than the agent (``libpanto_more``: value 1 counted, 0 too) and
    the values of ``kept_turns``, and of ``agent_kept_tokens``, ``kept_tokens`` and ``tokens_before`` (the
    context the agent compacted) rounded to three significant digits
    (:func:`~panto_analytics.frame.expressions.rounded_tokens`). At most about 900 values a decade of tokens per
    key, whatever the compactions.

    >>> rows = pl.DataFrame({"source_format": ["pi"] * 2, "budget": [20_000] * 2, "kept_turns": [2, 3],
    ...     "kept_tokens": [12_345, 12_349], "agent_kept_tokens": [9_000, 20_000], "tokens_before": [None, 100_000]})
    >>> kept_counts(rows).filter(pl.col("metric") == "kept_tokens").select("value", "count").rows()
    [(12300, 2)]
    """
    metrics = {"compactions": pl.lit(0), "libpanto_more": (pl.col("kept_tokens") > pl.col("agent_kept_tokens")),
               "kept_turns": pl.col("kept_turns"), "kept_tokens": rounded_tokens("kept_tokens"),
               "agent_kept_tokens": rounded_tokens("agent_kept_tokens"),
               "tokens_before": rounded_tokens("tokens_before")}
    keyed = rows.with_columns(pl.col("source_format").cast(pl.String), pl.col(BUDGET).cast(pl.UInt64))
    return _counted(keyed, _KEPT_KEYS, metrics)


def compactions_counted(counts: pl.DataFrame) -> int:
    """How many recorded compactions :func:`kept_counts` (or :func:`cut_counts`) counted: every agent's, at one
    budget (or policy).

    >>> compactions_counted(pl.DataFrame({"source_format": ["pi", "pi", "codex"], "budget": [1, 2, 1],
    ...     "metric": ["compactions"] * 3, "value": [0] * 3, "count": [5, 5, 2]}))
    7
    """
    per = "policy" if "policy" in counts.columns else BUDGET
    n = (counts.filter(pl.col("metric") == "compactions").group_by(per).agg(pl.col("count").sum())["count"].max())
    return int(cast("int", n)) if n is not None else 0


def _quantiles(metric: str, qs: Sequence[float] = (0.1, 0.5, 0.9)) -> dict[str, pl.Expr]:
    """The observed ``qs`` quantiles of ``metric``'s counted values (``"lower"``: the value at the floor of the rank
    ``q * (n - 1)``, :func:`~panto_analytics.frame.expressions.counted_quantile`), ``{metric}_p10``..."""
    mine = pl.col("metric") == metric
    return {f"{metric}_p{round(q * 100)}": counted_quantile(q, pl.col("value").filter(mine), pl.col("count").filter(mine),
                                                           interpolation="lower") for q in qs}


def _count_of(metric: str, value: int = 0) -> pl.Expr:
    return pl.col("count").filter((pl.col("metric") == metric) & (pl.col("value") == value)).sum()


def kept_summary(counts: pl.DataFrame, by: Sequence[str] = _KEPT_KEYS) -> pl.DataFrame:
    """Per ``by`` (an agent and a budget; ``[budget]`` pools the agents): the ``compactions``, the 10th, 50th and
    90th percentiles of what the agent kept (``agent_kept_tokens_p10``...), of libpanto's kept tokens and kept
    turns at that budget (``kept_tokens_p10``..., ``kept_turns_p10``...) and of the context the agent compacted
    (``tokens_before_p50``), and how often libpanto keeps more tokens than the agent (``libpanto_more_share``),
    from :func:`kept_counts` (merged). Each percentile is a value observed (Polars' ``"lower"`` quantile: the
    value at the floor of ``q * (n - 1)``) to three significant digits: the same as the percentile of the
    compactions' own tokens, rounded.

    >>> rows = pl.DataFrame({"source_format": ["pi"] * 3, "budget": [20_000] * 3, "kept_turns": [2, 3, 9],
    ...     "kept_tokens": [12_345, 15_000, 19_999], "agent_kept_tokens": [9_000, 20_000, 0],
    ...     "tokens_before": [None, 100_000, 90_000]})
    >>> kept_summary(kept_counts(rows)).select("compactions", "kept_tokens_p50", "kept_turns_p90",
    ...                                        "libpanto_more_share").row(0)
    (3, 15000, 3, 0.6666666666666666)
    """
    counts = counts.select(*by, "metric", "value", "count")
    n = _count_of("compactions")
    rows = (summed_counts(counts).group_by(by).agg(
        compactions=n, **_quantiles("agent_kept_tokens"), **_quantiles("kept_tokens"), **_quantiles("kept_turns"),
        **_quantiles("tokens_before", (0.5,)),
        libpanto_more_share=_count_of("libpanto_more", 1) / n)
        .sort(by))
    return rows


def cut_counts(rows: pl.DataFrame) -> pl.DataFrame:
    """What :func:`cut_summary` shows of :func:`policies_vs_agents`'s ``rows``, as counts that merge
    (:func:`merged_counts`): per (``policy``, ``source_format``, ``own``), the ``compactions`` and the ``exact``
    matches (value 0, counted), and over the compactions the policy does not match, the values of
    ``distance_messages`` and of ``distance_tokens`` rounded to three significant digits.

    >>> rows = pl.DataFrame({"policy": ["pi"] * 3, "source_format": ["pi"] * 3, "own": [True] * 3,
    ...     "exact": [True, False, False], "distance_messages": [0, 7, 22], "distance_tokens": [0, 510, 23_721]})
    >>> cut_counts(rows).filter(pl.col("metric") == "distance_tokens").select("value", "count").rows()
    [(510, 1), (23700, 1)]
    """
    differ = ~pl.col("exact")
    metrics = {"compactions": pl.lit(0), "exact": pl.when(pl.col("exact")).then(0),
               "distance_messages": pl.when(differ).then(pl.col("distance_messages")),
               "distance_tokens": pl.when(differ).then(rounded_tokens("distance_tokens"))}
    return _counted(rows.with_columns(pl.col("policy", "source_format").cast(pl.String)), _CUT_KEYS, metrics)


def cut_summary(counts: pl.DataFrame) -> pl.DataFrame:
    """:func:`recorded_cut_summary`'s table from :func:`cut_counts` (merged): the same columns, the medians of
    the counted values (of the distances in tokens: rounded to three significant digits, and their largest too),
    in (policy, source format) order.

    >>> rows = pl.DataFrame({"policy": ["pi"] * 3, "source_format": ["pi"] * 3, "own": [True] * 3,
    ...     "exact": [True, False, False], "distance_messages": [0, 7, 22], "distance_tokens": [0, 510, 2372]})
    >>> cut_summary(cut_counts(rows)).select("recorded", "exact", "distance_messages_p50", "distance_tokens_max").rows()
    [(3, 1, 14.5, 2370)]
    """
    def distance(metric: str) -> dict[str, pl.Expr]:
        mine = pl.col("metric") == metric
        return {f"{metric}_p50": counted_quantile(0.5, pl.col("value").filter(mine), pl.col("count").filter(mine)),
                f"{metric}_max": pl.col("value").filter(mine).max()}

    return (counts.sort([*_CUT_KEYS, "metric", "value"]).group_by(_CUT_KEYS).agg(
        recorded=_count_of("compactions").cast(pl.UInt32), exact=_count_of("exact").cast(pl.UInt32),
        **distance("distance_messages"), **distance("distance_tokens"))
        .sort("policy", "source_format").select("policy", "source_format", "own", "recorded", "exact",
                                                "distance_messages_p50", "distance_messages_max",
                                                "distance_tokens_p50", "distance_tokens_max"))
