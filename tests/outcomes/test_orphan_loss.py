"""Loss at every compaction: the engine against a literal per-cut reference, a hand-built session, a replay."""
from __future__ import annotations

import json

import polars as pl
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

import panto_analytics as pa
from panto_analytics.frame.tool_targets import key_of, references
from panto_analytics.outcomes.orphan_loss import (
    DEFAULT_HORIZON,
    ORPHAN_KINDS,
    RESTORE_FILE_TOKENS,
    cut_loss,
    recorded_cuts,
    replay_cuts,
    summarize_loss,
)
from panto_analytics.policy.compaction.any_policy import replay_policies

LOOKUP = ("read", "run", "fetch")


def reference_restored(mine: list[dict], cut: dict) -> set[int]:
    """The files restored at a cut, literally: the recorded list where there is one, else Claude Code's rule."""
    if cut.get("restored_keys") is not None:
        return set(cut["restored_keys"])
    if not cut["restore"]:
        return set()
    after, start, end = cut["after_seq"], cut["kept_start"], cut["kept_end"]
    before = [r for r in mine if r["file"] and r["seq"] < after]
    shown = {r["key"] for r in before if r["file_tool"] and r["kind"] == "read" and start is not None
             and start <= r["seq"] < end}
    last: dict[int, int] = {}
    for r in before:
        if r["file_tool"] and r["kind"] in ("read", "write") and r["key"] not in shown:
            last[r["key"]] = max(last.get(r["key"], -1), r["call"])
    top = sorted(last, key=lambda k: (-last[k], -k))[:cut["restore"]]

    def size(key: int) -> int | None:
        return max((r["tokens"] for r in before if r["key"] == key and r["kind"] == "read" and r["tokens"] is not None),
                   default=None)

    return {k for k in top if size(k) is None or size(k) <= RESTORE_FILE_TOKENS}


def reference_cut_loss(refs: list[dict], cut: dict, horizon: int = DEFAULT_HORIZON,
                       kinds: tuple[str, ...] = ORPHAN_KINDS) -> dict:
    """The loss of one cut, literally: walk the next ``horizon`` calls and look back for each target."""
    mine = sorted((r for r in refs if r["session_id"] == cut["session_id"]), key=lambda r: (r["call"], r["key"]))
    seq_of = {r["call"]: r["seq"] for r in mine}
    after, start, end = cut["after_seq"], cut["kept_start"], cut["kept_end"]
    window = [c for c in sorted(seq_of) if seq_of[c] >= after][:horizon]
    restored = reference_restored(mine, cut)
    out = {"window_calls": len(window), "orphan_calls": 0, "refetch_calls": 0, "refetch_tokens": 0, "repeat_reads": 0,
           "refetched_orphans": 0}
    for c in window:
        orphan = repeat = refetch = False
        tokens = 0
        for r in (r for r in mine if r["call"] == c):
            tokens = max(tokens, r["tokens"] or 0)
            # The target's last touch before the cut, summarized and not restored: an orphan target.
            before = [p for p in mine if p["key"] == r["key"] and p["seq"] < after]
            summarized = bool(before) and not (start is not None and start <= before[-1]["seq"] < end) \
                and r["key"] not in restored
            if summarized and r["kind"] in ("read", "fetch") and r["kind"] in kinds:
                refetch = True
            earlier = [p for p in mine if p["key"] == r["key"] and p["call"] < c]
            if not earlier:
                continue
            # The previous call that touched the target, all its references of it (sed -i reads and writes).
            prev = [p for p in earlier if p["call"] == earlier[-1]["call"]]
            if prev[0]["seq"] >= after:
                continue
            if summarized and r["kind"] in kinds:
                orphan = True
            prev_kinds = {p["kind"] for p in prev}
            if r["kind"] in ("read", "fetch") and prev_kinds & set(LOOKUP) and "write" not in prev_kinds:
                repeat = True
        out["orphan_calls"] += orphan
        out["repeat_reads"] += repeat
        out["refetched_orphans"] += orphan and repeat
        out["refetch_calls"] += refetch
        out["refetch_tokens"] += tokens if refetch else 0
    out["orphan_rate"] = out["orphan_calls"] / out["window_calls"] if window else None
    return out


REF_TYPES = {"session_id": pl.String, "seq": pl.UInt32, "call": pl.UInt32, "key": pl.UInt64, "kind": pl.String,
             "file": pl.Boolean, "file_tool": pl.Boolean, "tokens": pl.UInt32}
CUT_TYPES = {"session_id": pl.String, "after_seq": pl.Int64, "kept_start": pl.Int64, "kept_end": pl.Int64,
             "restore": pl.Int64, "restored_keys": pl.List(pl.UInt64)}


