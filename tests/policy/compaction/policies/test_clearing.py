"""The clearing policies (policy/compaction/clearing_replay.py) against their literal reference (reference/clearing.py):
hand-made cases, then hypothesis-drawn corpora: events, sessions and every call's usage as billed."""
from __future__ import annotations

import datetime as dt

import polars as pl
import pytest
from conftest import REALDATA
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import panto_analytics as pa
from panto_analytics.frame.schema import MESSAGE_SCHEMA
from panto_analytics.policy.compaction.any_policy import replay_policies
from panto_analytics.policy.compaction.clearing_replay import cleared_usage, replay_clearing
from panto_analytics.policy.compaction.policies import (
    ClaudeCode,
    ClaudeCodeMicrocompact,
    ClaudeCodeTimeMicrocompact,
    ClearToolUses,
    LastNTurns,
    ObservationMasking,
    OpenclawCacheTtl,
    OpencodePrune,
    Pi,
    parse_policy,
)
from panto_analytics.policy.compaction.policies.clearing import Clearing
from reference import cache_ttl as ttl_ref
from reference import clearing as ref
from reference import policies as policy_ref

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

EVENT_COLUMNS = ["session_id", "event", "trigger_seq", "context_before", "active_start", "prefix_end", "kept_turns",
                 "kept_tokens", "summarized_tokens", "context_after", "kept_start", "kept_messages", "cleared_calls",
                 "cleared_tokens"]
SESSION_COLUMNS = ["session_id", "n_compactions", "zero_kept_events", "summarized_tokens", "peak_context", "overflow",
                   "ineffective"]


def frame_of(sessions: dict[str, list[dict]]) -> pl.DataFrame:
    """A message frame straight from rows: the columns the replay and the bill read, the rest null."""
    rows = [{"session_id": sid, "seq": seq, "words": 1, "serialized_bytes": 4, "bash_execution": False, **m}
            for sid, msgs in sessions.items() for seq, m in enumerate(msgs)]
    return pl.DataFrame(rows, schema=MESSAGE_SCHEMA) if rows else pl.DataFrame(schema=MESSAGE_SCHEMA)


def msg(role: str, *, read: int = 0, write: int = 0, inp: int | None = None, calls: list[tuple[str, int | None]] = (),
        tool_result: bool = False, summary: bool = False, model: str = "m", w1h: int = 0, line: int | None = None,
        minute: int | None = None) -> dict:
    """A message: an assistant call with usage (``inp``, ``read``, ``write``; output 10) and tool ``calls``
    (kind, result tokens), or a prompt / tool result / summary."""
    usage = ({"input": inp, "output": 10, "cache_read": read, "cache_write": write, "cache_write_1h": min(w1h, write)}
             if inp is not None else {"input": None, "output": None, "cache_read": None, "cache_write": None,
                                      "cache_write_1h": None})
    refs = [{"call": k, "key": k + 1, "kind": kind, "file": kind == "read", "tokens": tokens}
            for k, (kind, tokens) in enumerate(calls)] or None
    return {"role": role, "has_tool_result": tool_result, "has_summary": summary, "model": model, "refs": refs,
            "line": line, "file": "f", "timestamp": None if minute is None else T0 + dt.timedelta(minutes=minute),
            **usage}


def rule_of(policy: Clearing) -> dict:
    return policy.rule()._asdict()


def expected(sessions: dict[str, list[dict]], policy: Clearing, *, window: int):
    """The literal reference's events, sessions and usage for ``policy``."""
    if isinstance(policy, OpenclawCacheTtl):
        settings = {f: getattr(policy, f) for f in policy.__dataclass_fields__}
        return ttl_ref.expected_cache_ttl(sessions, settings, window=window)
    return ref.expected_clearing(sessions, rule_of(policy), window=window)


