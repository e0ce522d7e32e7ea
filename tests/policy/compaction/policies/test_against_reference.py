"""Every policy's vectorized replay (policy/compaction/any_policy.py) against its literal sequential reference
(reference/policies.py): hand-made cases, then hypothesis-drawn corpora."""
from __future__ import annotations

import dataclasses

import polars as pl
import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings, target
from hypothesis import strategies as st
from replay_sessions import frame_row, growing_sessions

from panto_analytics.frame.schema import MESSAGE_SCHEMA
from panto_analytics.policy.compaction.any_policy import replay_policies
from panto_analytics.policy.compaction.policies import (
    AnthropicCompact,
    ClaudeCode,
    Cline,
    Codex,
    GeminiCli,
    LastNTurns,
    OpenAiCompact,
    Opencode,
    OpenHands,
    Pi,
    PiWholeTurn,
    Policy,
    SummarizeEvery,
)
from reference import policies as ref

EVENT_COLUMNS = ["session_id", "event", "trigger_seq", "context_before", "active_start", "prefix_end", "kept_turns",
                 "kept_tokens", "summarized_tokens", "context_after", "kept_start", "kept_messages", "split_turn"]
SESSION_COLUMNS = ["session_id", "n_compactions", "zero_kept_events", "summarized_tokens", "peak_context", "overflow",
                   "ineffective"]


