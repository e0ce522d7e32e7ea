"""sessions() and compactions(): one row per session and per recorded compaction, checked against the raw files."""
from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import orjson
import polars as pl
import pytest
from conftest import FIXTURES, REALDATA

import panto_analytics as pa
from panto_analytics.frame.schema import COMPACTIONS_SCHEMA, SESSIONS_SCHEMA


def write(path: Path, *records) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def msg(role, text="w", usage=None, ts=None):
    rec = {"type": "message", "role": role, "content": [{"type": "text", "text": text}]}
    if usage is not None:
        rec["usage"] = usage
    if ts is not None:
        rec["timestamp"] = ts
    return rec


USAGE_1 = {"input": 100, "output": 7, "cache_read": 50, "cache_write": 3}
USAGE_2 = {"input": 120, "output": 9, "cache_read": 200, "cache_write": 0}


@pytest.fixture
def corpus(tmp_path) -> Path:
    d = tmp_path / "c"
    d.mkdir()
    write(d / "a.jsonl",
          {"type": "session", "id": "sa", "model": "big", "context_window": 200000,
           "created_at": "2025-03-01T10:00:00Z"},
          msg("system", "be brief"),
          msg("user", ts="2025-03-01T10:00:05Z"),
          msg("assistant", usage=USAGE_1, ts="2025-03-01T10:00:09Z"),
          msg("user", ts="2025-03-01T10:01:00Z"),
          msg("assistant", usage=USAGE_2, ts="2025-03-01T10:01:30Z"),
          msg("user", "a last word", ts="2025-03-01T10:02:00Z"))
    write(d / "b.jsonl", msg("user"), msg("assistant"), msg("user"))  # no usage, no header
    (d / "empty.jsonl").write_text("")
    return d


def test_one_row_per_session_with_what_the_file_says(corpus):
    table = pa.ingest.sessions(corpus)
    assert table.schema == pl.Schema(SESSIONS_SCHEMA)
    rows = {r["session_id"]: r for r in table.to_dicts()}
    assert list(rows) == ["sa", "b"]  # file order; an empty file holds no session
    a = rows["sa"]
    assert a["file"] == str(corpus / "a.jsonl") and a["source_format"] == "canonical"
    assert (a["model"], a["context_window"]) == ("big", 200000)
    assert a["first_timestamp"] == datetime(2025, 3, 1, 10, 0, 0, tzinfo=UTC)  # created_at is earliest
    assert a["last_timestamp"] == datetime(2025, 3, 1, 10, 2, 0, tzinfo=UTC)
    assert (a["messages"], a["api_calls"], a["compactions"]) == (6, 2, 0)
    assert a["final_context"] == sum(USAGE_2.values())  # cumulativeAt of the LAST assistant usage
    b = rows["b"]
    assert (b["messages"], b["api_calls"], b["final_context"], b["model"], b["first_timestamp"]) == (3, 0, None,
                                                                                                      None, None)


def test_sessions_agree_with_the_message_frame_and_the_report(corpus):
    c = pa.ingest.read_corpus([corpus, FIXTURES / "codex" / "compacted.jsonl", FIXTURES / "claude_code" / "subagent"])
    per_session = c.messages.group_by("session_id").len()
    joined = c.sessions.join(per_session, on="session_id", how="left").with_columns(pl.col("len").fill_null(0))
    assert (joined["messages"] == joined["len"]).all()
    assert c.sessions.height == c.report.sessions
    assert c.sessions["api_calls"].sum() == c.report.api_calls
    assert c.sessions["messages"].sum() == c.report.messages == c.messages.height
    assert set(c.sessions["parent_session_id"].drop_nulls()) <= set(c.sessions["session_id"].cast(str))


def test_a_corpus_or_paths(corpus):
    c = pa.ingest.read_corpus(corpus)
    assert pa.ingest.sessions(c) is c.sessions and pa.ingest.compactions(c) is c.compactions
    assert pa.ingest.sessions(corpus).equals(c.sessions)
    with pytest.raises(TypeError, match="Corpus already read"):
        pa.ingest.sessions(c, skip_invalid=True)