def check(sessions: dict[str, list[dict]], policy: Clearing, *, window: int = 1_000_000) -> pl.DataFrame:
    """``policy``'s replay and usage equal the reference's on every row; returns the events."""
    frame = frame_of(sessions)
    got = replay_clearing(frame, policy, window=window)
    events, per_session, usage = expected(sessions, policy, window=window)
    as_rows = lambda df, cols: [{**r, "session_id": str(r["session_id"])} for r in df.select(cols).to_dicts()]  # noqa: E731
    assert as_rows(got.events, EVENT_COLUMNS) == events
    assert as_rows(got.sessions, SESSION_COLUMNS) == per_session
    edited, _ = cleared_usage(frame, policy, window=window)
    calls = edited.filter(pl.col("input").is_not_null() & (pl.col("role") == "assistant"))
    got_usage = {(str(r["session_id"]), r["seq"]): {c: r[c] for c in ("input", "cache_read", "cache_write", "cache_write_1h")}
                 for r in calls.to_dicts()}
    assert got_usage == usage
    return got.events


def work(n: int, size: int = 1_000, start: int = 5_000, step: int = 2_000) -> list[dict]:
    """A prompt, then ``n`` calls each reading a file of ``size`` tokens and its result; the calls' prompts grow
    by ``step`` and each reads back what the previous one wrote."""
    out = [msg("user")]
    prompt = start
    for k in range(n):
        out.append(msg("assistant", inp=10, read=prompt - 10 - (step if k else 0), write=step if k else 0,
                       calls=[("read", size)]))
        out.append(msg("user", tool_result=True))
        prompt += step
    return out


# -- hand-made cases ----------------------------------------------------------------------------------------

def test_masking_keeps_the_newest_m_results_at_every_call():
    events = check({"s": work(6)}, ObservationMasking(m=2))
    # Calls at seq 1, 3, ..., 11: the call at seq 7 is the first with three results before it.
    assert events["trigger_seq"].to_list() == [7, 9, 11]
    assert events["cleared_calls"].to_list() == [1, 2, 3]
    assert events["cleared_tokens"].to_list() == [1_000 - 9, 2 * (1_000 - 9), 3 * (1_000 - 9)]


def test_clear_tool_uses_waits_for_its_trigger_and_its_minimum():
    sessions = {"s": work(8)}
    # Prompts 5k, 7k, ..., 19k: past 12k from the call at seq 9 (15k).
    assert check(sessions, ClearToolUses(trigger=12_000, keep=3))["trigger_seq"].to_list() == [9, 11, 13, 15]
    # At least 3,000 tokens (of results, before placeholders): three results older than the newest three, from the
    # call at seq 13.
    assert check(sessions, ClearToolUses(trigger=12_000, keep=3, clear_at_least=3_000))["trigger_seq"].to_list() == [13, 15]
    # Reads excluded: nothing is cleared.
    assert check(sessions, ClearToolUses(trigger=0, keep=0, exclude="read")).is_empty()


def test_an_edit_rewrites_the_cache_from_the_first_block_it_changes():
    frame = frame_of({"s": work(6)})
    edited, _ = cleared_usage(frame, ObservationMasking(m=2))
    calls = edited.filter(pl.col("input").is_not_null())
    recorded = frame.filter(pl.col("input").is_not_null())
    # Before the first edit (seq 7) every call is as recorded.
    assert calls.head(3).select("input", "cache_read", "cache_write").equals(
        recorded.head(3).select("input", "cache_read", "cache_write"))
    # At the first edit, the cache holds only the prefix before the first cleared result (the first call's
    # context, 5,010 tokens): the rest of the smaller prompt is written again.
    first = calls.row(3, named=True)
    assert first["cache_read"] == 5_010 and first["cache_write"] == 11_000 - 10 - 991 - 5_010
    # The cost of masking: every later call rewrites from its newly masked result.
    assert (calls.tail(3)["cache_write"] > recorded.tail(3)["cache_write"]).all()


