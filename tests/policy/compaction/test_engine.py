"""replay(): compaction over each session's life, against hand-computed cases, the sequential
reference (reference/replay.py) and libpanto's own computeSplit (the Zig oracle)."""
from __future__ import annotations

import importlib
import random
import tempfile
from pathlib import Path
from unittest.mock import patch

import polars as pl
import pytest
from conftest import DATA, examples, oracle_module
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import budgets, conversations, random_conversation

import panto_analytics as pa
from panto_analytics.frame.schema import empty_messages
from panto_analytics.policy import Replay, replay
from reference import port as ref
from reference import replay as rr

#: The module (``panto_analytics.policy.compaction.engine`` names the function: the package re-exports it).
replay_module = importlib.import_module("panto_analytics.policy.compaction.engine")

SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]
EVENT_COLUMNS = ["session_id", "budget", "event", "trigger_seq", "context_before", "active_start", "prefix_end",
                 "kept_turns", "kept_tokens", "summarized_tokens", "context_after"]
SESSION_COLUMNS = ["session_id", "budget", "n_compactions", "zero_kept_events", "summarized_tokens", "peak_context",
                   "overflow", "ineffective"]


# -- helpers ---------------------------------------------------------------------------------------

def turn(i: int, cum: int, out: int = 100) -> list[dict]:
    """A user prompt and an answer whose usage reports a cumulative context of ``cum``."""
    return [ref.user_msg(f"q{i}"), {**ref.asst_msg(f"a{i}"), "usage": {"input": cum - out, "output": out}}]


def qa(cums: list[int]) -> list[dict]:
    return [m for i, c in enumerate(cums) for m in turn(i, c)]


def frame_of(folder: Path, sessions: dict[str, list[dict]]) -> pl.DataFrame:
    for sid, msgs in sessions.items():
        ref.write_session(folder / f"{sid}.jsonl", msgs)
    return pa.ingest.read_corpus(folder).messages


def rows(df: pl.DataFrame) -> list[dict]:
    return [{**r, "session_id": str(r["session_id"])} for r in df.to_dicts()]


def check(folder: Path, sessions: dict[str, list[dict]], budget_list: list[int], *, window: int, reserve: int,
          summary_tokens: int, lazy: bool = False) -> Replay:
    """Run replay on ``sessions`` (canonical files in ``folder``) and assert it equals the reference, row for row."""
    frame = frame_of(folder, sessions)
    got = replay(frame.lazy() if lazy else frame, budget_list, window=window, reserve=reserve,
                 summary_tokens=summary_tokens)
    assert isinstance(got.events, pl.DataFrame) and isinstance(got.sessions, pl.DataFrame)
    # The request sizes are checked on their own (test_events_carry_the_size_of_their_summarizer_request).
    assert got.events.columns == [*EVENT_COLUMNS, "transcript_bytes", "request_bytes"]
    assert got.sessions.columns == [*SESSION_COLUMNS, "request_bytes"]
    got = Replay(got.events.select(EVENT_COLUMNS), got.sessions.select(SESSION_COLUMNS), got.window, got.reserve,
                 got.summary_tokens)
    events, per_session = rr.expected_replay(sessions, budget_list, window=window, reserve=reserve,
                                             summary_tokens=summary_tokens)
    key = lambda r: (r["session_id"], r["budget"], r.get("event", 0))  # noqa: E731
    # A session without messages has no rows in the frame, so none in the replay.
    per_session = [r for r in per_session if sessions[r["session_id"]]]
    assert sorted(rows(got.events), key=key) == sorted(events, key=key)
    assert sorted(rows(got.sessions), key=key) == sorted(per_session, key=key)
    # Events come per session in frame order, budgets ascending, events in order.
    order = {sid: i for i, sid in enumerate(frame["session_id"].cast(pl.String).unique(maintain_order=True))}
    assert [key(r) for r in rows(got.events)] == sorted((key(r) for r in rows(got.events)),
                                                        key=lambda k: (order[k[0]], k[1], k[2]))
    return got


def replay_rows(sessions: dict[str, list[dict]], budget_list: list[int], tmp_path: Path, **kw) -> tuple[list, list]:
    got = check(tmp_path, sessions, budget_list, **kw)
    return rows(got.events), rows(got.sessions)


