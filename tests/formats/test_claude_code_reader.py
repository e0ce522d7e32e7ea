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
from conftest import FIXTURES, examples
from differential import gzipped, outcome, recording_id, recordings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutations import mutation_test
from test_claude_code_fast import FEATURES, REFUSED_OR_LEFT, _asst, _user, _write, mutated_transcripts

from panto_analytics.errors import IngestReport, InputError
from panto_analytics.formats import jsonl
from panto_analytics.formats.claude_code import reader
from panto_analytics.formats.claude_code.vocabulary import TOOL_USE_BLOCKS
from panto_analytics.frame.schema import ROLE
from panto_analytics.ingest.pipeline import read_sessions
from reference import claude_code_lines

FIXTURE_FILES, REAL_FILES = recordings("claude_code", "claude-code")

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


@pytest.mark.parametrize("path", FIXTURE_FILES + REAL_FILES, ids=recording_id)
def test_a_recording(path):
    """Every bundled file and every real recording present: the oracle reads each (but the malformed fixture)."""
    want = assert_reads_as_the_oracle(path)
    assert want[0] == ("error" if path.name == "malformed.jsonl" else "read")


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


#: A tool call's ``id`` or ``name`` the checks refuse, each beside an input nested past orjson's writer (255 levels):
#: the reader names the bad field, as the oracle does, rather than the input it cannot serialize.
BAD_ID_OR_NAME = {"id null": {"id": None, "name": "Bash"}, "id a number": {"id": 5, "name": "Bash"},
                  "no id": {"name": "Bash"}, "no name": {"id": "t"}, "name a number": {"id": "t", "name": 3}}
DEEP_INPUT = json.loads("[" * 300 + "]" * 300)


def _deep_call(kind: str, fault: str) -> dict:
    return _call("a1", [{"type": kind, **BAD_ID_OR_NAME[fault], "input": DEEP_INPUT}])


@pytest.mark.parametrize("fault", sorted(BAD_ID_OR_NAME))
@pytest.mark.parametrize("kind", TOOL_USE_BLOCKS)
def test_a_bad_tool_call_id_or_name_is_named_before_its_input_is_serialized(tmp_path, kind, fault):
    path = _write(tmp_path / "s.jsonl", _user("u1", "go"), _deep_call(kind, fault), _user("u2", "next"))
    field = "id" if "id" in fault else "name"
    want = assert_reads_as_the_oracle(path)
    assert want[:2] == ("error", 2) and want[2].startswith(f"content[0].{field} must be a string"), want


@pytest.mark.parametrize("fault", sorted(BAD_ID_OR_NAME))
@pytest.mark.parametrize("kind", TOOL_USE_BLOCKS)
def test_a_bad_tool_call_id_or_name_through_read_sessions(tmp_path, kind, fault):
    """The fast path declines the file (the input is too deep for it): the reader names the line and the field,
    strict, and counts the skip under that reason under ``skip_invalid``."""
    path = _write(tmp_path / "s.jsonl", _user("u1", "go"), _deep_call(kind, fault), _user("u2", "next"))
    reason = outcome(claude_code_lines, path, reader.NAME, False)[2]
    with pytest.raises(InputError) as raised:
        read_sessions(path, cache=False, jobs=1)
    assert (raised.value.path, raised.value.line, raised.value.reason) == (str(path), 2, reason)
    report = IngestReport()
    frame = read_sessions(path, skip_invalid=True, report=report, cache=False, jobs=1)
    assert dict(report.skipped) == {(str(path), reason): 1}
    assert frame[ROLE].to_list() == ["user", "user"]


@pytest.mark.parametrize("name", sorted(REFUSED_NUMBERS))
@pytest.mark.parametrize("newline", [True, False])
def test_a_number_orjson_refuses_in_a_field_read_is_refused_as_the_oracle_refuses_it(tmp_path, name, newline):
    path = _write(tmp_path / "s.jsonl", _user("u1", "go"), raw=REFUSED_NUMBERS[name] + (b"\n" if newline else b""))
    # the last line without its newline is one being written: a counted skip, as the oracle counts it
    assert assert_reads_as_the_oracle(path)[0] == ("error" if newline else "read")