def test_the_time_based_microcompact_fires_after_an_hour_idle_and_what_it_cleared_stays_cleared():
    # Calls a minute apart, then two hours idle before the call at seq 11, then a minute apart again.
    s = work(8)
    for i, m in enumerate(s):
        m["timestamp"] = T0 + dt.timedelta(minutes=i + (120 if i >= 11 else 0))
    events = check({"s": s}, ClaudeCodeTimeMicrocompact(keep=2))
    assert events["trigger_seq"].to_list() == [11]          # five results before it, the newest two kept
    assert events["cleared_calls"].to_list() == [3]
    calls = replay_clearing(frame_of({"s": s}), ClaudeCodeTimeMicrocompact(keep=2), window=10**6).calls
    assert calls.filter(pl.col("seq") >= 11)["cleared"].to_list() == [3, 3, 3]   # kept cleared, no new ones
    # The call after the idle gap re-reads nothing anyway (its cache expired): the edit costs it no extra write.
    s[11]["cache_read"], s[11]["cache_write"] = 0, s[11]["cache_read"] + s[11]["cache_write"]
    edited, _ = cleared_usage(frame_of({"s": s}), ClaudeCodeTimeMicrocompact(keep=2))
    after = edited.row(11, named=True)
    assert after["cache_read"] == 0 and after["cache_write"] == s[11]["cache_write"] - 3 * (1_000 - 9)


def idle(session: list[dict], gaps: dict[int, int]) -> list[dict]:
    """``session`` timed a minute a message, with ``gaps[i]`` more minutes before message ``i``."""
    minute = 0
    for i, m in enumerate(session):
        minute += 1 + gaps.get(i, 0)
        m["timestamp"] = T0 + dt.timedelta(minutes=minute)
    return session


def test_openclaw_trims_after_the_ttl_then_clears_past_half_the_window_and_keeps_its_projection():
    # Calls reading 5,000-token files (over 4,000 characters: trimmed to 772), prompts 5k, 7k, ..., 25k; the cache
    # expires (10 minutes idle) before the calls at seq 9 (13k) and 15 (19k).
    s = idle(work(11, size=5_000), {9: 10, 15: 10})
    trims = check({"s": s}, OpenclawCacheTtl(min_prunable=10**9), window=40_000)
    # At seq 9 the context (13k) is past 0.3 of 40k: the results older than the last three assistant messages
    # (seq 3, 5, 7), the call at seq 1's, is trimmed; at seq 15 (19k less what was trimmed) those of seq 1 to 7.
    assert trims.select("trigger_seq", "cleared_calls").rows() == [(9, 0), (15, 0)]
    assert trims["cleared_tokens"].to_list() == [1 * (5_000 - 772), 4 * (5_000 - 772)]
    calls = replay_clearing(frame_of({"s": s}), OpenclawCacheTtl(min_prunable=10**9), window=40_000).calls
    assert calls.filter(pl.col("seq") > 15)["cleared"].to_list() == [4] * 3       # the projection stays
    # Under a 12k window the call at seq 9 is still past half of it once it trimmed (13k - 4,228): the trimmed
    # result (772 tokens, above min_prunable) is cleared, and the context is still past half: nothing else to clear.
    clears = check({"s": s}, OpenclawCacheTtl(min_prunable=500), window=12_000)
    assert clears.row(0, named=True)["cleared_calls"] == 1 and clears.row(0, named=True)["cleared_tokens"] == 5_000 - 9
    # No idle gap of 5 minutes: nothing is pruned, the bill is the recording's.
    s = idle(work(11, size=5_000), {})
    assert check({"s": s}, OpenclawCacheTtl(), window=24_000).is_empty()
    edited, _ = cleared_usage(frame_of({"s": s}), OpenclawCacheTtl(), window=24_000)
    assert edited.equals(frame_of({"s": s}))


def test_openclaw_pruning_after_the_cache_expired_writes_no_more_than_the_recording():
    s = idle(work(11, size=5_000), {9: 10})
    # The call after the idle gap read nothing from the cache, as after an expiry: it wrote its whole prompt.
    s[9]["cache_read"], s[9]["cache_write"] = 0, s[9]["cache_read"] + s[9]["cache_write"]
    check({"s": s}, OpenclawCacheTtl(), window=40_000)
    edited, _ = cleared_usage(frame_of({"s": s}), OpenclawCacheTtl(), window=40_000)
    at = edited.row(9, named=True)
    assert at["cache_read"] == 0 and at["cache_write"] == s[9]["cache_write"] - (5_000 - 772)


