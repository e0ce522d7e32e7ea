"""The pi session adapter: hand-written fixtures for every rule, and the real session in ``../shared``."""
from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from adapter_checks import assert_splits_match_oracle, blocks, parse
from conftest import FIXTURES, REALDATA

import panto_analytics as pa
from panto_analytics.errors import InputError
from panto_analytics.formats import canonical, detect_format, pi

PI = FIXTURES / "pi"


def usage(inp, out, cache_read, cache_write):
    return {"input": inp, "output": out, "cache_read": cache_read, "cache_write": cache_write}


def texts(messages):
    return [b.get("text") for m in messages for b in m.content]


# --- detection ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["v1.jsonl", "v3_branching.jsonl", "v2_dangling.jsonl"])
def test_detects_pi(name):
    assert detect_format(PI / name) == "pi"


def test_pi_and_canonical_headers_do_not_overlap():
    header = {"type": "session", "version": 3, "id": "x", "timestamp": "t", "cwd": "/"}
    entry = {"type": "message", "id": "a", "parentId": None, "message": {"role": "user", "content": "hi"}}
    assert pi.sniff(header) and pi.sniff(entry)
    assert not canonical.sniff(header) and not canonical.sniff(entry)
    ours = [{"type": "session", "id": "x", "model": "m"}, {"type": "message", "role": "user", "content": []}]
    assert all(canonical.sniff(r) and not pi.sniff(r) for r in ours)


# --- version 1: the file order ---------------------------------------------------------


def test_v1_messages():
    messages, meta, report = parse(PI / "v1.jsonl")
    assert [(m.role, blocks(m), m.line) for m in messages] == [
        ("user", ["text"], 2),
        ("assistant", ["thinking", "text", "tool_use"], 3),
        ("user", ["tool_result"], 4),
        ("assistant", ["text"], 6),
        ("user", ["text"], 7),  # its image has no libpanto block outside tool results: counted, dropped
        ("user", ["text"], 8),  # bashExecution; the one excluded from context (line 9) is not there
        ("assistant", [], 10),  # aborted
        ("user", ["compaction_summary"], 14),  # placed before the first kept entry (line 12)
        ("user", ["text"], 12),
        ("assistant", ["text"], 13),
        ("user", ["text"], 15),  # hookMessage (custom)
        ("user", ["text"], 16),
        ("assistant", ["text"], 17),
    ]
    assert messages[1].content[2] == {"type": "tool_use", "id": "t1", "name": "read", "input": '{"path":"conf.ini"}'}
    assert messages[2].content == [{"type": "tool_result", "tool_use_id": "t1", "parts": [
        {"type": "text", "text": "key=1"}, {"type": "media", "media_type": "image/png"}]}]
    assert messages[5].content[0]["text"] == "make\nok"
    assert [i for i, m in enumerate(messages) if m.bash] == [5]  # only the bashExecution is flagged
    assert report.ignored[("pi", "image in a user message")] == 1
    assert report.ignored[("pi", "bashExecution excluded from context")] == 1
    assert report.ignored[("pi", "thinking_level_change")] == 1


def test_v1_usage_and_models():
    messages, meta, _ = parse(PI / "v1.jsonl")
    assert [m.usage for m in messages if m.role == "assistant"] == [
        usage(10, 20, 1000, 50), usage(5, 30, 1060, 0),
        None,  # aborted before the provider reported usage: pi wrote zeros
        usage(2000, 100, 0, 0), usage(100, 10, 2000, 0)]
    assert [m.model for m in messages if m.role == "assistant"] == [
        "claude-sonnet-4-5", "claude-sonnet-4-5", "claude-sonnet-4-5", "gpt-5", "gpt-5"]
    assert messages[8].model == "gpt-5"  # after the model_change
    assert meta.model == "claude-sonnet-4-5"  # the model of most calls
    assert meta.api_calls is None  # pi records no count: the ingest counts assistant messages with usage
    assert meta.session_id == "pi-v1"
    assert meta.created_at == datetime(2025, 11, 20, 10, 0, tzinfo=UTC)
    assert messages[0].timestamp == datetime(2025, 11, 20, 10, 0, 1, tzinfo=UTC)


def test_v1_compaction_index_counts_the_header():
    _, meta, _ = parse(PI / "v1.jsonl")
    # firstKeptEntryIndex 11 is the 12th JSON line, header included: the user message of line 12.
    assert meta.compactions == [{"anchor_index": 7, "trigger": None, "tokens_before": 3000, "first_kept_index": 8,
                                 "trigger_index": 10, "kept_end_index": 10}]


# --- versions 2 and 3: the path from the last entry --------------------------------


def test_v3_follows_the_branch_of_the_last_entry():
    messages, meta, report = parse(PI / "v3_branching.jsonl")
    assert [(m.role, blocks(m), m.line) for m in messages] == [
        ("user", ["text"], 2),
        ("assistant", ["text"], 3),
        ("user", ["text"], 7),  # branch summary of the abandoned branch
        ("user", ["compaction_summary"], 13),
        ("user", ["text"], 8),  # first kept entry
        ("assistant", ["tool_use"], 9),
        ("user", ["tool_result"], 10),
        ("user", ["text"], 11),  # custom_message
        ("assistant", ["text"], 12),
        ("user", ["text"], 14),
        ("assistant", ["text"], 15),
    ]
    assert "try approach B" not in texts(messages) and "B result" not in texts(messages)
    assert messages[2].content[0]["text"] == "Tried approach B; it failed."
    assert report.ignored[("pi", "entry off the current branch")] == 3
    assert meta.compactions == [{"anchor_index": 3, "trigger": None, "tokens_before": 68, "first_kept_index": 4,
                                 "trigger_index": 9, "kept_end_index": 9}]
    assert meta.parent_session_id == "pi-parent"  # from parentSession's file name
    assert meta.session_id == "pi-v3" and meta.model == "m1"


