"""The Codex fast path (``formats/codex/fast.py``) against the line reader (``formats/codex/reader.py``) and its oracle.

The fast path may decline any file (:func:`.codex.parse` then reads it), but
what it returns for a file it takes must be exactly what the line reader
gives: the frame, the session metadata and the report's counts of ignored
records; it must never take a file the reader refuses. The line reader itself
agrees with the oracle ``reference/codex_lines.py`` (``test_codex_differential.py``);
here the frame of every file taken is also checked against the oracle's.
"""
from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl
import pytest
from adapter_checks import assert_fast_path_agrees
from conftest import FIXTURES
from differential import recordings
from mutations import mutation_test
from test_codex_differential import CALLS, EDGES

from panto_analytics.errors import IngestReport, InputError
from panto_analytics.formats import codex
from panto_analytics.formats.codex import fast as codex_fast
from panto_analytics.formats.contract import SourceFile
from panto_analytics.ingest import read_sessions
from reference import codex_lines

FIXTURE_FILES, REAL_FILES = recordings("codex", "codex")


def assert_agrees(paths: list[Path]) -> list[bool]:
    """Read ``paths`` in one fast-path batch, check each file it takes; return which ones it took."""
    return assert_fast_path_agrees(paths, codex.NAME, codex_fast, codex_lines)


def test_fixtures_agree():
    taken = dict(zip(FIXTURE_FILES, assert_agrees(FIXTURE_FILES)))
    assert taken[FIXTURES / "codex" / "calls.jsonl"]            # calls, outputs, counts, a repeated count
    assert not taken[FIXTURES / "codex" / "compacted.jsonl"]    # a compaction: the line reader's
    assert not taken[FIXTURES / "codex" / "legacy.jsonl"]       # the legacy layout


@pytest.mark.skipif(not REAL_FILES, reason="../shared/realdata/codex is absent")
def test_real_recordings_are_taken_and_agree():
    taken = assert_agrees(REAL_FILES)
    assert all(t for p, t in zip(REAL_FILES, taken) if p.read_bytes()[:2] != b"{\n")  # all but pretty-printed ones


def test_all_of_the_files_in_one_batch_agree():
    """Files read together keep apart: sessions, models, tool calls (refs are resolved within a file)."""
    paths = FIXTURE_FILES + REAL_FILES[:3]
    assert any(assert_agrees(paths + paths[::-1]))


@pytest.mark.parametrize("at", [1, 6, 14])
@pytest.mark.parametrize("name", sorted(EDGES))
def test_edge(tmp_path, name, at):
    """Each line at the edges of the declared shapes, in place of one line of ``calls.jsonl`` (the header at 1)."""
    f = tmp_path / "edge.jsonl"
    f.write_bytes(b"\n".join([*CALLS[:at], EDGES[name], *CALLS[at + 1:]]) + b"\n")
    assert_agrees([f])


def test_a_declined_file_leaves_the_others_of_its_batch_alone(tmp_path):
    good = FIXTURES / "codex" / "calls.jsonl"
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\n".join([*CALLS[:5], EDGES["text null"], *CALLS[6:]]) + b"\n")
    assert assert_agrees([good, bad, good]) == [True, False, True]


def test_ingest_reads_the_same_frames_with_and_without_it(monkeypatch):
    paths = [*FIXTURE_FILES, *REAL_FILES]
    fast = read_sessions(paths, format="codex", skip_invalid=True, jobs=1)
    monkeypatch.setattr(codex, "read_frames", None)
    assert fast.equals(read_sessions(paths, format="codex", skip_invalid=True, jobs=1))


@pytest.mark.parametrize("keep", [1.0, 0.5])
def test_a_compressed_file_reads_as_without_it(tmp_path, monkeypatch, keep):
    """A .gz, whole or cut short, reads as the line reader reads it (the whole lines before the cut, counted)."""
    packed = gzip.compress(b"\n".join(CALLS * 1) + b"\n")
    f = tmp_path / "s.jsonl.gz"
    f.write_bytes(packed[:int(len(packed) * keep)])

    def read() -> tuple:
        report = IngestReport()
        try:
            frame = read_sessions([f], skip_invalid=True, report=report, jobs=1)
        except InputError as e:
            return str(e), None, None
        return None, frame, (dict(report.skipped), dict(report.ignored))

    fast = read()
    monkeypatch.setattr(codex, "read_frames", None)
    line = read()
    assert fast[0] == line[0] and fast[2] == line[2]
    assert (fast[1] is None) == (line[1] is None) and (fast[1] is None or fast[1].equals(line[1]))
    if keep == 1.0:
        assert assert_agrees([f]) == [True]


SOURCES = FIXTURE_FILES + [p for p in REAL_FILES if p.stat().st_size < 1 << 20][:2]


test_mutated_file = mutation_test(SOURCES, lambda f: assert_agrees([f]))


def test_frames_are_polars_frames():
    frame = codex_fast.read_frames([SourceFile(FIXTURES / "codex" / "calls.jsonl", codex.NAME)])[0]
    assert isinstance(frame, pl.DataFrame) and frame.height > 0


def test_a_header_alone_without_a_line_break(tmp_path):
    f = tmp_path / "s.jsonl"
    f.write_bytes(CALLS[0])
    assert assert_agrees([f]) == [True]
