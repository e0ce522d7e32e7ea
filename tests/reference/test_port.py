"""Every test of compaction.zig, ported against the Python port in ``reference.port``.

The ``computeSplit`` tests are data (``reference.port.zig_split_tests``) so
that ``test_policy`` and ``test_oracle`` run the same scenarios through the
frame engine and libpanto's compiled code.
"""
from __future__ import annotations

import re

import pytest
from conftest import SHARED

from reference import port as ref
from reference.port import (
    Usage,
    asst_msg,
    build_request_body,
    compute_split,
    count_words_in,
    latest_summary_text,
    message_token_estimate,
    serialize_transcript,
    summary_msg,
    system_msg,
    text_tool_result,
    user_msg,
)

ZIG = SHARED / "reference" / "compaction.zig"


def test_count_words_in_basic_word_counting():
    assert count_words_in("") == 0
    assert count_words_in("   \n\t ") == 0
    assert count_words_in("hello") == 1
    assert count_words_in("  hello   there  world ") == 3


def test_message_token_estimate_usage_wins_when_present():
    m = user_msg("one two three")
    u = Usage(input=100, output=7, cache_read=3)
    assert message_token_estimate(m, u) == 110


def test_message_token_estimate_word_count_fallback_when_usage_absent():
    m = user_msg("one two three four")  # 4 words * 1.3 = 5.2 -> ceil 6
    assert message_token_estimate(m, None) == 6


@pytest.mark.parametrize("case", ref.zig_split_tests(), ids=lambda c: c.name)
def test_compute_split(case):
    split = compute_split(case.messages, case.usages, case.budget)
    if case.expect is not None:
        assert (split.prefix_end, split.kept_turns) == case.expect
    if case.holds is not None:
        assert case.holds(split)


def test_serialize_transcript_labels_roles_and_skips_system():
    msgs = [system_msg("sys prompt"), user_msg("hello"), asst_msg("hi there")]
    t = serialize_transcript(msgs)
    assert "sys prompt" not in t
    assert "[User]: hello" in t
    assert "[Assistant]: hi there" in t


def test_serialize_transcript_tool_call_and_result_framing():
    msgs = [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "tc1", "name": "bash",
                                           "input": '{"cmd":"ls"}'}]},
        {"role": "user", "content": [text_tool_result("tc1", "file.txt")]},
    ]
    t = serialize_transcript(msgs)
    assert '[Assistant tool call: bash (tc1)]: {"cmd":"ls"}' in t
    assert "[Tool result (tc1)]: file.txt" in t


def test_build_request_body_without_previous_summary():
    body = build_request_body("TRANSCRIPT", None)
    assert "previous-summary" not in body
    assert "<transcript>\nTRANSCRIPT\n</transcript>" in body


def test_build_request_body_with_previous_summary():
    body = build_request_body("TRANSCRIPT", "PRIOR")
    assert "<previous-summary>\nPRIOR\n</previous-summary>" in body
    assert "<transcript>\nTRANSCRIPT\n</transcript>" in body


def test_latest_summary_text_returns_latest_null_when_none():
    assert latest_summary_text([user_msg("hi")]) is None
    assert latest_summary_text([user_msg("hi"), summary_msg("S2")]) == "S2"


# --- beyond the Zig tests: the port's own edges ------------------------------

PORTED = {
    "countWordsIn - basic word counting",
    "messageTokenEstimate - usage wins when present",
    "messageTokenEstimate - word-count fallback when usage absent",
    "serializeTranscript - labels roles and skips system",
    "serializeTranscript - tool call and result framing",
    "buildRequestBody - without previous summary",
    "buildRequestBody - with previous summary",
    "latestSummaryText - returns latest, null when none",
} | {re.sub(r" \[.*\]$", "", c.name) for c in ref.zig_split_tests()}


def test_all_16_zig_tests_are_ported():
    assert len(PORTED) == 16
    if not ZIG.is_file():
        pytest.skip(f"{ZIG} is absent: cannot list its tests")
    names = set(re.findall(r'^test "(.*)" \{$', ZIG.read_text(), re.M))
    assert names == PORTED


def test_u64_overflow_traps_as_zig_safety_checks_do():
    with pytest.raises(OverflowError):
        compute_split([user_msg("q")], [None], 2**64)
    with pytest.raises(OverflowError):
        message_token_estimate(user_msg("q"), Usage(input=2**63, output=2**63))


def test_serialize_transcript_media_summary_and_thinking():
    msgs = [summary_msg("S"), {"role": "assistant", "content": [{"type": "thinking", "text": "hmm"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "parts": [
                {"type": "text", "text": "a"}, {"type": "media", "media_type": "image/png", "data": ""}]}]}]
    assert serialize_transcript(msgs) == (
        "[Previous summary]: S\n\n[Assistant thinking]: hmm\n\n[Tool result (x)]: a[image/png attachment]")


@pytest.mark.slow
def test_trace_changes_nothing_and_counts_past_the_buffer():
    msgs = [m for k in range(4100) for m in (user_msg(f"q{k}"), asst_msg("a"))]
    trace = ref.Trace()
    assert compute_split(msgs, None, 10, trace) == compute_split(msgs, None, 10)
    assert trace.n_turns == 4100 and len(trace.turn_starts) == 4096
    # The 4096th recorded turn runs to the end of the list: 5 turns' messages,
    # one word each, ceil(1.3) = 2 tokens each.
    assert ref.expected_turns(msgs)[-1] == {"turn": 4095, "start_seq": 8190, "end_seq": 8200, "n_messages": 10,
                                            "tokens": 20, "token_source": "words"}
