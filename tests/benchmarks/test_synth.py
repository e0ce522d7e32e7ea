"""The synthetic-session generator and the bundled corpus it wrote in ``data/``.

Shape checks read the raw JSON lines, not the message frame, so they do not
lean on the code under test elsewhere.
"""
from __future__ import annotations

import random
import shlex
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import DATA

import panto_analytics
from benchmarks import synth

DATA_FILES = sorted(DATA.glob("*.jsonl"))


def _records(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def _messages(path: Path) -> list[dict]:
    return [r for r in _records(path) if r["type"] == "message"]


def _kinds(msg: dict) -> set[str]:
    return {b["type"] for b in msg["content"]}


def _prompt(u: dict) -> int:
    return u["input"] + u["cache_read"] + u["cache_write"]


def _misreported(u: dict) -> bool:
    # The generator's one kind of misreported call: no cached prompt at all.
    return u["cache_read"] == 0 and u["cache_write"] == 0 and u["input"] <= 40


def _words(text: str) -> int:
    return len(text.split())


@pytest.fixture(scope="module")
def corpus() -> dict[Path, list[dict]]:
    return {p: _messages(p) for p in DATA_FILES}


def _readme_command() -> list[str]:
    lines = [line for line in (DATA / "README.md").read_text().splitlines()
             if line.startswith("python -m benchmarks.synth data ")]
    assert len(lines) == 1, "data/README.md must give exactly one generating command"
    return shlex.split(lines[0])[3:]  # drop "python -m benchmarks.synth"


# -- the bundled corpus ---------------------------------------------------------

def test_data_is_exactly_what_the_readme_command_writes(tmp_path):
    argv = _readme_command()
    assert argv[0] == "data"
    synth.main([str(tmp_path)] + argv[1:])
    regenerated = sorted(tmp_path.glob("*.jsonl"))
    assert [p.name for p in regenerated] == [p.name for p in DATA_FILES]
    for new, old in zip(regenerated, DATA_FILES):
        assert new.read_bytes() == old.read_bytes(), f"{old.name} drifted from the generator"


def test_data_size_and_count():
    assert 10 <= len(DATA_FILES) < 100  # tens of sessions
    assert sum(p.stat().st_size for p in DATA_FILES) < 5_000_000


def test_every_file_reads_strictly(corpus):
    messages = panto_analytics.read_sessions(DATA)
    assert messages.height == sum(len(m) for m in corpus.values())
    header_ids = {_records(p)[0]["id"] for p in DATA_FILES}
    assert set(messages["session_id"].cast(str).unique()) == header_ids


def test_headers_and_timestamps():
    for path in DATA_FILES:
        header, *rest = _records(path)
        assert header["type"] == "session" and path.stem == header["id"]
        assert set(header) == {"type", "id", "model", "context_window", "created_at"}
        assert all("timestamp" in r for r in rest)
        assert rest[0]["role"] == "system"


def test_lengths_vary(corpus):
    sizes = sorted(len(m) for m in corpus.values())
    assert sizes[0] < 10 and sizes[-1] > 300


def test_tool_rounds_and_long_outputs(corpus):
    longest, media = 0, 0
    for msgs in corpus.values():
        pending: set[str] = set()
        for m in msgs:
            for b in m["content"]:
                if b["type"] == "tool_use":
                    assert m["role"] == "assistant"
                    orjson.loads(b["input"])  # JSON text, as the format says
                    pending.add(b["id"])
                elif b["type"] == "tool_result":
                    assert m["role"] == "user" and b["tool_use_id"] in pending
                    media += sum(p["type"] == "media" for p in b["parts"])
                    longest = max(longest, sum(_words(p["text"]) for p in b["parts"] if p["type"] == "text"))
    assert longest > 1_000 and media > 0


def test_usage_is_cumulative_with_explained_dips(corpus):
    """Each call's prompt is at least the previous call's prompt + output, except
    at the first call after a compaction, at a misreported call, or (providers
    that drop old thinking) at a turn's first call by no more than that thinking."""
    pairs = dips = compaction_dips = 0
    for msgs in corpus.values():
        compacted_at = [m["timestamp"] for m in msgs if "compaction_summary" in _kinds(m)]
        prev = prev_time = None
        turn_start = False
        thinking_words = 0
        for m in msgs:
            kinds = _kinds(m)
            turn_start |= m["role"] == "user" and not kinds & {"tool_result", "compaction_summary"}
            u = m.get("usage")
            if m["role"] == "assistant" and u is not None:
                if prev is not None:
                    pairs += 1
                    drop = prev["cache_read"] + prev["cache_write"] + prev["input"] + prev["output"] - _prompt(u)
                    if drop > 0:
                        dips += 1
                        # The summary carries the time of its compaction (ISO strings sort by time).
                        compaction = any(prev_time < t < m["timestamp"] for t in compacted_at)
                        compaction_dips += compaction
                        assert compaction or _misreported(u) or _misreported(prev) or (
                            turn_start and drop <= 2 * thinking_words), (m, prev)
                prev, prev_time, turn_start = u, m["timestamp"], False
            if m["role"] == "assistant":
                thinking_words += sum(_words(b["text"]) for b in m["content"] if b["type"] == "thinking")
    assert pairs > 500
    assert 0 < dips < 0.05 * pairs
    assert compaction_dips > 0


def test_most_of_the_prompt_is_cache_read(corpus):
    usages = [m["usage"] for msgs in corpus.values() for m in msgs if m.get("usage")]
    prompt = sum(_prompt(u) for u in usages)
    assert sum(u["cache_read"] for u in usages) > 0.6 * prompt
    assert 0 < sum(u["cache_write"] for u in usages) < 0.2 * prompt
    assert all(u["output"] > 0 for u in usages)
    assert not any(m.get("usage") for msgs in corpus.values() for m in msgs if m["role"] != "assistant")


def test_some_sessions_without_usage_some_partly(corpus):
    none, partly = 0, 0
    for msgs in corpus.values():
        calls = [m.get("usage") is not None for m in msgs if m["role"] == "assistant"]
        none += not any(calls)
        partly += any(calls) and not all(calls)
    assert none >= 2 and partly >= 2


def test_some_sessions_past_a_compaction_with_a_smaller_prompt_after(corpus):
    compacted, ratios = 0, []
    for msgs in corpus.values():
        anchors = [m for m in msgs if "compaction_summary" in _kinds(m)]
        compacted += bool(anchors)
        calls = [m for m in msgs if m["role"] == "assistant" and m.get("usage") and not _misreported(m["usage"])]
        for anchor in anchors:
            assert anchor["role"] == "user" and len(anchor["content"]) == 1
            # The calls just before and just after the compaction, in time: the
            # kept turns follow the anchor in the file but were made before it.
            before = [m for m in calls if m["timestamp"] < anchor["timestamp"]]
            after = [m for m in calls if m["timestamp"] > anchor["timestamp"]]
            if before and after:
                last = max(before, key=lambda m: m["timestamp"])["usage"]
                first = min(after, key=lambda m: m["timestamp"])["usage"]
                ratios.append(_prompt(first) / _prompt(last))
    assert 2 <= compacted < len(corpus)
    assert ratios and max(ratios) < 0.8


# -- the generator --------------------------------------------------------------

def test_generate_session_is_deterministic_and_seed_dependent():
    a = synth.generate_session(random.Random(3), "x")
    assert a == synth.generate_session(random.Random(3), "x")
    assert a != synth.generate_session(random.Random(4), "x")


def test_write_corpus_is_reproducible_and_prefix_stable(tmp_path):
    small = synth.write_corpus(tmp_path / "a", 3, seed=9)
    large = synth.write_corpus(tmp_path / "b", 4, seed=9)
    other = synth.write_corpus(tmp_path / "c", 3, seed=10)
    assert [p.read_bytes() for p in small] == [p.read_bytes() for p in large[:3]]
    assert [p.read_bytes() for p in small] != [p.read_bytes() for p in other]


def test_module_entry_point(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "benchmarks.synth", str(tmp_path / "out"),
                           "--sessions", "2", "--seed", "5"], capture_output=True, text=True, check=True)
    assert "wrote 2 sessions" in proc.stdout
    expected = synth.write_corpus(tmp_path / "lib", 2, seed=5)
    assert sorted(p.read_bytes() for p in (tmp_path / "out").glob("*.jsonl")) == \
        sorted(p.read_bytes() for p in expected)


@pytest.mark.slow
def test_default_shape_reads_and_reaches_hundreds_of_turns(tmp_path):
    paths = synth.write_corpus(tmp_path, 60, seed=2)
    frame = panto_analytics.read_sessions(tmp_path)
    assert frame["session_id"].n_unique() == len(paths)
    prompts = [sum(m["role"] == "user" and not _kinds(m) & {"tool_result", "compaction_summary"}
                   for m in _messages(p)) for p in paths]
    assert min(prompts) <= 3 and max(prompts) >= 50
