"""Each policy's cut at the compactions agents recorded (policies_vs_agents), on data/ and on every real
recording in ../shared/realdata; every cut also equals the literal reference's on the same conversation."""
from __future__ import annotations

import dataclasses

import polars as pl
import pytest
from conftest import DATA, REALDATA, REPO

import panto_analytics as pa
from panto_analytics.analysis.compactions import agent_vs_libpanto, policies_vs_agents, recorded_cut_summary
from panto_analytics.policy.compaction.policies import POLICIES, parse_policy
from panto_analytics.policy.cuts import cut_conversations
from reference import policies as ref

needs_realdata = pytest.mark.skipif(not REALDATA.is_dir(), reason="../shared/realdata is not present")
OTHERS = [p for p, c in POLICIES.items() if p != "libpanto" and not c.clears]


def recordings() -> list:
    """Every recording folder of ../shared/realdata (one corpus each), or nothing when it is absent."""
    if not REALDATA.is_dir():
        return []
    return sorted(p for p in REALDATA.glob("*/*") if p.is_dir()) + sorted(
        p for p in REALDATA.glob("*") if p.is_dir() and any(p.glob("*.jsonl")))


def reference_cuts(corpus: pa.ingest.Corpus) -> dict[tuple[int, str], int | None]:
    """(compaction, policy) -> the literal reference's first kept seq (of the recorded session)."""
    conversation = cut_conversations(corpus.messages, corpus.compactions).collect()
    out: dict[tuple[int, str], int | None] = {}
    for (cut,), rows in conversation.group_by("session_id", maintain_order=True):
        msgs = rows.sort("seq").to_dicts()
        first = max((i + 1 for i, m in enumerate(msgs) if m["has_summary"]), default=0)
        for name in OTHERS:
            policy = parse_policy(name)
            settings = {f.name: getattr(policy, f.name) for f in dataclasses.fields(policy)}
            kept = ref.cut_of(name, msgs, first, len(msgs) - 1, settings).kept_start
            out[(int(cut), name)] = None if kept is None else msgs[kept]["orig_seq"]
    return out


def check(corpus: pa.ingest.Corpus) -> pl.DataFrame:
    rows = policies_vs_agents(corpus)
    assert rows.height == corpus.compactions.height * len(OTHERS)
    assert rows.select("cut", "policy").rows() == [(c, p) for c in range(corpus.compactions.height) for p in OTHERS]
    expected = reference_cuts(corpus)
    assert {(r["cut"], r["policy"]): r["kept_start_seq"] for r in rows.to_dicts()} == expected
    # The distances are what they say: |kept - agent's kept| in messages and tokens, 0 on exact matches.
    assert (rows["distance_messages"] == (rows["kept_messages"] - rows["agent_kept_messages"]).abs()).all()
    assert rows.filter("exact").select(pl.col("distance_messages").max()).item() in (None, 0)
    return rows


def test_the_bundled_corpus_compactions_keep_the_turns_after_their_summary():
    corpus = pa.ingest.read_corpus(DATA)
    rows = check(corpus)
    # data/'s canonical compactions keep the turns that follow the summary and were written before it (their
    # timestamps earlier than its own): the agent's kept messages are those, and where it kept none, the
    # summarize-everything policies (Claude Code without a version that keeps a segment, Anthropic's server
    # compaction) match, and only there.
    kept = corpus.compactions.select(
        (pl.col("kept_end_seq").cast(pl.Int64) - pl.col("first_kept_seq").cast(pl.Int64)).fill_null(0).alias("kept"))["kept"]
    assert sorted(kept.to_list()) == [0, 0, 6, 14, 18, 24, 146]
    for policy in ("claude-code", "anthropic-compact"):
        mine = rows.filter(pl.col("policy") == policy).sort("cut")
        assert mine["agent_kept_messages"].to_list() == kept.to_list()
        assert mine["exact"].to_list() == (kept == 0).to_list()
    summary = recorded_cut_summary(rows)
    assert summary.filter(pl.col("exact") == pl.col("recorded")).height == 0
    assert (summary["recorded"] == 7).all()


@needs_realdata
def test_pi_whole_turn_matches_both_compactions_pi_recorded():
    rows = check(pa.ingest.read_corpus(REALDATA / "pi-compactions" / "before-compaction.jsonl"))
    own = rows.filter(pl.col("own"))
    assert own.filter(pl.col("policy") == "pi-whole-turn").select("agent_first_kept_seq", "exact").rows() == [
        (289, True), (547, True)]
    # pi's current rule (chars/4, cuts at assistant messages) keeps more, from earlier: the finding in docs/replay.md.
    pi_now = own.filter(pl.col("policy") == "pi")
    assert not pi_now["exact"].any()
    assert (pi_now["kept_start_seq"] < pi_now["agent_first_kept_seq"]).all()


