"""The pi and Codex section of the bench: real recordings copied with fresh ids, timed against their floor."""
from __future__ import annotations

import pytest
from conftest import SHARED

from benchmarks import bench, real_formats
from panto_analytics.ingest import read_sessions

needs_real = pytest.mark.skipif(not (SHARED / "realdata").is_dir(), reason="../shared/realdata is absent")


def test_fresh_ids_shift_every_uuid_the_same_way_and_leave_the_rest():
    text = b'{"id":"00000000-0000-0000-0000-ffffffffffff","parent":"00000000-0000-0000-0000-000000000001","n":"abc"}'
    shifted = real_formats.fresh_ids(text, 2)
    assert shifted == b'{"id":"00000000-0000-0000-0000-000000000001","parent":"00000000-0000-0000-0000-000000000003","n":"abc"}'
    assert real_formats.fresh_ids(text, 0) == text


@needs_real
@pytest.mark.parametrize("fmt", sorted(real_formats.FORMATS))
def test_copies_are_new_sessions_with_the_same_messages(tmp_path, fmt):
    one = real_formats.write_copies(SHARED / "realdata" / fmt, 1, tmp_path / "one")
    three = real_formats.write_copies(SHARED / "realdata" / fmt, 3, tmp_path / "three")
    assert len(three) == 3 * len(one) > 0
    a = read_sessions(one, format=fmt, skip_invalid=True)
    b = read_sessions(three, format=fmt, skip_invalid=True)   # no session id is claimed twice
    assert b.height == 3 * a.height
    assert b["session_id"].n_unique() == 3 * a["session_id"].n_unique()


@needs_real
def test_the_section_is_measured_and_judged(tmp_path):
    r = bench.run_bench(2, seed=1, n_budgets=2, port_seconds=0, shared=False, claude_sessions=0, real_copies=2)
    goals = {g["goal"]: g for g in r["goals"]}
    for fmt in real_formats.FORMATS:
        figures = r["real_formats"][fmt]
        assert figures["available"] and figures["copies"] == 2 and figures["messages"] > 0
        assert goals[f"{fmt}_vs_floor"]["value"] == figures["seconds"] / figures["floor_seconds"]
    assert "pi (real recordings, 2 copies with fresh ids)" in bench.format_report(r)


def test_without_copies_the_section_says_so():
    assert real_formats.real_format("pi", SHARED, 0, SHARED) == {"available": False, "note": "skipped (--real-copies 0)"}
