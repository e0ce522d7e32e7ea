"""recommend --window in every lane (in memory, a dataset bucket by bucket here, on Ray; dataset/_decision.py):
the same decision as the library's in memory."""
from __future__ import annotations

import json

import polars as pl
import pytest
from click.testing import CliRunner
from conftest import DATA, LANES, lanes_of

import panto_analytics as pa
from panto_analytics.analysis.choose import Rule
from panto_analytics.analysis.choose.from_replay import choose_from_replay, replay_outcomes
from panto_analytics.cli import main
from panto_analytics.dataset import write_dataset

PRICES = DATA.parent / "docs" / "synth-prices.json"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("ds") / "data.ds"
    write_dataset([DATA], root, buckets=7, cache=False)
    return root


@pytest.mark.parametrize("lane", LANES)
@pytest.mark.parametrize("rule", [Rule(min_kept_turns=1, coverage=0.5), Rule(max_orphan_rate=0.05)])
def test_the_decision_equals_the_in_memory_one(dataset, rule, lane):
    kw = {"window": 32_000, "reserve": 16_384, "policy": ["libpanto", "gemini-cli"], "prices": PRICES}
    memory = choose_from_replay(replay_outcomes(pa.read_sessions(DATA), "0:16k:5", **kw), rule)
    for source in lanes_of(lane, dataset):  # on a dataset: a task per bucket, then one task for all
        chosen = source.choose_budget("0:16k:5", rule, **kw)
        assert chosen.choice.table.equals(memory.table)  # to the last bit, nulls and all
        assert (chosen.choice.budget, chosen.choice.policy) == (memory.budget, memory.policy)
        assert chosen.choice.warnings == memory.warnings
        assert chosen.price_source is not None and chosen.price_source.startswith("LiteLLM file synth-prices.json")


def test_recommend_window_on_a_dataset_prints_the_same_json(dataset):
    args = ["--window", "32k", "-b", "0:16k:5", "-k", "1", "-p", "50%", "--prices", str(PRICES), "-o", "-",
            "--output-format", "json"]
    on_files = CliRunner().invoke(main, ["recommend", str(DATA), "--no-cache", *args])
    on_dataset = CliRunner().invoke(main, ["recommend", str(dataset), *args])
    assert on_files.exit_code == on_dataset.exit_code == 0, on_dataset.output
    a, b = json.loads(on_files.stdout), json.loads(on_dataset.stdout)
    assert {k: a[k] for k in ("budget", "policy", "rows", "warnings")} == {k: b[k] for k in ("budget", "policy", "rows",
                                                                                               "warnings")}
    assert pl.DataFrame(a["rows"]).height > 1
    # The same account on stderr: the unpriced-model notes (summed over the buckets), the prices, the reasons.
    assert on_dataset.stderr.replace(", bucket by bucket;", ";") == on_files.stderr


def test_recommend_window_on_a_dataset_notes_the_unpriced_models(dataset):
    args = ["--window", "32k", "-b", "0:16k:3", "-k", "1", "-p", "50%", "-o", "-"]  # genai-prices: data/'s models unpriced
    on_files = CliRunner().invoke(main, ["recommend", str(DATA), "--no-cache", *args])
    on_dataset = CliRunner().invoke(main, ["recommend", str(dataset), *args])
    assert on_files.exit_code == on_dataset.exit_code, on_dataset.output
    notes = [line for line in on_files.stderr.splitlines() if line.startswith(("note: no price", "prices:"))]
    assert len(notes) > 1
    assert [line for line in on_dataset.stderr.splitlines() if line.startswith(("note: no price", "prices:"))] == notes
