"""What compaction costs: the table of a billed replay, its plot, and the report section."""
from __future__ import annotations

import polars as pl
import pytest
from conftest import DATA, REPO

import panto_analytics as pa
from panto_analytics.analysis import plots
from panto_analytics.analysis.cost_table import COMPACTION_COST_COLUMNS, compaction_costs
from panto_analytics.analysis.plot_data import cost_per_session

PRICES = REPO / "docs" / "synth-prices.json"


@pytest.fixture(scope="module")
def billed():
    messages = pa.read_sessions(DATA, cache=False)
    return messages, pa.replay(messages, [8_000, 40_000], window=64_000, policy=["libpanto", "pi"], prices=PRICES)


def test_the_table_adds_up_per_policy_and_budget(billed):
    messages, result = billed
    table = compaction_costs(result.sessions)
    assert tuple(table.columns) == COMPACTION_COST_COLUMNS
    assert table.select("policy", "budget").rows() == [("libpanto", 8_000), ("libpanto", 40_000), ("pi", 20_000)]
    s = result.sessions
    for row in table.iter_rows(named=True):
        part = s.filter(pl.col("policy").cast(pl.String) == row["policy"], pl.col("budget") == row["budget"])
        assert row["sessions"] == part.height
        assert row["compactions"] == part["n_compactions"].sum()
        assert row["replayed_usd"] == pytest.approx(part["total_cost_usd"].sum())
        assert row["change_usd"] == pytest.approx(part["total_cost_usd"].sum() - part["recorded_cost_usd"].sum())
        assert row["summarizer_share"] == pytest.approx(part["summarizer_cost_usd"].sum() / part["total_cost_usd"].sum())
        assert row["cache_write_change_usd"] == pytest.approx(
            part["simulated_cache_write_usd"].sum() - part["recorded_cache_write_usd"].sum())
        assert row["cache_miss_usd"] == pytest.approx(part["cache_miss_usd"].sum())
        assert row["cache_miss_per_compaction_usd"] == (
            pytest.approx(part["cache_miss_usd"].sum() / row["compactions"]) if row["compactions"] else None)
        # The recorded bill is the one `cost` gives for the same sessions: one definition of a cost.
        assert row["recorded_usd"] == pytest.approx(pa.costs(messages, prices=PRICES)["cost_usd"].item(), rel=1e-9)


def test_a_session_without_a_price_makes_the_totals_null(billed):
    _, result = billed
    sessions = result.sessions.with_columns(
        pl.when(pl.int_range(pl.len()) == 0).then(None).otherwise(pl.col("total_cost_usd")).alias("total_cost_usd"))
    table = compaction_costs(sessions)
    assert table["replayed_usd"].null_count() == 1


def test_the_plot_has_a_line_per_policy_and_the_recorded_reference(billed):
    _, result = billed
    stats, recorded = cost_per_session(result.sessions)
    assert set(stats["segment"].cast(pl.String)) == {"libpanto", "pi"}
    assert recorded == pytest.approx(result.sessions.group_by("session_id").agg(
        pl.col("recorded_cost_usd").first())["recorded_cost_usd"].median())
    fig = plots.cost_by_budget(result.sessions, highlight=8_000)
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert any(label.startswith("recorded, median: $") for label in labels)
    assert any(label.startswith("libpanto: median of 40 sessions") for label in labels)


def test_the_report_section(billed):
    from panto_analytics.analysis.report import build_report, costs_section, render_html, render_markdown

    messages, result = billed
    report = build_report(messages, [8_000, 40_000])
    assert report.costs is None          # nothing billed: no section
    costs_section(report, result, 8_000)
    text = render_markdown(report)
    assert "## What compaction costs" in text and "summarizer share" in text and "cache miss per compaction" in text
    assert "What compaction costs</h2>" in render_html(report)
    assert report.figures[-1].name == "cost_by_budget"


def test_a_report_under_a_window_has_the_section():
    from panto_analytics.analysis.report import build_report, render_markdown

    messages = pa.read_sessions(DATA, cache=False)
    report = build_report(messages, [8_000, 20_000], window=64_000, policies=["pi"], prices=PRICES)
    assert report.costs is not None
    assert [r[0] for r in report.costs.rows] == ["libpanto", "libpanto", "pi"]
    assert "## What compaction costs" in render_markdown(report)
    assert any(f.name == "cost_by_budget" and f.png for f in report.figures)

