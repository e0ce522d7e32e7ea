"""The ccusage comparison of ``cost`` (benchmarks.cost_compare), on a stand-in ccusage with known prices."""
from __future__ import annotations

import json
import stat
import sys

import polars as pl
import pytest
from conftest import FIXTURES

from benchmarks.cost_compare import compare_ccusage, cost_speed, format_comparison, probe_prices, speed_frame
from panto_analytics.frame.schema import MESSAGE_SCHEMA

#: The stand-in's prices: a model with a 200k tier and a 1-hour write rate, and one without.
PRICES = {
    "claude-sonnet-4-20250514": {"input_cost_per_token": 3e-6, "output_cost_per_token": 1.5e-5,
                                 "cache_read_input_token_cost": 3e-7, "cache_creation_input_token_cost": 3.75e-6,
                                 "cache_creation_input_token_cost_above_1hr": 6e-6,
                                 "input_cost_per_token_above_200k_tokens": 6e-6},
    "claude-sonnet-4-6": {"input_cost_per_token": 3e-6, "output_cost_per_token": 1.5e-5,
                          "cache_read_input_token_cost": 3e-7, "cache_creation_input_token_cost": 3.75e-6,
                          "cache_creation_input_token_cost_above_1hr": 6e-6},
    **{m: {"input_cost_per_token": 5e-6, "output_cost_per_token": 2.5e-5, "cache_read_input_token_cost": 5e-7,
           "cache_creation_input_token_cost": 6.25e-6} for m in ("claude-opus-4-7", "claude-opus-4-5")},
    "claude-haiku-4-5": {"input_cost_per_token": 1e-6, "output_cost_per_token": 5e-6},
}

#: ccusage's daily report, in a few lines: the split rule, 1-hour writes at their rate, one call per
#: message.id:requestId, days in UTC.
FAKE = r'''
import glob, json, os, sys
from collections import defaultdict
if "--version" in sys.argv:
    print("20.0.24"); sys.exit(0)
P = json.loads(PRICES)
def tiered(n, base, high):
    if n > 200000 and high is not None:
        return 200000 * base + (n - 200000) * high
    return n * (base or 0)
days = defaultdict(lambda: defaultdict(lambda: [0, 0, 0, 0, 0.0]))
seen = set()
for path in sorted(glob.glob(os.environ["CLAUDE_CONFIG_DIR"] + "/projects/**/*.jsonl", recursive=True)):
    for line in open(path):
        r = json.loads(line)
        m = r.get("message") or {}
        u = m.get("usage")
        if r.get("type") != "assistant" or not u or m.get("model") not in P:
            continue
        key = (m.get("id"), r.get("requestId"))
        if key in seen:
            continue
        seen.add(key)
        p = P[m["model"]]
        write = u.get("cache_creation_input_tokens", 0)
        one_hour = (u.get("cache_creation") or {}).get("ephemeral_1h_input_tokens", 0)
        cost = (tiered(u.get("input_tokens", 0), p.get("input_cost_per_token"), p.get("input_cost_per_token_above_200k_tokens"))
                + tiered(u.get("output_tokens", 0), p.get("output_cost_per_token"), None)
                + tiered(u.get("cache_read_input_tokens", 0), p.get("cache_read_input_token_cost"), None)
                + tiered(write - one_hour, p.get("cache_creation_input_token_cost"), None)
                + tiered(one_hour, p.get("cache_creation_input_token_cost_above_1hr"), None))
        d = days[r["timestamp"][:10]][m["model"]]
        for i, k in enumerate(("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")):
            d[i] += u.get(k, 0)
        d[4] += cost
out = []
for day in sorted(days):
    models = days[day]
    tot = [sum(v[i] for v in models.values()) for i in range(5)]
    out.append({"period": day, "inputTokens": tot[0], "outputTokens": tot[1], "cacheReadTokens": tot[2],
                "cacheCreationTokens": tot[3], "totalCost": tot[4],
                "modelBreakdowns": [{"modelName": k, "cost": v[4]} for k, v in models.items()]})
print(json.dumps({"daily": out}))
'''