def test_nothing_cleared_leaves_every_call_as_recorded():
    frame = frame_of({"s": work(4), "t": work(2)})
    for policy in (ClearToolUses(), ClaudeCodeMicrocompact(), OpencodePrune(), ObservationMasking(m=50),
                   OpenclawCacheTtl()):
        edited, _ = cleared_usage(frame, policy, window=200_000)
        assert edited.equals(frame)


def test_opencode_protects_the_last_two_turns_and_the_newest_40k_tokens():
    turns = [m for _ in range(4) for m in [*work(3, size=12_000, start=5_000, step=12_000), msg("assistant")]]
    events = check({"s": turns}, OpencodePrune())
    assert not events.is_empty()
    check({"s": turns}, OpencodePrune(protect=15_000, minimum=5_000, protect_turns=1))


def test_a_recorded_summary_starts_a_new_context_and_its_kept_block_is_not_edited():
    s = work(4) + [msg("user", summary=True, line=100), msg("user", line=50),
                   msg("assistant", inp=10, read=0, write=3_000, calls=[("read", 500)], line=51)] + work(4)[1:]
    events = check({"s": s}, ObservationMasking(m=1))
    # The summary is at seq 9: the edits after it count only the results after it.
    assert set(events["active_start"]) == {0, 10}


def test_policies_parse_and_are_named_by_their_settings():
    assert parse_policy("clear-tool-uses:trigger=50k,exclude=write/run").spec() == \
        "clear-tool-uses:trigger=50000,exclude=write/run"
    assert parse_policy("observation-masking:m=10").spec() == "observation-masking"
    with pytest.raises(ValueError, match="unknown tool kind 'bogus'"):
        parse_policy("clear-tool-uses:exclude=bogus")
    with pytest.raises(ValueError, match="clear_tool_inputs must be in"):
        parse_policy("clear-tool-uses:clear_tool_inputs=2")


def test_a_policy_replay_carries_the_clearing_columns_only_with_a_clearing_policy():
    frame = frame_of({"s": work(6)})
    mixed = replay_policies(frame, ["pi:reserve_tokens=2k,keep_recent_tokens=2", "observation-masking:m=2"],
                            window=12_000, summary_tokens=100)
    pi = mixed.events.filter(pl.col("policy") == "pi:reserve_tokens=2000,keep_recent_tokens=2")
    assert pi.height > 0 and pi["cleared_calls"].null_count() == pi.height
    assert mixed.events.filter(pl.col("policy") == "observation-masking:m=2")["cleared_calls"].null_count() == 0
    assert "cleared_calls" not in replay_policies(frame, ["pi:reserve_tokens=2k"], window=12_000,
                                                  summary_tokens=100).events.columns


# -- drawn corpora ------------------------------------------------------------------------------------------

@st.composite
def sessions_strategy(draw) -> dict[str, list[dict]]:
    out = {}
    for s in range(draw(st.integers(1, 3))):
        msgs: list[dict] = []
        prompt = draw(st.integers(0, 3_000))
        line = 0
        minute = 0
        timed = draw(st.booleans())
        for _ in range(draw(st.integers(0, 30))):
            line += 1
            minute += draw(st.sampled_from([0, 1, 30, 61, 130]))
            kind = draw(st.sampled_from(["user", "call", "call", "tool", "assistant", "system", "summary"]))
            model = draw(st.sampled_from(["m", "m", "h"]))
            if kind == "call":
                prompt = max(prompt + draw(st.integers(-500, 3_000)), 0)
                inp = draw(st.integers(0, min(prompt, 400)))
                read = draw(st.integers(0, prompt - inp))
                calls = draw(st.lists(st.tuples(st.sampled_from(["read", "write", "run", "fetch", "other"]),
                                                st.one_of(st.none(), st.integers(0, 1_500))), max_size=3))
                msgs.append(msg("assistant", inp=inp, read=read, write=prompt - inp - read, calls=calls, model=model,
                                w1h=draw(st.sampled_from([0, 0, 10_000])), line=line, minute=minute if timed else None))
            elif kind == "assistant":
                msgs.append(msg("assistant", calls=draw(st.lists(st.tuples(st.just("read"), st.integers(0, 900)),
                                                                 max_size=1)), line=line, minute=minute if timed else None))
            elif kind == "summary":
                msgs.append(msg("user", summary=True, line=line + draw(st.sampled_from([0, 3]))))
                prompt = draw(st.integers(0, 2_000))
            else:
                msgs.append(msg("system" if kind == "system" else "user", tool_result=kind == "tool", line=line))
        out[f"s{s}"] = msgs
    return out


