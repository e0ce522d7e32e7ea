"""The Claude Code adapter: every mapping rule on small hand-written fixtures,
and the real recordings in ``../shared/realdata/claude-code`` checked against
counts derived here, independently, from their raw JSON."""
from __future__ import annotations

import re
from pathlib import Path

import orjson
import polars as pl
import pytest
from adapter_checks import assert_splits_match_oracle
from conftest import FIXTURES as ALL_FIXTURES
from conftest import SHARED

import panto_analytics as pa
from panto_analytics.errors import IngestReport, InputError
from panto_analytics.formats import claude_code, detect_format
from panto_analytics.formats.contract import SourceFile
from panto_analytics.ingest.paths import expand_paths
from panto_analytics.ingest.pipeline import parse_files

FIXTURES = ALL_FIXTURES / "claude_code"
REAL = SHARED / "realdata" / "claude-code"
# Every transcript the folder holds, main sessions and subagents (19 when written; the folder grows).
REAL_FILES = sorted(REAL.rglob("*.jsonl")) if REAL.is_dir() else []
USAGE = ("input", "output", "cache_read", "cache_write")

needs_real = pytest.mark.skipif(not REAL.is_dir(), reason=f"{REAL} is absent")


def messages_of(path: Path, **kw) -> tuple[list, SourceFile]:
    """The adapter's messages for one file, and its SourceFile (meta, report)."""
    src = SourceFile(path, claude_code.NAME, **kw)
    return list(claude_code.parse(src)), src


def parsed(path: Path, report: IngestReport | None = None) -> list:
    return parse_files(expand_paths(path), report=report)


def ignored(report: IngestReport) -> dict[str, int]:
    return {kind: n for (fmt, kind), n in report.ignored.items() if fmt == claude_code.NAME}


# ---------------------------------------------------------------------------
# Detection
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["streaming.jsonl", "compaction.jsonl", "summary-only.jsonl",
                                  "subagent/parent-1/subagents/agent-abc123.jsonl"])
def test_fixtures_are_detected_as_claude_code(name):
    assert detect_format(FIXTURES / name) == claude_code.NAME


def test_canonical_records_are_not_claude_code():
    assert not claude_code.sniff({"type": "message", "role": "user", "content": []})
    assert not claude_code.sniff({"type": "session", "id": "s"})
    # Codex rollout and pi records either.
    assert not claude_code.sniff({"timestamp": "t", "type": "response_item", "payload": {}})
    assert not claude_code.sniff({"type": "message", "id": "e1", "parentId": None, "message": {}})


@needs_real
def test_every_real_transcript_is_detected():
    files = expand_paths(REAL)
    assert len(files) == len(REAL_FILES)
    assert {detect_format(f) for f in files} == {claude_code.NAME}


# ---------------------------------------------------------------------------
# Hand-written fixtures, one rule each
# ---------------------------------------------------------------------------

def test_streamed_call_is_one_assistant_message_with_its_final_usage():
    msgs, src = messages_of(FIXTURES / "streaming.jsonl")
    call = msgs[1]
    assert call.role == "assistant" and call.line == 5
    # Three lines of msg_1/req_1, blocks in order.
    assert [b["type"] for b in call.content] == ["thinking", "tool_use", "tool_use"]
    assert [b.get("id") for b in call.content[1:]] == ["toolu_1", "toolu_2"]
    assert call.content[1]["input"] == '{"command":"ls"}'
    # The first lines carry the partial usage of message_start; the last line the call's own.
    assert call.usage == {"input": 3, "output": 42, "cache_read": 90, "cache_write": 7, "cache_write_1h": 0}
    assert call.model == "claude-sonnet-4-6"
    assert src.meta.api_calls == 2


def test_tool_results_written_while_a_call_streams_follow_it():
    msgs, _ = messages_of(FIXTURES / "streaming.jsonl")
    # r1 (line 7) was written between the call's 2nd and 3rd line: it still comes after the call.
    assert [(m.role, m.line) for m in msgs[:4]] == [("user", 3), ("assistant", 5), ("user", 7), ("user", 10)]
    assert [m.content[0]["tool_use_id"] for m in msgs[2:4]] == ["toolu_1", "toolu_2"]
    assert msgs[2].content[0]["parts"] == [{"type": "text", "text": "a.txt b.txt"}]