@needs_realdata
@pytest.mark.parametrize("folder", recordings(), ids=lambda p: p.relative_to(REALDATA).as_posix())
def test_every_real_recording(folder):
    corpus = pa.ingest.read_corpus(folder, skip_invalid=True)
    rows = check(corpus)
    formats = set(corpus.sessions["source_format"].cast(pl.String))
    assert set(rows["source_format"].unique()) <= formats


def test_codex_copies_are_matched_by_count_and_size_never_by_a_suffix():
    corpus = pa.ingest.read_corpus(REPO / "tests" / "fixtures" / "codex" / "compacted.jsonl")
    rows = check(corpus)
    copies = corpus.compactions.with_row_index("cut").filter(
        pl.col("first_kept_seq") >= pl.col("trigger_seq"))["cut"].to_list()
    assert copies, "the fixture records a replacement history"
    at_copies = rows.filter(pl.col("cut").is_in(copies))
    copying = ["codex", "openai-compact"]  # the policies that keep copies of user messages
    suffix = at_copies.filter(~pl.col("policy").is_in(copying))
    assert not suffix.filter(pl.col("kept_messages") > 0)["exact"].any()
    codex = at_copies.filter(pl.col("policy").is_in(copying))
    assert codex["exact"].to_list() == ((codex["kept_messages"] == codex["agent_kept_messages"])
                                        & (codex["kept_tokens"] == codex["agent_kept_tokens"])).to_list()


REMOTE = REPO / "tests" / "fixtures" / "codex" / "remote_compacted.jsonl"


def test_the_agent_side_of_a_replacement_history_is_its_user_messages_only():
    # The fixture's replacement history: two user prompts, an assistant item and the opaque compaction item.
    # Codex's kept user messages are compared with the user messages of it, like with like (item 22).
    rows = check(pa.ingest.read_corpus(REMOTE))
    codex = rows.filter(pl.col("policy") == "codex")
    assert codex["agent_kept_messages"].to_list() == [2]


def test_codex_keeps_the_users_prompts_not_its_own_session_prefix_and_matches_a_remote_compaction():
    # AGENTS.md instructions and <environment_context> are user-role items Codex writes itself; its
    # collect_user_messages leaves them out, as the recorded replacement history does (item 21).
    corpus = pa.ingest.read_corpus(REMOTE)
    rows = check(corpus)
    codex = rows.filter(pl.col("policy") == "codex")
    assert codex.select("kept_messages", "exact").rows() == [(2, True)]
    assert codex["kept_tokens"].to_list() == codex["agent_kept_tokens"].to_list()


@pytest.mark.parametrize("path", [REPO / "tests" / "fixtures" / "codex" / "compacted.jsonl", REMOTE, DATA,
                                  REPO / "tests" / "fixtures" / "claude_code" / "preserved.jsonl",
                                  *([REALDATA / "pi-compactions"] if REALDATA.is_dir() else [])],
                         ids=lambda p: p.name)
def test_compactions_and_policy_cuts_agree_on_what_the_agent_kept(path):
    """`compactions` (agent_vs_libpanto) and `policy-cuts` (policies_vs_agents) name the same first kept message
    and count the same kept messages at every compaction. Before, a Codex replacement history counted its
    developer and contextual items in `compactions` (the 39 beside policy-cuts' 21 of issue 29)."""
    corpus = pa.ingest.read_corpus(path, skip_invalid=True)
    libpanto = agent_vs_libpanto(corpus, [20_000]).sort("cut")
    cuts = policies_vs_agents(corpus, ["claude-code"]).sort("cut")
    assert libpanto.height == cuts.height == corpus.compactions.height > 0
    assert libpanto.select("agent_first_kept_seq", "agent_kept_messages").rows() == \
        cuts.select("agent_first_kept_seq", "agent_kept_messages").rows()


def test_the_median_distance_of_two_is_the_mean_of_the_two_not_the_larger():
    rows = pl.DataFrame({"policy": ["pi"] * 2, "source_format": ["pi"] * 2, "own": [True] * 2, "exact": [False] * 2,
                         "distance_messages": [3, 40], "distance_tokens": [100, 9_000]})
    got = recorded_cut_summary(rows).row(0, named=True)
    assert (got["distance_messages_p50"], got["distance_messages_max"]) == (21.5, 40)
    assert (got["distance_tokens_p50"], got["distance_tokens_max"]) == (4_550, 9_000)