def _claude_boundaries(path: Path) -> list[dict]:
    return [{**r["compactMetadata"], "sessionId": r["sessionId"]} for r in _records(path)
            if r.get("type") == "system" and r.get("subtype") == "compact_boundary"]


def test_compactions_are_the_recorded_events_at_their_anchors():
    paths = [FIXTURES / "claude_code" / "compaction.jsonl", FIXTURES / "codex" / "compacted.jsonl",
             FIXTURES / "pi" / "v1.jsonl"]
    c = pa.ingest.read_corpus(paths)
    table = c.compactions
    assert table.schema == pl.Schema(COMPACTIONS_SCHEMA)
    # every anchor is a compaction_summary message of its session, and every summary message is an anchor
    summaries = c.messages.filter("has_summary").select("session_id", pl.col("seq").alias("anchor_seq"))
    assert sorted(table.select("session_id", "anchor_seq").rows()) == sorted(summaries.rows())
    # what the agent kept verbatim follows the anchor
    kept = table.filter(pl.col("first_kept_seq").is_not_null())
    assert kept.height > 0 and (kept["first_kept_seq"] == kept["anchor_seq"] + 1).all()
    # trigger and tokens before, as the Claude Code file records them
    (boundary,) = _claude_boundaries(paths[0])
    claude = table.filter(pl.col("session_id") == boundary["sessionId"])
    assert claude.select("trigger", "tokens_before").rows() == [(boundary["trigger"], boundary["preTokens"])]
    # the sessions table counts them
    counts = dict(c.sessions.select(pl.col("session_id").cast(str), "compactions").rows())
    for sid, n in table.group_by(pl.col("session_id").cast(str)).len().rows():
        assert counts[sid] == n


needs_realdata = pytest.mark.skipif(not REALDATA.is_dir(), reason="../shared/realdata is not present")


def _records(path: Path):
    for line in path.read_bytes().splitlines():
        if line.strip():
            yield orjson.loads(line)


@needs_realdata
def test_final_context_of_real_codex_rollouts_is_the_last_calls_total():
    files = [p for p in sorted(REALDATA.glob("codex/**/*.jsonl")) if p.read_bytes()[:1] == b"{"
             and p.read_bytes().split(b"\n", 1)[0].strip().endswith(b"}")]
    c = pa.ingest.read_corpus(files)
    final = dict(c.sessions.select("file", "final_context").rows())
    checked = 0
    for path in files:
        counts = [r["payload"]["info"]["last_token_usage"] for r in _records(path)
                  if r.get("type") == "event_msg" and r["payload"].get("type") == "token_count"
                  and r["payload"].get("info")]
        if counts:  # input_tokens includes the cached part: input + output is the whole context
            assert final[str(path)] == counts[-1]["input_tokens"] + counts[-1]["output_tokens"], path
            checked += 1
    assert checked >= 2


@needs_realdata
def test_final_context_of_real_claude_code_transcripts_is_the_last_usage():
    files = sorted(REALDATA.glob("claude-code/**/*.jsonl"))
    c = pa.ingest.read_corpus(files)
    final = dict(c.sessions.select("file", "final_context").rows())
    checked = 0
    for path in files:
        if str(path) not in final:  # a resumed copy dropped by the adapter
            continue
        subagent = path.parent.name == "subagents"
        usages = [r["message"]["usage"] for r in _records(path)
                  if r.get("type") == "assistant" and (subagent or not r.get("isSidechain"))
                  and r["message"].get("model") != "<synthetic>" and r["message"].get("usage")]
        if not usages:
            continue
        u = usages[-1]
        expected = (u["input_tokens"] + u["output_tokens"] + u.get("cache_read_input_tokens", 0)
                    + u.get("cache_creation_input_tokens", 0))
        assert final[str(path)] == expected, path
        checked += 1
    assert checked >= 8
