"""The benchmark on a tiny corpus: its structure and its agreement with the references.

No timing is asserted anywhere: speed is reported by ``panto-analytics
bench``, never tested.
"""
from __future__ import annotations

import orjson
import pytest
from click.testing import CliRunner

from panto_analytics import bench, read_sessions, splits
from panto_analytics.cli import main
from panto_analytics.synth import write_corpus

from conftest import SHARED

SESSIONS, BUDGETS = 4, 8


@pytest.fixture(scope="module")
def results():
    steps: list[str] = []
    # A generous port budget: the tiny corpus runs through the port whole.
    r = bench.run_bench(SESSIONS, seed=3, n_budgets=BUDGETS, port_seconds=1e6, progress=steps.append)
    r["_steps"] = steps
    return r


def test_structure(results):
    assert set(results) >= {"corpus", "budgets", "ingest", "cache", "frame", "sweep", "native",
                            "python_port", "goals", "machine"}
    assert results["corpus"]["sessions"] == SESSIONS
    assert results["budgets"] == bench.bench_budgets(BUDGETS) and len(results["budgets"]) == BUDGETS
    assert results["corpus"]["messages"] == results["frame"]["rows"] > 0
    assert results["ingest"]["seconds"] > 0 and results["ingest"]["floor_seconds"] > 0
    assert results["sweep"]["rows"] == SESSIONS * BUDGETS
    assert len(results["_steps"]) >= 6


def test_goals_are_judged_from_the_values(results):
    goals = {g["goal"]: g for g in results["goals"]}
    assert set(goals) == {key for key, *_ in bench.GOALS}
    bpm = goals["bytes_per_message"]
    assert bpm["value"] == results["frame"]["bytes"] / results["frame"]["rows"]
    assert bpm["pass"] == (bpm["value"] <= 64)
    ingest = goals["ingest_vs_floor"]
    assert ingest["pass"] == (results["ingest"]["seconds"] / results["ingest"]["floor_seconds"] <= 2)
    if not results["cache"]["available"]:
        assert goals["cache_speedup"]["pass"] is None and "skipped" in results["cache"]["note"]


def test_splits_equal_the_python_port(results):
    port = results["python_port"]
    assert port["available"], "tests/reference_port.py is in this checkout"
    assert not port["scaled"] and port["sessions_timed"] == SESSIONS
    assert port["compared"] == SESSIONS * BUDGETS
    assert port["mismatches"] == 0, port["mismatch_examples"]


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared (libpanto's harness) is absent")
def test_splits_equal_native_computesplit(results):
    native = results["native"]
    assert native["available"], native.get("note")
    assert native["compared"] == SESSIONS * BUDGETS
    assert native["mismatches"] == 0, native["mismatch_examples"]
    assert native["seconds"] >= 0


def test_a_wrong_split_is_reported(tmp_path):
    paths = write_corpus(tmp_path, 2, seed=4)
    sessions = bench.load_canonical(paths)
    budgets = [0, 50_000]
    right = bench._pairs(splits(read_sessions(paths), budgets))
    assert bench.python_port(sessions, budgets, right, 1e6)["mismatches"] == 0
    key = next(iter(right))
    wrong = {**right, key: (right[key][0] + 1, right[key][1])}
    found = bench.python_port(sessions, budgets, wrong, 1e6)
    assert found["mismatches"] == 1
    assert found["mismatch_examples"][0]["session_id"] == key[0]


def test_missing_references_are_not_available(monkeypatch, tmp_path):
    monkeypatch.setattr(bench, "REPO", tmp_path)
    assert bench.python_port([], [0], {}, 1.0)["available"] is False
    assert bench.native([], [0], {}, None)["available"] is False


def test_report_has_every_figure(results):
    text = bench.format_report(results)
    for needle in ("MB/s", "ingest/floor", "cache re-read", "bytes/message", f"{BUDGETS}-budget sweep",
                   "python reference port", "PASS"):
        assert needle in text


def test_cli_json():
    out = CliRunner().invoke(main, ["bench", "--sessions", "2", "--budgets", "4", "--port-seconds", "1000",
                                    "--no-native", "--json"])
    assert out.exit_code == 0, out.output
    r = orjson.loads(out.output)
    assert r["corpus"]["sessions"] == 2 and len(r["budgets"]) == 4
    assert r["native"]["available"] is False and r["python_port"]["mismatches"] == 0


def test_cli_table():
    out = CliRunner().invoke(main, ["bench", "-n", "2", "--budgets", "4", "--port-seconds", "0", "--no-native"])
    assert out.exit_code == 0, out.output
    assert "4-budget sweep" in out.output and "native computeSplit loop" in out.output
