"""Every adapter on mutated real lines: a frame, or an InputError naming the file and line; nothing else."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from conftest import DATA, FIXTURES, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutations import MUTATIONS, mutate

import panto_analytics as pa
from panto_analytics.errors import InputError

SOURCES = {
    "canonical": sorted(DATA.glob("*.jsonl"))[0],
    "pi": FIXTURES / "pi" / "v1.jsonl",
    "claude-code": FIXTURES / "claude_code" / "blocks.jsonl",
    "codex": FIXTURES / "codex" / "calls.jsonl",
}


@pytest.mark.slow
@pytest.mark.parametrize("fmt", sorted(SOURCES))
@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_a_mutated_file_gives_a_frame_or_an_input_error_with_file_and_line(fmt, data):
    lines = SOURCES[fmt].read_bytes().splitlines()
    n = data.draw(st.integers(1, 3), label="mutations")
    for _ in range(n):
        at = data.draw(st.integers(0, len(lines) - 1), label="line")
        lines[at] = mutate(lines[at], data.draw(st.sampled_from(MUTATIONS), label="how"), data)
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
