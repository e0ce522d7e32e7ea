"""The typed pi reader (``formats/pi/reader.py``, msgspec Structs) against its oracle, the line-by-line reader
``reference/pi_lines.py``: the same messages, session metadata, skips, ignores and errors on every fixture,
every real recording present and hypothesis-mutated files."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES
from differential import outcome, recording_id, recordings
from mutations import mutation_test

from panto_analytics.formats import pi
from reference import pi_lines

FIXTURE_FILES, REAL_FILES = recordings("pi", "pi")


def _agree(path: Path) -> None:
    for skip_invalid in (False, True):
        want = outcome(pi_lines, path, "pi", skip_invalid)
        got = outcome(pi, path, "pi", skip_invalid)
        assert got == want, (path, skip_invalid)


@pytest.mark.parametrize("path", FIXTURE_FILES + REAL_FILES, ids=recording_id)
def test_a_recording(path):
    """Every bundled file and every real recording present."""
    # A real recording may hold a bad line (xcsh-session.jsonl:440: two objects on one line): the oracle reads
    # it whole once that line is skipped, and both readers agree either way (_agree: strict and skipping).
    want = outcome(pi_lines, path, "pi", True)
    assert want[0] == "read" and want[1], "the oracle reads the recording"
    _agree(path)


def test_tool_arguments_are_their_compact_serialization(tmp_path):
    """Raw argument bytes stand for orjson's re-serialization only where they are it: spaces, floats, escapes."""
    lines = (FIXTURES / "pi" / "v1.jsonl").read_bytes().splitlines()
    call = next(i for i, line in enumerate(lines) if b'"toolCall"' in line and b'"arguments":{' in line)
    for args in (b'{"a" : [1 , 2.50]}', b'{"p":"a\\/b \\u00e9"}', b'{"n":-0,"m":1E3,"k":12345678901234567890}',
                 b'{"x":{"y":[]} }', b'null', b'"s"'):
        line = lines[call].replace(b'"arguments":{', b'"arguments":' + args + b',"was":{', 1)
        f = tmp_path / "args.jsonl"
        f.write_bytes(b"\n".join([*lines[:call], line, *lines[call + 1:]]) + b"\n")
        _agree(f)


@pytest.mark.parametrize("fixture", ["v1.jsonl", "v3_branching.jsonl"])
def test_a_number_beyond_a_double_in_tool_arguments(tmp_path, fixture):
    """orjson refuses ``1e400`` (malformed JSON) where the typed first pass skips it: the second pass reports the
    line as the oracle does (the same one-line error; under skip_invalid one counted skip of the same reason),
    never a traceback."""
    lines = (FIXTURES / "pi" / fixture).read_bytes().splitlines()
    call = [i for i, line in enumerate(lines) if b'"toolCall"' in line and b'"arguments":{' in line][-1]
    line = lines[call].replace(b'"arguments":{', b'"arguments":{"big":1e400,', 1)
    f = tmp_path / "big.jsonl"
    f.write_bytes(b"\n".join([*lines[:call], line, *lines[call + 1:]]) + b"\n")
    reason = "malformed JSON: number is infinity when parsed as double"
    assert outcome(pi, f, "pi", False)[:3] == outcome(pi_lines, f, "pi", False)[:3] == ("error", call + 1, reason)
    got = outcome(pi, f, "pi", True)
    assert got[0] == "read" and got[3][(str(f), reason)] == 1 == outcome(pi_lines, f, "pi", True)[3][(str(f), reason)]


@pytest.mark.parametrize("fixture", ["v1.jsonl", "v3_branching.jsonl", "v2_dangling.jsonl"])
def test_a_number_beyond_a_double_in_an_unread_field(tmp_path, fixture):
    """orjson refuses a line with ``1e400`` anywhere, where msgspec skips a field it does not read: each line of the
    file in turn, strict and under skip_invalid, reads as the oracle reads it (the line refused, so a child of it
    an orphan, a branch without it)."""
    lines = (FIXTURES / "pi" / fixture).read_bytes().splitlines()
    for at in range(len(lines)):
        f = tmp_path / "big.jsonl"
        f.write_bytes(b"\n".join([*lines[:at], lines[at].replace(b"{", b'{"big":1e400,', 1), *lines[at + 1:]]) + b"\n")
        _agree(f)


SOURCES = FIXTURE_FILES + REAL_FILES[:1]


test_mutated_file = mutation_test(SOURCES, _agree)
