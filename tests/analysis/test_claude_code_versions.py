"""claude-code by version on recordings in Claude Code's shape (hand-made, not copied): a 2.1.185 compaction that
kept a preserved segment and a 2.1.112 one that kept nothing; the policy reads each file's `version` field."""
from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from click.testing import CliRunner

import panto_analytics as pa
from panto_analytics.analysis.compactions import agent_vs_libpanto, policies_vs_agents
from panto_analytics.cli import main
from panto_analytics.ingest.versions import with_agent_versions

TEXT = "word " * 2_400  # 12,000 characters
#: Each answer's context (input, cache and output tokens): the newest, 168,000, past Claude Code's 167,000 trigger.
CONTEXTS = {1: 40_000, 3: 80_000, 5: 120_000, 7: 150_000, 9: 160_000, 11: 168_000}


def session(path: Path, version: str, *, keep: int | None) -> Path:
    """Six questions and answers (:data:`CONTEXTS`), then an auto compaction keeping the newest ``keep`` messages
    (None: no compaction recorded)."""
    sid, rows, parent = path.stem, [], None
    for i in range(12):
        uid = f"{sid}-m{i}"
        record = {"parentUuid": parent, "isSidechain": False, "type": "user" if i % 2 == 0 else "assistant",
                  "uuid": uid, "sessionId": sid, "version": version, "timestamp": f"2026-06-01T09:{i:02d}:00.000Z"}
        if i % 2 == 0:
            record["message"] = {"role": "user", "content": f"question {i} {TEXT}"}
        else:
            record.update(requestId=f"req_{i}", message={
                "id": f"msg_{i}", "model": "claude-sonnet-4-6", "role": "assistant",
                "content": [{"type": "text", "text": f"answer {i} {TEXT}"}],
                "usage": {"input_tokens": 10, "cache_read_input_tokens": CONTEXTS[i] - 2_110,
                          "cache_creation_input_tokens": 2_000, "output_tokens": 100}})
        rows.append(record)
        parent = uid
    if keep is None:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return path
    kept = [r["uuid"] for r in rows[len(rows) - keep:]] if keep else []
    meta = {"trigger": "auto", "preTokens": 168_000, "postTokens": 12_000, "durationMs": 30_000}
    if kept:
        meta["preservedSegment"] = {"headUuid": kept[0], "anchorUuid": f"{sid}-s", "tailUuid": kept[-1]}
        meta["preservedMessages"] = {"anchorUuid": f"{sid}-s", "uuids": kept, "allUuids": kept}
    rows.append({"parentUuid": None, "logicalParentUuid": parent, "isSidechain": False, "type": "system",
                 "subtype": "compact_boundary", "content": "Conversation compacted", "compactMetadata": meta,
                 "uuid": f"{sid}-b", "sessionId": sid, "version": version, "timestamp": "2026-06-01T09:20:00.000Z"})
    rows.append({"parentUuid": f"{sid}-b", "isSidechain": False, "type": "user", "uuid": f"{sid}-s",
                 "isCompactSummary": True, "isVisibleInTranscriptOnly": True, "sessionId": sid, "version": version,
                 "timestamp": "2026-06-01T09:20:01.000Z",
                 "message": {"role": "user", "content": "This session is being continued. Summary: questions."}})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def corpus(tmp_path: Path) -> pa.ingest.Corpus:
    new = session(tmp_path / "new.jsonl", "2.1.185", keep=5)
    old = session(tmp_path / "old.jsonl", "2.1.112", keep=0)
    read = pa.ingest.read_corpus([new, old], cache=False)
    from dataclasses import replace

    return replace(read, messages=with_agent_versions(read.messages))


def test_the_versions_are_read_from_the_recordings(tmp_path):
    c = corpus(tmp_path)
    versions = c.messages.filter(pl.col("role") != "system").group_by("session_id").agg(
        pl.col("agent_version").unique())
    assert sorted((s, v) for s, v in versions.rows()) == [("new", ["2.1.185"]), ("old", ["2.1.112"])]


def test_claude_code_keeps_what_each_version_kept(tmp_path):
    c = corpus(tmp_path)
    rows = policies_vs_agents(c, ["claude-code"]).sort("session_id")
    # 2.1.185 kept the newest 5 messages: its precomputed summary started at the first answer past 144,000 (the
    # 150,000 one: min(180,000 - 36,000, 167,000) on a 200k window), and that answer's round and everything after
    # it were kept; 2.1.112 kept nothing. The policy, reading each file's version, makes the same cuts.
    assert rows.select("session_id", "agent_kept_messages", "kept_messages", "exact").rows() == [
        ("new", 5, 5, True), ("old", 0, 0, True)]
    assert rows["kept_start_seq"].to_list()[0] == rows["agent_first_kept_seq"].to_list()[0]
    # compactions says the same of what the agent kept.
    assert agent_vs_libpanto(c, [20_000]).sort("session_id")["agent_kept_messages"].to_list() == [5, 0]


def test_the_command_line_reads_the_versions(tmp_path):
    session(tmp_path / "new.jsonl", "2.1.185", keep=5)
    session(tmp_path / "old.jsonl", "2.1.112", keep=0)
    out = tmp_path / "rows.csv"
    r = CliRunner().invoke(main, ["policy-cuts", str(tmp_path), "--no-cache", "--policy", "claude-code",
                                  "--rows", str(out)])
    assert r.exit_code == 0, r.output
    assert pl.read_csv(out).sort("session_id")["exact"].to_list() == [True, True]
    forced = tmp_path / "forced.csv"
    r = CliRunner().invoke(main, ["policy-cuts", str(tmp_path), "--no-cache", "--policy", "claude-code:version=2.1.185",
                                  "--rows", str(forced)])
    assert r.exit_code == 0, r.output
    # Forced to 2.1.185, the old session is cut as the new version would: 5 kept where it kept none.
    assert pl.read_csv(forced).sort("session_id").select("kept_messages", "exact").rows() == [(5, True), (5, False)]


def test_a_dataset_replays_claude_code_by_version_as_the_files_do(tmp_path):
    """The version is stored in the dataset beside the frame (the files need not be there to replay it), so the
    dataset lane makes the cuts the files make."""
    files = tmp_path / "files"
    files.mkdir()
    session(files / "new.jsonl", "2.1.185", keep=None)
    session(files / "old.jsonl", "2.1.112", keep=None)
    ds = tmp_path / "corpus.ds"
    r = CliRunner().invoke(main, ["ingest", str(files), "--no-cache", "--dataset", str(ds)])
    assert r.exit_code == 0, r.output
    lanes = {}
    for lane, path in (("files", files), ("dataset", ds)):
        out = tmp_path / f"{lane}.parquet"
        r = CliRunner().invoke(main, ["replay", str(path), "--no-cache", "--window", "200k", "--policy", "claude-code",
                                      "--events", str(out)])
        assert r.exit_code == 0, r.output
        lanes[lane] = pl.read_parquet(out).with_columns(pl.col(pl.Categorical).cast(pl.String)).sort("session_id")
        if lane == "files":
            for f in files.iterdir():  # the dataset replays without its source files
                f.unlink()
    assert lanes["dataset"].equals(lanes["files"])
    # At the 168,000 call (past 167,000): 2.1.185 keeps from the 150,000 answer on, 2.1.112 nothing.
    assert lanes["files"].select("session_id", "kept_messages").rows() == [("new", 5), ("old", 0)]
