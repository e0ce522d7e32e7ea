"""The canonical JSONL adapter: what it reads, and every way it refuses bad input."""
from __future__ import annotations

import json

import pytest

import panto_analytics as pa
from panto_analytics.errors import IngestReport, InputError

USER = {"type": "message", "role": "user", "content": [{"type": "text", "text": "hello  there"}]}
ASSISTANT = {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "hi"}],
             "usage": {"input": 10, "output": 2}}


def write(path, *lines):
    path.write_text("".join((ln if isinstance(ln, str) else json.dumps(ln)) + "\n" for ln in lines))
    return path


def test_reads_header_messages_and_usage(tmp_path):
    header = {"type": "session", "id": "abc", "model": "m1", "context_window": 200000,
              "created_at": "2025-01-01T00:00:00Z"}
    f = write(tmp_path / "file.jsonl", header, USER, ASSISTANT)
    df = pa.read_sessions([f])
    assert df["session_id"].cast(str).to_list() == ["abc", "abc"]
    assert df["seq"].to_list() == [0, 1]
    assert df["role"].cast(str).to_list() == ["user", "assistant"]
    assert df["words"].to_list() == [2, 1]
    assert df["line"].to_list() == [2, 3]
    assert df["input"].to_list() == [None, 10]
    assert df["cache_read"].to_list() == [None, 0]  # a missing key is 0
    assert df["model"].cast(str).to_list() == ["m1", "m1"]
    assert df["file"].cast(str).to_list() == [str(f)] * 2


def test_session_id_defaults_to_file_stem(tmp_path):
    df = pa.read_sessions([write(tmp_path / "my-session.jsonl", USER)])
    assert df["session_id"].cast(str).to_list() == ["my-session"]


def test_flags_and_words_over_every_block_kind(tmp_path):
    msg = {"type": "message", "role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t", "parts": [
            {"type": "text", "text": "a b"}, {"type": "media", "media_type": "image/png", "data": "xx"}]},
        {"type": "system", "text": "s s s", "mode": "replace"},
        {"type": "compaction_summary", "text": "sum"},
        {"type": "thinking", "text": "th"},
        {"type": "tool_use", "id": "i", "name": "n", "input": "{\"k\": 1}"},
    ]}
    df = pa.read_sessions([write(tmp_path / "s.jsonl", msg)])
    row = df.row(0, named=True)
    assert row["words"] == 2 + 800 + 3 + 1 + 1 + 2
    assert row["has_tool_result"] and row["has_summary"]


def test_a_header_only_file_is_a_session_without_messages_and_an_empty_one_is_none(tmp_path):
    write(tmp_path / "a.jsonl", {"type": "session", "id": "h"})
    (tmp_path / "b.jsonl").write_text("")
    (tmp_path / "c.jsonl").write_text("\n \n")
    report = IngestReport()
    df = pa.read_sessions([tmp_path], report=report)
    assert df.height == 0
    assert report.sessions == 1 and report.files == 3 and not report.skipped
    assert pa.ingest.sessions([tmp_path])["session_id"].to_list() == ["h"]


@pytest.mark.parametrize("content", [b"", b"\n\n", b"\xef\xbb\xbf"])
def test_only_empty_files_is_nothing_to_read_exit_1(tmp_path, content):
    # The README: files with no sessions are exit 1. An empty file once counted as a session (exit 0, sessions=1).
    from click.testing import CliRunner

    from panto_analytics.cli import main

    (tmp_path / "e.jsonl").write_bytes(content)
    for _ in range(2):  # cold, then from the cache
        result = CliRunner().invoke(main, ["ingest", str(tmp_path), "--cache", str(tmp_path / "cache")])
        assert result.exit_code == 1, result.output
        assert result.output.strip() == f"error: {tmp_path}: no sessions in the 1 file read"


def test_same_session_id_in_two_files_names_both(tmp_path):
    a = write(tmp_path / "a.jsonl", {"type": "session", "id": "dup"}, USER)
    b = write(tmp_path / "b.jsonl", {"type": "session", "id": "dup"}, USER)
    with pytest.raises(InputError) as e:
        pa.read_sessions([tmp_path])
    assert str(a) in str(e.value) and str(b) in str(e.value)


BAD_LINES = {
    "malformed": ('{"type": "message", "role": "user"', "malformed JSON"),
    "not_object": ("[1, 2]", "expected a JSON object"),
    "unknown_record": ('{"type": "note"}', "unknown record type 'note'"),
    "unknown_block": ('{"type":"message","role":"user","content":[{"type":"image"}]}', "unknown block type 'image'"),
    "unknown_part": ('{"type":"message","role":"user","content":[{"type":"tool_result","tool_use_id":"t",'
                     '"parts":[{"type":"video"}]}]}', "unknown part type 'video'"),
    "bad_role": ('{"type":"message","role":"tool","content":[]}', "message.role"),
    "text_not_string": ('{"type":"message","role":"user","content":[{"type":"text","text":5}]}', "content[0].text must be a string"),
    "input_not_string": ('{"type":"message","role":"assistant","content":[{"type":"tool_use","id":"i","name":"n",'
                         '"input":{"a":1}}]}', "content[0].input must be a string"),
    "negative_usage": ('{"type":"message","role":"assistant","content":[],"usage":{"input":-1}}', "usage.input"),
    "fractional_usage": ('{"type":"message","role":"assistant","content":[],"usage":{"output":1.5}}', "usage.output"),
    "bool_usage": ('{"type":"message","role":"assistant","content":[],"usage":{"output":true}}', "usage.output"),
    "huge_usage": ('{"type":"message","role":"assistant","content":[],"usage":{"input":4294967296}}', "maximum"),
    "usage_not_object": ('{"type":"message","role":"assistant","content":[],"usage":7}', "usage must be an object"),
    "late_header": ('{"type":"session","id":"x"}', "first line"),
    "bad_mode": ('{"type":"message","role":"system","content":[{"type":"system","text":"s","mode":"prepend"}]}', "mode"),
}


