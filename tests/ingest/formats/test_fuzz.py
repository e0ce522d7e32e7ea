"""Every adapter on mutated real lines: a frame, or an InputError naming the file and line; nothing else."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from conftest import DATA, FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import panto_analytics as pa
from panto_analytics.errors import InputError

SOURCES = {
    "canonical": sorted(DATA.glob("*.jsonl"))[0],
    "pi": FIXTURES / "pi" / "v1.jsonl",
    "claude-code": FIXTURES / "claude_code" / "blocks.jsonl",
    "codex": FIXTURES / "codex" / "calls.jsonl",
}


def _deep(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = {"a": [value]}
    return value


def _retype(line: bytes, data: st.DataObject) -> bytes:
    """One field of the record (at the top or one level down) given a value of another type."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return line
    if not isinstance(record, dict) or not record:
        return line
    target = record
    key = data.draw(st.sampled_from(sorted(target)))
    if isinstance(target[key], dict) and target[key] and data.draw(st.booleans()):
        target = target[key]
        key = data.draw(st.sampled_from(sorted(target)))
    target[key] = data.draw(st.sampled_from([None, True, -1, 1.5, 2**70, "x", [], {}, [[]], _deep(100)]))
    return json.dumps(record).encode()


MUTATIONS = ["truncate", "retype", "huge", "deep", "bad utf-8", "bom", "crlf", "drop"]


def _mutate(line: bytes, how: str, data: st.DataObject) -> bytes:
    if how == "truncate":
        return line[: data.draw(st.integers(0, max(0, len(line) - 1)))]
    if how == "retype":
        return _retype(line, data)
    if how == "huge":
        return line.replace(b"1", b"9" * 30, 1)
    if how == "deep":
        return b'{"type": "message", "role": "user", "content": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    if how == "bad utf-8":
        at = data.draw(st.integers(0, len(line)))
        return line[:at] + b"\xff\xfe" + line[at:]
    if how == "bom":
        return b"\xef\xbb\xbf" + line
    if how == "crlf":
        return line + b"\r"
    return b""


@pytest.mark.slow
@pytest.mark.parametrize("fmt", sorted(SOURCES))
@settings(max_examples=int(os.environ.get('FUZZ_EXAMPLES', 30)), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_mutated_file_gives_a_frame_or_an_input_error_with_file_and_line(fmt, data):
    lines = SOURCES[fmt].read_bytes().splitlines()
    n = data.draw(st.integers(1, 3), label="mutations")
    for _ in range(n):
        at = data.draw(st.integers(0, len(lines) - 1), label="line")
        lines[at] = _mutate(lines[at], data.draw(st.sampled_from(MUTATIONS), label="how"), data)
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "s.jsonl"
        f.write_bytes(b"\n".join(lines) + b"\n")
        for skip_invalid in (False, True):
            try:
                frame = pa.read_sessions([f], skip_invalid=skip_invalid, jobs=1)
            except InputError as e:
                assert e.path == str(f)
                assert e.line is not None or "format" in e.reason or "session id" in e.reason, str(e)
            else:
                assert frame.columns == list(pa.read_sessions([SOURCES[fmt]]).columns)
