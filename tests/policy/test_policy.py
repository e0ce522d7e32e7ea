"""panto_analytics.policy against compaction.zig: its tests, each detail of the policy, every column.

Every scenario is written as canonical JSONL, read with ``read_corpus``
(``read_sessions``' frame and the sessions table) and run through
``turns``/``splits``; each test states the values it expects
(derived by hand in its comments) and :func:`check` also compares every
column with what the Python port of computeSplit (``reference.port``) gives.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import polars as pl
import pytest

import panto_analytics as pa
from reference import port as ref
from reference.port import U64_MAX, asst_msg, summary_msg, system_msg, tool_result_msg, user_msg

BUDGETS = [0, 1, 2, 5, 10, 100, 199, 200, 201, 250, 1_000, 20_000, 1_000_000, U64_MAX]


def usage(input=0, output=0, cache_read=0, cache_write=0) -> dict:
    return {"input": input, "output": output, "cache_read": cache_read, "cache_write": cache_write}


def u(msg: dict, **counters) -> dict:
    """``msg`` carrying provider usage."""
    return {**msg, "usage": usage(**counters)}


def check(tmp_path, engine, sessions: dict[str, list[dict]] | list[dict], budgets=BUDGETS, kind="eager",
          with_sessions=False):
    """Run the engine on ``sessions`` (one list: session ``s``) and compare it with the port (``Engine.check``)."""
    if isinstance(sessions, list):
        sessions = {"s": sessions}
    return engine.check(Path(tempfile.mkdtemp(dir=tmp_path)), sessions, budgets, kind, with_sessions=with_sessions)


def split_at(splits: dict, budget: int, sid: str = "s") -> tuple[int, int]:
    row = splits[sid, budget]
    return row["prefix_end"], row["kept_turns"]


# --- (a) the computeSplit tests of compaction.zig, through the engine ---------

@pytest.mark.parametrize("case", ref.zig_split_tests(), ids=lambda c: c.name)
def test_zig_split_tests(tmp_path, engine, frame_kind, case):
    splits, _ = check(tmp_path, engine, case.canonical(), sorted({case.budget, *BUDGETS}), frame_kind)
    got = ref.Split(*split_at(splits, case.budget))
    if case.expect is not None:
        assert (got.prefix_end, got.kept_turns) == case.expect
    if case.holds is not None:
        assert case.holds(got)


def test_zig_word_and_usage_estimates(tmp_path, engine):
    # countWordsIn / messageTokenEstimate tests: usage 100 + 7 + 3 = 110 wins over
    # the words; without usage, 4 words * 1.3 = 5.2 -> 6.
    _, turns = check(tmp_path, engine, {
        "usage": [u(user_msg("one two three"), input=100, output=7, cache_read=3)],
        "words": [user_msg("one two three four")],
        "spaces": [user_msg("  hello   there  world "), user_msg("   \n\t ")]})
    assert turns["usage"][0]["tokens"] == 110 and turns["usage"][0]["token_source"] == "words"
    assert turns["words"][0]["tokens"] == 6
    assert turns["spaces"][0]["tokens"] == 4  # ceil(3 * 1.3) + ceil(0 * 1.3)


# --- (b) each detail of issue 2, item 5 ---------------------------------------

def test_active_window_starts_after_the_latest_summary(tmp_path, engine, frame_kind):
    msgs = [user_msg("q0"), asst_msg("a0"), summary_msg("S1"), user_msg("q1"), asst_msg("a1"),
            summary_msg("S2"), user_msg("q2 x"), asst_msg("a2"), user_msg("q3"), asst_msg("a3")]
    splits, turns = check(tmp_path, engine, msgs, budgets=[3, 4, U64_MAX], kind=frame_kind)
    # Only the turns after S2 (index 5) exist: "q2 x"/a2 (ceil(2.6) + ceil(1.3)) and q3/a3 (2 + 2).
    assert [(t["start_seq"], t["end_seq"], t["tokens"]) for t in turns["s"]] == [(6, 8, 3 + 2), (8, 10, 2 + 2)]
    assert split_at(splits, U64_MAX) == (6, 2)  # everything fits: the first active turn
    assert split_at(splits, 4) == (8, 1)
    assert split_at(splits, 3) == (10, 0)
    assert splits["s", 3]["summarized_tokens"] == 9 and splits["s", 3]["active_tokens"] == 9


def test_leading_system_messages_after_the_anchor_are_frame(tmp_path, engine):
    msgs = [user_msg("old"), asst_msg("old"), summary_msg("S"), system_msg("be brief"), system_msg("really"),
            user_msg("q"), asst_msg("a")]
    splits, turns = check(tmp_path, engine, msgs)
    assert [t["start_seq"] for t in turns["s"]] == [5]
    assert split_at(splits, U64_MAX) == (5, 1)


def test_everything_fits_returns_the_first_non_system_message_not_the_first_turn(tmp_path, engine):
    # The first active message is a tool result: not a turn start, yet
    # computeSplit's "everything fits" returns first_turn_msg = 1.
    msgs = [system_msg("sys"), tool_result_msg("t", "out"), asst_msg("a"), user_msg("q"), asst_msg("a")]
    splits, turns = check(tmp_path, engine, msgs)
    assert [t["start_seq"] for t in turns["s"]] == [3]
    assert split_at(splits, U64_MAX) == (1, 1)
    assert splits["s", U64_MAX]["noop"]
    assert split_at(splits, 0) == (5, 0) and not splits["s", 0]["noop"]


def test_system_messages_inside_a_turn_count_in_the_word_fallback(tmp_path, engine):
    msgs = [user_msg("a"), system_msg("x y z"), asst_msg("b")]
    _, turns = check(tmp_path, engine, msgs)
    assert turns["s"][0]["tokens"] == 2 + 4 + 2  # ceil(1.3) + ceil(3.9) + ceil(1.3), per message


@pytest.mark.parametrize("role", ["user", "assistant", "system"])
def test_structural_frames_are_transparent_also_before_the_anchor(tmp_path, engine, role):
    sessions = {
        # "new" follows the anchor, and before it a user message: not a turn start.
        "user_before_anchor": [user_msg("old"), summary_msg("S", role), user_msg("new"), asst_msg("a")],
        "asst_before_anchor": [user_msg("old"), asst_msg("old"), summary_msg("S", role), user_msg("new"),
                               asst_msg("a")],
        # An older summary and system prompts are transparent too.
        "frames_before_anchor": [asst_msg("x"), summary_msg("S0"), system_msg("p"), summary_msg("S1", role),
                                 system_msg("p"), user_msg("new"), asst_msg("a")],
        "user_sys_user": [user_msg("q"), system_msg("p"), user_msg("more"), asst_msg("a")],
        "asst_sys_user": [asst_msg("hi"), system_msg("p"), user_msg("q"), asst_msg("a")],
    }
    splits, turns = check(tmp_path, engine, sessions)
    assert turns["user_before_anchor"] == [] and split_at(splits, U64_MAX, "user_before_anchor") == (4, 0)
    assert splits["user_before_anchor", U64_MAX]["n_turns"] == 0
    assert [t["start_seq"] for t in turns["asst_before_anchor"]] == [3]
    assert [t["start_seq"] for t in turns["frames_before_anchor"]] == [5]
    assert [(t["start_seq"], t["end_seq"]) for t in turns["user_sys_user"]] == [(0, 4)]
    assert [t["start_seq"] for t in turns["asst_sys_user"]] == [2]
    assert split_at(splits, U64_MAX, "asst_sys_user") == (0, 1)


def test_tool_result_users_never_start_a_turn(tmp_path, engine):
    mixed = {"role": "user", "content": [{"type": "text", "text": "also"}, ref.text_tool_result("t", "r")]}
    sessions = {
        "only_results": [tool_result_msg("t", "r"), asst_msg("a"), tool_result_msg("t", "r")],
        "mixed_blocks": [asst_msg("a"), mixed, asst_msg("a")],
        # A plain user message right after a tool result follows a user message.
        "user_after_result": [user_msg("q"), asst_msg("a"), tool_result_msg("t", "r"), user_msg("more"),
                              asst_msg("b")],
    }
    splits, turns = check(tmp_path, engine, sessions)
    assert turns["only_results"] == [] and turns["mixed_blocks"] == []
    assert split_at(splits, 5, "only_results") == (3, 0)
    assert [(t["start_seq"], t["end_seq"]) for t in turns["user_after_result"]] == [(0, 5)]


def test_consecutive_users_collapse_into_one_turn(tmp_path, engine):
    msgs = [user_msg("a"), user_msg("b"), user_msg("c"), asst_msg("x"), user_msg("d"), user_msg("e")]
    splits, turns = check(tmp_path, engine, msgs, budgets=[3, 4, 11, 12])
    assert [(t["start_seq"], t["end_seq"], t["tokens"]) for t in turns["s"]] == [(0, 4, 8), (4, 6, 4)]
    assert split_at(splits, 3) == (6, 0)
    assert split_at(splits, 4) == split_at(splits, 11) == (4, 1)
    assert split_at(splits, 12) == (0, 2)


def test_turn_cost_is_a_saturating_delta_between_final_assistants(tmp_path, engine, frame_kind):
    msgs = [user_msg("q1"), asst_msg("tool call"), tool_result_msg("t", "r"),
            u(asst_msg("a1"), input=400, output=50, cache_read=30, cache_write=20),
            user_msg("q2"), u(asst_msg("a2"), input=100, output=10),  # shrinks: cost 0, not negative
            user_msg("q3"), u(asst_msg("a3"), input=700)]
    splits, turns = check(tmp_path, engine, msgs, budgets=[0, 199, 200, 699, 700], kind=frame_kind)
    # Turn 1: 400 + 30 + 20 + 50 - 0; turn 2: max(110 - 500, 0); turn 3: 700 - 110.
    assert [(t["tokens"], t["token_source"]) for t in turns["s"]] == [(500, "usage"), (0, "usage"), (590, "usage")]
    assert split_at(splits, 0) == (8, 0)
    assert split_at(splits, 699) == (4, 2)  # 590 + 0 fits; + 500 crosses
    assert splits["s", 699]["kept_tokens"] == 590 and splits["s", 699]["summarized_tokens"] == 500


def test_zero_cost_turns_at_the_boundary_are_kept(tmp_path, engine):
    # Costs 100, 0, 0, 50: at budget 50 the walk keeps 50 + 0 + 0 and crosses on 100.
    msgs = [user_msg("q"), u(asst_msg("a"), input=100), user_msg("q"), u(asst_msg("a"), input=100),
            user_msg("q"), u(asst_msg("a"), input=90), user_msg("q"), u(asst_msg("a"), input=140)]
    splits, turns = check(tmp_path, engine, msgs, budgets=[0, 49, 50, 149, 150])
    assert [t["tokens"] for t in turns["s"]] == [100, 0, 0, 50]
    assert split_at(splits, 49) == (8, 0)
    assert split_at(splits, 50) == (2, 3)
    assert split_at(splits, 150) == (0, 4)


def test_previous_assistant_is_searched_over_the_whole_list(tmp_path, engine):
    msgs = [user_msg("old"), u(asst_msg("old"), input=1000), asst_msg("no usage"), summary_msg("S"),
            system_msg("p"), user_msg("q"), u(asst_msg("a"), input=1150, output=50)]
    splits, turns = check(tmp_path, engine, msgs, budgets=[199, 200])
    assert turns["s"][0]["tokens"] == 200  # 1200 - 1000, the anchor does not reset it
    assert split_at(splits, 199) == (7, 0)
    assert split_at(splits, 200) == (5, 1)


def test_final_assistant_is_the_last_one_with_usage_in_the_turn(tmp_path, engine):
    # The turn's last assistant has no usage: the one before it does. A user
    # message's usage is never a turn's "after", nor the next turn's "before".
    msgs = [u(user_msg("q"), input=5000), u(asst_msg("a"), input=300), tool_result_msg("t", "r"), asst_msg("b"),
            user_msg("q2"), u(asst_msg("c"), input=1000), u(user_msg("q3"), input=9999), u(asst_msg("d"), input=1100)]
    _, turns = check(tmp_path, engine, msgs)
    assert [(t["tokens"], t["token_source"]) for t in turns["s"]] == [(300, "usage"), (700, "usage"),
                                                                      (100, "usage")]


def test_per_message_fallback_uses_usage_on_any_message(tmp_path, engine):
    # No assistant in the turn has usage: each message costs its own usage total
    # (a user, a system message, an assistant-less tool result), else ceil(words * 1.3).
    msgs = [u(user_msg("q"), input=40, cache_read=5), asst_msg("x y"), u(system_msg("p"), output=7),
            u(tool_result_msg("t", "r"), cache_write=11), asst_msg("w")]
    turn2 = [user_msg("q"), asst_msg("three words here")]
    _, turns = check(tmp_path, engine, {"a": msgs, "b": msgs + turn2})
    assert [(t["tokens"], t["token_source"]) for t in turns["a"]] == [(45 + 3 + 7 + 11 + 2, "words")]
    # Turn 2 has no assistant usage either; the usages in turn 1 do not help it.
    assert [(t["tokens"], t["token_source"]) for t in turns["b"]] == [(68, "words"), (2 + 4, "words")]


def test_usage_on_an_assistant_wins_over_all_fallbacks(tmp_path, engine):
    msgs = [u(user_msg("q"), input=40), u(asst_msg("a b c d e f"), input=1)]
    _, turns = check(tmp_path, engine, msgs)
    assert turns["s"] == [{"turn": 0, "start_seq": 0, "end_seq": 2, "n_messages": 2, "tokens": 1,
                           "token_source": "usage"}]


def test_words_split_only_on_four_ascii_bytes(tmp_path, engine):
    text = "a\x0bb  c\u00a0d\te\u3000f\x0cg\r\nh\u2028i \u0085j"
    # Words: a\x0bb, c\u00a0d, e\u3000f\x0cg, h\u2028i, \u0085j = 5 -> ceil(6.5) = 7.
    frame = pa.read_sessions(_write(tmp_path, [user_msg(text)]))
    assert frame["words"].to_list() == [5]
    _, turns = check(tmp_path, engine, [user_msg(text)])
    assert turns["s"][0]["tokens"] == 7


def test_every_block_kind_counts_and_media_is_800_words(tmp_path, engine):
    blocks = [{"type": "text", "text": "one two"}, {"type": "thinking", "text": "three"},
              {"type": "tool_use", "id": "t", "name": "bash", "input": '{"cmd": "ls -l"}'},
              {"type": "tool_result", "tool_use_id": "t", "parts": [
                  {"type": "text", "text": "x y"}, {"type": "media", "media_type": "image/png", "data": "AAAA"},
                  {"type": "media", "media_type": "application/pdf", "data": ""}]},
              {"type": "system", "text": "sys tem", "mode": "replace"}]
    msgs = [user_msg("go"), {"role": "assistant", "content": blocks}]
    frame = pa.read_sessions(_write(tmp_path, msgs))
    assert frame["words"].to_list() == [1, 2 + 1 + 3 + 2 + 1600 + 2]
    _, turns = check(tmp_path, engine, msgs)
    assert turns["s"][0]["tokens"] == 2 + 2093  # ceil(1.3) + ceil(1610 * 1.3); 1610 * 1.3 == 2093.0 in float64
    # the summary's own words count too, where it is part of a turn (not as the anchor)
    frame = pa.read_sessions(_write(tmp_path, [summary_msg("a b c"), user_msg("q")]))
    assert frame["words"].to_list() == [3, 1]


def test_no_turns(tmp_path, engine):
    sessions = {
        "assistant_only": [asst_msg("hello")],
        "system_only": [system_msg("a"), system_msg("b")],
        "summary_last": [user_msg("q"), asst_msg("a"), summary_msg("S")],
        "empty": [],
    }
    splits, turns = check(tmp_path, engine, sessions)
    for sid in ("assistant_only", "system_only", "summary_last"):
        row = splits[sid, 1_000]
        n = len(sessions[sid])
        assert (row["prefix_end"], row["kept_turns"], row["n_turns"], row["noop"]) == (n, 0, 0, True)
        assert turns[sid] == []
    assert not any(sid == "empty" for sid, _ in splits)
    # With the sessions table, the empty session gets computeSplit's answer for
    # an empty list: prefix_end = messages.len = 0, nothing kept.
    splits, _ = check(tmp_path, engine, sessions, with_sessions=True)
    row = splits["empty", 1_000]
    assert (row["prefix_end"], row["kept_turns"], row["n_turns"], row["n_messages"]) == (0, 0, 0, 0)


def test_sessions_do_not_leak_into_each_other(tmp_path, engine, frame_kind):
    first = [user_msg("q"), u(asst_msg("a"), input=5000), summary_msg("S")]
    second = [user_msg("q"), u(asst_msg("a"), input=300), user_msg("q"), u(asst_msg("a"), input=200)]
    third = [system_msg("p"), user_msg("q")]
    splits, turns = check(tmp_path, engine, {"a": first, "b": second, "c": third}, kind=frame_kind)
    assert [t["tokens"] for t in turns["b"]] == [300, 0]  # not 300 - 5000, nor an anchor from "a"
    assert split_at(splits, U64_MAX, "c") == (1, 1)


def _write(tmp_path, msgs):
    path = tmp_path / "one" / "w.jsonl"
    path.parent.mkdir(exist_ok=True)
    ref.write_session(path, msgs)
    return path


def _many_turns(n: int, tail_usage: bool) -> list[dict]:
    msgs = [system_msg("p")]
    for k in range(n):
        msgs += [user_msg("q"), u(asst_msg("a"), input=10 * (k + 1)) if tail_usage else asst_msg("a b")]
    return msgs


@pytest.mark.slow
@pytest.mark.parametrize("tail_usage", [False, True], ids=["words", "usage"])
@pytest.mark.parametrize("n", [4096, 4100])
def test_only_4096_turn_starts_exist(tmp_path, engine, n, tail_usage):
    msgs = _many_turns(n, tail_usage)
    # Few budgets: without usage, the port's priorAssistantUsage scans back to
    # index 0 for every turn, so each full walk is quadratic.
    budgets = [0, 1, 10, 20, 50, 60, 100, U64_MAX]
    splits, turns = check(tmp_path, engine, msgs, budgets)
    assert len(turns["s"]) == 4096
    last = turns["s"][-1]
    # The 4096th turn runs to the end: it swallows the uncounted turns.
    assert (last["start_seq"], last["end_seq"]) == (1 + 2 * 4095, len(msgs))
    assert last["tokens"] == (10 * (n - 4095) if tail_usage else (n - 4095) * (2 + 3))
    row = splits["s", 0]
    assert (row["capped"], row["n_turns"]) == (n > 4096, 4096)
    assert split_at(splits, U64_MAX) == (1, 4096)


def test_session_id_dtype_is_kept_and_does_not_matter(tmp_path, engine):
    for sid, msgs in {"b": [user_msg("q"), u(asst_msg("a"), input=9)], "a": [user_msg("x y z")]}.items():
        ref.write_session(tmp_path / f"{sid}.jsonl", msgs)
    frame = pa.read_sessions(tmp_path)
    as_string = frame.with_columns(pl.col("session_id").cast(pl.String))
    assert pa.splits(as_string, [0, 5])["session_id"].dtype == pl.String
    assert engine.splits(as_string, [0, 5, 9]) == engine.splits(frame, [0, 5, 9])
    assert engine.turns(as_string) == engine.turns(frame)


def test_budget_list_is_deduplicated_and_sorted(tmp_path, engine):
    ref.write_session(tmp_path / "s.jsonl", [user_msg("q"), asst_msg("a")])
    rows = engine.splits(pa.read_sessions(tmp_path), [5, 0, 5, U64_MAX])
    assert [r["budget"] for r in rows] == [0, 5, U64_MAX]
    with pytest.raises(ValueError):
        pa.splits(pa.read_sessions(tmp_path), [-1])


@pytest.mark.parametrize("order", ["interleaved", "reversed", "trimmed"])
def test_a_frame_out_of_order_is_refused_not_misread(tmp_path, order):
    for name in ("a", "b"):
        (tmp_path / f"{name}.jsonl").write_text(
            '{"type":"message","role":"user","content":[{"type":"text","text":"q"}]}\n'
            '{"type":"message","role":"assistant","content":[{"type":"text","text":"r"}]}\n')
    messages = pa.read_sessions(tmp_path)
    broken = {"interleaved": messages[[0, 2, 1, 3]], "reversed": messages.reverse(),
              "trimmed": messages.slice(1)}[order]
    for fn in (pa.policy.annotate, pa.turns, lambda m: pa.splits(m, [10])):
        with pytest.raises(ValueError, match="sort it by session_id, seq"):
            fn(broken)
    assert pa.splits(messages, [10]).height == 2  # the frame as read is fine
