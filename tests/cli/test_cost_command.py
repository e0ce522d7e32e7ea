"""``cost``: the recorded calls' bill per group, with its price source and notes for unpriced models."""
from __future__ import annotations

import io
import json

import polars as pl
import pytest
from click.testing import CliRunner

from panto_analytics.cli import main


def _session(path, sid, model, calls):
    """A canonical session whose assistant messages have the given (timestamp, input, output, cache_read) usage."""
    lines = [{"type": "session", "id": sid, "model": model, "created_at": calls[0][0]}]
    for ts, inp, out, read in calls:
        lines.append({"type": "message", "role": "user", "content": [{"type": "text", "text": "go"}], "timestamp": ts})
        lines.append({"type": "message", "role": "assistant", "content": [{"type": "text", "text": "ok"}],
                      "timestamp": ts, "usage": {"input": inp, "output": out, "cache_read": read, "cache_write": 0}})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


@pytest.fixture
def corpus(tmp_path):
    d = tmp_path / "c"
    d.mkdir()
    # claude-opus-4-5: $5 in, $25 out, $0.50 cache read per MTok (genai-prices).
    _session(d / "a.jsonl", "a", "claude-opus-4-5-20251101",
             [("2026-11-01T10:00:00Z", 1_000_000, 0, 0), ("2026-11-01T23:30:00Z", 0, 1_000_000, 0)])
    _session(d / "b.jsonl", "b", "claude-opus-4-5", [("2026-11-02T10:00:00Z", 0, 0, 2_000_000)])
    _session(d / "c.jsonl", "c", "house-model-7", [("2026-11-02T11:00:00Z", 10, 5, 0)])
    return d


def run(*args):
    return CliRunner().invoke(main, [*map(str, args), "--no-cache"])


def _csv(result) -> pl.DataFrame:
    assert result.exit_code == 0, result.output
    return pl.read_csv(io.StringIO(result.stdout))


def test_cost_by_day_is_hand_computed_and_names_its_source(corpus):
    result = run("cost", corpus, "--by", "day", "-o", "-")
    table = _csv(result)
    assert table["day"].to_list() == ["2026-11-01", "2026-11-02"]
    assert table["api_calls"].to_list() == [2, 2]
    assert table["cost_usd"][0] == pytest.approx(5.0 + 25.0)
    assert table["cost_usd"][1] is None          # the unpriced call leaves the day's total null, not partial
    assert table["price_source"].str.starts_with("genai-prices ").all()
    assert table["price_source"][0].endswith(" (anthropic)")   # whose prices the day's calls took
    assert table["priced_cost_usd"].to_list() == pytest.approx([30.0, 1.0])   # the priced part: a total at hand
    assert "note: no price for model house-model-7: 1 call, 15 tokens unpriced" in result.stderr
    # In Tokyo, 23:30 UTC is the next day.
    tokyo = _csv(run("cost", corpus, "--by", "day", "--timezone", "Asia/Tokyo", "-o", "-"))
    assert tokyo["day"].to_list() == ["2026-11-01", "2026-11-02"]
    assert tokyo["api_calls"].to_list() == [1, 3]


def test_cost_groups_in_order_and_totals_without_by(corpus):
    table = _csv(run("cost", corpus, "--by", "model", "--by", "session", "-o", "-"))
    assert table.select("model", "session_id").rows() == [("claude-opus-4-5", "a"), ("claude-opus-4-5", "b"),
                                                          ("house-model-7", "c")]
    assert table["cost_usd"][1] == pytest.approx(1.0)
    total = _csv(run("cost", corpus, "-o", "-"))
    assert total["api_calls"].to_list() == [4]
    assert set(total.columns) >= {"input", "output", "cache_read", "cache_write_5m", "cache_write_1h", "input_usd",
                                  "output_usd", "cache_read_usd", "cache_write_usd", "cost_usd"}


