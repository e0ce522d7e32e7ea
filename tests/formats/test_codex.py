"""The Codex rollout adapter: hand-written fixtures for every rule, and the real rollouts in ``../shared``."""
from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from adapter_checks import assert_splits_match_oracle, blocks, first_line_is_json, parse
from conftest import DATA, FIXTURES, REALDATA

import panto_analytics as pa
from panto_analytics.errors import InputError
from panto_analytics.formats import detect_format
from panto_analytics.formats.jsonl import NOT_JSONL

CODEX = FIXTURES / "codex"


def usage(inp, cache_read, out):
    return {"input": inp, "output": out, "cache_read": cache_read, "cache_write": 0}


# --- detection ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["calls.jsonl", "legacy.jsonl", "compacted.jsonl", "bad_line.jsonl"])
def test_detects_codex(name):
    assert detect_format(CODEX / name) == "codex"


def test_other_formats_are_not_codex():
    assert detect_format(FIXTURES / "pi" / "v1.jsonl") == "pi"
    data = DATA
    assert detect_format(next(data.glob("*.jsonl"))) == "canonical"


# --- one model call, one assistant message -------------------------------------------


def test_calls_group_by_token_count():
    messages, meta, _ = parse(CODEX / "calls.jsonl")
    assert [(m.role, blocks(m), m.line) for m in messages] == [
        ("system", ["system"], 3),
        # <environment_context>: user input to the model, but Codex's own (is_contextual_fragment), not the user's
        ("system", ["system"], 4),
        ("user", ["text"], 7),
        # reasoning, commentary and two tool calls of one call; their results arrived before its count
        ("assistant", ["thinking", "text", "tool_use", "tool_use"], 10),
        ("user", ["tool_result", "tool_result"], 14),
        # the next call; its result arrived after its count (Codex 0.120)
        ("assistant", ["thinking", "tool_use"], 18),
        ("user", ["tool_result"], 23),
        ("assistant", ["text"], 24),
    ]
    assert messages[0].content == [{"type": "system", "text": "<permissions instructions>sandboxed"
                                     "</permissions instructions>", "mode": "append"}]
    call = messages[3].content
    assert call[0] == {"type": "thinking", "text": "look at the test first"}
    assert call[2] == {"type": "tool_use", "id": "call_1", "name": "exec_command", "input": '{"cmd":"pytest -x"}'}
    assert call[3] == {"type": "tool_use", "id": "call_2", "name": "apply_patch",
                       "input": "*** Begin Patch\n*** End Patch"}
    assert messages[4].content[1] == {"type": "tool_result", "tool_use_id": "call_2", "parts": [
        {"type": "text", "text": "patched"}, {"type": "media", "media_type": "image/png"}]}
    assert messages[5].content[0] == {"type": "thinking", "text": ""}  # encrypted reasoning: no readable text


def test_usage_is_each_calls_last_token_usage():
    messages, meta, report = parse(CODEX / "calls.jsonl")
    # input_tokens includes cached_input_tokens: input = 1000 - 600, cache_read = 600.
    assert [m.usage for m in messages if m.role == "assistant"] == [
        usage(400, 600, 50), usage(200, 900, 30), usage(150, 1000, 12)]
    assert all(m.usage is None for m in messages if m.role != "assistant")
    # The repeated count (same totals) is one call, not two; the count without info is no call.
    assert meta.api_calls == 3
    assert report.ignored[("codex", "event_msg:token_count (repeated)")] == 1
    assert report.ignored[("codex", "event_msg:token_count (no usage)")] == 1


def test_session_metadata():
    messages, meta, _ = parse(CODEX / "calls.jsonl")
    assert meta.session_id == "thread-child"
    assert meta.parent_session_id == "thread-parent"  # a subagent thread names its parent
    assert meta.model == "gpt-5.5"
    assert meta.context_window == 258400
    assert meta.created_at == datetime(2026, 1, 2, 9, 59, 59, tzinfo=UTC)
    assert messages[3].timestamp == datetime(2026, 1, 2, 10, 0, 1, tzinfo=UTC)
    assert messages[1].model is None and messages[2].model == "gpt-5.5"  # known from the turn_context on


def test_unknown_records_are_counted_not_fatal():
    _, _, report = parse(CODEX / "calls.jsonl")
    assert report.ignored[("codex", "world_state")] == 1
    assert report.ignored[("codex", "event_msg:some_future_event")] == 1
    assert report.ignored[("codex", "response_item:ghost_snapshot")] == 1
    assert report.ignored[("codex", "event_msg:user_message")] == 1  # UI echo of a response item
    assert report.n_skipped == 0


