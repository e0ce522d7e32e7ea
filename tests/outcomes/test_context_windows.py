"""The model-to-context-window table (genai-prices' ``context_window``) and the window a corpus implies, in
``recommend`` and ``report`` where no --window is given."""
from __future__ import annotations

import json

import polars as pl
from click.testing import CliRunner

from panto_analytics.cli import main
from panto_analytics.outcomes.context_windows import corpus_window, model_windows, window_of


def _snapshot_window(provider_id: str, model_id: str) -> int:
    from genai_prices import data_snapshot

    provider = next(p for p in data_snapshot.get_snapshot().providers if p.id == provider_id)
    return next(m for m in provider.models if m.id == model_id).context_window


def test_a_model_s_window_is_the_table_s_found_as_its_price_is():
    window, source = window_of("claude-opus-4-5-20251101")   # normalized first, as prices are looked up
    assert window == _snapshot_window("anthropic", "claude-opus-4-5") and source.endswith("(anthropic)")
    assert window_of("us.anthropic.claude-sonnet-4-5-20250929-v1:0")[0] == _snapshot_window("anthropic", "claude-sonnet-4-5")
    assert window_of("gpt-5")[0] == _snapshot_window("openai", "gpt-5")
    assert window_of("synth-pro") is None and window_of("<synthetic>") is None and window_of(None) is None
    assert model_windows(["gpt-5", None, "gpt-5", "nope"])["model"].to_list() == ["gpt-5", "nope"]


def _sessions(models, recorded=None):
    return pl.DataFrame({"session_id": [f"s{i}" for i in range(len(models))], "model": models,
                         "context_window": recorded or [None] * len(models)},
                        schema={"session_id": pl.String, "model": pl.String, "context_window": pl.Int64})


def test_the_corpus_window_is_the_most_sessions_window_a_recorded_one_first():
    opus, gpt = window_of("claude-opus-4-5")[0], window_of("gpt-5")[0]
    assert opus != gpt
    w = corpus_window(_sessions(["claude-opus-4-5", "claude-opus-4-5", "gpt-5"]))
    assert (w.window, w.from_models) == (opus, True) and "2 of 3 sessions (1 has another window)" in w.source
    # A window the file records wins over its model's; on a tie, the smaller window.
    w = corpus_window(_sessions(["claude-opus-4-5", "gpt-5"], [None, 128_000]))
    assert w.window == min(opus, 128_000)
    assert w.sessions["window_source"].to_list() == [w.sessions["window_source"][0], "recorded"]
    # Made-up models, windows recorded: known, but not from the models.
    w = corpus_window(_sessions(["synth-pro", "synth-pro"], [32_000, 32_000]))
    assert (w.window, w.from_models) == (32_000, False) and "as the files record it" in w.source
    w = corpus_window(_sessions(["synth-pro"]))
    assert w.window is None and "give --window" in w.source


def _canonical(path, sid, model, tokens, **session):
    lines = [{"type": "session", "id": sid, "model": model, "created_at": "2026-11-01T10:00:00Z", **session}]
    for i, t in enumerate(tokens):
        lines.append({"type": "message", "role": "user", "content": [{"type": "text", "text": f"go {i}"}],
                      "timestamp": "2026-11-01T10:00:00Z"})
        lines.append({"type": "message", "role": "assistant", "content": [{"type": "text", "text": "ok"}],
                      "timestamp": "2026-11-01T10:00:01Z",
                      "usage": {"input": t, "output": 10, "cache_read": 0, "cache_write": 0}})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_recommend_without_window_replays_under_the_models_window_and_names_it(tmp_path):
    d = tmp_path / "c"
    d.mkdir()
    for i in range(3):
        _canonical(d / f"s{i}.jsonl", f"s{i}", "claude-opus-4-5-20251101", [1_000 * (k + 1) for k in range(5)])
    result = CliRunner().invoke(main, ["recommend", str(d), "--no-cache", "-b", "0:4k:5", "-o", "-",
                                       "--output-format", "json"])
    assert result.exit_code in (0, 1), result.output
    got = json.loads(result.stdout)
    assert got["window"] == window_of("claude-opus-4-5")[0]
    assert got["reasons"][0].startswith("window 200k: the context window of claude-opus-4-5 in genai-prices")
    assert "note: no --window given: window 200k" in result.stderr


def test_recommend_without_window_on_unknown_models_points_to_the_recorded_window(tmp_path):
    d = tmp_path / "c"
    d.mkdir()
    _canonical(d / "s.jsonl", "s", "synth-pro", [1_000, 2_000], context_window=32_000)
    result = CliRunner().invoke(main, ["recommend", str(d), "--no-cache", "-o", "-", "--output-format", "json"])
    got = json.loads(result.stdout)
    assert got["window"] is None and not got["reasons"][0].startswith("window")   # end-of-session splits
