"""The summaries of the recorded compactions past RECORDED_ROWS (analysis/compactions.py): counts that merge
exactly (a dataset's tasks each give theirs), percentiles that are the rounded percentiles of the raw values, and
the report's sections drawn from them in memory."""
from __future__ import annotations

import polars as pl
import pytest
from conftest import DATA, examples
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from panto_analytics.analysis.compactions import (
    agent_vs_libpanto,
    compactions_counted,
    cut_counts,
    cut_summary,
    kept_counts,
    kept_summary,
    merged_counts,
    policies_vs_agents,
    recorded_cut_summary,
)
from panto_analytics.analysis.report import build_report, model
from panto_analytics.frame.expressions import counted_quantile, rounded_tokens
from panto_analytics.ingest import read_corpus

FORMATS = ["pi", "codex", "claude-code"]
tokens = st.integers(0, 3_000_000)


@st.composite
def agent_rows(draw) -> pl.DataFrame:
    """Rows shaped like agent_vs_libpanto's: a few agents and budgets, any tokens (the context sometimes null)."""
    n = draw(st.integers(0, 12))
    return pl.DataFrame({
        "source_format": draw(st.lists(st.sampled_from(FORMATS), min_size=n, max_size=n)),
        "budget": draw(st.lists(st.sampled_from([0, 8_000, 20_000]), min_size=n, max_size=n)),
        "kept_turns": draw(st.lists(st.integers(0, 40), min_size=n, max_size=n)),
        "kept_tokens": draw(st.lists(tokens, min_size=n, max_size=n)),
        "agent_kept_tokens": draw(st.lists(tokens, min_size=n, max_size=n)),
        "tokens_before": draw(st.lists(st.none() | tokens, min_size=n, max_size=n)),
    }, schema={"source_format": pl.String, "budget": pl.UInt64, "kept_turns": pl.UInt32, "kept_tokens": pl.UInt64,
               "agent_kept_tokens": pl.UInt64, "tokens_before": pl.UInt64})


@st.composite
def cut_rows(draw) -> pl.DataFrame:
    """Rows shaped like policies_vs_agents's."""
    n = draw(st.integers(0, 12))
    exact = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    policy = draw(st.lists(st.sampled_from(["pi", "codex"]), min_size=n, max_size=n))
    fmt = draw(st.lists(st.sampled_from(FORMATS), min_size=n, max_size=n))
    return pl.DataFrame({
        "policy": policy, "source_format": fmt, "own": [p == f for p, f in zip(policy, fmt)], "exact": exact,
        "distance_messages": [0 if e else draw(st.integers(1, 300)) for e in exact],
        "distance_tokens": [0 if e else draw(st.integers(-200_000, 200_000)) for e in exact],
    }, schema={"policy": pl.String, "source_format": pl.String, "own": pl.Boolean, "exact": pl.Boolean,
               "distance_messages": pl.Int64, "distance_tokens": pl.Int64})


@settings(max_examples=examples(60), deadline=None)
@given(agent_rows(), agent_rows())
def test_kept_counts_of_two_sets_merged_are_the_counts_of_both(a, b):
    both = pl.concat([a, b])
    assert_frame_equal(merged_counts([kept_counts(a), kept_counts(b)]), kept_counts(both), check_exact=True)
    assert compactions_counted(kept_counts(both)) == (
        both.group_by("budget").len()["len"].max() if both.height else 0)


@settings(max_examples=examples(60), deadline=None)
@given(cut_rows(), cut_rows())
def test_cut_counts_of_two_sets_merged_are_the_counts_of_both(a, b):
    both = pl.concat([a, b])
    assert_frame_equal(merged_counts([cut_counts(a), cut_counts(b)]), cut_counts(both), check_exact=True)
    assert_frame_equal(cut_summary(merged_counts([cut_counts(a), cut_counts(b)])), cut_summary(cut_counts(both)),
                       check_exact=True)


