"""``cost --by day`` against an independent per-call bill of the raw records (``reference/claude_code_bill.py``:
plain Python over the JSON lines, genai-prices' own ``calc_price``), on every day: on fixtures shaped like the
records that were billed wrongly (a call split by other records, ``usage.iterations``, a proxy that records no
usage, an OpenRouter ``:free`` id), and on the real Claude Code recordings in ``../shared/realdata``."""
from __future__ import annotations

import io
import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from conftest import SHARED

from panto_analytics.cli import main
from reference import claude_code_bill

REAL = SHARED / "realdata" / "claude-code"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason=f"{REAL} is absent")


def cost_by_day(path: Path) -> pl.DataFrame:
    result = CliRunner().invoke(main, ["cost", str(path), "--by", "day", "-o", "-", "--no-cache"])
    assert result.exit_code == 0, result.output
    return pl.read_csv(io.StringIO(result.stdout), schema_overrides={"day": pl.String})


def assert_every_day_agrees(path: Path, files: list[Path]) -> int:
    """Compare each day's calls, tokens and dollars; return the number of days."""
    want = claude_code_bill.by_day(claude_code_bill.calls(files))
    got = {row["day"]: row for row in cost_by_day(path).iter_rows(named=True)}
    assert sorted(got) == sorted(want)
    for day, w in want.items():
        g = got[day]
        assert (g["api_calls"], g["input"], g["output"], g["cache_read"], g["cache_write_5m"] + g["cache_write_1h"],
                g["cache_write_1h"]) == (w["api_calls"], w["input"], w["output"], w["cache_read"], w["cache_write"],
                                         w["cache_write_1h"]), day
        assert g["priced_cost_usd"] == pytest.approx(w["priced_cost_usd"], rel=1e-9, abs=1e-12), day
        if w["cost_usd"] is None:
            assert g["cost_usd"] is None, day
        else:
            assert g["cost_usd"] == pytest.approx(w["cost_usd"], rel=1e-9, abs=1e-12), day
    return len(want)


def _line(uid, mid, day, usage, *, model="claude-sonnet-4-5-20250929", blocks=None, **extra):
    return {"type": "assistant", "uuid": uid, "parentUuid": None, "sessionId": "s", "requestId": "r-" + mid,
            "timestamp": f"{day}T10:00:00.000Z", "message": {"id": mid, "model": model, "role": "assistant",
            "content": blocks or [{"type": "text", "text": "x"}], "usage": usage}, **extra}


def _user(uid, day, content, **extra):
    return {"type": "user", "uuid": uid, "parentUuid": None, "sessionId": "s", "timestamp": f"{day}T10:00:00.000Z",
            "message": {"role": "user", "content": content}, **extra}


def _usage(inp, out, read=0, write=0, one_hour=0, **extra):
    return {"input_tokens": inp, "output_tokens": out, "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
            "cache_creation": {"ephemeral_5m_input_tokens": write - one_hour, "ephemeral_1h_input_tokens": one_hour},
            **extra}


def test_the_bill_agrees_on_records_shaped_like_the_ones_billed_wrongly(tmp_path):
    d = tmp_path / "projects"
    d.mkdir()
    split = [_user("u1", "2026-11-01", "read the paper"),
             _line("a1", "m1", "2026-11-01", _usage(3, 1, 20_000, 500, 500),
                   blocks=[{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "p.pdf"}}]),
             _user("u2", "2026-11-01", [{"type": "tool_result", "tool_use_id": "t1", "content": "PDF read"}]),
             _user("u3", "2026-11-01", [{"type": "document", "source": {"type": "base64",
                                                                       "media_type": "application/pdf"}}], isMeta=True),
             _line("a2", "m1", "2026-11-01", _usage(3, 412, 20_000, 500, 500))]
    zero = {**_usage(0, 0), "iterations": [_usage(2, 90, 0, 30_000, 30_000), _usage(1, 5, 30_000, 10)]}
    after_compaction = [_user("u1", "2026-11-02", "go on"), _line("a1", "m2", "2026-11-02", zero),
                        _line("a2", "m3", "2026-11-02", _usage(1, 7, 30_010, 40))]
    proxy = [_user("u1", "2026-11-03", "hi"), _line("a1", "m4", "2026-11-03", {"input_tokens": 0, "output_tokens": 0},
                                                    model="qwen3-coder-plus"),
             _line("a2", "m5", "2026-11-03", _usage(10, 10))]
    free = [_user("u1", "2026-11-04", "hi"),
            _line("a1", "gen-1", "2026-11-04", _usage(25_430, 59), model="nvidia/nemotron-3-super-120b-a12b:free"),
            _line("a2", "m6", "2026-11-04", _usage(0, 3), model="<synthetic>")]
    for name, records in (("split", split), ("iterations", after_compaction), ("proxy", proxy), ("free", free)):
        (d / f"{name}.jsonl").write_text("".join(json.dumps({**r, "sessionId": name}) + "\n" for r in records))
    assert assert_every_day_agrees(d, sorted(d.glob("*.jsonl"))) == 4
    days = cost_by_day(d)
    assert days["api_calls"].to_list() == [1, 2, 2, 1]          # the split call once; the synthetic one not at all
    assert days["no_usage_calls"].to_list() == [0, 0, 1, 0]     # the proxy's call: unknown, not $0
    assert days["cost_usd"][2] is None and days["cost_usd"][3] == 0.0


@needs_real
def test_cost_by_day_is_the_independent_bill_of_the_real_recordings_on_every_day():
    files = sorted(REAL.rglob("*.jsonl"))
    assert assert_every_day_agrees(REAL, files) >= 7