def frame_of(sessions: dict[str, list[dict]]) -> pl.DataFrame:
    """A message frame straight from rows (no files): the columns the replay reads, the rest null."""
    rows = []
    for sid, msgs in sessions.items():
        for seq, m in enumerate(msgs):
            rows.append({"session_id": sid, "seq": seq, "words": m["serialized_bytes"] // 5, **m})
    versions = [r.pop("agent_version", None) for r in rows]
    frame = pl.DataFrame(rows, schema=MESSAGE_SCHEMA) if rows else pl.DataFrame(schema=MESSAGE_SCHEMA)
    return frame.with_columns(agent_version=pl.Series(versions, dtype=pl.String)) if any(versions) else frame


def settings_of(policy: Policy) -> dict:
    return {f.name: getattr(policy, f.name) for f in dataclasses.fields(policy)}


def check(sessions: dict[str, list[dict]], policy: Policy, *, window: int, summary_tokens: int) -> pl.DataFrame:
    """Replay ``sessions`` under ``policy`` and assert the engine equals the reference on every row."""
    got = replay_policies(frame_of(sessions), [policy], window=window, summary_tokens=summary_tokens)
    assert set(got.events["policy"].to_list()) <= {policy.spec()}
    events, per_session = ref.expected_policy_replay(
        sessions, policy.name, settings_of(policy), threshold=policy.threshold(window), window=window,
        summary_tokens=summary_tokens, from_anchor=policy.from_anchor, limit=policy.token_limit(window))
    as_rows = lambda df, cols: [{**r, "session_id": str(r["session_id"])} for r in df.select(cols).to_dicts()]  # noqa: E731
    assert as_rows(got.events, EVENT_COLUMNS) == events
    assert as_rows(got.sessions, SESSION_COLUMNS) == [r for r in per_session if sessions[r["session_id"]]]
    return got.events


def qa(cums: list[int], size: int = 400) -> list[dict]:
    """Turns of a prompt and an answer reporting a cumulative context of ``cums[i]``."""
    return [m for c in cums for m in (frame_row("user", size), frame_row("assistant", size, c))]


# -- hand-made cases ----------------------------------------------------------------------------------

def test_claude_code_summarizes_everything_at_window_minus_33k():
    events = check({"s": qa([100_000, 150_000, 168_000, 170_000])}, ClaudeCode(), window=200_000, summary_tokens=3_000)
    assert events.select("trigger_seq", "prefix_end", "kept_tokens", "context_after").rows() == [(5, 6, 0, 3_000)]


def test_pi_whole_turn_keeps_turns_from_usage_differences():
    # Calls at 10k, 20k, ..., 190k (seq 1, 3, ..., 37): 190k passes 200k - 16,384 and is 20k past the 170k
    # call, so the call after that one (180k, seq 35) is the last one kept and its turn (seq 34) starts the suffix.
    events = check({"s": qa(list(range(10_000, 200_000, 10_000)))}, PiWholeTurn(), window=200_000, summary_tokens=1_000)
    assert events.select("trigger_seq", "prefix_end", "kept_tokens").rows() == [(37, 34, 20_000)]


def test_pi_whole_turn_starts_no_turn_at_a_bash_execution_and_keeps_the_ones_before_its_cut():
    # Calls at 10k, 20k, ..., 190k as above (the last kept call, 180k, now at seq 38), with two bashExecution
    # messages (the user's `!command`) before the prompt at seq 36 and one after it, at 37: the cut is not at
    # that bash (pi-mono 4227fd59's findTurnBoundaries takes role "user" only) but at the prompt, and the
    # backward scan keeps the two before it, down to the assistant message at seq 33.
    turns = qa(list(range(10_000, 200_000, 10_000)))
    bash = lambda: frame_row("user", 400, bash=True)  # noqa: E731
    session = [*turns[:34], bash(), bash(), turns[34], bash(), *turns[35:]]
    events = check({"s": session}, PiWholeTurn(), window=200_000, summary_tokens=1_000)
    assert events.select("trigger_seq", "prefix_end", "kept_messages").rows() == [(40, 34, 7)]
    # The same session with the bash flags off (every reader but pi's): the user message at 37 starts a turn.
    plain = [{**m, "bash_execution": False} for m in session]
    assert check({"s": plain}, PiWholeTurn(), window=200_000, summary_tokens=1_000) \
        .select("trigger_seq", "prefix_end", "kept_messages").rows() == [(40, 37, 4)]


def test_pi_cuts_inside_a_turn_at_an_assistant_message():
    # One prompt then tool rounds, 4,000 bytes (1,000 tokens) each; calls report 10k, 30k, ...: the first
    # triggers (seq 11, ..., 19) are no-ops (the window holds less than 20k or reaches it only at seq 0); at
    # seq 21 the walk reaches 20k at seq 2, a tool result, so pi cuts at the assistant message after it.
    tools = [frame_row("assistant", 4_000, 10_000 * (i + 1)) if i % 2 == 0 else frame_row("user", 4_000, tool_result=True)
             for i in range(40)]
    events = check({"s": [frame_row("user", 4_000), *tools]}, Pi(), window=120_000, summary_tokens=1_000)
    first = events.row(0, named=True)
    assert first["split_turn"] and first["kept_turns"] == 0
    assert (first["trigger_seq"], first["prefix_end"], first["kept_messages"]) == (21, 3, 19)


def test_codex_keeps_user_messages_and_reads_them_again():
    events = check({"s": qa([100_000, 185_000, 300_000, 370_000], size=40_000)},
                   Codex(), window=200_000, summary_tokens=1_000)
    # 10,000 tokens per prompt: the two newest prompts fill 20,000 at each compaction (above 180,000: seq 3,
    # then seq 7 at 370,000 - 165,000 + 1,000), and the second reads the prompts from the start again.
    assert events.select("trigger_seq", "kept_start", "kept_messages", "kept_tokens").rows() == \
        [(3, 0, 2, 20_000), (7, 4, 2, 20_000)]


def test_gemini_keeps_the_newest_30_percent_and_last_n_turns_the_newest_turns():
    sessions = {"s": qa([20_000, 40_000, 60_000, 80_000, 101_000])}
    g = check(sessions, GeminiCli(), window=200_000, summary_tokens=1_000)
    assert g.select("trigger_seq", "prefix_end").rows() == [(9, 8)]  # 3,200 of 4,000 bytes before seq 8 (>= 70%)
    n = check(sessions, LastNTurns(n=2, reserve=100_000), window=200_000, summary_tokens=1_000)
    assert n.select("trigger_seq", "prefix_end", "kept_turns").rows() == [(9, 6, 2)]


def test_a_noop_cut_is_no_event_and_a_recorded_summary_restarts():
    # pi keeps 20k tokens by chars: these messages are too small, so every cut is a no-op.
    small = qa([170_000, 190_000, 195_000], size=40)
    assert check({"s": small}, Pi(), window=200_000, summary_tokens=1_000).is_empty()
    restarted = [*qa([190_000]), frame_row("system", 40, summary=True), *qa([10_000, 190_000])]
    events = check({"s": restarted}, ClaudeCode(), window=200_000, summary_tokens=1_000)
    assert events["active_start"].to_list() == [0, 3]


def test_claude_code_keeps_a_preserved_segment_by_version():
    # Calls at 10k, 20k, ..., 190k (seq 1, 3, ..., 37); 170k (seq 33) passes 167,000 and triggers.
    session = qa(list(range(10_000, 200_000, 10_000)), size=20_000)
    old = check({"s": [{**m, "agent_version": "2.1.112"} for m in session]}, ClaudeCode(), window=200_000,
                summary_tokens=3_000)
    assert old.select("trigger_seq", "prefix_end", "kept_messages").rows() == [(33, 34, 0)]
    new = check({"s": [{**m, "agent_version": "2.1.185"} for m in session]}, ClaudeCode(), window=200_000,
                summary_tokens=3_000)
    # The precompute line of a 200k window: min(180,000 - 36,000, 167,000) = 144,000, first reached before the
    # 150k call: the 140k call (seq 27) and the 5,000-token prompt after it (20,000 bytes) make 145,000. That
    # call's round and everything after it kept: 7 messages, 40,000 tokens by usage (170k - 130k).
    assert new.select("trigger_seq", "prefix_end", "kept_messages", "kept_tokens").rows() == [(33, 27, 7, 40_000)]
    # Without the precomputed summary (precompute=0) the reactive compaction keeps the trigger's round alone.
    alone = check({"s": [{**m, "agent_version": "2.1.185"} for m in session]}, ClaudeCode(precompute=0),
                  window=200_000, summary_tokens=3_000)
    assert alone.select("prefix_end", "kept_messages").rows() == [(33, 1)]
    # Nor on a window below 200,000 (Claude Code 2.1.185 runs no precomputed summary there): 170k of 190k.
    small = check({"s": [{**m, "agent_version": "2.1.185"} for m in session]}, ClaudeCode(), window=190_000,
                  summary_tokens=3_000)
    assert small.select("trigger_seq", "prefix_end", "kept_messages").rows() == [(31, 31, 1)]
    # Forced: the same session recorded by an unknown version keeps a segment when the version is given.
    forced = check({"s": session}, ClaudeCode(version="2.1.185"), window=200_000, summary_tokens=3_000)
    assert forced.select("prefix_end").rows() == [(27,)]
    assert check({"s": session}, ClaudeCode(), window=200_000, summary_tokens=3_000)["kept_messages"].to_list() == [0]


def test_claude_code_arms_on_the_simulated_context_after_a_compaction():
    # Two compactions on one session (prompts of 100 tokens, too few to arm a round early): after the first (at
    # 170k, seq 33, keeping from the 150k call) the simulated context is the kept rounds plus the summary, so the
    # precompute line is reached later in recorded terms.
    session = [{**m, "agent_version": "2.1.185"} for m in qa(list(range(10_000, 400_000, 10_000)), size=400)]
    events = check({"s": session}, ClaudeCode(), window=200_000, summary_tokens=3_000)
    assert events.select("trigger_seq", "prefix_end").rows()[0] == (33, 29)
    second = events.row(1, named=True)
    # 140,000 summarized and a 3,000-token summary: a recorded c reads c - 137,000. The trigger (past 167,000) is
    # the 310k call (seq 61); the line (144,000) is first reached by the 290k call (seq 57; 280k reads 143,000).
    assert (second["prefix_end"], second["trigger_seq"]) == (57, 61)


def test_server_compactions_keep_nothing_or_every_user_message():
    session = qa([60_000, 120_000, 151_000, 170_000], size=4_000)
    a = check({"s": session}, AnthropicCompact(), window=200_000, summary_tokens=2_000)
    assert a.select("trigger_seq", "prefix_end", "kept_messages", "kept_tokens").rows() == [(5, 6, 0, 0)]
    o = check({"s": session}, OpenAiCompact(trigger_ratio=0.5), window=200_000, summary_tokens=2_000)
    # At 120,000 (past half the window): every user message kept, 2 prompts of 1,000 tokens.
    assert o.select("trigger_seq", "kept_start", "kept_messages", "kept_tokens").rows() == [(3, 0, 2, 2_000)]
    # Codex keeps the newest user messages up to 20,000 tokens; openai-compact all of them.
    big = qa([60_000, 120_000, 130_000], size=60_000)  # 15,000 tokens a prompt
    assert check({"s": big}, OpenAiCompact(trigger_ratio=0.6), window=200_000, summary_tokens=1).select(
        "kept_messages", "kept_tokens").rows() == [(3, 45_000)]
    assert check({"s": big}, Codex(trigger_ratio=0.6), window=200_000, summary_tokens=1).select(
        "kept_messages", "kept_tokens").rows() == [(2, 20_000)]


def test_cline_keeps_the_whole_current_turn():
    # A short first turn, then a prompt (seq 2) and tool rounds of 1,000 tokens each (calls at 10k, 30k, ...):
    # past 162,000 (0.81 of the window) the cuts at seq 19 and 21 are no-ops (20,000 tokens back reach the
    # window's start); at seq 23 they are reached at seq 3, inside the turn, and the cut moves back to its prompt.
    tools = [frame_row("assistant", 4_000, 10_000 * (i + 1)) if i % 2 == 0 else frame_row("user", 4_000, tool_result=True)
             for i in range(40)]
    session = [*qa([5_000], size=400), frame_row("user", 400), *tools]
    events = check({"s": session}, Cline(), window=200_000, summary_tokens=1_000)
    assert events.select("trigger_seq", "prefix_end").rows() == [(23, 2)]


def test_opencode_keeps_whole_turns_then_splits_the_first_that_does_not_fit():
    turns = [m for c in range(10_000, 200_000, 10_000) for m in (
        frame_row("user", 4_000), frame_row("assistant", 20_000, c), frame_row("user", 8_000, tool_result=True),
        frame_row("assistant", 4_000, c + 5_000))]
    events = check({"s": turns}, Opencode(), window=200_000, summary_tokens=1_000)
    # 1,000 + 5,000 + 2,000 + 1,000 = 9,000 tokens a turn. The first trigger, past 148,000 at seq 57, has the newest
    # turn half done (6,000 tokens): it and the whole turn before it fit 15,000 exactly, nothing is left to split
    # the next one: kept from seq 52.
    assert events.select("trigger_seq", "prefix_end", "kept_messages").row(0) == (57, 52, 6)
    # Triggered one call later (a trigger of 152,000: seq 59), the newest turn is whole (9,000), 6,000 are left
    # for the turn before it, whose steps start at its answers: from seq 53 (8,000 tokens to the turn's end) it does not fit, from seq 55
    # (1,000) it does: a split turn (seq 54, a tool result, is no step of its own).
    late = check({"s": turns}, Opencode(max_output=28_000), window=200_000, summary_tokens=1_000)
    assert late.select("trigger_seq", "prefix_end", "kept_messages").row(0) == (59, 55, 5)


def test_openhands_counts_events_and_summarize_every_counts_turns():
    session = qa([1_000 * (i + 1) for i in range(50)], size=400)
    events = check({"s": session}, OpenHands(), window=200_000, summary_tokens=500)
    # 81 events at seq 80: the first 4 and the newest 35 kept (from seq 46), the middle summarized.
    assert events.select("trigger_seq", "prefix_end", "kept_messages").row(0) == (81, 47, 39)
    every = check({"s": session}, SummarizeEvery(), window=200_000, summary_tokens=500)
    # 31 turns (answers) at seq 61: the first 21 summarized, the kept part starts at the 22nd answer (seq 43).
    assert every.select("trigger_seq", "prefix_end", "kept_messages").row(0) == (61, 43, 19)


def test_openhands_token_trigger():
    session = qa([20_000, 90_000, 120_000, 130_000], size=400)
    events = check({"s": session}, OpenHands(), window=100_000, summary_tokens=500)
    # 120,000 (seq 5) passes the 100,000 window: the tail kept is what stays within 50,000 (from seq 4, after the
    # 90,000 call), past the first 4 events.
    assert events.select("trigger_seq", "prefix_end", "kept_messages").row(0) == (5, 4, 6)


# -- hypothesis -------------------------------------------------------------------------------------------

@st.composite
def sessions_strategy(draw) -> dict[str, list[dict]]:
    """:func:`growing_sessions` of every kind, a summary resetting the context, each session of a Claude Code
    version drawn (or none)."""
    sessions = draw(growing_sessions(["user", "user", "bash", "tool", "assistant", "assistant", "system", "summary"],
                                     summary_roles=("system", "user"), summary_resets=True))
    versions = [draw(st.sampled_from([None, "2.1.112", "2.1.185", "2.1.152", "2.1.153"])) for _ in sessions]
    return {sid: [{**m, "agent_version": v} for m in msgs] if v is not None else msgs
            for (sid, msgs), v in zip(sessions.items(), versions, strict=True)}


policies = st.one_of(
    st.builds(Pi, reserve_tokens=st.integers(0, 2_000), keep_recent_tokens=st.integers(0, 3_000)),
    st.builds(PiWholeTurn, reserve_tokens=st.integers(0, 2_000), keep_recent_tokens=st.integers(0, 6_000)),
    st.builds(Codex, trigger_ratio=st.sampled_from([0.5, 0.9]), user_tokens=st.integers(0, 2_000)),
    st.builds(ClaudeCode, output_reserve=st.integers(0, 1_000), buffer=st.integers(0, 1_000)),
    st.builds(GeminiCli, threshold_ratio=st.sampled_from([0.3, 0.5]), preserve=st.sampled_from([0.3, 0.5, 0.7])),
    st.builds(LastNTurns, n=st.integers(1, 3), reserve=st.integers(0, 2_000)),
    st.builds(ClaudeCode, output_reserve=st.integers(0, 1_000), buffer=st.integers(0, 1_000),
              version=st.sampled_from(["", "", "2.1.185", "2.1.22"]), precompute=st.sampled_from([0.0, 0.2, 0.5]),
              precompute_from=st.sampled_from([0, 8_000, 200_000])),
    st.builds(AnthropicCompact, trigger=st.integers(50_000, 50_000)),
    st.builds(OpenAiCompact, trigger_ratio=st.sampled_from([0.5, 0.9])),
    st.builds(Cline, trigger_ratio=st.sampled_from([0.5, 0.9]), preserve_recent_tokens=st.integers(0, 3_000)),
    st.builds(Opencode, max_output=st.integers(0, 1_000), buffer=st.integers(0, 1_000),
              preserve_recent_tokens=st.integers(0, 3_000)),
    st.builds(OpenHands, max_size=st.integers(1, 12), keep_first=st.integers(0, 4),
              max_tokens_ratio=st.sampled_from([0.5, 1.0])),
    st.builds(SummarizeEvery, n=st.integers(1, 5), keep=st.integers(0, 4)),
)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(sessions=sessions_strategy(), policy=policies, window=st.integers(3_000, 12_000),
       summary_tokens=st.integers(0, 1_500))
def test_engine_equals_reference(sessions, policy, window, summary_tokens):
    events = check(sessions, policy, window=window, summary_tokens=summary_tokens)
    target(float(events.height))  # steer the search toward corpora with many compactions


@pytest.mark.parametrize("spec", ["pi", "pi-whole-turn", "codex", "claude-code", "gemini-cli", "last-n-turns:n=3",
                                  "anthropic-compact", "openai-compact", "cline", "opencode", "openhands",
                                  "summarize-every"])
def test_several_policies_in_one_call_equal_each_alone(spec):
    sessions = {"a": qa(list(range(10_000, 200_000, 7_000))), "b": qa([190_000, 60_000, 199_000])}
    both = replay_policies(frame_of(sessions), ["libpanto", spec], window=200_000, summary_tokens=2_000)
    alone = replay_policies(frame_of(sessions), [spec], window=200_000, summary_tokens=2_000)
    assert both.events.filter(pl.col("policy") == spec.replace(":n=3", ":n=3")).equals(alone.events)
    assert both.events["policy"].unique(maintain_order=True).to_list()[0] == "libpanto"


def test_the_drawn_corpora_do_compact():
    """The property test is only as good as its corpora: make sure a fixed draw fires events under every policy."""
    sessions = {"s": qa(list(range(1_000, 40_000, 1_500)), size=2_000)}
    for policy in (Pi(reserve_tokens=500, keep_recent_tokens=1_000), PiWholeTurn(reserve_tokens=500, keep_recent_tokens=3_000),
                   Codex(user_tokens=1_000), ClaudeCode(output_reserve=500, buffer=500), GeminiCli(),
                   LastNTurns(n=2, reserve=500), ClaudeCode(output_reserve=500, buffer=500, version="2.1.185",
                                                            precompute_from=0), OpenAiCompact(), Cline(),
                   Opencode(max_output=500, buffer=500, preserve_recent_tokens=1_500), OpenHands(max_size=10),
                   SummarizeEvery(n=3, keep=2)):
        assert check(sessions, policy, window=8_000, summary_tokens=500).height >= 2, policy


def test_libpanto_in_a_policy_replay_is_todays_replay():
    from conftest import DATA

    import panto_analytics as pa

    messages = pa.read_sessions(DATA)
    plain = pa.replay(messages, [2_000, 20_000], window=24_000, reserve=4_000, summary_tokens=300)
    named = pa.replay(messages, [2_000, 20_000], window=24_000, reserve=4_000, summary_tokens=300, policy="libpanto")
    assert not plain.events.is_empty()
    assert named.events.drop("policy", "kept_start", "kept_messages", "split_turn").equals(plain.events)
    assert named.sessions.drop("policy").equals(plain.sessions)
    assert set(named.events["policy"]) == {"libpanto:reserve=4000"}  # the spec names what differs from the defaults
    # kept_start: the first kept message when a turn is kept, else null.
    assert named.events.select((pl.col("kept_start").is_null() == (pl.col("kept_turns") == 0)).all()).item()
