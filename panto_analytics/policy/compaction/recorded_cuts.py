"""Each policy's cut at the moments agents recorded a compaction, beside the cut the agent made.

For every recorded compaction (the compactions table of
:func:`~panto_analytics.ingest.read_corpus`) the conversation as it stood is
:func:`~panto_analytics.policy.cuts.cut_conversations`'s (for pi: the rows
before the anchor and the kept rows recorded before the compaction). Each
policy's cut runs on it at that very moment: the active window from after the
latest recorded summary to the conversation's last message. The trigger is
the agent's own, so what is compared is the cut rule alone.

Per (compaction, policy): the policy's first kept message (``kept_start_seq``,
a seq of the recorded session), ``kept_messages`` and ``kept_tokens``; the
agent's (``agent_first_kept_seq``, ``agent_kept_messages``,
``agent_kept_tokens``); ``exact`` and the distances. Tokens are measured one
way for both sides: for a policy that keeps a suffix, the recorded context it
keeps (the newest call's context minus the context of the last call before
the first kept message, libpanto's cumulative-usage measure); for Codex, which
keeps copies of user messages, ``ceil(bytes / 4)`` of each kept message.
Against copies (Codex's replacement history, which has no place in the
conversation) the agent's side is the user messages of the replacement
history only, like with like: its assistant, developer and compaction items
are not what a policy keeping user messages keeps.
``exact``: the same number of kept messages and the same first kept message;
against copies, the same number and size of kept user messages, which only a
policy that keeps copies can match. ``distance_messages`` / ``distance_tokens``: absolute
differences of the kept messages and tokens.

>>> import polars as pl
>>> from panto_analytics.frame.schema import MESSAGE_SCHEMA
>>> policy_cuts_at(pl.DataFrame(schema=MESSAGE_SCHEMA), pl.DataFrame(schema={"session_id": pl.String,
...     "anchor_seq": pl.UInt32}), ["pi"]).height
0
"""
from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from ...frame.schema import ROLE, SEQ, SESSION
from ..cuts import cut_conversations
from .any_policy import window_columns
from .policies import LibPanto, Policy, Staged, parse_policy
from .policies.base import chars_to_tokens

__all__ = ["POLICY_CUT_COLUMNS", "no_cut_reason", "policy_cuts_at"]


POLICY_CUT_COLUMNS = (
    "cut", SESSION, "policy", "kept_start_seq", "kept_messages", "kept_tokens", "agent_first_kept_seq",
    "agent_kept_messages", "agent_kept_tokens", "exact", "distance_messages", "distance_tokens",
)


def _windows(conversation: pl.DataFrame) -> pl.DataFrame:
    """Each cut's active window at its last message, as a window frame (``state`` = the cut)."""
    rows = window_columns(conversation).with_columns(
        state=conversation[SESSION].cast(pl.Int64), orig_seq=conversation["orig_seq"].cast(pl.Int64))
    return rows.with_columns(
        first=(pl.when(pl.col("summary")).then(pl.col(SEQ) + 1).otherwise(0)).max().over("state"),
        trigger=pl.col(SEQ).max().over("state"),
        newest=pl.col("cum").filter(pl.col("call")).last().over("state").fill_null(0),
    ).filter(pl.col(SEQ) >= pl.col("first")).with_columns(
        start=pl.col("first"), context=pl.col("newest"), window=pl.lit(None, pl.Int64))


