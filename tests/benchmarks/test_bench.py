"""The benchmark on a tiny corpus: its structure and its agreement with the references.

No timing is asserted anywhere: speed is reported by ``panto-analytics
bench``, never tested.
"""
from __future__ import annotations

import orjson
import pytest
from click.testing import CliRunner
from conftest import SHARED

from benchmarks import bench
from benchmarks.synth import write_corpus
from panto_analytics import read_sessions, splits
from panto_analytics.cli import main

#: Each test here writes a report, runs a notebook or a benchmark: seconds each.
pytestmark = pytest.mark.slow

SESSIONS, BUDGETS, CLAUDE = 4, 8, 2


@pytest.fixture(scope="module")
def results():
    steps: list[str] = []
    # A generous port budget: the tiny corpus runs through the port whole.
    r = bench.run_bench(SESSIONS, seed=3, n_budgets=BUDGETS, port_seconds=1e6, claude_sessions=CLAUDE,
                        progress=steps.append)
    r["_steps"] = steps
    return r


def test_structure(results):
    assert set(results) >= {"corpus", "budgets", "ingest", "cache", "frame", "sweep", "replay", "native",
                            "python_port", "claude_code", "goals", "machine"}
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


def test_claude_code_section(results):
    cc = results["claude_code"]
    assert cc["available"]
    corpus, ing, cache = cc["corpus"], cc["ingest"], cc["cache"]
    assert corpus["sessions"] == CLAUDE and corpus["seed"] == 3
    assert corpus["messages"] > 0 and corpus["bytes"] > 0
    mb = corpus["bytes"] / 1e6
    assert ing["mb_per_s"] == pytest.approx(mb / ing["seconds"])
    assert ing["floor_mb_per_s"] == pytest.approx(mb / ing["floor_seconds"])
    assert ing["vs_floor"] == pytest.approx(ing["seconds"] / ing["floor_seconds"])
    goals = {g["goal"]: g for g in results["goals"]}
    floor, speedup = goals["claude_ingest_vs_floor"], goals["claude_cache_speedup"]
    # the same thresholds as the canonical goals
    assert (floor["target"], floor["direction"]) == (goals["ingest_vs_floor"]["target"], "max")
    assert (speedup["target"], speedup["direction"]) == (goals["cache_speedup"]["target"], "min")
    assert "Claude Code" in floor["what"] and "Claude Code" in speedup["what"]
    assert floor["value"] == ing["vs_floor"] and floor["pass"] == (floor["value"] <= floor["target"])
    if cache["available"]:
        assert cache["speedup"] == pytest.approx(ing["seconds"] / cache["seconds"])
        assert speedup["value"] == cache["speedup"] and speedup["pass"] == (cache["speedup"] >= speedup["target"])
    else:
        assert speedup["pass"] is None
    assert any("Claude Code" in step for step in results["_steps"])


def test_claude_code_section_can_be_skipped(tmp_path):
    skipped = bench.claude_code(0, 0, tmp_path)
    assert skipped == {"available": False, "note": skipped["note"]} and "skipped" in skipped["note"]
    assert not any(tmp_path.iterdir()), "nothing written"


def test_splits_equal_the_python_port(results):
    port = results["python_port"]
    assert port["available"]
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


def test_missing_native_code_is_not_available():
    assert bench.native([], [0], {}, None)["available"] is False


def test_report_has_every_figure(results):
    text = bench.format_report(results)
    for needle in ("MB/s", "ingest/floor", "cache re-read", "bytes/message", f"{BUDGETS}-budget sweep",
                   "python reference port", "PASS", f"Claude Code JSONL: {CLAUDE} synthetic sessions"):
        assert needle in text
    # the Claude Code block has its own figures, each with its goal: ingest, re-read, resident memory
    block = text.split("Claude Code JSONL:")[1].split("small canonical files")[0]
    assert block.count("MB/s") == 2 and "ingest/floor" in block and "cold/re-read" in block
    assert "resident after a cold ingest" in block
    assert block.count("goal ") == 3 + ("ingest/ccusage" in block)


def test_cli_json():
    out = CliRunner().invoke(main, ["bench", "--sessions", "2", "--budgets", "4", "--port-seconds", "1000",
                                    "--claude-sessions", "1", "--no-native", "--json",
                                    "--small-files", "2", "--reread-files", "20"])
    assert out.exit_code == 0, out.output
    r = orjson.loads(out.output)
    assert r["corpus"]["sessions"] == 2 and len(r["budgets"]) == 4
    assert r["claude_code"]["corpus"]["sessions"] == 1 and r["claude_code"]["ingest"]["mb_per_s"] > 0
    assert r["native"]["available"] is False and r["python_port"]["mismatches"] == 0


def test_cli_table():
    out = CliRunner().invoke(main, ["bench", "-n", "2", "--budgets", "4", "--port-seconds", "0", "--no-native",
                                    "--claude-sessions", "0", "--small-files", "0", "--reread-files", "0"])
    assert out.exit_code == 0, out.output
    assert "4-budget sweep" in out.output and "native computeSplit loop" in out.output
    assert "Claude Code JSONL: skipped" in out.output


def test_cache_cost_small_files_and_many_files_sections(tmp_path, monkeypatch):
    monkeypatch.setenv("PANTO_CCUSAGE", str(tmp_path / "no-such-ccusage"))
    r = bench.run_bench(2, seed=1, n_budgets=2, port_seconds=0, shared=False, claude_sessions=1, small_files=3,
                        reread_files=25)
    assert r["small_files"]["files"] == 3 and r["small_files"]["cache"]["ratio"] > 0
    assert r["reread_many"]["files"] == 25 and r["reread_many"]["messages"] == 50
    assert r["cache_cold"]["ratio"] > 0
    assert r["claude_code"]["ccusage"] == {"available": False, "note": bench.ingest_scale.CCUSAGE_HOWTO}
    goals = {g["goal"]: g for g in r["goals"]}
    assert goals["reread_seconds"]["value"] == r["reread_many"]["seconds"]
    assert goals["claude_vs_ccusage"]["pass"] is None
    text = bench.format_report(r)
    for needle in ("cache/no-cache", "small canonical files: 3 files", "cached re-read, 25 unchanged files",
                   "npm install --prefix"):
        assert needle in text


def test_replay_is_timed_beside_the_sweep(results):
    rep = results["replay"]
    assert list(rep) == [str(w) for w in bench.REPLAY_WINDOWS]
    for figures in rep.values():
        assert figures["vs_sweep"] == pytest.approx(figures["seconds"] / results["sweep"]["seconds"])
    goal = {g["goal"]: g for g in results["goals"]}["replay_vs_sweep"]
    assert goal["value"] == rep[str(bench.REPLAY_WINDOWS[0])]["vs_sweep"] and goal["pass"] == (goal["value"] <= 3.0)
    assert "replay, 200k window" in bench.format_report(results)
