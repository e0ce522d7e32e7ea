"""sweep, the recommendation and splits in every lane (in memory, a dataset bucket by bucket here, on Ray): the
library's in-memory figures, bit for bit."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import polars as pl
import pytest
import strategies
from conftest import DATA, LANES, REALDATA, examples, lanes_of, open_lane
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import panto_analytics as pa
from panto_analytics.dataset import OnDataset, OnRay, bucket_groups, engines, write_dataset
from panto_analytics.dataset._streaming import sweep_dataset

BUDGETS = [0, 1_000, 5_000, 8_000, 20_000, 50_000, 100_000, 200_000]

RULES = [
    None,
    pa.Rule(min_kept_turns=3, coverage=0.95),
    pa.Rule(max_kept_share=0.1, context_window=128_000),
    pa.Rule(min_kept_turns=1, max_kept_share=0.25, context_window=200_000, coverage=0.8),
    pa.Rule(min_kept_turns=50, coverage=1.0),  # no budget meets it
]


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory) -> Path:
    """data/ plus a session without messages (a header only), which sweep counts and recommend does not."""
    d = tmp_path_factory.mktemp("corpus")
    shutil.copytree(DATA, d / "src")
    (d / "src" / "empty.jsonl").write_text('{"type":"session","id":"empty-session","model":"m"}\n')
    return d / "src"


@pytest.fixture(scope="module")
def dataset(corpus_dir, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ds") / "ds"
    write_dataset([corpus_dir], root, buckets=8, cache=False)
    return root


def in_memory_recommend(corpus: pa.ingest.Corpus, rule):
    """What `panto-analytics recommend` computes without a dataset."""
    return pa.recommend(pa.splits(corpus.messages, BUDGETS), rule, turns=pa.turns(corpus.messages),
                        windows=corpus.sessions["context_window"].to_list())


@pytest.mark.parametrize("lane", LANES)
def test_sweep_equals_in_memory(corpus_dir, dataset, lane):
    corpus = pa.ingest.read_corpus([corpus_dir])
    expected = pa.sweep(pa.splits(corpus.messages, BUDGETS, sessions=corpus.sessions))
    assert len(bucket_groups(dataset, 1)) == 8  # one task per bucket: eight tables merged
    sources = [*lanes_of(lane, dataset), *([open_lane(lane, dataset, 700)] if lane == "dataset" else [])]
    for source in sources:
        got = source.sweep(BUDGETS)
        assert_frame_equal(got, expected, check_exact=True)
    assert got["sessions"][0] == 41  # the empty session is counted


@pytest.mark.parametrize("lane", LANES)
@pytest.mark.parametrize("rule", RULES, ids=range(len(RULES)))
def test_recommend_equals_in_memory(corpus_dir, dataset, rule, lane):
    expected = in_memory_recommend(pa.ingest.read_corpus([corpus_dir]), rule)
    chosen = open_lane(lane, dataset).choose_budget(BUDGETS, rule)
    got = chosen.choice
    assert chosen.price_source is None
    assert got.budget == expected.budget
    assert_frame_equal(got.table, expected.table, check_exact=True)
    assert got.to_text() == expected.to_text()
    assert (got.reasons, got.warnings) == (expected.reasons, expected.warnings)


@pytest.mark.parametrize("lane", ["memory", "dataset"])   # Ray holds no splits (test_source.py)
def test_written_splits_equal_in_memory(corpus_dir, dataset, tmp_path, lane):
    corpus = pa.ingest.read_corpus([corpus_dir])
    expected = pa.splits(corpus.messages, BUDGETS, sessions=corpus.sessions)
    key = lambda f: f.with_columns(pl.col("session_id").cast(pl.String)).sort("session_id", "budget")  # noqa: E731
    source = open_lane(lane, dataset)
    assert_frame_equal(key(source.splits(BUDGETS)), key(expected), check_exact=True)
    rows = source.write_splits(BUDGETS, tmp_path / "splits.parquet")
    got = pl.read_parquet(tmp_path / "splits.parquet")
    assert rows == expected.height == got.height
    assert_frame_equal(key(got), key(expected), check_exact=True)


@pytest.mark.parametrize("lane", ["memory", "dataset"])
def test_real_recordings(tmp_path, lane):
    if not REALDATA.is_dir():
        pytest.skip(f"no real recordings at {REALDATA}")
    write_dataset([REALDATA], tmp_path / "ds", buckets=4, skip_invalid=True, cache=False)
    corpus = pa.ingest.read_corpus([REALDATA], skip_invalid=True)
    expected = pa.sweep(pa.splits(corpus.messages, BUDGETS, sessions=corpus.sessions))
    source = open_lane(lane, tmp_path / "ds")
    assert_frame_equal(source.sweep(BUDGETS), expected, check_exact=True)
    assert source.choose_budget(BUDGETS).choice.to_text() == in_memory_recommend(corpus, None).to_text()


def test_unknown_engine_is_refused(dataset):
    with pytest.raises(ValueError, match="engine is one of local, ray"):
        sweep_dataset(dataset, BUDGETS, engine="spark")


def test_ray_engine_without_ray_says_how_to_install_it(dataset, monkeypatch):
    monkeypatch.setattr(engines, "ray_available", lambda: False)
    with pytest.raises(engines.EngineUnavailable, match=r"pip install 'panto_analytics\[ray\]'"):
        OnRay(dataset).sweep(BUDGETS)


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(strategies.conversations(max_pieces=6), min_size=1, max_size=8), strategies.budgets())
def test_random_corpora_stream_to_the_in_memory_figures(sessions, budgets):
    """Agent-shaped and chaotic conversations (some empty), cut into buckets: the same sweep and recommendation."""
    from reference import port as ref

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        for i, msgs in enumerate(sessions):
            ref.write_session(src / f"s{i}.jsonl", msgs, session_id=f"session-{i}")
        write_dataset([src], Path(tmp) / "ds", buckets=3, cache=False)
        corpus = pa.ingest.read_corpus([src])
        expected = pa.sweep(pa.splits(corpus.messages, budgets, sessions=corpus.sessions))
        source = OnDataset(Path(tmp) / "ds", task_rows=1)
        assert_frame_equal(source.sweep(budgets), expected, check_exact=True)
        rec = pa.recommend(pa.splits(corpus.messages, budgets), None, turns=pa.turns(corpus.messages),
                           windows=corpus.sessions["context_window"].to_list())
        assert source.choose_budget(budgets).choice.to_text() == rec.to_text()