@pytest.fixture
def fake_ccusage(tmp_path):
    path = tmp_path / "ccusage"
    path.write_text(f"#!{sys.executable}\nPRICES = {json.dumps(json.dumps(PRICES))}\n" + FAKE)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_the_probe_reads_back_the_prices_ccusage_bills_with(fake_ccusage, tmp_path):
    table = probe_prices(fake_ccusage, [*PRICES, "unknown-model"], tmp_path)
    assert set(table) == set(PRICES)  # the unknown model: left out
    for model, entry in PRICES.items():
        assert table[model] == pytest.approx(entry | {  # a missing read/write rate is billed 0 by ccusage: probed 0
            k: v for k, v in table[model].items() if k not in entry})
        assert set(table[model]) >= set(entry)


def write_tree(root):
    """Two Claude Code sessions over three UTC days: one line per call, a 1-hour write, a call past 200k."""
    calls = [("2026-03-01T23:59:00.000Z", "claude-sonnet-4-6", {"input_tokens": 5, "output_tokens": 40,
              "cache_read_input_tokens": 0, "cache_creation_input_tokens": 9000,
              "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 8000}}),
             ("2026-03-02T00:01:00.000Z", "claude-sonnet-4-20250514", {"input_tokens": 250_000, "output_tokens": 7,
              "cache_read_input_tokens": 9000, "cache_creation_input_tokens": 30}),
             ("2026-03-02T10:00:00.000Z", "claude-opus-4-7", {"input_tokens": 3, "output_tokens": 900,
              "cache_read_input_tokens": 120_000, "cache_creation_input_tokens": 0}),
             ("2026-03-05T08:00:00.000Z", "claude-haiku-4-5", {"input_tokens": 10, "output_tokens": 1})]
    for s, session in enumerate((calls[:2], calls[2:])):
        lines, parent = [], None
        for i, (ts, model, usage) in enumerate(session):
            user = {"type": "user", "uuid": f"u{s}{i}", "parentUuid": parent, "sessionId": f"s{s}", "timestamp": ts,
                    "cwd": "/w", "message": {"role": "user", "content": "go"}}
            call = {"type": "assistant", "uuid": f"a{s}{i}", "parentUuid": f"u{s}{i}", "sessionId": f"s{s}",
                    "requestId": f"r{s}{i}", "timestamp": ts, "cwd": "/w",
                    "message": {"id": f"m{s}{i}", "model": model, "role": "assistant", "type": "message",
                                "content": [{"type": "text", "text": "ok"}], "usage": usage}}
            lines += [json.dumps(user, separators=(",", ":")), json.dumps(call, separators=(",", ":"))]
            parent = f"a{s}{i}"
        (root / f"s{s}.jsonl").write_text("\n".join(lines) + "\n")


def test_cost_agrees_with_ccusage_day_by_day_on_a_claude_code_tree(fake_ccusage, tmp_path):
    tree = tmp_path / "tree" / "project"
    tree.mkdir(parents=True)
    write_tree(tree)
    result = compare_ccusage(tree.parent, tmp_path / "work", fake_ccusage)
    assert result["available"] and result["version_ok"]
    assert [d["day"] for d in result["days"].to_dicts()] == ["2026-03-01", "2026-03-02", "2026-03-05"]
    assert result["days_within"] == result["days_tokens_equal"] == result["n_days"] == 3
    assert result["ours_total"] == pytest.approx(result["ccusage_total"], rel=1e-9)
    assert "within max($0.01, 0.1%) 3/3" in format_comparison(result)


def test_without_ccusage_the_comparison_is_skipped_with_a_note(monkeypatch, tmp_path):
    monkeypatch.setenv("PANTO_CCUSAGE", str(tmp_path / "no-such-ccusage"))
    result = compare_ccusage(FIXTURES / "claude_code")
    assert not result["available"]
    assert "npm install" in result["note"] and "ccusage@20.0.24" in result["note"]
    assert format_comparison(result).startswith("cost vs ccusage: skipped: ")


def test_the_speed_frame_is_a_message_frame_and_the_timing_runs():
    frame = speed_frame(2_000)
    assert frame.schema == pl.Schema(MESSAGE_SCHEMA)
    assert frame.filter(pl.col("input").is_not_null()).height == 1_000
    figures = cost_speed(2_000, repeat=1)
    assert figures["calls"] == 1_000 and figures["by_day_seconds"] > 0