openclaw_policies = st.builds(
    OpenclawCacheTtl, ttl=st.sampled_from([1, 5, 60]), soft_ratio=st.sampled_from([0.05, 0.3, 0.6]),
    hard_ratio=st.sampled_from([0.1, 0.5, 1.0]), min_prunable=st.integers(0, 3_000), keep_assistants=st.integers(1, 3),
    hard_clear=st.integers(0, 1), exclude=st.sampled_from(["", "write", "read/run"]))

policies = st.one_of(
    st.builds(ClearToolUses, trigger=st.integers(0, 8_000), keep=st.integers(0, 4), clear_at_least=st.integers(0, 2_000),
              exclude=st.sampled_from(["", "write", "read/run", "other"]), clear_tool_inputs=st.integers(0, 1)),
    st.builds(ObservationMasking, m=st.integers(0, 5)),
    st.builds(ClaudeCodeTimeMicrocompact, gap_minutes=st.sampled_from([1, 60]), keep=st.integers(0, 5)),
    st.builds(OpencodePrune, protect=st.integers(0, 3_000), minimum=st.integers(0, 1_500), protect_turns=st.integers(0, 3)),
    openclaw_policies,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sessions=sessions_strategy(), policy=policies, window=st.integers(1_000, 20_000))
def test_engine_equals_reference(sessions, policy, window):
    check(sessions, policy, window=window)


@pytest.mark.skipif(not REALDATA.is_dir(), reason="../shared/realdata is not present")
@pytest.mark.parametrize("policy", [OpenclawCacheTtl(), OpenclawCacheTtl(ttl=1, min_prunable=1_000)], ids=lambda p: p.spec())
def test_openclaw_engine_equals_reference_on_the_real_recordings(policy):
    frame = pa.ingest.read_corpus(REALDATA, skip_invalid=True).messages
    sessions: dict[str, list[dict]] = {}
    for row in frame.to_dicts():
        sessions.setdefault(str(row["session_id"]), []).append(row)
    got = replay_clearing(frame, policy, window=64_000)
    events, _, usage = expected(sessions, policy, window=64_000)
    assert [{**r, "session_id": str(r["session_id"])} for r in got.events.select(EVENT_COLUMNS).to_dicts()] == events
    assert len(events) >= 10
    edited, _ = cleared_usage(frame, policy, window=64_000)
    by_seq = {(str(r["session_id"]), r["seq"]): r for r in edited.to_dicts()}
    assert all({c: by_seq[k][c] or 0 for c in u} == {c: v or 0 for c, v in u.items()} for k, u in usage.items())


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sessions=sessions_strategy(), policy=openclaw_policies, window=st.integers(1_000, 20_000))
def test_openclaw_engine_equals_reference(sessions, policy, window):
    check(sessions, policy, window=window)



# -- staged policies ----------------------------------------------------------------------------------------

CUT_EVENT_COLUMNS = ["session_id", "event", "trigger_seq", "context_before", "active_start", "prefix_end",
                     "kept_turns", "kept_tokens", "summarized_tokens", "context_after", "kept_start", "kept_messages",
                     "split_turn"]