@st.composite
def sessions_and_cuts(draw):
    """Random references (few targets, so they repeat) of a few sessions, and random cuts in them."""
    refs, cuts = [], []
    for s in range(draw(st.integers(1, 3))):
        sid = f"s{s}"
        seq = 0
        n_calls = draw(st.integers(0, 30))
        call = 0
        while call < n_calls:
            seq += draw(st.integers(1, 3))
            for _ in range(draw(st.integers(1, 3))):     # calls of one message
                if call >= n_calls:
                    break
                targets = draw(st.lists(st.integers(0, 6), min_size=1, max_size=2, unique=True))
                kind = draw(st.sampled_from(["read", "write", "run", "fetch", "other"]))
                tokens = draw(st.one_of(st.none(), st.integers(0, 500), st.just(RESTORE_FILE_TOKENS + 1)))
                tool = draw(st.booleans())   # a file tool's call, or a shell command's
                # Sometimes a second kind for the same targets, either order (``sed -i`` reads and writes its file)
                both = draw(st.sampled_from([(kind,), (kind,), (kind, "write"), ("write", kind), (kind, "read")]))
                for t in targets:
                    for k in dict.fromkeys(both):
                        refs.append({"session_id": sid, "seq": seq, "call": call, "key": t, "kind": k,
                                     "file": t % 2 == 0, "file_tool": tool and t % 2 == 0, "tokens": tokens})
                call += 1
        for _ in range(draw(st.integers(0, 3))):
            after = draw(st.integers(0, seq + 2))
            kept = draw(st.booleans())
            start = draw(st.integers(0, after)) if kept else None
            recorded = draw(st.one_of(st.none(), st.none(), st.lists(st.integers(0, 6), max_size=3, unique=True)))
            cuts.append({"session_id": sid, "after_seq": after, "kept_start": start,
                         "kept_end": after if kept else None, "restore": draw(st.sampled_from([0, 0, 2, 5])),
                         "restored_keys": recorded})
    return refs, cuts


@settings(max_examples=examples(150))
@given(sessions_and_cuts(), st.integers(0, 8), st.sampled_from([ORPHAN_KINDS, ("read", "write"), ("read",)]))
def test_the_engine_equals_the_literal_reference(data, horizon, kinds):
    refs, cuts = data
    frame = pl.DataFrame(refs, schema=REF_TYPES)
    cut_frame = pl.DataFrame(cuts, schema=CUT_TYPES)
    got = cut_loss(frame, cut_frame, horizon=horizon, kinds=kinds)
    assert got.height == len(cuts)
    for row, cut in zip(got.iter_rows(named=True), cuts):
        want = reference_cut_loss(refs, cut, horizon, kinds)
        assert {k: row[k] for k in want} == want, (cut, refs)


# -- a hand-built session whose orphans are known ----------------------------------------------------------