@settings(max_examples=examples(80), deadline=None)
@given(st.lists(tokens, min_size=1, max_size=40), st.sampled_from([0.1, 0.25, 0.5, 0.9, 1.0]))
def test_the_percentile_of_rounded_counts_is_the_rounded_percentile(values, q):
    """Rounding is monotone: the observed (lower) percentile of the counted rounded values is the rounded
    percentile of the raw values."""
    raw = pl.DataFrame({"t": values}, schema={"t": pl.Int64})
    counted = (raw.select(value=rounded_tokens("t")).group_by("value").len("count").sort("value")
               .select(counted_quantile(q, interpolation="lower")).item())
    assert counted == raw.select(rounded_tokens(pl.col("t").quantile(q, "lower").cast(pl.Int64))).item()
    assert counted == raw.select(rounded_tokens("t")).to_series().quantile(q, "lower")


def test_rounded_tokens_keep_three_digits():
    got = pl.DataFrame({"t": [0, 7, 999, 1_234, 12_345, 123_456, 1_234_567]}).select(rounded_tokens("t"))
    assert got.to_series().to_list() == [0, 7, 999, 1_230, 12_300, 123_000, 1_230_000]


@pytest.fixture(scope="module")
def corpus():
    return read_corpus([DATA])


def test_the_summary_of_the_compactions_at_data(corpus):
    """On data/: every compaction counted once per budget, percentiles ordered, and the cut summary's figures in
    messages (counted as they are) equal the rows' own."""
    rows = agent_vs_libpanto(corpus, [0, 20_000])
    summary = kept_summary(kept_counts(rows))
    assert summary["compactions"].to_list() == [rows.filter(pl.col("budget") == b).height for b in (0, 20_000)]
    assert (summary["kept_tokens_p10"] <= summary["kept_tokens_p50"]).all()
    assert (summary["kept_tokens_p50"] <= summary["kept_tokens_p90"]).all()
    assert (summary["kept_tokens_p90"] <= summary["budget"]).all()
    at_20k = rows.filter(pl.col("budget") == 20_000)
    more = (at_20k["kept_tokens"] > at_20k["agent_kept_tokens"]).mean()
    assert summary.filter(pl.col("budget") == 20_000)["libpanto_more_share"].item() == more
    cuts = policies_vs_agents(corpus, ["pi", "codex"])
    mine, theirs = cut_summary(cut_counts(cuts)), recorded_cut_summary(cuts).sort("policy", "source_format")
    exact = ["policy", "source_format", "own", "recorded", "exact", "distance_messages_p50", "distance_messages_max"]
    assert_frame_equal(mine.select(exact), theirs.select(exact), check_exact=True)
    assert mine["distance_tokens_max"].to_list() == theirs.select(rounded_tokens("distance_tokens_max"))[
        "distance_tokens_max"].to_list()


def test_past_recorded_rows_the_report_shows_a_summary_per_agent(corpus, monkeypatch):
    """Up to RECORDED_ROWS compactions a row each; past it (here 2: data/ records 7) a row per agent and budget,
    the plot of their percentiles, and a sentence that says where every row is."""
    options = {"window": 32_000, "policies": ["pi", "codex"], "resamples": 0,
               "prices": DATA.parent / "docs" / "synth-prices.json"}
    rows = build_report(corpus, [0, 20_000], **options)
    assert rows.recorded is not None and len(rows.recorded.rows) == 7 and rows.recorded_text is None
    monkeypatch.setattr(model, "RECORDED_ROWS", 2)
    summed = build_report(corpus, [0, 20_000], **options)
    assert summed.recorded is not None and summed.recorded.header[:3] == ["agent", "budget", "compactions"]
    assert [r[:3] for r in summed.recorded.rows] == [["canonical", "0", "7"], ["canonical", "20k", "7"]]
    assert summed.recorded_text is not None and "recorded_compactions.parquet" in summed.recorded_text
    assert isinstance(summed.recorded_rows, pl.DataFrame) and summed.recorded_rows.height == 14  # 7 x 2 budgets
    assert summed.policy_cuts_text is not None and "panto-analytics policy-cuts PATH" in summed.policy_cuts_text
    assert summed.policy_cuts is not None and rows.policy_cuts is not None
    assert [r[:5] for r in summed.policy_cuts.rows] == sorted(r[:5] for r in rows.policy_cuts.rows)
    kept = {f.name: f for f in summed.figures}["recorded_compactions"]
    assert "10th-90th percentile" in kept.caption
    assert kept.png != {f.name: f for f in rows.figures}["recorded_compactions"].png
