"""Price tables: genai-prices offline and LiteLLM price files, each with its own rule above 200k."""
from __future__ import annotations

import json

import polars as pl
import pytest

from panto_analytics.errors import InputError
from panto_analytics.outcomes.prices import PRICE_SCHEMA, TIER, load_prices


def test_genai_prices_is_read_offline_with_its_version_and_the_cliff_rule():
    from genai_prices import __version__

    prices = load_prices()
    assert prices.source == f"genai-prices {__version__}"
    assert prices.rule == "cliff"
    assert prices.frame.schema == pl.Schema(PRICE_SCHEMA)
    assert prices.frame["model"].is_unique().all()
    # Names genai-prices matches but does not use as ids (a dated id, a codex alias) are found by covering.
    covered = prices.covering(["claude-sonnet-4", "gpt-5-codex", "no-such-model"]).frame
    assert {"claude-sonnet-4", "gpt-5-codex"} <= set(covered["model"])
    assert "no-such-model" not in set(covered["model"])
    sonnet = covered.filter(pl.col("model") == "claude-sonnet-4-5").row(0, named=True)
    assert (sonnet["tier_start"], round(sonnet["input_above"] * 1e6, 6)) == (200_000, 6.0)


def test_pinned_in_pyproject():
    from conftest import REPO

    text = (REPO / "pyproject.toml").read_text()
    assert '"genai-prices==' in text


def write(tmp_path, table) -> str:
    path = tmp_path / "model_prices_and_context_window.json"
    path.write_text(json.dumps(table))
    return str(path)


def test_a_litellm_file_names_its_source_by_name_and_digest(tmp_path):
    path = write(tmp_path, {"claude-opus-4-5-20251101": {"input_cost_per_token": 5e-6, "output_cost_per_token": 2.5e-5},
                            "anthropic/claude-opus-4-5": {"input_cost_per_token": 9e-6, "output_cost_per_token": 1e-5},
                            "claude-opus-4-5": {"input_cost_per_token": 5e-6, "output_cost_per_token": 2.5e-5,
                                                "cache_read_input_token_cost": 5e-7},
                            "embedding": {"mode": "embedding"}})
    prices = load_prices(path)
    assert prices.rule == "split"
    assert prices.source.startswith("LiteLLM file model_prices_and_context_window.json ")
    assert len(prices.source.rsplit(" ", 1)[1]) == 12
    # One row per normalized name; the key that is the name itself wins over a dated or routed one.
    assert prices.frame.select("model", "input", "cache_read").rows() == [("claude-opus-4-5", 5e-6, 5e-7)]


def test_a_litellm_file_above_200k(tmp_path):
    path = write(tmp_path, {"m": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6,
                                  "cache_read_input_token_cost": 1e-7,
                                  "input_cost_per_token_above_200k_tokens": 2e-6}})
    row = load_prices(path).frame.row(0, named=True)
    assert row["tier_start"] == TIER
    # A counter without a rate above 200k keeps its base rate there (ccusage).
    assert (row["input_above"], row["output_above"], row["cache_read_above"]) == (2e-6, 2e-6, 1e-7)
    # Missing writes: as input; missing 1-hour writes: as 5-minute ones.
    assert (row["cache_write_5m"], row["cache_write_1h"], row["cache_write_1h_above"]) == (1e-6, 1e-6, 2e-6)


def test_ccusage_lookup_order_for_names_the_file_lacks(tmp_path):
    path = write(tmp_path, {"anthropic/claude-x": {"input_cost_per_token": 1e-6},
                            "vendor-model-large": {"input_cost_per_token": 3e-6}})
    covered = load_prices(path).covering(["claude-x-extra", "model-large"]).frame
    # "model-large" is contained in "vendor-model-large" (ccusage's substring fallback).
    assert dict(covered.select("model", "input").rows())["model-large"] == 3e-6


@pytest.mark.parametrize("content,message", [
    ("{not json", "not a JSON price file"),
    ("[1, 2]", "an object of model name"),
])
def test_a_bad_price_file_is_one_input_error(tmp_path, content, message):
    path = tmp_path / "p.json"
    path.write_text(content)
    with pytest.raises(InputError, match=message) as info:
        load_prices(path)
    assert str(path) in str(info.value)


def test_a_missing_price_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="cannot read the price file"):
        load_prices(tmp_path / "absent.json")