@pytest.mark.parametrize("case", sorted(BAD_LINES))
def test_bad_line_is_an_error_naming_file_and_line(tmp_path, case):
    line, reason = BAD_LINES[case]
    f = write(tmp_path / "s.jsonl", USER, line, ASSISTANT)
    with pytest.raises(InputError) as e:
        pa.read_sessions([f])
    assert (e.value.path, e.value.line) == (str(f), 2)
    assert reason in e.value.reason
    assert str(e.value).startswith(f"{f}:2: ")


@pytest.mark.parametrize("case", sorted(BAD_LINES))
def test_skip_invalid_skips_and_counts(tmp_path, case):
    line, reason = BAD_LINES[case]
    f = write(tmp_path / "s.jsonl", USER, line, ASSISTANT)
    report = IngestReport()
    df = pa.read_sessions([f], skip_invalid=True, report=report)
    assert df["line"].to_list() == [1, 3]
    assert df["seq"].to_list() == [0, 1]
    assert report.n_skipped == 1
    [(path, why)] = report.skipped
    assert path == str(f) and reason in why


def test_truncated_line_with_a_newline_is_malformed(tmp_path):
    # Was test_truncated_last_line_is_malformed: a cut-short *last* line (no newline) is now a session
    # still being written and is skipped with a note (issue 8, tests/ingest/test_messy_folders.py);
    # a cut-short line that the file goes on after is still malformed.
    f = tmp_path / "s.jsonl"
    f.write_text(json.dumps(USER) + "\n" + json.dumps(ASSISTANT)[:20] + "\n")
    with pytest.raises(InputError, match=r"s\.jsonl:2: malformed JSON"):
        pa.read_sessions([f])


def test_blank_lines_are_ignored_and_line_numbers_stay_true(tmp_path):
    f = write(tmp_path / "s.jsonl", "", USER, "   ", ASSISTANT)
    assert pa.read_sessions([f])["line"].to_list() == [2, 4]


def test_missing_path_is_a_clear_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        pa.read_sessions([tmp_path / "nope.jsonl"])


def test_directories_recurse_and_globs_expand(tmp_path):
    (tmp_path / "x" / "y").mkdir(parents=True)
    write(tmp_path / "x" / "y" / "deep.jsonl", USER)
    write(tmp_path / "top.jsonl", USER)
    (tmp_path / "notes.txt").write_text("not a session")
    by_dir = pa.read_sessions([tmp_path])
    assert sorted(by_dir["session_id"].cast(str).unique()) == ["deep", "top"]
    by_glob = pa.read_sessions([str(tmp_path / "*.jsonl")])
    assert by_glob["session_id"].cast(str).to_list() == ["top"]


@pytest.mark.parametrize("stamp", [1e30, -1e30, "not a date", {"a": 1}, [1], True, ""])
def test_a_timestamp_that_is_no_time_is_an_error_naming_the_field(tmp_path, stamp):
    # docs/formats.md: a wrong-typed field is an error. These once became a null timestamp, exit 0.
    from click.testing import CliRunner

    from panto_analytics.cli import main

    f = tmp_path / "s.jsonl"
    f.write_text(json.dumps({"type": "message", "role": "user", "content": [], "timestamp": "2025-01-02T03:04:05Z"})
                 + "\n" + json.dumps({"type": "message", "role": "user", "content": [], "timestamp": stamp}) + "\n")
    with pytest.raises(InputError) as e:
        pa.read_sessions([f])
    assert (e.value.path, e.value.line) == (str(f), 2) and "message.timestamp" in e.value.reason
    report = IngestReport()
    assert pa.read_sessions([f], skip_invalid=True, report=report).height == 1 and report.n_skipped == 1
    result = CliRunner().invoke(main, ["ingest", str(f), "--no-cache", "-q"])
    assert result.exit_code == 1 and f"{f}:2: message.timestamp must be" in result.output


@pytest.mark.parametrize("stamp", ["2025-01-02T03:04:05.678Z", "2025-01-02T03:04:05+02:00", 1735787045678, 0])
def test_a_timestamp_as_documented_is_read(tmp_path, stamp):
    f = tmp_path / "s.jsonl"
    f.write_text(json.dumps({"type": "message", "role": "user", "content": [], "timestamp": stamp}) + "\n")
    assert pa.read_sessions([f])["timestamp"].is_not_null().all()
