"""The summarizer request: our text and per-message sizes against the literal port and libpanto's own code."""
from __future__ import annotations

import zlib

from conftest import DATA, examples, oracle_module
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import conversations

from panto_analytics import transcript as tr
from reference import port as ref


def role_blocks(msgs: list[dict]) -> list[tuple[str, list[dict]]]:
    return [(m["role"], m.get("content") or []) for m in msgs]


def active_start(msgs: list[dict]) -> int:
    anchor = ref.latest_compaction_index(msgs)
    return 0 if anchor is None else anchor + 1


def our_request(msgs: list[dict], prefix_end: int) -> str:
    rb = role_blocks(msgs)
    return tr.build_request_body(tr.serialize_transcript(rb[active_start(msgs):prefix_end]), tr.latest_summary_text(rb))


def our_request_bytes(msgs: list[dict], prefix_end: int) -> int:
    """The request's size from the per-message contributions alone, as the frame computes it."""
    rb = role_blocks(msgs)
    contributions = sum(tr.serialized_bytes(r, b) for r, b in rb[active_start(msgs):prefix_end])
    anchor = ref.latest_compaction_index(msgs)
    summary = None if anchor is None else tr.serialized_bytes(*rb[anchor])
    return tr.request_bytes(contributions, summary)


@settings(max_examples=examples(200), deadline=None)
@given(conversations(), st.integers(0, 300_000))
def test_text_and_size_equal_the_literal_port(msgs, budget):
    split = ref.compute_split(msgs, ref.usages_of(msgs), budget)
    start = active_start(msgs)
    want = ref.build_request_body(ref.serialize_transcript(msgs[start:split.prefix_end]), ref.latest_summary_text(msgs))
    assert our_request(msgs, split.prefix_end) == want
    assert our_request_bytes(msgs, split.prefix_end) == len(want.encode())


def test_a_system_block_keeps_its_separator():
    rb = [("user", [{"type": "text", "text": "a"}, {"type": "system", "text": "x", "mode": "append"},
                    {"type": "text", "text": "b"}])]
    assert tr.serialize_transcript(rb) == "[User]: a\n\n\n\n[User]: b"
    assert tr.serialized_bytes(*rb[0]) - 2 == len("[User]: a\n\n\n\n[User]: b")


def test_sizes_and_text_equal_libpanto_on_the_bundled_corpus():
    oracle = oracle_module()
    sessions = [oracle.load_session(p)[1] for p in sorted(DATA.glob("*.jsonl"))]
    budgets = [0, 1_000, 5_000, 20_000, 100_000, 10**9]
    compared = 0
    for msgs, row in zip(sessions, oracle.oracle_requests(sessions, budgets), strict=True):
        for prefix_end, _, size, crc in row:
            text = our_request(msgs, prefix_end).encode()
            assert (len(text), zlib.crc32(text)) == (size, crc)
            assert our_request_bytes(msgs, prefix_end) == size
            compared += 1
    assert compared == len(sessions) * len(budgets) > 0


@settings(max_examples=examples(30), deadline=None)
@given(st.lists(conversations(), min_size=1, max_size=4))
def test_sizes_and_text_equal_libpanto_on_drawn_sessions(sessions):
    oracle = oracle_module()
    budgets = [0, 50, 2_000, 10**9]
    for msgs, row in zip(sessions, oracle.oracle_requests(sessions, budgets), strict=True):
        for prefix_end, _, size, crc in row:
            text = our_request(msgs, prefix_end).encode()
            assert (len(text), zlib.crc32(text)) == (size, crc)
            assert our_request_bytes(msgs, prefix_end) == size