def ev(trigger_seq, context_before, active_start, prefix_end, kept_turns, kept_tokens, summarized, context_after,
       event=0, session_id="s", budget=2000) -> dict:
    return {"session_id": session_id, "budget": budget, "event": event, "trigger_seq": trigger_seq,
            "context_before": context_before, "active_start": active_start, "prefix_end": prefix_end,
            "kept_turns": kept_turns, "kept_tokens": kept_tokens, "summarized_tokens": summarized,
            "context_after": context_after}


def sess(n, zero_kept, summarized, peak, overflow=False, ineffective=False, session_id="s", budget=2000) -> dict:
    return {"session_id": session_id, "budget": budget, "n_compactions": n, "zero_kept_events": zero_kept,
            "summarized_tokens": summarized, "peak_context": peak, "overflow": overflow, "ineffective": ineffective}


# Window 5000, reserve 1000: a compaction fires above 4000. Turn i reports 1000 * (i + 1),
# so every turn costs 1000 (cumulative-usage deltas).
W = {"window": 5000, "reserve": 1000, "summary_tokens": 500}


# -- hand-written cases ----------------------------------------------------------------------------

def test_no_trigger(tmp_path):
    events, per_session = replay_rows({"s": qa([1000, 2000, 3000, 4000])}, [2000], tmp_path, **W)
    assert events == []
    assert per_session == [sess(0, 0, 0, 4000)]


def test_one_trigger(tmp_path):
    events, per_session = replay_rows({"s": qa([1000, 2000, 3000, 4000, 5000, 6000])}, [2000], tmp_path, **W)
    # At seq 9 (5000 > 4000): keep turns 3 and 4 (2000 <= 2000), summarize turns 0-2.
    # Then seq 11: 6000 - 3000 + 500 = 3500.
    assert events == [ev(9, 5000, 0, 6, 2, 2000, 3000, 2500)]
    assert per_session == [sess(1, 0, 3000, 5000)]


def test_repeated_triggers(tmp_path):
    events, per_session = replay_rows({"s": qa([1000 * (i + 1) for i in range(8)])}, [2000], tmp_path, **W)
    # The second one: 7000 - 3000 + 500 = 4500 at seq 13; the window starts at seq 6
    # (turns 3-6), turns 5 and 6 are kept; 7000 - 5000 + 500 = 2500 after it.
    assert events == [ev(9, 5000, 0, 6, 2, 2000, 3000, 2500),
                      ev(13, 4500, 6, 10, 2, 2000, 2000, 2500, event=1)]
    assert per_session == [sess(2, 0, 5000, 5000)]


def test_zero_kept(tmp_path):
    events, per_session = replay_rows({"s": qa([1000, 2000, 3000, 4000, 5000])}, [500], tmp_path, **W)
    # Even the last turn (1000) is over the budget: everything up to the trigger is summarized.
    assert events == [ev(9, 5000, 0, 10, 0, 0, 5000, 500, budget=500)]
    assert per_session == [sess(1, 1, 5000, 5000, budget=500)]


def test_overflow(tmp_path):
    events, per_session = replay_rows({"s": qa([1000, 2000, 9000])}, [2000], tmp_path, **W)
    assert events == [ev(5, 9000, 0, 6, 0, 0, 9000, 500)]
    assert per_session == [sess(1, 1, 9000, 9000, overflow=True)]


def test_ineffective(tmp_path):
    params = {**W, "summary_tokens": 3000}
    events, per_session = replay_rows({"s": qa([1000, 2000, 3000, 4000, 5000])}, [3500], tmp_path, **params)
    # Turns 2-4 are kept (3000 <= 3500); 5000 - 2000 + 3000 = 6000 is still above 4000.
    assert events == [ev(9, 5000, 0, 4, 3, 3000, 2000, 6000, budget=3500)]
    assert per_session == [sess(1, 0, 2000, 5000, ineffective=True, budget=3500)]


def test_noop_trigger_is_not_an_event(tmp_path):
    # Everything fits a budget of 1M: each trigger is a no-op, and the context keeps growing.
    events, per_session = replay_rows({"s": qa([1000 * (i + 1) for i in range(6)])}, [1_000_000], tmp_path, **W)
    assert events == []
    assert per_session == [sess(0, 0, 0, 6000, overflow=True, budget=1_000_000)]