def check_staged(sessions: dict[str, list[dict]], first: Clearing, last, *, window: int, summary_tokens: int) -> None:
    """``first+last`` equals the references composed: the clearing reference's events, then ``last``'s literal
    reference on the sessions as the clearing left their calls' usage."""
    staged = parse_policy(f"{first.spec()}+{last.spec()}")
    got = replay_policies(frame_of(sessions), [staged], window=window, summary_tokens=summary_tokens)
    clear_events, _, usage = expected(sessions, first, window=window)
    edited = {sid: [{**m, "serialized_bytes": 4, **usage.get((sid, i), {})} for i, m in enumerate(msgs)]
              for sid, msgs in sessions.items()}
    cut_events, per_session = policy_ref.expected_policy_replay(
        edited, last.name, {f: getattr(last, f) for f in last.__dataclass_fields__}, threshold=last.threshold(window),
        window=window, summary_tokens=summary_tokens, from_anchor=last.from_anchor)
    as_rows = lambda df, cols: [{**r, "session_id": str(r["session_id"])} for r in df.select(cols).to_dicts()]  # noqa: E731
    cuts = got.events.filter(pl.col("cleared_calls").is_null())
    columns = [c for c in CUT_EVENT_COLUMNS if c != "event"]  # a staged replay numbers both stages' events together
    assert as_rows(cuts, columns) == [{k: e[k] for k in columns} for e in cut_events]
    clears = got.events.filter(pl.col("cleared_calls").is_not_null())
    assert as_rows(clears, ["session_id", "trigger_seq", "cleared_calls", "cleared_tokens"]) == [
        {k: e[k] for k in ("session_id", "trigger_seq", "cleared_calls", "cleared_tokens")} for e in clear_events]
    # A session counts the events of both stages; its peak is the last stage's, on the edited calls.
    counts = {sid: sum(1 for e in clear_events if e["session_id"] == sid) for sid in sessions}
    assert [(str(r["session_id"]), r["n_compactions"], r["peak_context"]) for r in got.sessions.to_dicts()] == [
        (r["session_id"], r["n_compactions"] + counts[r["session_id"]], r["peak_context"]) for r in per_session
        if sessions[r["session_id"]]]


def test_a_staged_policy_clears_then_summarizes_on_what_the_clearing_left():
    sessions = {"s": work(10, size=1_500, step=3_000)}
    check_staged(sessions, ObservationMasking(m=2), ClaudeCode(output_reserve=1_000, buffer=1_000),
                 window=25_000, summary_tokens=500)
    # Alone the summarizer fires; behind masking the context stays below its trigger.
    alone = replay_policies(frame_of(sessions), ["claude-code:output_reserve=1000,buffer=1000"], window=25_000,
                            summary_tokens=500).events
    staged = replay_policies(frame_of(sessions), ["observation-masking:m=2+claude-code:output_reserve=1000,buffer=1000"],
                             window=25_000, summary_tokens=500).events.filter(pl.col("cleared_calls").is_null())
    assert alone.height == 1 and staged.is_empty()


def test_a_staged_spec_reads_and_only_its_last_stage_summarizes():
    assert parse_policy("clear-tool-uses:trigger=100k+libpanto").spec() == "clear-tool-uses+libpanto"
    assert parse_policy("opencode-prune+opencode").last.name == "opencode"
    with pytest.raises(ValueError, match="stage pi summarizes: only the last stage"):
        parse_policy("pi+clear-tool-uses")


cut_stages = st.one_of(
    st.builds(ClaudeCode, output_reserve=st.integers(0, 1_000), buffer=st.integers(0, 1_000)),
    st.builds(Pi, reserve_tokens=st.integers(0, 2_000), keep_recent_tokens=st.integers(0, 30)),
    st.builds(LastNTurns, n=st.integers(1, 3), reserve=st.integers(0, 2_000)),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sessions=sessions_strategy(), first=policies, last=cut_stages, window=st.integers(3_000, 20_000))
def test_staged_equals_the_references_composed(sessions, first, last, window):
    check_staged(sessions, first, last, window=window, summary_tokens=300)