def test_queued_prompt_is_a_user_message():
    msgs, _ = messages_of(FIXTURES / "streaming.jsonl")
    assert (msgs[4].role, msgs[4].content) == ("user", [{"type": "text", "text": "also count them"}])


def test_records_that_are_not_conversation_are_counted_per_type():
    report = IngestReport()
    msgs, _ = messages_of(FIXTURES / "streaming.jsonl", report=report)
    assert len(msgs) == 8
    assert ignored(report) == {
        "queue-operation": 1, "file-history-snapshot": 1, "attachment/todo_reminder": 1, "progress": 1,
        "system/turn_duration": 1, "system/api_error": 1, "ai-title": 1, "last-prompt": 1,
        "permission-mode": 1, "summary": 1,
        "brand-new-record": 1,          # unknown types: counted, never fatal
        "user (duplicate uuid)": 1,     # u2 written twice
    }
    assert report.n_skipped == 0


def test_synthetic_api_error_has_no_usage_and_is_no_api_call():
    msgs, src = messages_of(FIXTURES / "streaming.jsonl")
    last = msgs[-1]
    assert (last.role, last.model, last.usage) == ("assistant", claude_code.SYNTHETIC_MODEL, None)
    assert src.meta.api_calls == 2          # msg_1 and msg_2, not the synthetic one
    assert src.meta.model == "claude-sonnet-4-6"


def test_session_metadata():
    msgs, src = messages_of(FIXTURES / "streaming.jsonl")
    meta = src.meta
    assert meta.session_id == "s-stream" and meta.parent_session_id is None
    assert meta.created_at.isoformat() == "2026-01-01T10:00:01+00:00"
    assert msgs[0].timestamp.isoformat() == "2026-01-01T10:00:01+00:00"
    assert meta.message_ids == ["u1", "a1", "r1", "r2", "q1", "a4", "u2", "x1"]


def test_compaction_becomes_one_summary_message_at_the_boundary():
    msgs, src = messages_of(FIXTURES / "compaction.jsonl")
    assert [m.role for m in msgs] == ["user", "assistant", "user", "assistant", "user", "user", "assistant"]
    anchor = msgs[4]
    assert anchor.content == [{"type": "compaction_summary", "text":
                               "This session is being continued from a previous conversation. "
                               "Summary: two questions were answered."}]
    assert (anchor.usage, anchor.line) == (None, 5)
    assert src.meta.compactions == [{"anchor_index": 4, "trigger": "auto", "tokens_before": 166,
                                     "first_kept_index": None, "trigger_index": 4, "kept_end_index": None}]


def test_compaction_anchor_makes_what_follows_the_active_window():
    frame = pa.read_sessions(FIXTURES / "compaction.jsonl")
    assert frame["has_summary"].to_list() == [False] * 4 + [True] + [False] * 2
    turns = pa.turns(frame)
    # Only the turn after the anchor is walked. libpanto's priorAssistantUsage looks back past
    # the anchor, to a2 (cumulative 166), so the turn's delta 52 - 166 saturates to 0.
    assert turns.select("start_seq", "end_seq", "tokens").rows() == [(5, 7, 0)]


def test_preserved_segment_follows_the_summary():
    msgs, src = messages_of(FIXTURES / "preserved.jsonl")
    # u2 and a2 precede the boundary in the file but were kept verbatim: they follow the anchor.
    assert [m.line for m in msgs] == [1, 2, 5, 3, 4, 7, 8]
    assert msgs[2].content[0]["type"] == "compaction_summary"
    assert src.meta.compactions == [{"anchor_index": 2, "trigger": "manual", "tokens_before": 283,
                                     "first_kept_index": 3, "trigger_index": 5, "kept_end_index": 5}]


