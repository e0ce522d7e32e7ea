"""The typed Codex reader (``formats/codex.py``, msgspec Structs) against its oracle, the line-by-line reader
``reference/codex_lines.py``: the same messages, session metadata, skips, ignores and errors on every fixture,
every real recording present and hypothesis-mutated files."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from conftest import FIXTURES, REALDATA, examples
from differential import outcome
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutations import MUTATIONS, mutate

from panto_analytics.formats import codex
from reference import codex_lines

FIXTURE_FILES = sorted((FIXTURES / "codex").glob("*.jsonl"))
REAL_FILES = sorted(REALDATA.glob("codex*/**/*.jsonl")) if REALDATA.is_dir() else []


def _agree(path: Path) -> None:
    for skip_invalid in (False, True):
        want = outcome(codex_lines, path, "codex", skip_invalid)
        got = outcome(codex, path, "codex", skip_invalid)
        assert got == want, (path, skip_invalid)


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.name)
def test_fixture(path):
    _agree(path)


@pytest.mark.skipif(not REAL_FILES, reason="../shared/realdata/codex is absent")
@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: p.parent.name + "/" + p.name)
def test_real_recording(path):
    _agree(path)


SOURCES = FIXTURE_FILES + [p for p in REAL_FILES if p.stat().st_size < 1 << 20][:2]


@pytest.mark.slow
@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_file(data):
    source = data.draw(st.sampled_from(SOURCES), label="source")
    lines = source.read_bytes().splitlines()
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        at = data.draw(st.integers(0, len(lines) - 1), label="line")
        lines[at] = mutate(lines[at], data.draw(st.sampled_from(MUTATIONS), label="how"), data)
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "s.jsonl"
        f.write_bytes(b"\n".join(lines) + b"\n")
        _agree(f)