def test_a_number_beyond_a_double_in_a_field_no_shape_declares(tmp_path):
    """msgspec would skip the field unparsed where orjson refuses the line: :func:`.typed.plain` finds the number,
    so the line is read plain and refused as the oracle refuses it."""
    line = json.dumps(_user("u2", "x", toolUseResult={"n": 1})).replace('{"n": 1}', '{"n": 1e400}').encode()
    path = _write(tmp_path / "s.jsonl", _user("u1", "go"), raw=line + b"\n")
    assert outcome(claude_code_lines, path, reader.NAME, False)[:2] == ("error", 2)
    assert_reads_as_the_oracle(path)


@pytest.mark.parametrize("cut", [None, 40, 400])
def test_compressed(tmp_path, cut):
    """A ``.gz`` transcript, whole or cut short (read up to its last whole line, the damage counted or raised)."""
    assert_reads_as_the_oracle(gzipped(FIXTURES / "claude_code" / "preserved.jsonl", tmp_path, cut))


test_a_mutated_fixture = mutation_test(FIXTURE_FILES, assert_reads_as_the_oracle, n=40)


@pytest.mark.slow
@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(content=mutated_transcripts())
def test_a_mutated_transcript(tmp_path_factory, content):
    f = tmp_path_factory.mktemp("m") / "s.jsonl"
    f.write_bytes(content)
    assert_reads_as_the_oracle(f)


#: Values a field at any depth may be given: of every JSON type, numbers orjson reads otherwise than msgspec,
#: and the words the reader branches on.
VALUES = [None, True, -1, 1.5, 2**64, -(2**63) - 1, "x", [], {}, [[]], [{"type": "text"}], [{"type": "text", "text": 5}],
          "compact_boundary", "queued_command", "tool_result", "web_search_tool_result", "image", "text", "tool_use",
          {"preservedSegment": {"headUuid": "u1"}}]


def _places(value, here=()):
    """The path of every value inside ``value`` (itself excluded)."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, inner in items:
        yield (*here, key)
        yield from _places(inner, (*here, key))


@st.composite
def retyped_anywhere(draw: st.DrawFn) -> list[dict]:
    """A feature transcript with one to three fields, at any depth, given a value of another type or removed."""
    records = json.loads(json.dumps(FEATURES[draw(st.sampled_from(sorted(FEATURES)), label="source")]))
    for _ in range(draw(st.integers(1, 3), label="fields")):
        record = records[draw(st.integers(0, len(records) - 1), label="record")]
        *outer, key = draw(st.sampled_from(list(_places(record))), label="field")
        for step in outer:
            record = record[step]
        if isinstance(key, str) and draw(st.booleans(), label="remove"):
            del record[key]
        else:
            record[key] = json.loads(json.dumps(draw(st.sampled_from(VALUES), label="value")))
    return records


@pytest.mark.slow
@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=retyped_anywhere())
def test_a_field_retyped_at_any_depth(tmp_path_factory, records):
    assert_reads_as_the_oracle(_write(tmp_path_factory.mktemp("r") / "s.jsonl", *records))


def _each_kind_of_field() -> list[tuple[str, int, tuple]]:
    """``(feature, record, path)`` of one field of every kind (record type and path, list positions aside)."""
    seen, out = set(), []
    for name in sorted(FEATURES):
        for r, record in enumerate(FEATURES[name]):
            for path in _places(record):
                kind = (record.get("type"), tuple(p for p in path if isinstance(p, str)))
                if kind not in seen:
                    seen.add(kind)
                    out.append((name, r, path))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("value", VALUES, ids=lambda v: json.dumps(v)[:30])
def test_every_kind_of_field_given_each_value(tmp_path, value):
    """One field of every kind, in turn, given ``value`` (or removed, for ``None``'s case too): the reader reads
    each file as the oracle reads it, strict and under ``skip_invalid``."""
    for k, (name, r, path) in enumerate(_each_kind_of_field()):
        for remove in (False, True) if value is None and isinstance(path[-1], str) else (False,):
            records = json.loads(json.dumps(FEATURES[name]))
            target = records[r]
            for step in path[:-1]:
                target = target[step]
            if remove:
                del target[path[-1]]
            else:
                target[path[-1]] = json.loads(json.dumps(value))
            f = _write(tmp_path / f"f{k}.jsonl", *records)
            for skip_invalid in (False, True):
                assert outcome(reader, f, reader.NAME, skip_invalid) == outcome(claude_code_lines, f, reader.NAME, skip_invalid), \
                    (name, r, path, remove, skip_invalid)