def _agent_side(messages: pl.DataFrame, cuts: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """Per cut: the agent's first kept seq, kept messages and tokens, measured as the policies' are."""
    numbered = cuts.with_row_index("cut").select(
        state=pl.col("cut").cast(pl.Int64), first_kept=pl.col("first_kept_seq").cast(pl.Int64),
        kept_end=pl.col("kept_end_seq").cast(pl.Int64), trigger_seq=pl.col("trigger_seq").cast(pl.Int64),
        sid=pl.col(SESSION).cast(pl.String))
    inside = windows.join(numbered, on="state").filter(
        (pl.col("first_kept") < pl.col("trigger_seq")) & (pl.col("orig_seq") >= pl.col("first_kept")))
    suffix = inside.group_by("state").agg(
        agent_first_kept_seq=pl.col("orig_seq").min(), agent_kept_messages=pl.len(),
        agent_kept_tokens=pl.max_horizontal(pl.col("newest").first() - pl.col("before").sort_by(SEQ).first(), 0))
    # Like with like: Codex keeps copies of user messages, so of a replacement history only its user messages
    # (not tool results, not the summary; not its assistant, developer or compaction items) are compared.
    prompt = (pl.col(ROLE) == "user") & ~pl.col("has_tool_result") & ~pl.col("has_summary")
    sized = messages.filter(prompt).select(sid=pl.col(SESSION).cast(pl.String), seq=pl.col(SEQ).cast(pl.Int64),
                                           tokens=chars_to_tokens(pl.col("serialized_bytes").fill_null(0)))
    copies = numbered.filter(pl.col("first_kept") >= pl.col("trigger_seq")).join(sized, on="sid").filter(
        (pl.col(SEQ) >= pl.col("first_kept")) & (pl.col(SEQ) < pl.col("kept_end"))).group_by("state").agg(
        agent_first_kept_seq=pl.col(SEQ).min(), agent_kept_messages=pl.len(), agent_kept_tokens=pl.col("tokens").sum())
    agent = pl.concat([suffix, copies], how="vertical_relaxed")
    copied = (pl.col("first_kept") >= pl.col("trigger_seq")).fill_null(False)
    return numbered.select("state", S=pl.col("sid"), copies=copied).join(
        agent, on="state", how="left").with_columns(
        pl.col("agent_kept_messages").fill_null(0).cast(pl.Int64), pl.col("agent_kept_tokens").fill_null(0).cast(pl.Int64))


def no_cut_reason(policy: str | Policy) -> str | None:
    """Why ``policy`` has no cut to set beside an agent's at a recorded compaction (None: it has one). A staged
    policy's cut is its last stage's (the clearing in front does not choose what is kept verbatim).

    >>> no_cut_reason("pi"), no_cut_reason("clear-tool-uses+pi")
    (None, None)
    >>> no_cut_reason("observation-masking").split(":")[0]
    'policy observation-masking clears tool results in place'
    """
    parsed = parse_policy(policy)
    last = parsed.last if isinstance(parsed, Staged) else parsed
    if isinstance(last, LibPanto):
        return (f"policy {parsed.spec()}: libpanto's split at recorded compactions is per budget (compactions -b LIST, "
                "splits_at), not a policy cut")
    if last.clears:
        return (f"policy {parsed.spec()} clears tool results in place: it keeps every message, so it has no cut to "
                f"set beside an agent's (replay it: replay --policy {parsed.spec()})")
    return None


def policy_cuts_at(messages: pl.DataFrame, cuts: pl.DataFrame, policies: Sequence[str | Policy]) -> pl.DataFrame:
    """One row per (recorded compaction, policy): the policy's cut at that moment beside the agent's.

    ``cuts``: the compactions table (``session_id``, ``anchor_seq``, and
    optionally ``trigger_seq``, ``first_kept_seq``, ``kept_end_seq``).
    ``libpanto`` is not among the policies here (its split at these moments is
    :func:`~panto_analytics.policy.cuts.splits_at`'s, per budget). Columns:
    :data:`POLICY_CUT_COLUMNS`, compactions in input order, policies in the
    order given.
    """
    parsed = [parse_policy(p) for p in policies]
    reason = next((r for r in map(no_cut_reason, parsed) if r), None)
    if reason:
        raise ValueError(reason)
    if cuts.is_empty():
        return pl.DataFrame(schema=dict.fromkeys(POLICY_CUT_COLUMNS, pl.Int64)).with_columns(
            pl.col(SESSION, "policy").cast(pl.String), pl.col("exact").cast(pl.Boolean))
    windows = _windows(cut_conversations(messages, cuts).collect())
    agent = _agent_side(messages, cuts, windows).rename({"S": SESSION})
    orig = windows.select("state", SEQ, "orig_seq")
    before = windows.select("state", SEQ, "before")
    newest = windows.group_by("state").agg(pl.col("newest").first())
    out = []
    for policy in parsed:  # a handful of policies: one vectorized cut each, over every compaction at once
        cut = policy.cut(windows.drop("orig_seq")).with_columns(pl.col("kept_start").cast(pl.Int64))
        cut = (cut.join(orig.rename({SEQ: "kept_start"}), on=["state", "kept_start"], how="left")
               .join(before.rename({SEQ: "kept_start"}), on=["state", "kept_start"], how="left")
               .join(newest, on="state", how="left"))
        usage = pl.when(pl.col("kept_start").is_null()).then(0).otherwise(
            pl.max_horizontal(pl.col("newest") - pl.col("before"), 0))
        out.append(cut.select(
            "state", policy=pl.lit(policy.spec()), kept_start_seq="orig_seq",
            _copies_kept=pl.col("kept_tokens").is_not_null(),
            kept_messages=pl.col("kept_messages").cast(pl.Int64),
            kept_tokens=pl.coalesce(pl.col("kept_tokens").cast(pl.Int64), usage)))
    rows = agent.join(pl.concat(out), on="state", how="left", maintain_order="left")
    same_count = pl.col("kept_messages") == pl.col("agent_kept_messages")
    # Copies (Codex's replacement history) have no place in the conversation: a policy that keeps copies
    # matches them by count and size; a suffix never does (unless neither keeps anything).
    exact_copies = same_count & ((pl.col("_copies_kept") & (pl.col("kept_tokens") == pl.col("agent_kept_tokens")))
                                 | (pl.col("kept_messages") == 0))
    exact_suffix = same_count & pl.col("kept_start_seq").eq_missing(pl.col("agent_first_kept_seq"))
    return rows.with_columns(
        cut=pl.col("state").cast(pl.UInt32),
        exact=pl.when(pl.col("copies")).then(exact_copies).otherwise(exact_suffix),
        distance_messages=(pl.col("kept_messages") - pl.col("agent_kept_messages")).abs(),
        distance_tokens=(pl.col("kept_tokens") - pl.col("agent_kept_tokens")).abs(),
    ).sort("cut", maintain_order=True).select(POLICY_CUT_COLUMNS)
