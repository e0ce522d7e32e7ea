"""The replay starts from what an agent recorded: after a recorded anchor, the agent's kept block (recorded
before its compaction record, as pi writes it) is no growth and no trigger (policy/compaction/engine.py's rules)."""
from __future__ import annotations

import dataclasses
import random
import tempfile
from pathlib import Path

import polars as pl
import pytest
from conftest import REALDATA, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from replay_sessions import growing_sessions
from strategies import conversations, random_conversation

import panto_analytics as pa
from panto_analytics.frame import expressions
from panto_analytics.frame.schema import MESSAGE_SCHEMA
from panto_analytics.policy.compaction.engine import recorded_before_anchor
from panto_analytics.policy.compaction.policies import POLICIES, PiWholeTurn, parse_policy
from reference import policies as refp
from reference import replay as rr
from reference.port import write_session

PI_COMPACTIONS = REALDATA / "pi-compactions" / "before-compaction.jsonl"
SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]
EVENT_COLUMNS = ["session_id", "budget", "event", "trigger_seq", "context_before", "active_start", "prefix_end",
                 "kept_turns", "kept_tokens", "summarized_tokens", "context_after"]
SESSION_COLUMNS = ["session_id", "budget", "n_compactions", "zero_kept_events", "summarized_tokens", "peak_context",
                   "overflow", "ineffective"]
P_EVENTS = ["session_id", "event", "trigger_seq", "context_before", "active_start", "prefix_end", "kept_turns",
            "kept_tokens", "summarized_tokens", "context_after", "kept_start", "kept_messages", "split_turn"]
P_SESSIONS = ["session_id", "n_compactions", "zero_kept_events", "summarized_tokens", "peak_context", "overflow",
              "ineffective"]


def literal_recorded_before(rows: list[dict]) -> list[bool]:
    """The rule, walked: after each summary, the run of rows of its file with a lower line."""
    out = [False] * len(rows)
    for k, anchor in enumerate(rows):
        if not anchor["has_summary"]:
            continue
        j = k + 1
        while j < len(rows) and refp.recorded_before(anchor, rows[j]):
            out[j] = True
            j += 1
    return out


def with_kept_blocks(frame: pl.DataFrame, rng: random.Random) -> pl.DataFrame:
    """Give each recorded summary a kept block: its line moved past the next 0-6 rows of its session, as pi
    writes its compaction record after the entries it keeps."""
    lines = frame["line"].to_list()
    sids, summary = frame["session_id"].to_list(), frame["has_summary"].to_list()
    for i, is_summary in enumerate(summary):
        if not is_summary:
            continue
        m = rng.randint(0, 6)
        j = i
        while j + 1 < len(lines) and j - i < m and sids[j + 1] == sids[i] and not summary[j + 1]:
            j += 1
        lines[i] = lines[j] + 1 if j > i else lines[i]
    return frame.with_columns(line=pl.Series(lines, dtype=pl.UInt32))


def test_the_rule_marks_the_rows_a_literal_walk_marks():
    rng = random.Random(3)
    with tempfile.TemporaryDirectory() as folder:
        for i in range(12):
            write_session(Path(folder) / f"s{i}.jsonl", random_conversation(rng, rng.randint(0, 60)))
        frame = with_kept_blocks(pa.read_sessions([folder]), rng)
    got = frame.select(recorded_before_anchor(frame.columns)).to_series().to_list()
    assert got == literal_recorded_before(frame.to_dicts())
    assert any(got), "the draw must give some kept block"


@settings(max_examples=examples(40), deadline=None, suppress_health_check=SLOW_OK)
@given(sessions=st.lists(conversations(), min_size=1, max_size=4), seed=st.integers(0, 1000),
       window=st.integers(2_000, 40_000), budgets=st.lists(st.integers(0, 6_000), min_size=1, max_size=3))
def test_replay_equals_the_reference_with_kept_blocks(sessions, seed, window, budgets):
    rng = random.Random(seed)
    by_id = {f"s{i}": msgs for i, msgs in enumerate(sessions)}
    with tempfile.TemporaryDirectory() as folder:
        for sid, msgs in by_id.items():
            write_session(Path(folder) / f"{sid}.jsonl", msgs)
        frame = with_kept_blocks(pa.read_sessions([folder]), rng)
    flags = frame.with_columns(k=recorded_before_anchor(frame.columns)).partition_by("session_id", as_dict=True)
    kept = {str(k[0]): f["k"].to_list() for k, f in flags.items()}
    reserve = window // 4
    got = pa.replay(frame, budgets, window=window, reserve=reserve, summary_tokens=300)
    events, per_session = rr.expected_replay(by_id, budgets, window=window, reserve=reserve, summary_tokens=300,
                                             recorded_before=kept)
    key = lambda r: (r["session_id"], r["budget"], r.get("event", 0))  # noqa: E731
    assert sorted(as_rows(got.events, EVENT_COLUMNS), key=key) == sorted(events, key=key)
    assert sorted(as_rows(got.sessions, SESSION_COLUMNS), key=key) == sorted(
        (r for r in per_session if by_id[r["session_id"]]), key=key)


def as_rows(df: pl.DataFrame, cols: list[str]) -> list[dict]:
    return [{**r, "session_id": str(r["session_id"])} for r in df.select(cols).to_dicts()]