def test_the_last_entry_picks_the_branch(tmp_path):
    """An entry appended under the abandoned branch makes it the context again."""
    path = tmp_path / "s.jsonl"
    entry = {"type": "message", "id": "b3", "parentId": "b2", "timestamp": "2025-12-01T10:00:20.000Z",
             "message": {"role": "user", "content": "back to B"}}
    path.write_text((PI / "v3_branching.jsonl").read_text() + json.dumps(entry) + "\n")
    messages, meta, report = parse(path)
    assert texts(messages) == ["start", "Started.", "try approach B", "B result", "back to B"]
    assert meta.compactions == []  # the compaction is on the other branch
    assert report.ignored[("pi", "entry off the current branch")] == 16 - 5


def test_dangling_parent_names_file_and_line():
    path = PI / "v2_dangling.jsonl"
    with pytest.raises(InputError) as e:
        pa.read_sessions([path])
    assert (e.value.path, e.value.line) == (str(path), 3) and "'zz'" in e.value.reason
    messages, _, report = parse(path, skip_invalid=True)
    assert texts(messages) == ["hello"] and report.n_skipped == 1


def test_malformed_line_and_missing_fields(tmp_path):
    lines = (PI / "v1.jsonl").read_text().splitlines()
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines[:3] + ['{"type":"message","timestamp":"x","message":{"role":"user","con'] +
                              lines[3:]) + "\n")
    with pytest.raises(InputError, match=r"s\.jsonl:4: malformed JSON"):
        parse(path)
    bad = json.loads(lines[3])
    del bad["message"]["toolCallId"]
    path.write_text("\n".join(lines[:3] + [json.dumps(bad)] + lines[4:]) + "\n")
    with pytest.raises(InputError, match=r"s\.jsonl:4: message\.toolCallId must be a string, got null"):
        parse(path)
    messages, _, report = parse(path, skip_invalid=True)
    assert len(messages) == 12 and report.n_skipped == 1


def test_pretty_printed_json(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"type": "session", "id": "x", "timestamp": "t", "cwd": "/"}, indent=2) + "\n")
    with pytest.raises(InputError, match=r"s\.jsonl:1: not JSONL"):
        parse(path, format="pi")


def test_splits_match_libpanto_on_fixtures():
    assert_splits_match_oracle([PI / "v1.jsonl", PI / "v3_branching.jsonl"])


def test_frame_and_tables():
    frame = pa.read_sessions([PI / "v1.jsonl", PI / "v3_branching.jsonl"])
    assert frame.filter("has_summary").select("session_id", "seq").rows() == [("pi-v1", 7), ("pi-v3", 3)]
    assert set(frame["source_format"]) == {"pi"}
    # The bashExecution (line 8) is a user message flagged bash_execution (pi-whole-turn starts no turn there).
    assert frame.filter("bash_execution").select("session_id", "role", "line").rows() == [("pi-v1", "user", 8)]


# --- the real session in ../shared -----------------------------------------------------

REAL = sorted((REALDATA / "pi").glob("*.jsonl")) if (REALDATA / "pi").is_dir() else []


@pytest.mark.skipif(not REAL, reason=f"real pi sessions are absent ({REALDATA})")
@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_real_session_counts(path):
    entries = [(n, json.loads(line)) for n, line in enumerate(path.read_text().splitlines(), 1) if line.strip()]
    raw = [(n, e["message"]) for n, e in entries if e["type"] == "message"]
    assert not any(m.get("excludeFromContext") for _, m in raw)  # else they would not be messages
    assert not any(e["type"] == "compaction" for _, e in entries)
    messages, meta, report = parse(path)
    assert [m.line for m in messages] == [n for n, _ in raw]  # v1: every message, file order
    assert [m.role for m in messages] == ["assistant" if m["role"] == "assistant" else "user" for _, m in raw]
    assert [m.bash for m in messages] == [m["role"] == "bashExecution" for _, m in raw]
    keys = {"input": "input", "output": "output", "cache_read": "cacheRead", "cache_write": "cacheWrite"}
    calls = [m["usage"] for _, m in raw if m["role"] == "assistant" and any(m["usage"][k] for k in keys.values())]
    with_usage = [m for m in messages if m.usage is not None]
    assert len(with_usage) == len(calls)
    for ours, theirs in keys.items():
        assert sum(m.usage[ours] for m in with_usage) == sum(c[theirs] for c in calls), ours
    assert sum(with_usage[-1].usage.values()) == sum(calls[-1][k] for k in keys.values())  # final context
    raw_blocks = [b["type"] for _, m in raw if isinstance(m["content"], list) for b in m["content"]]
    ours_blocks = [b["type"] for m in messages for b in m.content]
    assert ours_blocks.count("tool_use") == raw_blocks.count("toolCall")
    assert ours_blocks.count("thinking") == raw_blocks.count("thinking")
    assert ours_blocks.count("tool_result") == sum(m["role"] == "toolResult" for _, m in raw)
    assert meta.session_id == entries[0][1]["id"] and report.n_skipped == 0
    sessions = pa.ingest.sessions([path])
    assert sessions["api_calls"].to_list() == [len(calls)]
    assert sessions["final_context"].to_list() == [sum(calls[-1][k] for k in keys.values())]


@pytest.mark.skipif(not REAL, reason=f"real pi sessions are absent ({REALDATA})")
def test_real_splits_match_libpanto():
    assert_splits_match_oracle(REAL)