def test_subagent_transcript_is_a_session_linked_to_its_parent():
    report = IngestReport()
    files = parsed(FIXTURES / "subagent", report)
    by_id = {p.session.session_id: p for p in files}
    assert set(by_id) == {"parent-1", "parent-1/agent-abc123"}
    agent = by_id["parent-1/agent-abc123"]
    assert agent.session.parent_session_id == "parent-1"
    assert by_id["parent-1"].session.parent_session_id is None
    assert agent.messages["role"].to_list() == ["user", "assistant"]
    assert agent.session.api_calls == 1 and agent.session.model == "claude-haiku-4-5"
    assert report.sessions == 2 and report.api_calls == 3


def test_resumed_session_is_counted_once():
    report = IngestReport()
    files = parsed(FIXTURES / "resume", report)
    assert len(files) == 1
    (p,) = files
    # b.jsonl copied a.jsonl from its compaction on (c1, s1, u3, a3) and went on;
    # a.jsonl's part before the copy (u1..a2) is put in front, under b's session id.
    assert p.session.session_id == "sess-b"
    assert p.session.message_ids == ["u1", "a1", "u2", "a2", "c1", "u3", "a3", "u4", "a4"]
    frame = p.messages
    assert frame["seq"].to_list() == list(range(9))
    assert frame["session_id"].cast(str).unique().to_list() == ["sess-b"]
    assert [Path(f).name for f in frame["file"].cast(str)] == ["a.jsonl"] * 4 + ["b.jsonl"] * 5
    assert p.session.compactions == [{"anchor_index": 4, "trigger": "auto", "tokens_before": 1217,
                                      "first_kept_index": None, "trigger_index": 4, "kept_end_index": None}]
    assert p.session.api_calls == 4           # a1, a2 (from a), a3, a4 (from b); a3 once
    assert frame["output"].sum() == 10 + 12 + 7 + 6
    assert (report.files, report.sessions, report.messages, report.api_calls) == (2, 1, 9, 4)
    assert ignored(report) == {"session resumed in another file": 1}


def test_resumed_session_without_compaction_drops_the_copied_file():
    report = IngestReport()
    files = parsed(FIXTURES / "resume-full", report)
    assert [p.session.session_id for p in files] == ["sess-d"]
    assert files[0].messages.height == 4 and files[0].session.api_calls == 2
    assert (report.sessions, report.messages, report.api_calls) == (1, 4, 2)
    frame = pa.read_sessions(FIXTURES / "resume-full")
    assert frame.height == 4


def test_resume_rule_holds_on_a_cached_read(tmp_path):
    # The hook sees cached files too: message_ids travel in the cached session metadata.
    reports = [IngestReport(), IngestReport()]
    frames = [pa.read_sessions(FIXTURES / "resume", cache=tmp_path, report=r) for r in reports]
    assert frames[0].equals(frames[1]) and frames[1].height == 9
    assert [(r.sessions, r.messages, r.api_calls) for r in reports] == [(1, 9, 4)] * 2


def test_resume_rule_leaves_unrelated_sessions_and_subagents_alone():
    files = parse_files([p for p in expand_paths(FIXTURES) if p.name != "malformed.jsonl"])
    ids = sorted(p.session.session_id for p in files)
    assert ids == sorted(["s-stream", "s-compact", "s-keep", "parent-1", "parent-1/agent-abc123",
                          "sess-b", "sess-d", "s-blocks", "summary-only", "s-restore"])



def test_resume_rule_skips_the_search_only_where_no_file_starts_with_another_files_message():
    from panto_analytics.formats.claude_code.resume import _any_first_shared
    from panto_analytics.ingest.pipeline import parse_here

    def mains(path):
        return [p for p in parse_here(expand_paths(path)) if p.session.parent_session_id is None]

    assert _any_first_shared(mains(FIXTURES / "resume")) and _any_first_shared(mains(FIXTURES / "resume-full"))
    alone = [FIXTURES / name for name in ("blocks.jsonl", "compaction.jsonl", "streaming.jsonl")]
    assert not _any_first_shared(mains(alone))

