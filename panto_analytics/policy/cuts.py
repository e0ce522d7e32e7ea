"""libpanto's split at given moments of each session, beside what an agent kept there.

A *cut* is a moment of a session: the conversation as it stood when an agent
compacted. :func:`splits_at` takes the message frame, one row per cut, and
budgets, and returns one row per (cut, budget) with the split libpanto's
``computeSplit`` makes of that conversation, next to what the agent kept.

The cuts frame (the compactions table of :func:`~panto_analytics.ingest.read_corpus`
is one) has ``session_id``, ``anchor_seq`` and ``trigger_seq``; the
conversation of a cut is the session's rows with ``seq < anchor_seq``, then
those with ``anchor_seq < seq < trigger_seq`` that are not compaction
summaries (a null ``trigger_seq`` counts as ``anchor_seq``). The second range
is where pi, and Claude Code's preserved segment, recorded what they kept
verbatim before the compaction record. Optional ``first_kept_seq`` and
``kept_end_seq`` (one past the last) give the agent's kept messages.

**The agent's side, in libpanto's costs.** ``agent_kept_tokens`` is what
libpanto's ``turnTokenEstimate`` charges for the messages the agent kept:

- kept messages inside the conversation (pi, Claude Code's preserved
  segment: ``first_kept_seq < trigger_seq``): the conversation's rows from the
  first kept one on. Every whole turn among them costs what libpanto's turn
  costs; a turn the agent cut inside (pi may keep from an assistant message)
  costs the same rule on its kept rows: the cumulative-usage delta from the
  last assistant usage before the first kept row to the last one among them,
  saturating, else the per-message estimates. So when the agent kept whole
  turns, its kept tokens are libpanto's suffix sum at the same turn.
- kept messages that are copies placed after the anchor (Codex's replacement
  history, recorded without usage): its user messages (not the developer and
  contextual items Codex inserts afresh, system rows in the frame, nor its
  compaction item), by the same rule read as a conversation of their own,
  i.e. their word estimates. ``policy-cuts`` counts the same messages.
- nothing kept (Claude Code without a preserved segment, an opaque Codex
  compaction): 0, ``agent_first_kept_seq`` null.

>>> import polars as pl
>>> msgs = pl.DataFrame({
...     "session_id": ["s"] * 5, "seq": [0, 1, 2, 3, 4],
...     "role": ["user", "assistant", "user", "user", "assistant"], "words": [1] * 5,
...     "has_tool_result": [False] * 5, "has_summary": [False, False, True, False, False],
...     "input": [0, 100, 0, 0, 400], "output": [0, 100, 0, 0, 100],
...     "cache_read": [0] * 5, "cache_write": [0] * 5})
>>> cuts = pl.DataFrame({"session_id": ["s"], "anchor_seq": [2], "trigger_seq": [2]})
>>> splits_at(msgs, cuts, [200]).select("cut", "budget", "n_messages", "prefix_end", "kept_turns").rows()
[(0, 200, 2, 0, 1)]
"""
from __future__ import annotations

import polars as pl

from ..budgets import Budgets, as_budgets
from ..frame.schema import BUDGET, ROLE, SEQ, SESSION
from .compute_split import splits
from .turn_costs import annotate

__all__ = ["CUT_COLUMNS", "cut_conversations", "splits_at"]


#: The columns :func:`splits_at` returns, in order.
CUT_COLUMNS = (
    "cut", SESSION, "anchor_seq", "trigger_seq", BUDGET, "n_messages", "n_turns",
    "prefix_end", "first_kept_seq", "kept_turns", "kept_tokens", "summarized_tokens", "active_tokens", "noop",
    "agent_first_kept_seq", "agent_kept_messages", "agent_kept_tokens",
)