def test_legacy_rollout():
    messages, meta, report = parse(CODEX / "legacy.jsonl")
    assert [(m.role, blocks(m)) for m in messages] == [
        ("user", ["text"]),
        ("assistant", ["thinking", "text", "tool_use"]),
        ("user", ["tool_result"]),
        # without token counts a tool result ends the call
        ("assistant", ["text", "tool_use"]),
        ("user", ["tool_result"]),
        ("assistant", ["text"]),
    ]
    assert messages[3].content[1] == {"type": "tool_use", "id": "call_b", "name": "local_shell",
                                      "input": '{"type":"exec","command":["cat","a.py"]}'}
    assert all(m.usage is None for m in messages)
    assert meta.api_calls is None  # not recorded
    assert meta.session_id == "legacy-1"
    assert report.ignored[("codex", "record_type:state")] == 2


# --- compaction ----------------------------------------------------------------


def test_compacted_is_an_anchor_followed_by_the_replacement_history():
    messages, meta, _ = parse(CODEX / "compacted.jsonl")
    shape = [(m.role, blocks(m), m.line) for m in messages]
    assert shape == [
        ("user", ["text"], 3),
        ("assistant", ["text"], 4),
        ("user", ["compaction_summary"], 7),
        ("system", ["system"], 7),  # replacement history ...
        ("user", ["text"], 7),  # ... whose own copy of the summary is not repeated
        ("user", ["text"], 9),
        ("assistant", ["text"], 10),
        ("user", ["compaction_summary"], 12),  # remote compaction: opaque summary item dropped
        ("user", ["text"], 12),
        ("user", ["compaction_summary"], 13),  # old record: no replacement history
        ("user", ["text"], 14),
        ("assistant", ["text"], 15),
    ]
    assert messages[2].content[0]["text"] == "Another model summarized: the user asked a first question."
    assert messages[4].content[0]["text"] == "first question"
    assert meta.compactions == [
        # tokens_before: input + output of the last call before the record (the summarizing call)
        {"anchor_index": 2, "trigger": None, "tokens_before": 9800, "first_kept_index": 3,
         "trigger_index": 2, "kept_end_index": 5},
        {"anchor_index": 7, "trigger": None, "tokens_before": 3100, "first_kept_index": 8,
         "trigger_index": 7, "kept_end_index": 9},
        {"anchor_index": 9, "trigger": None, "tokens_before": 3100, "first_kept_index": None,
         "trigger_index": 9, "kept_end_index": None},
    ]
    # The summarizing call has a count but no recorded item: an API call without a message.
    assert meta.api_calls == 4
    assert [m.usage for m in messages if m.usage] == [usage(9000, 0, 500), usage(2000, 1000, 100),
                                                     usage(1500, 0, 50)]


def test_compactions_table_and_frame_agree():
    frame = pa.read_sessions([CODEX / "compacted.jsonl"])
    anchors = frame.filter("has_summary")["seq"].to_list()
    assert anchors == pa.ingest.compactions([CODEX / "compacted.jsonl"])["anchor_seq"].to_list() == [2, 7, 9]


# --- bad input -----------------------------------------------------------------


def test_bad_line_names_file_and_line():
    path = CODEX / "bad_line.jsonl"
    with pytest.raises(InputError) as e:
        pa.read_sessions([path])
    assert e.value.line == 3 and e.value.path == str(path) and "malformed JSON" in e.value.reason


def test_missing_field_names_file_and_line(tmp_path):
    lines = (CODEX / "bad_line.jsonl").read_text().splitlines()
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(lines[:2] + lines[3:]) + "\n")
    with pytest.raises(InputError, match=r"r\.jsonl:3: response_item\.call_id must be a string, got null"):
        pa.read_sessions([path])


def test_skip_invalid_counts_skips():
    messages, _, report = parse(CODEX / "bad_line.jsonl", skip_invalid=True)
    assert [m.role for m in messages] == ["user", "assistant"]
    assert report.n_skipped == 2


def test_pretty_printed_json_is_an_error_at_line_1():
    path = CODEX / "pretty.jsonl"
    with pytest.raises(InputError) as e:
        pa.read_sessions([path])
    assert (e.value.path, e.value.line) == (str(path), 1) and "pretty-printed JSON" in e.value.reason
    with pytest.raises(InputError, match=r"pretty\.jsonl:1: not JSONL"):
        parse(path, format="codex")


def test_pretty_printed_json_is_skipped_whole_and_counted():
    path = CODEX / "pretty.jsonl"
    messages, _, report = parse(path, format="codex", skip_invalid=True)
    assert messages == []
    lines = sum(1 for line in path.read_text().splitlines() if line.strip())
    assert report.skipped == Counter({(str(path), NOT_JSONL): lines})


def test_splits_match_libpanto_on_fixtures():
    assert_splits_match_oracle([CODEX / "calls.jsonl", CODEX / "legacy.jsonl", CODEX / "compacted.jsonl"])


# --- the real rollouts in ../shared ----------------------------------------------------


