"""What billing needs from ingest: cache writes by lifetime, pi's recorded cost, Codex's token accounting."""
from __future__ import annotations

import json

import polars as pl
import pytest
from conftest import FIXTURES, REALDATA

from panto_analytics.formats.claude_code.fast import read_frames
from panto_analytics.formats.contract import SourceFile
from panto_analytics.ingest import read_sessions
from panto_analytics.outcomes.cost import bill, call_tokens


def claude_code_call(i: int, usage: dict) -> str:
    return json.dumps({"type": "assistant", "uuid": f"a{i}", "parentUuid": f"u{i}", "sessionId": "s",
                       "requestId": f"r{i}", "timestamp": f"2026-11-01T10:0{i}:00.000Z",
                       "message": {"id": f"m{i}", "model": "claude-opus-4-5-20251101", "role": "assistant",
                                   "content": [{"type": "text", "text": "ok"}], "usage": usage}})


def claude_code_prompt(i: int) -> str:
    return json.dumps({"type": "user", "uuid": f"u{i}", "parentUuid": f"a{i - 1}" if i else None, "sessionId": "s",
                       "timestamp": f"2026-11-01T10:0{i}:00.000Z", "message": {"role": "user", "content": "go"}})


def test_claude_code_cache_writes_by_lifetime(tmp_path):
    path = tmp_path / "s.jsonl"
    lines = []
    for i, usage in enumerate([
        # The split: 4 five-minute + 5 one-hour tokens of 9 written.
        {"input_tokens": 3, "output_tokens": 5, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 9,
         "cache_creation": {"ephemeral_5m_input_tokens": 4, "ephemeral_1h_input_tokens": 5}},
        # No split recorded: every write is a 5-minute write.
        {"input_tokens": 1, "output_tokens": 2, "cache_read_input_tokens": 9, "cache_creation_input_tokens": 7},
    ]):
        lines += [claude_code_prompt(i), claude_code_call(i, usage)]
    path.write_text("\n".join(lines) + "\n")
    reference = read_sessions(path, cache=False, jobs=1)
    calls = reference.filter(pl.col("input").is_not_null())
    assert calls.select("cache_write", "cache_write_1h").rows() == [(9, 5), (7, 0)]
    assert reference.filter(pl.col("input").is_null())["cache_write_1h"].null_count() == 2
    # The columnar fast path reads the same.
    (fast,) = read_frames([SourceFile(path, "claude-code")])
    assert fast is not None
    assert fast.select("cache_write", "cache_write_1h").equals(reference.select("cache_write", "cache_write_1h"))
    # What the bill makes of them: 4 x $6.25 + 5 x $10 per MTok, then 7 x $6.25.
    billed = bill(call_tokens(reference))
    assert billed["cache_write_usd"].to_list() == pytest.approx([75e-6, 43.75e-6])


def test_a_bad_one_hour_count_is_an_error_naming_the_line(tmp_path):
    from panto_analytics.errors import InputError

    path = tmp_path / "s.jsonl"
    usage = {"input_tokens": 1, "output_tokens": 1, "cache_creation_input_tokens": 2,
             "cache_creation": {"ephemeral_1h_input_tokens": -1}}
    path.write_text(claude_code_prompt(0) + "\n" + claude_code_call(0, usage) + "\n")
    with pytest.raises(InputError, match="ephemeral_1h_input_tokens") as info:
        read_sessions(path, cache=False, jobs=1)
    assert ":2" in str(info.value)


def test_other_formats_record_no_lifetime_and_canonical_no_cost():
    frame = read_sessions(FIXTURES / "codex" / "calls.jsonl", cache=False, jobs=1)
    calls = frame.filter(pl.col("input").is_not_null())
    assert calls["cache_write_1h"].to_list() == [0] * calls.height
    assert frame["recorded_cost"].null_count() == frame.height


def test_codex_cached_tokens_are_part_of_input_and_reasoning_part_of_output():
    """``last_token_usage``: input_tokens 1000 of which cached 600, output_tokens 50 of which reasoning 20,
    total_tokens 1050 = input + output; so input = 400 uncached, cache_read = 600, output = 50 (not 70)."""
    frame = read_sessions(FIXTURES / "codex" / "calls.jsonl", cache=False, jobs=1)
    first = frame.filter(pl.col("input").is_not_null()).row(0, named=True)
    assert (first["input"], first["cache_read"], first["output"], first["cache_write"]) == (400, 600, 50, 0)


def test_pi_records_its_cost(tmp_path):
    path = tmp_path / "pi.jsonl"
    records = [
        {"type": "session", "version": 3, "id": "p", "timestamp": "2026-11-01T10:00:00.000Z", "cwd": "/w"},
        {"type": "message", "id": "e1", "parentId": None, "timestamp": "2026-11-01T10:00:01.000Z",
         "message": {"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}},
        {"type": "message", "id": "e2", "parentId": "e1", "timestamp": "2026-11-01T10:00:02.000Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "model": "claude-sonnet-4-5",
                     "provider": "anthropic", "timestamp": 2,
                     "usage": {"input": 3, "output": 191, "cacheRead": 0, "cacheWrite": 1684, "totalTokens": 1878,
                               "cost": {"input": 0.000009, "output": 0.002865, "cacheRead": 0,
                                        "cacheWrite": 0.006315, "total": 0.009189}}}},
    ]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    frame = read_sessions(path, cache=False, jobs=1)
    assert frame["recorded_cost"].to_list() == [None, pytest.approx(0.009189, rel=1e-7)]
    # genai-prices' sonnet-4-5 rates give the same: 3 x $3 + 191 x $15 + 1684 x $3.75 per MTok.
    assert bill(call_tokens(frame))["cost_usd"].item() == pytest.approx(0.009189, rel=1e-9)


PI_REAL = [p for p in (REALDATA / "pi", REALDATA / "pi-compactions") if p.is_dir()]


@pytest.mark.skipif(not PI_REAL, reason="../shared/realdata/pi is absent")
def test_pi_recorded_cost_is_the_computed_cost_on_the_real_recordings():
    """Every call pi priced (910 on the recordings here), within Float32's rounding of the recorded figure:
    pi prices with the same per-token rates genai-prices has, and no call passes 200k prompt tokens, where
    the two could part (genai-prices' tier)."""
    calls = bill(call_tokens(read_sessions(PI_REAL, cache=False, skip_invalid=True)))
    priced = calls.filter(pl.col("recorded_cost").is_not_null())
    assert priced.height > 0
    assert priced["cost_usd"].null_count() == 0
    recorded = priced["recorded_cost"].cast(pl.Float64)
    assert ((priced["cost_usd"] - recorded).abs() <= 1e-7 * recorded.abs() + 1e-12).all()