def test_recorded_summary_restarts(tmp_path):
    msgs = qa([1000, 2000, 3000, 4000, 5000]) + [ref.summary_msg("S1")] + [
        m for i, c in ((5, 1500), (6, 4500)) for m in turn(i, c)]
    events, per_session = replay_rows({"s": msgs}, [2000], tmp_path, **W)
    # After the recorded summary (seq 10) the context is the recorded one again (1500, not
    # 1500 - 3000 + 500) and the active window starts at seq 11. Turn 5 costs nothing (the
    # recorded context dropped: a saturating delta), turn 6 costs 3000 > 2000: nothing kept.
    assert events == [ev(9, 5000, 0, 6, 2, 2000, 3000, 2500),
                      ev(14, 4500, 11, 15, 0, 0, 3000, 2000, event=1)]
    assert per_session == [sess(2, 1, 6000, 5000)]


def test_sessions_budgets_and_kinds(tmp_path):
    sessions = {"a": qa([1000 * (i + 1) for i in range(8)]), "b": qa([100, 200]), "c": [ref.user_msg("no calls")]}
    got = check(tmp_path, sessions, [0, 2000, 10**6], lazy=True, **W)
    assert got.sessions.height == 9
    assert got.sessions.filter(pl.col("session_id") == "c")["peak_context"].to_list() == [None] * 3
    assert (got.window, got.reserve, got.summary_tokens) == (5000, 1000, 500)


def test_default_summary_tokens(tmp_path):
    frame = frame_of(tmp_path, {"s": qa([1000, 2000, 3000, 4000, 5000])})
    got = replay(frame, [2000], window=5000, reserve=1000)
    assert got.summary_tokens == replay_module.DEFAULT_SUMMARY_TOKENS
    assert got.events["context_after"].to_list() == [2000 + replay_module.DEFAULT_SUMMARY_TOKENS]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"window": 1000, "reserve": 1000}, "window (1000) must be larger than reserve (1000)"),
    ({"window": 500, "reserve": 1000}, "window (500) must be larger than reserve (1000)"),
    ({"window": -1, "reserve": 0}, "window must be non-negative, got -1"),
    ({"window": 1000, "reserve": -5}, "reserve must be non-negative, got -5"),
    ({"window": 1000, "reserve": 0, "summary_tokens": -1}, "summary_tokens must be non-negative, got -1"),
    ({"window": 1000, "reserve": 0, "budgets": [-3]}, "budgets must be non-negative, got -3"),
    ({"window": 1.5, "reserve": 0}, "window must be a whole number of tokens, got 1.5"),
])
def test_bad_parameters(tmp_path, kwargs, message):
    frame = frame_of(tmp_path, {"s": qa([1000])})
    budget_list = kwargs.pop("budgets", [0])
    with pytest.raises(ValueError) as info:
        replay(frame, budget_list, **kwargs)
    assert str(info.value) == message
    assert "\n" not in str(info.value)


def test_unordered_frame(tmp_path):
    frame = frame_of(tmp_path, {"s": qa([1000, 2000])})
    with pytest.raises(ValueError, match="not in order"):
        replay(frame.reverse(), [0], window=5000, reserve=1000)


def test_empty_frame():
    got = replay(empty_messages(), [0, 10], window=5000, reserve=0)
    assert got.events.height == 0 and got.sessions.height == 0


# -- against the sequential reference --------------------------------------------------------------

@st.composite
def parameters(draw) -> dict:
    window = draw(st.one_of(st.integers(1, 3000), st.integers(1, 40_000)))
    reserve = draw(st.integers(0, window - 1))
    summary = draw(st.one_of(st.integers(0, 3000), st.just(0), st.integers(0, 2 * window)))
    return {"window": window, "reserve": reserve, "summary_tokens": summary}


small_budgets = st.lists(st.integers(0, 6000), min_size=1, max_size=5)


@settings(max_examples=examples(120), deadline=None, suppress_health_check=SLOW_OK)
@given(sessions=st.lists(conversations(), min_size=1, max_size=4), drawn=small_budgets, more=budgets(),
       params=parameters(), lazy=st.booleans())
