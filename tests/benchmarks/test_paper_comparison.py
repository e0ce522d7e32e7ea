"""benchmarks.paper_comparison: the Complexity Trap's three policies and libpanto over the same sessions."""
from __future__ import annotations

import polars as pl
import pytest
from conftest import DATA, REPO

import panto_analytics as pa
from benchmarks.paper_comparison import PAPER, comparison, main, markdown

PRICES = REPO / "docs" / "synth-prices.json"   # data/'s fictional models, priced like Claude 4.5


@pytest.fixture(scope="module")
def table() -> pl.DataFrame:
    return comparison(pa.read_sessions(DATA), window=32_000, budget=4_000, prices=str(PRICES))


def test_one_row_per_policy_over_the_same_sessions(table):
    assert table["policy"].to_list() == ["no management", "observation-masking", "summarize-every", "libpanto"]
    assert table["sessions"].n_unique() == 1 and table["sessions"][0] == 40
    # No management is the recorded bill: what `cost` says of the same sessions.
    recorded = pa.outcomes.costs(pa.read_sessions(DATA), prices=str(PRICES))["cost_usd"].item()
    assert table["cost_usd"][0] == pytest.approx(recorded, rel=1e-9)
    assert table["cost_ratio"][0] == 1.0
    assert table.select((pl.col("cost_ratio") - pl.col("cost_usd") / pl.col("cost_usd").first()).abs().max()).item() < 1e-12
    # The paper's ratios stand beside the policies it ran, none beside libpanto.
    assert table["paper_ratio"].to_list()[:3] == pytest.approx([1.0, PAPER["observation-masking"] / 1.29,
                                                                 PAPER["summarize-every"] / 1.29])
    assert table["paper_ratio"][3] is None
    # Every policy compacts some session of data/ at a 32k window; each loses something it can be asked for.
    assert (table["compactions"][1:] > 0).all()
    assert (table["orphan_rate"][1:].is_not_null()).all()


def test_the_table_prints_as_markdown(table, capsys):
    text = markdown(table)
    assert text.splitlines()[0].startswith("| policy | sessions |") and len(text.splitlines()) == 2 + table.height
    assert main([str(DATA), "--window", "32k", "--budget", "4k", "--prices", str(PRICES)]) == 0
    assert capsys.readouterr().out.strip() == text
