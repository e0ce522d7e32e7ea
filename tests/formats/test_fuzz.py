"""Every adapter on mutated real lines: a frame, or an InputError naming the file and line; nothing else."""
from __future__ import annotations

import tempfile
import zlib
from pathlib import Path

import pytest
import zstandard
from conftest import DATA, FIXTURES, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutations import MUTATIONS, mutate

import panto_analytics as pa
from panto_analytics.errors import IngestReport, InputError

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
        failed = None
        for skip_invalid in (False, True):
            report = IngestReport()
            try:
                frame = pa.read_sessions([f], skip_invalid=skip_invalid, report=report, jobs=1)
            except InputError as e:
                assert e.path == str(f) and "\n" not in str(e)
                assert e.line is not None or "format" in e.reason or "session id" in e.reason, str(e)
                assert not (skip_invalid and e.skippable), f"--skip-invalid raised a skippable error: {e}"
                failed = e
            else:
                assert frame.columns == list(pa.read_sessions([SOURCES[fmt]]).columns)
                if skip_invalid and failed is not None and failed.skippable:  # what stopped the strict read: counted
                    assert any(path == str(f) for path, _ in report.skipped), (str(failed), report.skipped)


def _compress(data: bytes, suffix: str, flush_at: int) -> bytes:
    """``data`` as a .gz or .zst stream, flushed after ``flush_at`` bytes (so a cut later keeps what came before)."""
    if suffix == ".gz":
        c = zlib.compressobj(6, zlib.DEFLATED, 31)
        return c.compress(data[:flush_at]) + c.flush(zlib.Z_FULL_FLUSH) + c.compress(data[flush_at:]) + c.flush()
    z = zstandard.ZstdCompressor().compressobj()
    return (z.compress(data[:flush_at]) + z.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK) + z.compress(data[flush_at:])
            + z.flush())


def _whole_lines(packed: bytes, suffix: str) -> bytes:
    """The whole lines a one-shot decoder gets out of (possibly cut) compressed data: the reference."""
    out = (zlib.decompressobj(31).decompress(packed) if suffix == ".gz"
           else zstandard.ZstdDecompressor().decompressobj().decompress(packed))
    return out[: out.rfind(b"\n") + 1]


@pytest.mark.slow
@pytest.mark.parametrize("fmt", sorted(SOURCES))
@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_a_damaged_compressed_file_is_one_error_or_a_counted_skip_keeping_whole_lines(fmt, data):
    """Cut or corrupt .gz/.zst files: strict, one line naming the file (or a frame, where the damage does
    not show); under skip_invalid, never an error, the damage counted, and a cut keeps its whole lines."""
    plain = SOURCES[fmt].read_bytes()
    suffix = data.draw(st.sampled_from([".gz", ".zst"]), label="suffix")
    packed = _compress(plain, suffix, data.draw(st.integers(0, len(plain)), label="flush at"))
    how = data.draw(st.sampled_from(["cut", "corrupt", "garbage"]), label="how")
    at = data.draw(st.integers(0, len(packed) - 1), label="at")
    if how == "cut":
        damaged = packed[:at]
    elif how == "corrupt":
        n = data.draw(st.integers(1, 16), label="bytes")
        damaged = packed[:at] + bytes((b ^ 0xA5) for b in packed[at:at + n]) + packed[at + n:]
    else:
        damaged = data.draw(st.binary(max_size=64), label="garbage")
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / (SOURCES[fmt].name + suffix)
        f.write_bytes(damaged)
        try:
            pa.read_sessions([f], jobs=1)
            strict_failed = False
        except InputError as e:
            assert e.path == str(f) and "\n" not in str(e), str(e)
            strict_failed = True
        report = IngestReport()
        frame = pa.read_sessions([f], skip_invalid=True, report=report, jobs=1)  # never raises
        if strict_failed:
            assert any(path == str(f) for path, _ in report.skipped), report.skipped
        if how == "cut":
            whole = Path(d) / "whole" / SOURCES[fmt].name
            whole.parent.mkdir()
            whole.write_bytes(_whole_lines(damaged, suffix))
            assert frame.drop("file").equals(pa.read_sessions([whole], skip_invalid=True, jobs=1).drop("file"))