def test_replay_equals_reference(sessions, drawn, more, params, lazy):
    with tempfile.TemporaryDirectory() as folder:
        check(Path(folder), {f"s{i}": msgs for i, msgs in enumerate(sessions)}, drawn + more[:2], lazy=lazy, **params)


@pytest.mark.slow
@settings(max_examples=examples(60), deadline=None, suppress_health_check=SLOW_OK)
@given(sessions=st.lists(conversations(), min_size=1, max_size=4), drawn=small_budgets, params=parameters(),
       alternations=st.sampled_from([0, 1]))
def test_replay_equals_reference_scanning(sessions, drawn, params, alternations):
    # Few (or no) binary-lift alternations: the call-by-call scan finds the events.
    with patch.object(replay_module, "MAX_ALTERNATIONS", alternations), tempfile.TemporaryDirectory() as folder:
        check(Path(folder), {f"s{i}": msgs for i, msgs in enumerate(sessions)}, drawn, **params)


@pytest.mark.parametrize("seed", range(4))
def test_seeded_batches_equal_reference(tmp_path, seed):
    rng = random.Random(seed)
    sessions = {f"s{i}": random_conversation(rng, rng.randint(0, 40)) for i in range(40)}
    window = rng.choice([3000, 8000, 20000])
    check(tmp_path, sessions, [0, 300, 1000, 2500, 6000], window=window, reserve=window // 4, summary_tokens=400)


def capped_sessions() -> dict[str, list[dict]]:
    """Windows of more than 4096 turns: from the start, and after a simulated compaction (zero-cost turns)."""
    first = [m for i in range(4150) for m in turn(i, 10 * (i + 1), out=10)]
    after = [m for i in range(60) for m in turn(i, 100 * (i + 1), out=10)]
    after += [m for i in range(4200) for m in turn(1000 + i, 6000, out=10)]
    after += [m for i, c in enumerate([8000, 8050, 9000, 12_000]) for m in turn(9000 + i, c, out=10)]
    return {"first": first, "after": after}


@pytest.mark.slow
@pytest.mark.parametrize(("name", "params", "budget_list"), [
    ("first", {"window": 42_000, "reserve": 1000, "summary_tokens": 0}, [0, 100, 1000, 20_000, 10**6]),
    # Budgets below the threshold: each compacts in the first 60 turns, then the window
    # holds those turns' kept part and 4200 zero-cost turns.
    ("after", {"window": 6000, "reserve": 1000, "summary_tokens": 50}, [0, 100, 1000, 2500, 3000]),
])
def test_past_4096_turns_equals_reference(tmp_path, name, params, budget_list):
    # (Few calls above the threshold: the reference re-walks 8,000 messages at each.)
    got = check(tmp_path, {name: capped_sessions()[name]}, budget_list, **params)
    assert got.events.height > 0
    assert got.events["kept_turns"].max() > 0


# -- against libpanto's computeSplit (the Zig oracle) ----------------------------------------------

def oracle_check(sessions: dict[str, list[dict]], got: Replay) -> int:
    """Rebuild the transcript of every event and compare its split with libpanto's. Returns the event count."""
    oracle = oracle_module()
    transcripts, wanted, budget_list = [], [], sorted(set(got.events["budget"].to_list()))
    previous: dict[tuple[str, int], int] = {}  # (session, budget) -> trigger of the previous event
    for e in rows(got.events):
        msgs = sessions[e["session_id"]]
        k = e["trigger_seq"]
        recorded = [i for i in range(k + 1) if rr.has_summary(msgs[i])]
        prev = previous.get((e["session_id"], e["budget"]))
        inserted = prev is not None and (not recorded or prev > recorded[-1])
        if not inserted:
            assert e["active_start"] == (recorded[-1] + 1 if recorded else 0)
        transcripts.append(rr.transcript_at(msgs, k, e["active_start"], inserted))
        wanted.append((e["prefix_end"] + (1 if inserted else 0), e["kept_turns"], budget_list.index(e["budget"])))
        previous[e["session_id"], e["budget"]] = k
    if transcripts:
        result = oracle.oracle_splits(transcripts, budget_list)
        for (prefix_end, kept, b), splits_of in zip(wanted, result, strict=True):
            assert splits_of[b] == (prefix_end, kept)
    return len(transcripts)


def test_oracle_hand_cases(tmp_path):
    sessions = {"a": qa([1000 * (i + 1) for i in range(8)]),
                "b": qa([1000, 2000, 3000, 4000, 5000]) + [ref.summary_msg("S1")] + turn(5, 1500) + turn(6, 4500)}
    got = replay(frame_of(tmp_path, sessions), [0, 500, 2000, 3500], **W)
    assert oracle_check(sessions, got) > 4


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_oracle_random(tmp_path, seed):
    rng = random.Random(100 + seed)
    sessions = {f"s{i}": random_conversation(rng, rng.randint(0, 60)) for i in range(150)}
    window = rng.choice([3000, 10_000])
    got = replay(frame_of(tmp_path, sessions), [0, 200, 1000, 3000, 8000], window=window, reserve=window // 5,
                 summary_tokens=300)
    assert oracle_check(sessions, got) > 50


@pytest.mark.slow
def test_oracle_data():
    oracle = oracle_module()
    sessions = dict(oracle.load_session(p) for p in sorted(DATA.glob("*.jsonl")))
    frame = pa.read_sessions(DATA)
    got = replay(frame, [0, 2000, 8000, 20_000], window=24_000, reserve=4000, summary_tokens=1500)
    assert oracle_check(sessions, got) > 20
    events, _ = rr.expected_replay(sessions, [0, 2000, 8000, 20_000], window=24_000, reserve=4000,
                                   summary_tokens=1500)
    key = lambda r: (r["session_id"], r["budget"], r["event"])  # noqa: E731
    assert sorted(rows(got.events.select(EVENT_COLUMNS)), key=key) == sorted(events, key=key)


# --- what each event sends to the summarizer ------------------------------------------------------

def expected_request_sizes(msgs: list[dict], event: dict, summary_tokens: int) -> tuple[int, int]:
    """(transcript bytes, request bytes) of one event, built as text with the literal port."""
    transcript = ref.serialize_transcript(msgs[event["active_start"]:event["prefix_end"]])
    anchors = [i for i, m in enumerate(msgs[: event["trigger_seq"] + 1])
               if any(b["type"] == "compaction_summary" for b in m["content"])]
    if anchors and event["active_start"] == anchors[-1] + 1:
        previous = ref.latest_summary_text(msgs[: anchors[-1] + 1])
    elif event["active_start"] > 0:
        previous = "x" * (summary_tokens * 4)  # a simulated summary: 4 bytes per token, by definition
    else:
        previous = None
    return len(transcript.encode()), len(ref.build_request_body(transcript, previous).encode())


def test_events_carry_the_size_of_their_summarizer_request(tmp_path):
    msgs_by_id = {sid: msgs for sid, msgs in (oracle_module().load_session(p) for p in sorted(DATA.glob("*.jsonl")))}
    with_summary = "with-summary"
    base = next(iter(msgs_by_id.values()))
    msgs_by_id[with_summary] = base[:6] + [ref.summary_msg("an earlier summary, é")] + base[6:]
    for sid, msgs in msgs_by_id.items():
        ref.write_session(tmp_path / f"{sid}.jsonl", msgs, sid)
    frame = pa.read_sessions(tmp_path)
    result = replay(frame, [2_000, 20_000], window=24_000, reserve=4_000, summary_tokens=1_500)
    assert result.events.height > 20
    kinds = result.events.select(first=pl.col("active_start") == 0,
                                 after_recorded=(pl.col("session_id").cast(str) == with_summary) & (pl.col("active_start") == 7))
    assert kinds["first"].any() and kinds["after_recorded"].any() and not kinds["first"].all()
    for event in result.events.iter_rows(named=True):
        want = expected_request_sizes(msgs_by_id[event["session_id"]], event, 1_500)
        assert (event["transcript_bytes"], event["request_bytes"]) == want, event
    per_session = result.events.group_by("session_id", "budget").agg(pl.col("request_bytes").sum())
    joined = result.sessions.join(per_session, on=["session_id", "budget"], how="left", suffix="_events")
    assert (joined["request_bytes"] == joined["request_bytes_events"].fill_null(0)).all()