@st.composite
def row_sessions(draw) -> dict[str, list[dict]]:
    """Message-frame rows with lines: each recorded summary takes a drawn kept block after it (its line past
    theirs), whose calls report the context before the compaction."""
    out = draw(growing_sessions(["user", "user", "tool", "assistant", "assistant", "summary"]))
    for s, msgs in enumerate(out.values()):
        lines = list(range(1, len(msgs) + 1))
        for i, m in enumerate(msgs):
            block = draw(st.integers(0, 5)) if m["has_summary"] else 0
            j = min(i + block, len(msgs) - 1)
            while j > i and any(x["has_summary"] for x in msgs[i + 1:j + 1]):
                j -= 1
            lines[i] = lines[j] + 1 if j > i else lines[i]
        for m, line in zip(msgs, lines, strict=True):
            m["line"], m["file"] = line, f"f{s}"
    return out


@settings(max_examples=examples(120), deadline=None, suppress_health_check=SLOW_OK)
@given(sessions=row_sessions(), window=st.integers(3_000, 12_000), summary_tokens=st.integers(0, 1_500),
       policy=st.sampled_from([PiWholeTurn(reserve_tokens=800, keep_recent_tokens=2_000),
                               parse_policy("pi:reserve_tokens=800,keep_recent_tokens=1000"),
                               parse_policy("claude-code:output_reserve=500,buffer=500"), parse_policy("gemini-cli"),
                               parse_policy("codex:user_tokens=1000")]))
def test_policy_replay_equals_the_reference_with_kept_blocks(sessions, window, summary_tokens, policy):
    rows = [{"session_id": sid, "seq": i, "words": m["serialized_bytes"] // 5, **m}
            for sid, msgs in sessions.items() for i, m in enumerate(msgs)]
    frame = pl.DataFrame(rows, schema=MESSAGE_SCHEMA) if rows else pl.DataFrame(schema=MESSAGE_SCHEMA)
    got = pa.replay(frame, [], window=window, summary_tokens=summary_tokens, policy=[policy])
    events, per_session = refp.expected_policy_replay(
        sessions, policy.name, {f.name: getattr(policy, f.name) for f in dataclasses.fields(policy)},
        threshold=policy.threshold(window), window=window, summary_tokens=summary_tokens,
        from_anchor=policy.from_anchor)
    assert as_rows(got.events, P_EVENTS) == events
    assert as_rows(got.sessions, P_SESSIONS) == [r for r in per_session if sessions[r["session_id"]]]


# -- the real pi recording ------------------------------------------------------------------------------

needs_pi = pytest.mark.skipif(not PI_COMPACTIONS.is_file(), reason=f"{PI_COMPACTIONS} is not there")


@needs_pi
def test_kept_blocks_are_the_ones_pi_recorded():
    corpus = pa.ingest.read_corpus([PI_COMPACTIONS])
    m = corpus.messages
    kept = m.filter(recorded_before_anchor(m.columns))["seq"].to_list()
    want = [s for a, t in corpus.compactions.select("anchor_seq", "trigger_seq").rows() for s in range(a + 1, t)]
    assert kept == want and len(kept) == 66 + 77


@needs_pi
def test_no_policy_fires_inside_a_block_pi_kept():
    corpus = pa.ingest.read_corpus([PI_COMPACTIONS])
    blocks = corpus.compactions.select("anchor_seq", "trigger_seq").rows()
    r = pa.replay(corpus.messages, [8_000, 20_000, 50_000], window=200_000, policy=list(POLICIES))
    inside = r.events.filter(pl.any_horizontal(*[pl.col("trigger_seq").is_between(a + 1, t - 1) for a, t in blocks]))
    assert inside.is_empty(), inside.select("policy", "budget", "trigger_seq", "context_before")
    # Before the change, claude-code fired at seq 318 and 576 and libpanto at 623 (pi's own tokens_before).
    assert r.events.filter(pl.col("policy") == "claude-code")["trigger_seq"].to_list() == [981]


@needs_pi
def test_pis_own_policy_fires_only_where_pi_compacted_by_itself():
    """pi wrote this file at pi-mono bd0d0676 (2025-12-08; compaction.ts: ``DEFAULT_COMPACTION_SETTINGS``
    reserveTokens 16,384, keepRecentTokens 20,000, the whole-turn cut; ``shouldCompact``: contextTokens >
    contextWindow - reserveTokens, checked after every assistant message in tui-renderer.ts) with
    claude-opus-4-5, whose contextWindow in pi-ai's models.generated.ts is 200,000: its trigger is 183,616.

    Over the whole recording that rule holds at one call only: seq 623 (185,014 tokens), the call right
    before pi's second compaction. The first compaction (tokensBefore 175,004) is below it: a manual
    ``/compact`` (its record comes 80 s after an assistant message that ended the turn, the second 21 s after
    the call that triggered it). The replay, which starts from pi's own context after each of them, fires
    nowhere.
    """
    corpus = pa.ingest.read_corpus([PI_COMPACTIONS])
    m = corpus.messages
    pi = PiWholeTurn()  # the defaults of pi at that version
    threshold = pi.threshold(200_000)
    assert threshold == 183_616
    calls = m.with_columns(cum=expressions.assistant_cumulative()).filter(pl.col("cum").is_not_null())
    over = calls.filter(pl.col("cum") > threshold)["seq"].to_list()
    triggers = [t - 1 for t in corpus.compactions["trigger_seq"].to_list()]  # the last call before each record
    assert triggers == [354, 623] and over == [623]
    assert corpus.compactions["tokens_before"].to_list() == [175_004, 185_014]
    r = pa.replay(m, [], window=200_000, policy=[pi])
    assert r.events.is_empty() and r.sessions["n_compactions"].to_list() == [0]
    # The peak the replay sees is the agent's context outside its kept blocks, below the trigger.
    assert r.sessions["peak_context"].item() < threshold