def test_cost_with_a_litellm_price_file(corpus, tmp_path):
    prices = tmp_path / "model_prices_and_context_window.json"
    prices.write_text(json.dumps({"claude-opus-4-5": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6,
                                                      "cache_read_input_token_cost": 1e-7},
                                  "house-model-7": {"input_cost_per_token": 1e-6, "output_cost_per_token": 1e-6}}))
    result = run("cost", corpus, "--prices", prices, "--by", "session", "-o", "-")
    table = _csv(result)
    assert table["cost_usd"].to_list() == pytest.approx([1.0 + 2.0, 0.2, 15e-6])
    assert table["price_source"][0].startswith("LiteLLM file model_prices_and_context_window.json ")
    assert "no price" not in result.stderr


def test_cost_errors_are_one_line(corpus, tmp_path):
    bad = tmp_path / "p.json"
    bad.write_text("{oops")
    result = run("cost", corpus, "--prices", bad)
    assert result.exit_code == 1 and "not a JSON price file" in result.stderr and str(bad) in result.stderr
    result = run("cost", corpus, "--timezone", "Mars/Olympus")
    assert result.exit_code == 2 and "not an IANA time zone" in result.stderr
    result = run("cost", corpus, "--by", "year")
    assert result.exit_code == 2
    result = run("cost", corpus, "--provider", "nope")
    assert result.exit_code == 2 and "unknown provider 'nope'" in result.stderr


def test_cost_takes_the_provider_a_user_picks_and_names_it(tmp_path):
    d = tmp_path / "glm"
    d.mkdir()
    _session(d / "g.jsonl", "g", "glm-4.6", [("2026-11-01T10:00:00Z", 1_000_000, 0, 0)])
    _session(d / "z.jsonl", "z", "qwen3-coder-plus", [("2026-11-01T11:00:00Z", 0, 0, 0)])   # no usage recorded
    default = _csv(run("cost", d, "-o", "-"))
    assert default["cost_usd"][0] is None and default["priced_cost_usd"][0] == 0
    zai = run("cost", d, "--provider", "zai", "-o", "-")
    row = _csv(zai).row(0, named=True)
    # Z.AI's GLM-4.6: $0.60 per MTok of input; the call without usage: unknown, so the total is null.
    assert (row["cost_usd"], row["priced_cost_usd"], row["no_usage_calls"]) == (None, pytest.approx(0.6), 1)
    assert row["price_source"].endswith("(zai)")
    assert "recorded no usage" in zai.stderr


def test_cost_reads_a_dataset_and_takes_filters(corpus, tmp_path):
    ds = tmp_path / "ds"
    assert run("ingest", corpus, "--dataset", ds).exit_code == 0
    table = _csv(run("cost", ds, "--by", "session", "--model", "claude-opus-4-5", "-o", "-"))
    assert table["session_id"].to_list() == ["a", "b"]
    assert table["cost_usd"].to_list() == pytest.approx([30.0, 1.0])


def test_replay_takes_the_provider_too(tmp_path):
    d = tmp_path / "glm"
    d.mkdir()
    _session(d / "g.jsonl", "g", "glm-4.6", [("2026-11-01T10:00:00Z", 1_000_000, 0, 0)])
    by_default, zai = tmp_path / "default.csv", tmp_path / "zai.csv"
    assert run("replay", d, "-w", "32k", "-b", "4k", "--cost", "--sessions", by_default).exit_code == 0
    out = run("replay", d, "-w", "32k", "-b", "4k", "--provider", "zai", "--sessions", zai)
    assert out.exit_code == 0, out.output
    # GLM-4.6 is priced by Z.AI only ($0.60 per MTok of input): unpriced by default, priced when picked.
    assert pl.read_csv(by_default)["recorded_cost_usd"].null_count() == 1
    assert pl.read_csv(zai)["recorded_cost_usd"].to_list() == pytest.approx([0.6])
    bad = run("recommend", d, "--window", "32k", "--provider", "nope")
    assert bad.exit_code == 2 and "unknown provider 'nope'" in bad.stderr