def hand_built(tmp_path):
    """One canonical session (seq: what happens), the compaction under test after seq 8, kept [7, 9):

    1 read a.py (result 10 words)   3 read b.py   5 run "make"   7 read c.py (kept)
    ---- compaction after seq 8: summarized 0..6, kept 7..8 ----
    9  read a.py  -> orphan (last touched at 1, summarized), a re-fetch of 13 tokens, a repeat read
    11 read c.py  -> kept: not an orphan (a repeat read all the same)
    13 edit b.py  -> orphan (a write of a summarized target), not a re-fetch (a write)
    15 read b.py  -> touched since (the edit at 13): not an orphan, but a re-fetch (2 tokens) of an orphan target
    17 read d.py  -> new: not an orphan
    19 run make   -> orphan (a run of a summarized command), not a re-fetch (a run)
    """
    def call(i, tool, args):
        return {"type": "message", "role": "assistant",
                "content": [{"type": "tool_use", "id": f"c{i}", "name": tool, "input": json.dumps(args)}]}

    def result(i, words):
        return {"type": "message", "role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"c{i}", "parts": [{"type": "text", "text": " ".join(["w"] * words)}]}]}

    steps = [("Read", {"file_path": "/r/a.py"}, 10), ("Read", {"file_path": "/r/b.py"}, 1),
             ("Bash", {"command": "make"}, 1), ("Read", {"file_path": "/r/c.py"}, 1),
             ("Read", {"file_path": "/r/a.py"}, 10), ("Read", {"file_path": "/r/c.py"}, 1),
             ("Edit", {"file_path": "/r/b.py"}, 1), ("Read", {"file_path": "/r/b.py"}, 1),
             ("Read", {"file_path": "/r/d.py"}, 1), ("Bash", {"command": "make"}, 3)]
    lines = [{"type": "session", "id": "hand"}, {"type": "message", "role": "user", "content": [{"type": "text", "text": "go"}]}]
    for i, (tool, args, words) in enumerate(steps):
        lines += [call(i, tool, args), result(i, words)]
    path = tmp_path / "hand.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return pa.read_sessions([path])


def test_a_hand_built_session_has_the_orphans_it_was_built_with(tmp_path):
    refs = references(hand_built(tmp_path)).collect()
    assert refs["seq"].to_list() == list(range(1, 21, 2))
    cut = pl.DataFrame({"session_id": ["hand"], "after_seq": [9], "kept_start": [7], "kept_end": [9], "restore": [0]})
    row = cut_loss(refs, cut).row(0, named=True)
    assert (row["window_calls"], row["orphan_calls"], row["refetch_calls"], row["refetch_tokens"]) == (6, 3, 2, 13 + 2)
    assert (row["repeat_reads"], row["refetched_orphans"]) == (2, 1)
    assert row["orphan_rate"] == 0.5
    # Only the next 2 calls: a.py (orphan) and c.py (kept).
    assert cut_loss(refs, cut, horizon=2)["orphan_calls"].to_list() == [1]
    # Nothing kept: c.py is an orphan too.
    no_kept = cut.with_columns(kept_start=pl.lit(None, pl.Int64), kept_end=pl.lit(None, pl.Int64))
    assert cut_loss(refs, no_kept)["orphan_calls"].to_list() == [4]
    # Reads only: the edit of b.py and the run of make are not counted.
    assert cut_loss(refs, cut, kinds=("read",))["orphan_calls"].to_list() == [1]
    # Claude Code restores the files touched last: c.py (7), b.py (3), a.py (1) with restore=3; the run is left.
    restored = cut_loss(refs, cut.with_columns(restore=pl.lit(3)))
    assert restored["orphan_calls"].to_list() == [1]
    assert reference_cut_loss(refs.with_columns(pl.col("session_id").cast(pl.String)).to_dicts(),
                              cut.with_columns(restore=pl.lit(3)).row(0, named=True))["orphan_calls"] == 1


def test_claude_code_restores_what_its_file_tools_touched_within_the_caps():
    """Before the cut: Read big.py (6,000 tokens), Read a.py, `cat b.py` in Bash, Edit c.py; after it each is read
    again. Five slots: big.py takes one but comes back as its name only; b.py was only printed by a shell."""
    k = {name: key_of(f"file:/r/{name}") for name in ("big.py", "a.py", "b.py", "c.py")}
    rows = [("big.py", True, "read", 6_000), ("a.py", True, "read", 10), ("b.py", False, "read", 10),
            ("c.py", True, "write", 1)]
    refs = pl.DataFrame([{"session_id": "s", "seq": 2 * i + 1, "call": i, "key": k[name], "kind": kind, "file": True,
                          "file_tool": tool, "tokens": tokens}
                         for i, (name, tool, kind, tokens) in enumerate(rows + [(n, True, "read", 7) for n, *_ in rows])],
                        schema=REF_TYPES)
    cut = pl.DataFrame({"session_id": ["s"], "after_seq": [8], "kept_start": [None], "kept_end": [None], "restore": [5],
                        "restored_keys": [None]}, schema=CUT_TYPES)
    row = cut_loss(refs, cut).row(0, named=True)
    # big.py (too large) and b.py (a shell's) are orphans; a.py and c.py came back
    assert (row["window_calls"], row["orphan_calls"], row["refetch_calls"]) == (4, 2, 2)
    # A recording that shows only c.py attached: the recording decides, a.py is an orphan too.
    shown = cut.with_columns(restored_keys=pl.Series([[k["c.py"]]], dtype=pl.List(pl.UInt64)))
    assert cut_loss(refs, shown)["orphan_calls"].to_list() == [3]


# -- cuts of a replay and of recorded compactions -------------------------------------------------------


def test_replay_cuts_keep_the_suffix_and_name_the_restoring_agent():
    events = pl.DataFrame({"policy": ["claude-code", "pi:keep_recent_tokens=10k"], "session_id": ["a", "a"],
                           "trigger_seq": [10, 20], "prefix_end": [11, 15]})
    cuts = replay_cuts(events).collect()
    assert cuts.select("after_seq", "kept_start", "kept_end", "restore").rows() == [(11, 11, 11, 5), (21, 15, 21, 0)]


def test_recorded_cuts_start_after_what_the_agent_compacted():
    compactions = pl.DataFrame({"session_id": ["p", "c"], "anchor_seq": [50, 30], "trigger": [None, "auto"],
                                "tokens_before": [1, 2], "first_kept_seq": [40, None], "trigger_seq": [60, 30],
                                "kept_end_seq": [50, None]})
    sessions = pl.DataFrame({"session_id": ["p", "c"], "source_format": ["pi", "claude-code"]})
    cuts = recorded_cuts(compactions, sessions).collect()
    assert cuts.select("after_seq", "kept_start", "kept_end", "restore").rows() == [(60, 40, 50, 0), (31, None, None, 5)]


def test_loss_of_a_replay_per_event_and_per_session(tmp_path):
    messages = hand_built(tmp_path)
    # Give the calls usage so that the replay compacts: each assistant message a larger context.
    grow = pl.when(pl.col("role") == "assistant").then(pl.col("seq").cast(pl.UInt32) * 4_000)
    messages = messages.with_columns(input=grow, output=pl.when(pl.col("role") == "assistant").then(pl.lit(0, pl.UInt32)),
                                     cache_read=grow * 0, cache_write=grow * 0)
    r = replay_policies(messages, ["libpanto", "claude-code"], window=60_000, budgets=[5_000], summary_tokens=100)
    assert r.events.height > 0
    out = pa.loss(messages, r, horizon=5)
    assert out.events.height == r.events.height
    refs = references(messages).collect().with_columns(pl.col("session_id").cast(pl.String)).to_dicts()
    cuts = replay_cuts(r.events).collect().with_columns(pl.col("session_id").cast(pl.String))
    for row, cut in zip(out.events.iter_rows(named=True), cuts.iter_rows(named=True)):
        want = reference_cut_loss(refs, cut, 5)
        assert {k: row[k] for k in want} == want
    summed = summarize_loss(out.events, ["policy", "session_id", "budget"])
    joined = out.sessions.join(summed, on=["policy", "session_id", "budget"], suffix="_e")
    assert joined.height == summed.height
    assert (joined["orphan_calls"] == joined["orphan_calls_e"]).all()
    assert out.sessions.height == r.sessions.height


def test_a_negative_horizon_is_refused():
    with pytest.raises(ValueError, match="horizon"):
        cut_loss(pl.DataFrame(schema=REF_TYPES), pl.DataFrame(schema={"session_id": pl.String, "after_seq": pl.Int64,
                 "kept_start": pl.Int64, "kept_end": pl.Int64, "restore": pl.Int64}), horizon=-1)


def test_keys_are_hashes_of_targets():
    assert key_of("file:/r/a.py") != key_of("file:/r/b.py")


def test_a_clearing_edit_loses_the_results_it_cleared_and_a_write_keeps_its_input():
    """A clearing cut keeps every message: a target counts as summarized where the edit cleared the result that
    held it (a read), not where its content was the call's input (a write), unless the inputs were cleared too."""
    a, b, c = key_of("file:/a"), key_of("file:/b"), key_of("file:/c")
    refs = pl.DataFrame({"session_id": ["s"] * 6, "seq": [1, 3, 5, 9, 11, 13], "call": [0, 1, 2, 3, 4, 5],
                         "key": [a, b, c, a, b, c], "kind": ["read", "write", "read", "read", "read", "read"],
                         "file": [True] * 6, "tokens": [100, 50, 70, 100, 50, 70]})
    cut = {"session_id": ["s"], "after_seq": [9], "kept_start": [0], "kept_end": [9], "restore": [0],
           "cleared_calls": [2], "cleared_excluded": ["//"], "cleared_inputs": [False]}
    # Calls 0 and 1 cleared: /a's read is lost, /b's write keeps its content, /c (call 2) was not cleared.
    assert cut_loss(refs, pl.DataFrame(cut)).select("window_calls", "orphan_calls").rows() == [(3, 1)]
    assert cut_loss(refs, pl.DataFrame({**cut, "cleared_inputs": [True]}))["orphan_calls"].to_list() == [2]
    assert cut_loss(refs, pl.DataFrame({**cut, "cleared_excluded": ["/read/"]}))["orphan_calls"].to_list() == [0]
    # Call 1 reads /b as well as writing it (sed -i), its rows in either order: the read's result held /b.
    for kinds in (["read", "write"], ["write", "read"]):
        rows = refs.to_dicts()
        both = pl.DataFrame([*rows[:1], *({**rows[1], "kind": k} for k in kinds), *rows[2:]], schema=refs.schema)
        assert cut_loss(both, pl.DataFrame(cut))["orphan_calls"].to_list() == [2]
    # A cut without the clearing columns (a compaction that kept everything) loses nothing.
    plain = {k: v for k, v in cut.items() if not k.startswith("cleared")}
    assert cut_loss(refs, pl.DataFrame(plain))["orphan_calls"].to_list() == [0]
