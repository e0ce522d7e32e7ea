"""The ingest-scale figures of the benchmark: ccusage found or not, tiny sessions, structure (never a speed)."""
from __future__ import annotations

import panto_analytics as pa
from benchmarks import ingest_scale


def test_ccusage_is_found_by_the_environment_or_path(tmp_path):
    binary = tmp_path / "ccusage"
    binary.write_text("#!/bin/sh\n")
    assert ingest_scale.ccusage_binary({"PANTO_CCUSAGE": str(binary)}) == str(binary)
    assert ingest_scale.ccusage_binary({"PANTO_CCUSAGE": str(tmp_path / "missing")}) is None
    assert ingest_scale.ccusage_binary({"PATH": str(tmp_path)}) in (None, str(binary))


def test_without_ccusage_it_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PANTO_CCUSAGE", str(tmp_path / "missing"))
    got = ingest_scale.ccusage(tmp_path, 1.0)
    assert got["available"] is False and "npm install" in got["note"] and ingest_scale.CCUSAGE_VERSION in got["note"]


def test_a_fake_ccusage_is_run_on_the_tree(tmp_path, monkeypatch):
    fake = tmp_path / "ccusage"
    fake.write_text('#!/bin/sh\necho "{\\"totals\\": {\\"totalTokens\\": 7}, \\"dir\\": \\"$CLAUDE_CONFIG_DIR\\"}"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PANTO_CCUSAGE", str(fake))
    got = ingest_scale.ccusage(tmp_path / "config", 2.0)
    assert got["available"] and got["total_tokens"] == 7 and got["ratio"] == 2.0 / got["seconds"]


def test_tiny_sessions_are_distinct_canonical_sessions(tmp_path):
    ingest_scale.write_tiny_sessions(tmp_path, 1002)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p000", "p001"]
    frame = pa.read_sessions(tmp_path, jobs=1)
    assert frame.height == 2004 and frame["session_id"].n_unique() == 1002
