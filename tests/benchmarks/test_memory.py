"""The memory figures of the benchmark: measured in a fresh process, per message and against the frame."""
from __future__ import annotations

import sys

import pytest

import panto_analytics as pa
from benchmarks import ingest_scale, memory


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RSS is read from /proc")
def test_resident_memory_of_a_cold_read_and_a_re_read(tmp_path):
    ingest_scale.write_tiny_sessions(tmp_path / "s", 300)
    cold = memory.resident([tmp_path / "s"])
    assert cold["available"] and cold["messages"] == 600
    frame = pa.read_sessions(tmp_path / "s", cache=tmp_path / "c", jobs=1)  # fills the cache
    assert cold["frame_bytes"] == frame.estimated_size()
    assert cold["resident_bytes_per_message"] > 0
    again = memory.resident([tmp_path / "s"], tmp_path / "c")
    assert again["available"] and again["messages"] == 600
    assert again["peak_over_frame"] is None or again["peak_over_frame"] > 0


def test_a_child_that_fails_is_reported_not_raised(tmp_path):
    got = memory.resident([tmp_path / "missing.jsonl"])
    assert got["available"] is False and "child failed" in got["note"]
