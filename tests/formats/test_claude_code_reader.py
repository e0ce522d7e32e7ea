"""The Claude Code one-file reader (``formats/claude_code/reader.py``: each line decoded into the Structs of
``shapes.py``, a line of another shape read plain) against its oracle, the line-by-line reader it replaced
(``reference/claude_code_lines.py``): the same messages, session metadata, skips, ignores and errors (line and
reason), strict and under ``skip_invalid``, on every fixture, every real recording present, every feature and
every broken line of the fast path's tests (``test_claude_code_fast.py``), the lines whose typed record lacks a
field the reader needs, compressed files and hypothesis-mutated files.

Each file is read twice by the reader: with the package's chunk size, and with chunks of a few lines
(:data:`.jsonl.CHUNK` lowered), so that lines decoded a chunk at a time and one at a time are both held to it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES, REALDATA, examples
from differential import gzipped, outcome
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutations import mutated_file
from test_claude_code_fast import FEATURES, REFUSED_OR_LEFT, _asst, _user, _write, mutated_transcripts

from panto_analytics.formats import jsonl
from panto_analytics.formats.claude_code import reader
from reference import claude_code_lines

FIXTURE_FILES = sorted((FIXTURES / "claude_code").rglob("*.jsonl"))
REAL_FILES = sorted(REALDATA.glob("claude-code*/**/*.jsonl")) if REALDATA.is_dir() else []

#: Chunk sizes read with: the package's, and a few hundred bytes (a chunk of one to three lines).
CHUNKS = (jsonl.CHUNK, 300)


def assert_reads_as_the_oracle(path: Path) -> tuple:
    """The reader's outcome on ``path`` equals the oracle's, strict and under ``skip_invalid``, at both chunk
    sizes; return the strict outcome."""
    for skip_invalid in (True, False):
        want = outcome(claude_code_lines, path, reader.NAME, skip_invalid)
        for chunk in CHUNKS:
            saved, jsonl.CHUNK = jsonl.CHUNK, chunk
            try:
                got = outcome(reader, path, reader.NAME, skip_invalid)
            finally:
                jsonl.CHUNK = saved
            assert got == want, (path, skip_invalid, chunk)
    return want


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.parent.name + "/" + p.name)
def test_fixture(path):
    want = assert_reads_as_the_oracle(path)
    assert want[0] == ("error" if path.name == "malformed.jsonl" else "read")


@pytest.mark.skipif(not REAL_FILES, reason="../shared/realdata/claude-code is absent")
@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: p.parent.name + "/" + p.name)
def test_real_recording(path):
    want = assert_reads_as_the_oracle(path)
    assert want[0] == "read", "the oracle reads the recording"


@pytest.mark.parametrize("name", sorted(FEATURES))
def test_each_feature(tmp_path, name):
    assert assert_reads_as_the_oracle(_write(tmp_path / "s.jsonl", *FEATURES[name]))[0] == "read"


@pytest.mark.parametrize("name", sorted(REFUSED_OR_LEFT))
@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_a_line_the_fast_path_leaves_is_read_as_the_oracle_reads_it(tmp_path, name, where):
    records = FEATURES["streamed call, results written while it streams"]
    at = {"first": 0, "middle": len(records) // 2, "last": len(records)}[where]
    path = _write(tmp_path / "s.jsonl", *records[:at], raw=REFUSED_OR_LEFT[name])
    path.write_bytes(path.read_bytes() + _write(tmp_path / "rest.jsonl", *records[at:]).read_bytes())
    assert_reads_as_the_oracle(path)


def _call(uid: str, blocks: list) -> dict:
    return _asst(uid, "m" + uid, blocks, {"input_tokens": 1, "output_tokens": 1})


#: Lines whose typed record lacks what the reader needs (read again plain), and numbers orjson reads otherwise
#: than msgspec: each after a clean prompt.
TYPED_LACKS = {
    "a server tool's result": _call("a1", [{"type": "web_search_tool_result", "tool_use_id": "s",
                                             "content": [{"type": "web_search_result", "url": "u", "title": "t"}]}]),
    "a server tool's result refused": _call("a1", [{"type": "text"}, {"type": "web_search_tool_result", "content": 1}]),
    "a prompt beyond 64 bits": {"type": "attachment", "uuid": "q1", "parentUuid": None, "sessionId": "s",
                                "attachment": {"type": "queued_command", "prompt": 2**64}},
    "a prompt's blocks": {"type": "attachment", "uuid": "q1", "parentUuid": None, "sessionId": "s",
                          "attachment": {"type": "queued_command", "prompt": [{"type": "text", "text": "a"}, 2**70]}},
    "a boundary's tokens beyond 64 bits": {"type": "system", "subtype": "compact_boundary", "uuid": "b1",
                                           "parentUuid": None, "sessionId": "s",
                                           "compactMetadata": {"trigger": "auto", "preTokens": 2**64}},
    "a tool input beyond 64 bits": _call("a1", [{"type": "tool_use", "id": "t", "name": "Bash", "input": {"n": 2**70}}]),
    "a boundary with the marker, its metadata not an object": {"type": "system", "subtype": "compact_boundary",
                                                                "uuid": "b1", "compactMetadata": "preservedSegment"},
    "a tool input nested past orjson's writer": _call("a1", [{"type": "tool_use", "id": "t", "name": "Bash",
                                                              "input": json.loads("[" * 300 + "]" * 300)}]),
}

#: Raw lines with numbers orjson refuses (beyond a double) where the reader reads them (declared fields).
REFUSED_NUMBERS = {
    "in a tool input": b'{"type":"assistant","uuid":"a1","requestId":"r","message":{"id":"m","content":'
                       b'[{"type":"tool_use","id":"t","name":"B","input":{"n":1e400}}]}}',
    "in a server tool's result": b'{"type":"assistant","uuid":"a1","message":{"id":"m","content":'
                                 b'[{"type":"web_search_tool_result","content":[{"n":-1e400}]}]}}',
    "in compactMetadata": b'{"type":"system","subtype":"compact_boundary","uuid":"b1","compactMetadata":{"preTokens":1e400}}',
    "a 400-digit prompt": b'{"type":"attachment","uuid":"q1","attachment":{"type":"queued_command","prompt":1'
                          + b"0" * 400 + b"}}",
    "in a usage counter": b'{"type":"assistant","uuid":"a1","message":{"id":"m","content":[],"usage":{"input_tokens":1e400}}}',
}


@pytest.mark.parametrize("name", sorted(TYPED_LACKS))
def test_a_record_the_shapes_leave_short_is_read_plain(tmp_path, name):
    path = _write(tmp_path / "s.jsonl", _user("u1", "go"), TYPED_LACKS[name], _user("u2", "next"))
    assert_reads_as_the_oracle(path)


@pytest.mark.parametrize("name", sorted(REFUSED_NUMBERS))
@pytest.mark.parametrize("newline", [True, False])
def test_a_number_orjson_refuses_in_a_field_read_is_refused_as_the_oracle_refuses_it(tmp_path, name, newline):
    path = _write(tmp_path / "s.jsonl", _user("u1", "go"), raw=REFUSED_NUMBERS[name] + (b"\n" if newline else b""))
    # the last line without its newline is one being written: a counted skip, as the oracle counts it
    assert assert_reads_as_the_oracle(path)[0] == ("error" if newline else "read")


def test_the_one_known_difference_a_number_beyond_a_double_in_a_field_no_shape_declares(tmp_path):
    """As in :func:`.typed.plain`: msgspec skips the field unparsed, orjson refuses the line."""
    line = json.dumps(_user("u2", "x", toolUseResult={"n": 1})).replace('{"n": 1}', '{"n": 1e400}').encode()
    path = _write(tmp_path / "s.jsonl", _user("u1", "go"), raw=line + b"\n")
    assert outcome(claude_code_lines, path, reader.NAME, False)[:2] == ("error", 2)
    assert outcome(reader, path, reader.NAME, False)[0] == "read"


@pytest.mark.parametrize("cut", [None, 40, 400])
def test_compressed(tmp_path, cut):
    """A ``.gz`` transcript, whole or cut short (read up to its last whole line, the damage counted or raised)."""
    assert_reads_as_the_oracle(gzipped(FIXTURES / "claude_code" / "preserved.jsonl", tmp_path, cut))


@pytest.mark.slow
@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_mutated_fixture(data):
    with mutated_file(data.draw(st.sampled_from(FIXTURE_FILES), label="source"), data) as f:
        assert_reads_as_the_oracle(f)


@pytest.mark.slow
@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(content=mutated_transcripts())
def test_a_mutated_transcript(tmp_path_factory, content):
    f = tmp_path_factory.mktemp("m") / "s.jsonl"
    f.write_bytes(content)
    assert_reads_as_the_oracle(f)