def _write(path: Path, *records: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def _user(uid, text, ts="2026-01-01T00:00:00Z", **extra):
    return {"type": "user", "uuid": uid, "parentUuid": None, "sessionId": "s", "timestamp": ts,
            "message": {"role": "user", "content": text}, **extra}


def _asst(uid, mid, text, out, ts="2026-01-01T00:00:01Z", **extra):
    return {"type": "assistant", "uuid": uid, "parentUuid": None, "sessionId": "s", "requestId": "r-" + mid,
            "timestamp": ts, "message": {"id": mid, "model": "m", "content": [{"type": "text", "text": text}],
                                         "usage": {"input_tokens": 1, "output_tokens": out}}, **extra}


def test_files_sharing_a_uuid_by_chance_are_not_folded(tmp_path):
    # Same uuids, different timestamps: not a copy, so two sessions (and a clash of nothing).
    _write(tmp_path / "x.jsonl", _user("u1", "a", sessionId="x"), _asst("a1", "m1", "b", 2, sessionId="x"))
    _write(tmp_path / "y.jsonl", _user("u1", "c", ts="2026-02-02T00:00:00Z", sessionId="y"),
           _asst("a1", "m9", "d", 2, ts="2026-02-02T00:00:01Z", sessionId="y"))
    assert len(parsed(tmp_path)) == 2


def test_call_lines_split_by_another_message_count_once(tmp_path):
    path = _write(tmp_path / "split.jsonl", _user("u1", "q"), _asst("a1", "m1", "part one", 5),
                  _user("u2", "interjection"), _asst("a2", "m1", "part two", 9))
    msgs, src = messages_of(path)
    # Billed once, with its final usage (its last line's), on its first message.
    assert [(m.role, m.usage and m.usage["output"]) for m in msgs] == \
        [("user", None), ("assistant", 9), ("user", None), ("assistant", None)]
    assert src.meta.api_calls == 1


def _pdf_call_split(tmp_path):
    """A call shaped like Claude Code's after a Read of a PDF: the tool result, then a meta user record holding the
    document and a queued prompt, both between the call's lines (its first line's usage partial)."""
    def line(uid, blocks, out):
        return {**_asst(uid, "m1", "", out), "message": {
            "id": "m1", "model": "claude-sonnet-4-5", "content": blocks,
            "usage": {"input_tokens": 3, "cache_read_input_tokens": 20_000, "cache_creation_input_tokens": 500,
                      "output_tokens": out, "cache_creation": {"ephemeral_5m_input_tokens": 0,
                                                               "ephemeral_1h_input_tokens": 500}}}}
    return _write(tmp_path / "pdf.jsonl", _user("u1", "read the paper"),
                  line("a1", [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "p.pdf"}}], 1),
                  _user("u2", [{"type": "tool_result", "tool_use_id": "t1", "content": "PDF file read"}]),
                  _user("u3", [{"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                                                "data": "JVBERi0="}}], isMeta=True),
                  {"type": "attachment", "uuid": "q1", "parentUuid": None, "sessionId": "s",
                   "timestamp": "2026-01-01T00:00:02Z", "attachment": {"type": "queued_command", "prompt": "and then"}},
                  line("a2", [{"type": "text", "text": "The paper says"}], 412),
                  _user("u4", "thanks"))


def test_a_call_split_by_other_records_is_billed_once_with_its_final_usage(tmp_path):
    from reference import claude_code_lines as oracle

    path = _pdf_call_split(tmp_path)
    msgs, src = messages_of(path)
    usages = [(m.role, m.usage and (m.usage["output"], m.usage["cache_read"], m.usage["cache_write_1h"])) for m in msgs]
    assert usages == [("user", None), ("assistant", (412, 20_000, 500)), ("user", None), ("user", None),
                      ("user", None), ("assistant", None), ("user", None)]
    assert src.meta.api_calls == 1
    ref = list(oracle.parse(SourceFile(path, claude_code.NAME)))
    assert [m.usage for m in ref] == [m.usage for m in msgs]
    frame = pa.read_sessions(path)   # the fast path takes the file
    assert frame["output"].drop_nulls().to_list() == [412]
    # $3 in, $15 out, $0.30 read, $6 1-hour write per MTok: 3 x 3 + 412 x 15 + 20,000 x 0.30 + 500 x 6 = 15,189 $/M
    assert pa.costs(frame)["cost_usd"].item() == pytest.approx(0.015189, abs=1e-12)


def test_compact_summary_without_boundary_is_its_own_anchor(tmp_path):
    path = _write(tmp_path / "old.jsonl", _user("u1", "q"), _asst("a1", "m1", "a", 3),
                  _user("s1", "the summary", isCompactSummary=True), _user("u2", "next"))
    msgs, src = messages_of(path)
    assert msgs[2].content == [{"type": "compaction_summary", "text": "the summary"}]
    assert src.meta.compactions == [{"anchor_index": 2, "trigger": None, "tokens_before": None,
                                     "first_kept_index": None, "trigger_index": 2, "kept_end_index": None}]


def test_boundary_without_summary_still_anchors(tmp_path):
    boundary = {"type": "system", "subtype": "compact_boundary", "uuid": "c1", "parentUuid": None,
                "compactMetadata": {"trigger": "manual", "preTokens": 77}}
    path = _write(tmp_path / "cut.jsonl", _user("u1", "q"), _asst("a1", "m1", "a", 3), boundary, _user("u2", "next"))
    msgs, src = messages_of(path)
    assert [m.content[0]["type"] for m in msgs] == ["text", "text", "compaction_summary", "text"]
    assert msgs[2].content[0]["text"] == ""
    assert src.meta.compactions[0]["anchor_index"] == 2 and src.meta.compactions[0]["tokens_before"] == 77


def test_bad_usage_is_an_error_naming_the_line(tmp_path):
    bad = _asst("a1", "m1", "a", -3)
    path = _write(tmp_path / "neg.jsonl", _user("u1", "q"), bad)
    with pytest.raises(InputError, match=r"neg\.jsonl:2: message\.usage\.output_tokens must be a non-negative integer"):
        messages_of(path)


def test_malformed_line_is_an_error_naming_file_and_line():
    path = FIXTURES / "malformed.jsonl"
    with pytest.raises(InputError) as err:
        messages_of(path)
    assert (err.value.path, err.value.line) == (str(path), 2)
    assert str(err.value).startswith(f"{path}:2: malformed JSON")


def test_malformed_lines_are_counted_skips_with_skip_invalid():
    report = IngestReport()
    msgs, _ = messages_of(FIXTURES / "malformed.jsonl", skip_invalid=True, report=report)
    assert [(m.role, m.line) for m in msgs] == [("user", 1), ("assistant", 5)]
    reasons = sorted(reason for (_, reason) in report.skipped)
    assert report.n_skipped == 3
    assert reasons[0] == "expected a JSON object, got array"
    assert reasons[1].startswith("malformed JSON")
    assert reasons[2] == "user record has no 'message' object"


def test_record_missing_its_message_is_reported_with_its_line():
    path = FIXTURES / "malformed.jsonl"
    lines = path.read_text().splitlines()
    one = path.parent / "missing-message.jsonl"
    try:
        one.write_text(lines[0] + "\n" + lines[2] + "\n")
        with pytest.raises(InputError, match=r"missing-message\.jsonl:2: user record has no 'message' object"):
            messages_of(one)
    finally:
        one.unlink()


def test_block_mapping():
    report = IngestReport()
    msgs, src = messages_of(FIXTURES / "blocks.jsonl", report=report)
    assert [m.role for m in msgs] == ["user", "assistant", "user", "assistant"]
    # A pasted image has no libpanto block outside a tool result: dropped, counted.
    assert msgs[0].content == [{"type": "text", "text": "what is in this picture?"}]
    kinds = [b["type"] for b in msgs[1].content]
    assert kinds == ["thinking", "tool_use", "text", "tool_use"]     # redacted thinking, server tool, its result
    assert msgs[1].content[0]["text"] == ""
    assert msgs[1].content[1] == {"type": "tool_use", "id": "srvtoolu_1", "name": "web_search",
                                  "input": '{"query":"red fox"}'}
    assert msgs[2].content[0]["parts"] == [{"type": "text", "text": "screen captured"},
                                           {"type": "media", "media_type": "image/jpeg"}]
    # a2 has no message.id (older versions): a call of its own.
    assert src.meta.api_calls == 2
    assert ignored(report) == {"user block/image": 1, "assistant (sidechain in a main transcript)": 1,
                               "tool_result part/tool_reference": 1, "user (transcript only)": 1,
                               "assistant block/citations_delta": 1}


def test_media_parts_are_charged_like_libpanto():
    frame = pa.read_sessions(FIXTURES / "blocks.jsonl")
    assert frame["words"].to_list()[2] == 2 + 800


def test_lone_summary_line_is_an_empty_session():
    report = IngestReport()
    (p,) = parsed(FIXTURES / "summary-only.jsonl", report)
    assert p.messages.height == 0 and p.session.session_id == "summary-only"
    assert ignored(report) == {"summary": 1}


# ---------------------------------------------------------------------------
# Real recordings, against counts derived here from the raw JSON
# ---------------------------------------------------------------------------

_WORD = re.compile(rb"[^ \t\n\r]+")


def _words(text: str) -> int:
    return len(_WORD.findall(text.encode()))


def _raw_expectations(path: Path) -> dict:
    """What the file should give, by a deliberately plain reading of its records.

    Every user record is a message, as is an assistant record whose
    (message.id, requestId) is new; a call's usage is that of its last line.
    (The real files have no duplicate uuids, no inline sidechains, no
    compactions and no user images; the fixtures cover those.)
    """
    order, calls, last_call = [], {}, None
    words = 0
    boundaries = 0
    for lineno, raw in enumerate(path.read_bytes().splitlines(), 1):
        rec = orjson.loads(raw)
        kind = rec.get("type")
        if kind == "system" and rec.get("subtype") == "compact_boundary":
            boundaries += 1
        if kind == "user":
            order.append(("user", lineno))
            content = rec["message"]["content"]
            for block in [{"type": "text", "text": content}] if isinstance(content, str) else content:
                if block["type"] == "text":
                    words += _words(block["text"])
                elif block["type"] == "tool_result":
                    inner = block.get("content") or []
                    for part in [{"type": "text", "text": inner}] if isinstance(inner, str) else inner:
                        words += _words(part["text"]) if part["type"] == "text" else \
                            800 if part["type"] == "image" else 0
        elif kind == "assistant":
            msg = rec["message"]
            key = (msg["id"], rec.get("requestId"))
            if key not in calls:
                order.append(("assistant", lineno))
            calls[key] = None if msg["model"] == "<synthetic>" else msg["usage"]
            if msg["model"] != "<synthetic>":
                last_call = key
            for block in msg["content"]:
                words += _words(block.get("text") or block.get("thinking") or "") if block["type"] != "tool_use" \
                    else _words(orjson.dumps(block["input"]).decode())
        elif kind == "attachment" and rec["attachment"]["type"] == "queued_command":
            order.append(("user", lineno))
            words += sum(_words(b["text"]) for b in rec["attachment"]["prompt"])
    real = {k: u for k, u in calls.items() if u is not None}
    sums = {name: sum(u.get(key) or 0 for u in real.values()) for name, key in
            (("input", "input_tokens"), ("output", "output_tokens"),
             ("cache_read", "cache_read_input_tokens"), ("cache_write", "cache_creation_input_tokens"))}
    final = None
    if last_call is not None:
        u = real[last_call]
        final = sum(u.get(k) or 0 for k in ("input_tokens", "output_tokens", "cache_read_input_tokens",
                                            "cache_creation_input_tokens"))
    return {"order": order, "api_calls": len(real), "sums": sums, "final": final, "words": words,
            "boundaries": boundaries}


@pytest.fixture(scope="module")
def real():
    """Every real transcript, parsed once: (ParsedFile list, report)."""
    report = IngestReport()
    return parse_files(expand_paths(REAL), report=report), report


@needs_real
def test_real_files_give_what_their_raw_json_says(real):
    files, report = real
    assert len(files) == len(REAL_FILES)
    for p in files:
        want = _raw_expectations(p.path)
        frame = p.messages
        got_order = list(zip(frame["role"].cast(str).to_list(), frame["line"].to_list()))
        assert got_order == want["order"], p.path
        assert p.session.api_calls == want["api_calls"], p.path
        for name in USAGE:
            assert (frame[name].sum() or 0) == want["sums"][name], (p.path, name)
        assert frame["words"].sum() == want["words"], p.path
        assert len(p.session.compactions) == want["boundaries"] == frame["has_summary"].sum() == 0
        with_usage = frame.filter(pl.col("input").is_not_null())
        final = None if with_usage.height == 0 else \
            with_usage.select(pl.sum_horizontal(*USAGE).cast(pl.Int64)).item(-1, 0)
        assert final == want["final"], p.path
    assert report.messages == sum(len(_raw_expectations(p.path)["order"]) for p in files)
    assert report.api_calls == sum(_raw_expectations(p.path)["api_calls"] for p in files)
    assert report.n_skipped == 0


@needs_real
def test_real_known_figures(real):
    """A few figures read off the files by eye, as a tripwire for the derivation itself."""
    files, _ = real
    by_name = {p.path.name: p for p in files}
    jgive = by_name["transcript.jsonl"]
    # 436 assistant lines, 3 of them synthetic API errors, stream 221 calls.
    assert jgive.session.api_calls == 221
    assert jgive.messages.filter(pl.col("model") == "<synthetic>").height == 3
    assert jgive.messages.filter(pl.col("model") == "<synthetic>")["input"].null_count() == 3
    # feipi: a proxy without requestId whose calls ran tools mid-stream; partial usage on early lines.
    feipi = by_name["8a283a61-e3f0-4e8f-ba06-6711e2fcf2ed.jsonl"]
    assert feipi.session.api_calls == 4
    first_call = feipi.messages.filter(pl.col("role") == "assistant").row(0, named=True)
    assert (first_call["input"], first_call["cache_write"], first_call["output"]) == (6, 26091, 134)


@needs_real
def test_real_subagents_link_to_their_parent(real):
    files, _ = real
    sessions = {p.session.session_id: p for p in files}
    agents = [p for p in files if "subagents" in p.path.parts]
    assert len(agents) == 6
    for p in agents:
        parent = p.session.parent_session_id
        assert parent == p.path.parent.parent.name and parent in sessions
        assert p.session.session_id == f"{parent}/{p.path.stem}"
    assert all(p.session.parent_session_id is None for p in files if "subagents" not in p.path.parts)


@needs_real
def test_real_ignored_records_are_all_counted(real):
    """Every record that is not a message is counted: messages + merged lines + ignored = records."""
    files, report = real
    records = sum(1 for p in files for raw in p.path.read_bytes().splitlines() if raw.strip())
    assistant_lines = sum(1 for p in files for raw in p.path.read_bytes().splitlines()
                          if orjson.loads(raw).get("type") == "assistant")
    assistant_msgs = sum(p.messages.filter(pl.col("role") == "assistant").height for p in files)
    extra_lines = assistant_lines - assistant_msgs       # lines merged into their call's message
    # 'user block/…' and 'tool_result part/…' count blocks inside kept records, not records.
    dropped_records = sum(n for (fmt, kind), n in report.ignored.items()
                          if "block/" not in kind and "part/" not in kind)
    assert report.messages + extra_lines + dropped_records == records


# ---------------------------------------------------------------------------
# The engine on what the adapter yields, against libpanto's own computeSplit
# ---------------------------------------------------------------------------

@needs_real
def test_real_splits_match_libpanto():
    # Every file, one of them a lone summary line: a session without messages.
    assert assert_splits_match_oracle(expand_paths(REAL)) == len(REAL_FILES)


def test_fixture_splits_match_libpanto():
    # The resume folders are left out: folding two files is not a property of one file.
    paths = [FIXTURES / f for f in ("streaming.jsonl", "compaction.jsonl", "preserved.jsonl", "blocks.jsonl")]
    paths += [FIXTURES / "subagent" / "parent-1.jsonl", FIXTURES / "subagent/parent-1/subagents/agent-abc123.jsonl"]
    assert assert_splits_match_oracle(paths) == 6


def test_skip_invalid_on_copies_of_one_transcript_each_with_another_bad_line(tmp_path):
    # Copy 0 lacks line 5 and is folded into a copy that lacks another; the index of which file holds
    # which message kept naming the dropped copy's lost messages: "ValueError: 'a1' is not in list".
    from click.testing import CliRunner

    from panto_analytics.cli import main

    lines = (FIXTURES / "streaming.jsonl").read_text().splitlines(keepends=True)
    for i, bad in enumerate([4, 1, 2]):
        copy = list(lines)
        copy[bad] = "{bad json\n"
        (tmp_path / f"copy{i}.jsonl").write_text("".join(copy))
    report = IngestReport()
    frame = pa.read_sessions([tmp_path], skip_invalid=True, report=report, jobs=1)
    assert frame["session_id"].unique().to_list() == ["s-stream"]
    bad_json = {f: n for (f, reason), n in report.skipped.items() if reason.startswith("malformed JSON")}
    assert bad_json == {str(tmp_path / f"copy{i}.jsonl"): 1 for i in range(3)}
    result = CliRunner().invoke(main, ["ingest", str(tmp_path), "--skip-invalid", "--no-cache", "-q"])
    assert result.exit_code == 0, result.output


def test_usage_iterations_count_where_the_top_level_is_all_zero(tmp_path):
    # Claude Code 2.1.18x writes the first call after a compaction with an all-zero usage, the counts in iterations.
    from reference import claude_code_lines as oracle

    zero = {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0}}
    steps = [{"input_tokens": 3, "output_tokens": 50, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 30_000,
              "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 30_000}, "type": "message"},
             {"input_tokens": 1, "output_tokens": 7, "cache_read_input_tokens": 30_000, "cache_creation_input_tokens": 10,
              "cache_creation": {"ephemeral_5m_input_tokens": 10, "ephemeral_1h_input_tokens": 0}, "type": "message"}]
    call = _asst("a1", "m1", "resumed", 0)
    call["message"]["usage"] = {**zero, "iterations": steps}
    path = _write(tmp_path / "it.jsonl", _user("u1", "go on"), call)
    want = {"input": 4, "output": 57, "cache_read": 30_000, "cache_write": 30_010, "cache_write_1h": 30_000}
    msgs, _ = messages_of(path)
    assert msgs[1].usage == want
    assert list(oracle.parse(SourceFile(path, claude_code.NAME)))[1].usage == want
    frame = pa.read_sessions(path)   # the fast path takes the file
    assert frame.row(1, named=True)["cache_write"] == 30_010
    # The context size the replay anchors on: the call's whole prompt.
    assert frame.select(pl.col("input") + pl.col("cache_read") + pl.col("cache_write")).row(1)[0] == 60_014


@pytest.mark.parametrize(("steps", "error"), [
    ("x", "message.usage.iterations must be a list, got str"),
    ([3], "message.usage.iterations[0] must be an object"),
    ([{"input_tokens": -1}], "message.usage.iterations[0].input_tokens must be a non-negative integer, got -1"),
    ([{"input_tokens": 2**32 - 1}, {"input_tokens": 1}], "message.usage.iterations (their sum).input_tokens"),
])
def test_bad_iterations_are_named(tmp_path, steps, error):
    from reference import claude_code_lines as oracle

    call = _asst("a1", "m1", "x", 0)
    call["message"]["usage"] = {"input_tokens": 0, "output_tokens": 0, "iterations": steps}
    path = _write(tmp_path / "bad.jsonl", _user("u1", "go"), call)
    for read in (claude_code.parse, oracle.parse):
        with pytest.raises(InputError, match=re.escape(error)):
            list(read(SourceFile(path, claude_code.NAME)))
        with pytest.raises(InputError, match=re.escape(f"bad.jsonl:2: {error}")):
            pa.read_sessions(path)
