"""The synthetic Claude Code corpus: deterministic, read cleanly, and counted right.

Every expected count is derived here from the raw records the generator
wrote, not from the adapter: API calls are the distinct ``(message.id,
requestId)`` of non-synthetic assistant lines, a call's usage is its last
line's, and so on.
"""
from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import orjson
import polars as pl
import pytest

from benchmarks.synth_claude_code import SYNTHETIC_MODEL, generate_session, write_corpus
from panto_analytics import read_sessions
from panto_analytics.errors import IngestReport
from panto_analytics.formats import detect_format
from panto_analytics.ingest import read_corpus

N, SEED = 16, 5

USAGE = {"input": "input_tokens", "output": "output_tokens", "cache_read": "cache_read_input_tokens",
         "cache_write": "cache_creation_input_tokens"}


@pytest.fixture(scope="module")
def paths(tmp_path_factory) -> list[Path]:
    return write_corpus(tmp_path_factory.mktemp("claude-code"), N, seed=SEED)


@pytest.fixture(scope="module")
def corpus(paths):
    report = IngestReport()
    return read_corpus(paths, report=report)   # strict: any bad line would raise


def records(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def expected(path: Path) -> dict:
    """What one transcript holds, from its raw records."""
    calls: dict[tuple, dict] = {}      # (message.id, requestId) -> usage of its last line, in call order
    assistant_ids, users, queued, results, boundaries, lines_per_call = set(), 0, 0, 0, 0, Counter()
    for rec in records(path):
        kind = rec["type"]
        if kind == "assistant":
            msg = rec["message"]
            assistant_ids.add(msg["id"])
            lines_per_call[msg["id"]] += 1
            if msg["model"] != SYNTHETIC_MODEL:
                key = (msg["id"], rec["requestId"])
                calls.pop(key, None)          # re-insert: the dict's order is the order calls ended
                calls[key] = msg["usage"]
        elif kind == "user":
            users += 1
            content = rec["message"]["content"]
            results += isinstance(content, list) and any(b["type"] == "tool_result" for b in content)
        elif kind == "attachment" and rec["attachment"]["type"] == "queued_command":
            queued += 1
        elif kind == "system" and rec["subtype"] == "compact_boundary":
            boundaries += 1
    sums = {col: sum(u[key] for u in calls.values()) for col, key in USAGE.items()}
    last = list(calls.values())[-1] if calls else None
    return {"api_calls": len(calls), "usage": sums,
            "final_context": sum(last[k] for k in USAGE.values()) if last else None,
            # a boundary and its summary record are one message, the summary being a user record
            "messages": users + len(assistant_ids) + queued, "tool_results": results,
            "compactions": boundaries, "streamed_calls": sum(n > 1 for n in lines_per_call.values())}


def test_the_same_seed_writes_the_same_bytes(tmp_path):
    a = write_corpus(tmp_path / "a", 3, seed=1)
    b = write_corpus(tmp_path / "b", 4, seed=1)
    c = write_corpus(tmp_path / "c", 3, seed=2)
    # a larger corpus starts with the smaller one
    assert [p.name for p in a] == [p.name for p in b[:3]]
    assert all(p.read_bytes() == q.read_bytes() for p, q in zip(a, b))
    assert {p.name for p in a}.isdisjoint(p.name for p in c)
    assert generate_session(random.Random(3), "x") == generate_session(random.Random(3), "x")
    assert generate_session(random.Random(3), "x") != generate_session(random.Random(4), "x")


def test_reads_cleanly_as_claude_code(paths, corpus):
    assert {detect_format(p) for p in paths} == {"claude-code"}
    report = corpus.report
    assert not report.skipped
    assert report.files == report.sessions == N
    assert corpus.sessions["source_format"].cast(pl.String).unique().to_list() == ["claude-code"]
    # one file, one session, named as Claude Code names it
    assert corpus.sessions["session_id"].cast(pl.String).to_list() == [p.stem for p in paths]
    assert corpus.sessions["parent_session_id"].null_count() == N
    ignored = {kind for (fmt, kind) in report.ignored if fmt == "claude-code"}
    assert {"file-history-snapshot", "queue-operation", "ai-title", "last-prompt", "progress",
            "system/turn_duration", "attachment/skill_listing"} <= ignored
    # read_sessions gives the same frame, in parallel or not
    frame = read_sessions(paths, jobs=1)
    assert frame.equals(corpus.messages)


def test_the_corpus_has_what_real_transcripts_have(paths):
    found = [expected(p) for p in paths]
    assert sum(f["streamed_calls"] for f in found) > 0      # calls written one block per line
    assert sum(f["compactions"] for f in found) > 0
    assert sum(f["tool_results"] for f in found) > 0
    kinds = Counter(r["type"] for p in paths for r in records(p))
    assert kinds["assistant"] > kinds["user"] > 0
    assistant = [r for p in paths for r in records(p) if r["type"] == "assistant"]
    assert any(r["message"]["model"] == SYNTHETIC_MODEL for r in assistant)
    # 1.0.x calls: earlier lines carry a partial output count, the last line the call's own
    outputs: dict[str, list[int]] = {}
    for r in assistant:
        outputs.setdefault(r["message"]["id"], []).append(r["message"]["usage"]["output_tokens"])
    assert any(len(set(o)) > 1 for o in outputs.values())
    assert any(len(o) > 1 and len(set(o)) == 1 for o in outputs.values())
    # a tool result written between two lines of one call, while it streams
    def interleaved(rs: list[dict]) -> bool:
        return any(a["type"] == "assistant" and b["type"] == "user" and c["type"] == "assistant"
                   and a["message"]["id"] == c["message"]["id"] for a, b, c in zip(rs, rs[1:], rs[2:]))
    assert any(interleaved(records(p)) for p in paths)


def test_calls_usage_and_messages_match_the_raw_records(paths, corpus):
    by_id = {row["session_id"]: row for row in corpus.sessions.to_dicts()}
    sums = {row["session_id"]: row for row in corpus.messages.group_by("session_id").agg(
        pl.col(list(USAGE)).cast(pl.UInt64).sum(), tool_results=pl.col("has_tool_result").sum(),
    ).with_columns(pl.col("session_id").cast(pl.String)).to_dicts()}
    compactions = Counter(corpus.compactions["session_id"].cast(pl.String).to_list())
    for path in paths:
        want, row, got = expected(path), by_id[path.stem], sums[path.stem]
        assert row["api_calls"] == want["api_calls"] > 0, path
        assert row["messages"] == want["messages"], path
        assert row["final_context"] == want["final_context"], path
        assert {col: got[col] for col in USAGE} == want["usage"], path
        assert got["tool_results"] == want["tool_results"], path
        assert compactions[path.stem] == want["compactions"] == row["compactions"], path