def _numbered(cuts: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    """The cuts with a ``cut`` index (0, 1, ... in input order), string session ids and every optional column."""
    lf = cuts.lazy()
    names = lf.collect_schema().names()
    for optional in ("trigger_seq", "first_kept_seq", "kept_end_seq"):
        if optional not in names:
            lf = lf.with_columns(pl.lit(None, pl.UInt32).alias(optional))
    return lf.with_row_index("cut").select(
        pl.col("cut").cast(pl.UInt32), pl.col(SESSION).cast(pl.String),
        pl.col("anchor_seq").cast(pl.UInt32),
        pl.coalesce("trigger_seq", "anchor_seq").cast(pl.UInt32).alias("trigger_seq"),
        pl.col("first_kept_seq").cast(pl.UInt32),
        pl.col("kept_end_seq").cast(pl.UInt32),
    )


def _renumbered(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Rows of several cuts as a message frame whose sessions are the cuts: ``session_id`` = ``cut``,
    ``seq`` 0, 1, ... within each, the original seq kept as ``orig_seq``."""
    return rows.sort("cut", SEQ).with_columns(
        orig_seq=pl.col(SEQ),
        seq=pl.int_range(pl.len(), dtype=pl.UInt32).over("cut"),
    ).with_columns(pl.col("cut").alias(SESSION)).drop("cut")


def cut_conversations(messages: pl.DataFrame | pl.LazyFrame, cuts: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    """The conversation of every cut as a message frame: ``session_id`` is the cut's index (UInt32),
    ``seq`` runs 0, 1, ... within it, ``orig_seq`` is the message's seq in its session."""
    numbered = _numbered(cuts)
    return _renumbered(_in_cut(messages, numbered, _conversation_rows()))


def _in_cut(messages: pl.DataFrame | pl.LazyFrame, numbered: pl.LazyFrame, keep: pl.Expr) -> pl.LazyFrame:
    """The rows of each cut's session that ``keep`` selects, with the cut's columns."""
    return (
        messages.lazy().with_columns(pl.col(SESSION).cast(pl.String))
        .join(numbered, on=SESSION, how="inner")
        .filter(keep)
        .drop(SESSION)
    )


def _conversation_rows() -> pl.Expr:
    seq = pl.col(SEQ)
    return (seq < pl.col("anchor_seq")) | (
        (seq > pl.col("anchor_seq")) & (seq < pl.col("trigger_seq")) & ~pl.col("has_summary"))


def _kept_cost(annotated: pl.LazyFrame) -> pl.LazyFrame:
    """Per cut (``session_id``): the rows of ``annotated`` (a suffix of each cut's frame) charged as
    libpanto charges turns, a turn cut inside charged on its kept rows; see the module docstring."""
    cumulative = pl.col("assistant_cumulative").cast(pl.Int64).drop_nulls().last()
    before = pl.col("prior_cumulative").first().fill_null(0).cast(pl.Int64)
    per_turn = (
        annotated.filter(pl.col("turn").is_not_null())
        .group_by(SESSION, "turn")
        .agg(_after=cumulative, _before=before, _fallback=pl.col("message_tokens").sum())
        .select(SESSION, tokens=pl.when(pl.col("_after").is_null()).then(pl.col("_fallback").cast(pl.Int64))
                .otherwise(pl.max_horizontal(pl.col("_after") - pl.col("_before"), 0)))
        .group_by(SESSION).agg(agent_kept_tokens=pl.col("tokens").sum().cast(pl.UInt64))
    )
    counts = annotated.group_by(SESSION).agg(agent_kept_messages=pl.len().cast(pl.UInt32),
                                       agent_first_kept_seq=pl.col("orig_seq").min())
    return counts.join(per_turn, on=SESSION, how="left").with_columns(pl.col("agent_kept_tokens").fill_null(0))


def splits_at(messages: pl.DataFrame | pl.LazyFrame, cuts: pl.DataFrame | pl.LazyFrame,
              budgets: Budgets) -> pl.DataFrame:
    """One row per (cut, budget): libpanto's split of the cut's conversation, and what the agent kept.

    ``cut`` numbers the cuts in input order. ``n_messages``, ``n_turns``,
    ``prefix_end``, ``kept_turns``, ``kept_tokens``, ``summarized_tokens``,
    ``active_tokens`` and ``noop`` are :func:`~panto_analytics.policy.splits`'s
    over the conversation (``prefix_end`` indexes it, as ``computeSplit``
    does); ``first_kept_seq`` is the session seq of libpanto's first kept
    message (null when it keeps none). ``agent_first_kept_seq``,
    ``agent_kept_messages`` and ``agent_kept_tokens`` are the agent's (see the
    module docstring); ``anchor_seq`` and ``trigger_seq`` are the cut's.
    """
    budget_list = as_budgets(budgets)
    numbered = _numbered(cuts).collect().lazy()
    conversation = _renumbered(_in_cut(messages, numbered, _conversation_rows())).collect()
    ids = numbered.select(pl.col("cut").alias(SESSION)).collect()
    split = splits(conversation.drop("orig_seq"), budget_list, sessions=ids).lazy()
    first_kept = conversation.lazy().select(SESSION, prefix_end=pl.col(SEQ), first_kept_seq=pl.col("orig_seq"))

    # The agent's kept rows: a suffix of the conversation, or copies after the anchor read on their own.
    inside = pl.col("first_kept_seq") < pl.col("trigger_seq")
    in_conversation = (
        annotate(conversation.lazy())
        .join(numbered.select(pl.col("cut").alias(SESSION), agent_from=pl.when(inside).then("first_kept_seq")),
              on=SESSION, how="inner")
        .filter(pl.col("orig_seq") >= pl.col("agent_from"))
        .drop("agent_from")
    )
    # Of copies, the user's messages only: a replacement history also holds what the agent inserts afresh
    # (Codex's developer and contextual items, system rows here) and its compaction item, which it did not keep.
    prompt = (pl.col(ROLE) == "user") & ~pl.col("has_tool_result") & ~pl.col("has_summary")
    copied_rows = (pl.col("first_kept_seq") >= pl.col("trigger_seq")) & (pl.col(SEQ) >= pl.col("first_kept_seq")) \
        & (pl.col(SEQ) < pl.coalesce("kept_end_seq", "first_kept_seq")) & prompt
    copied = annotate(_renumbered(_in_cut(messages, numbered, copied_rows)).collect()).lazy()
    columns = in_conversation.collect_schema().names()
    agent = _kept_cost(pl.concat([in_conversation, copied.select(columns)], how="vertical"))

    out = (
        split.join(first_kept, on=[SESSION, "prefix_end"], how="left")
        .rename({SESSION: "cut"})
        .join(numbered.select("cut", SESSION, "anchor_seq", "trigger_seq"), on="cut", how="left")
        .join(agent.rename({SESSION: "cut"}), on="cut", how="left")
        .with_columns(pl.col("agent_kept_messages").fill_null(0), pl.col("agent_kept_tokens").fill_null(0))
        .sort("cut", BUDGET)
        .select(*CUT_COLUMNS)
    )
    return out.collect()
