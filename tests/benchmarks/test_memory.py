"""The memory figures of the benchmark: measured in a fresh process, per message and against the frame."""
from __future__ import annotations

import sys

import polars as pl
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


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RSS is read from /proc")
def test_library_pages_are_not_counted_as_the_reads_own(tmp_path):
    """The pages of Polars' and Arrow's code that a first read faults in are paged in before the base is taken."""
    ingest_scale.write_tiny_sessions(tmp_path / "s", 20)
    frame = pa.read_sessions(tmp_path / "s", cache=tmp_path / "c", jobs=1)
    counted = memory.resident([tmp_path / "s"], tmp_path / "c", libraries_at_base=False)
    own = memory.resident([tmp_path / "s"], tmp_path / "c")
    assert counted["available"] and own["available"] and own["cache_hits"] == 20
    # tens of MiB of library pages against a few MiB of the read's own (a ratio far from any noise)
    assert own["resident_bytes_per_message"] * 2 < counted["resident_bytes_per_message"]
    strings = sum(len(s.encode()) for name in ("session_id", "file", "model")
                  for s in frame[name].cast(pl.String).unique().drop_nulls())
    assert own["category_bytes"] == counted["category_bytes"] == strings


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RSS is read from /proc")
def test_a_read_measured_with_the_worker_launched_first(tmp_path):
    """``launch``: the child starts the parsing worker first, as the command line does; the read is the same."""
    ingest_scale.write_tiny_sessions(tmp_path / "s", 300)
    launched = memory.resident([tmp_path / "s"], launch=True)
    here = memory.resident([tmp_path / "s"])
    assert launched["available"] and launched["messages"] == here["messages"] == 600
    assert launched["frame_bytes"] == here["frame_bytes"]