REAL = sorted((REALDATA / "codex").rglob("*.jsonl")) if (REALDATA / "codex").is_dir() else []
REAL_JSONL = [p for p in REAL if first_line_is_json(p)]
REAL_PRETTY = [p for p in REAL if not first_line_is_json(p)]
needs_real = pytest.mark.skipif(not REAL, reason=f"real Codex rollouts are absent ({REALDATA})")


def raw_facts(path: Path) -> dict:
    """What the raw JSON says, derived without the adapter: calls, item counts, windows."""
    calls, previous = [], None
    items = Counter()
    windows, in_window = 0, False  # model calls that produced items: between new counts and inputs
    meta = None
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            payload = rec.get("payload") or {}
            if rec["type"] == "session_meta":
                meta = meta or payload
            elif rec["type"] == "event_msg" and payload.get("type") == "token_count" and payload.get("info"):
                total = payload["info"]["total_token_usage"]
                if total != previous:
                    calls.append(payload["info"]["last_token_usage"])
                    previous = total
                    in_window = False
            elif rec["type"] == "response_item":
                kind, role = payload["type"], payload.get("role")
                texts = [c.get("text", "") for c in payload.get("content") or [] if c.get("type") == "input_text"]
                if kind == "message" and role == "user" and any(
                        t.strip().lower().startswith(("<environment_context>", "# agents.md instructions for "))
                        for t in texts):
                    role = "codex context"  # the session prefix Codex writes itself
                items[kind, role] += 1
                if kind == "message" and role == "assistant":
                    items["output_text"] += sum(c["type"] == "output_text" for c in payload["content"])
                if kind == "message" and role != "assistant":
                    in_window = False
                elif kind in ("reasoning", "function_call", "custom_tool_call", "message") and not in_window:
                    windows, in_window = windows + 1, True
    return {"calls": calls, "items": items, "windows": windows, "meta": meta}


@needs_real
@pytest.mark.parametrize("path", REAL_JSONL, ids=lambda p: p.parent.name + "/" + p.name[-20:])
def test_real_rollout_counts(path):
    messages, meta, report = parse(path)
    raw = raw_facts(path)
    calls, items = raw["calls"], raw["items"]
    assert meta.session_id == raw["meta"]["id"]
    assert meta.api_calls == len(calls)
    with_usage = [m for m in messages if m.usage is not None]
    assert all(m.role == "assistant" for m in with_usage)
    assert len(with_usage) == len(calls)  # every call in these files produced items
    for key, value in (("input", sum(c["input_tokens"] - c["cached_input_tokens"] for c in calls)),
                       ("cache_read", sum(c["cached_input_tokens"] for c in calls)),
                       ("output", sum(c["output_tokens"] for c in calls)),
                       ("cache_write", 0)):
        assert sum(m.usage[key] for m in with_usage) == value, key
    # Final context size: the last call's whole prompt plus its output.
    assert sum(with_usage[-1].usage.values()) == calls[-1]["total_tokens"]
    # One assistant message per call window; every item kept as a block.
    by_type = Counter(b["type"] for m in messages for b in m.content)
    assert sum(m.role == "assistant" for m in messages) == raw["windows"]
    assert by_type["tool_use"] == items["function_call", None] + items["custom_tool_call", None]
    assert by_type["tool_result"] == items["function_call_output", None] + items["custom_tool_call_output", None]
    assert by_type["thinking"] == items["reasoning", None]
    assert sum(m.role == "system" for m in messages) == items["message", "developer"] + items["message", "codex context"]
    assert sum(b["type"] == "text" for m in messages if m.role == "assistant" for b in m.content) \
        == items["output_text"]
    assert sum(m.role == "user" and "tool_result" not in blocks(m) for m in messages) == items["message", "user"]
    # Every result follows the message that made its call.
    called = set()
    for m in messages:
        for b in m.content:
            if b["type"] == "tool_result":
                assert b["tool_use_id"] in called
        called |= {b["id"] for b in m.content if b["type"] == "tool_use"}
    assert report.n_skipped == 0


@needs_real
def test_real_subagent_threads_name_their_parent():
    subagents = [p for p in REAL_JSONL if (raw_facts(p)["meta"] or {}).get("parent_thread_id")]
    assert len(subagents) == 2
    for path in subagents:
        _, meta, _ = parse(path)
        assert meta.parent_session_id == raw_facts(path)["meta"]["parent_thread_id"]


@needs_real
@pytest.mark.parametrize("path", REAL_PRETTY, ids=lambda p: p.name[-30:])
def test_real_pretty_printed_rollout(path):
    with pytest.raises(InputError) as e:
        pa.read_sessions([path])
    assert (e.value.path, e.value.line) == (str(path), 1)
    messages, _, report = parse(path, format="codex", skip_invalid=True)
    assert messages == []
    assert report.n_skipped == sum(1 for line in path.read_text().splitlines() if line.strip())


@needs_real
def test_real_splits_match_libpanto():
    assert_splits_match_oracle(REAL_JSONL)
