"""Streaming over a dataset: sweep, recommendation and splits equal the in-memory path's, bit for bit."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import polars as pl
import pytest
import strategies
from conftest import DATA, REALDATA, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import panto_analytics as pa
from panto_analytics.dataset import bucket_groups, engines, write_dataset
from panto_analytics.dataset._streaming import recommend_dataset, sweep_dataset, write_splits

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


def test_sweep_equals_in_memory(corpus_dir, dataset):
    corpus = pa.ingest.read_corpus([corpus_dir])
    expected = pa.sweep(pa.splits(corpus.messages, BUDGETS, sessions=corpus.sessions))
    assert len(bucket_groups(dataset, 1)) == 8  # one task per bucket: eight tables merged
    for task_rows in (1, 700, 10**9):
        got = sweep_dataset(dataset, BUDGETS, task_rows=task_rows)
        assert_frame_equal(got, expected, check_exact=True)
    assert got["sessions"][0] == 41  # the empty session is counted


@pytest.mark.parametrize("rule", RULES, ids=range(len(RULES)))
def test_recommend_equals_in_memory(corpus_dir, dataset, rule):
    expected = in_memory_recommend(pa.ingest.read_corpus([corpus_dir]), rule)
    got = recommend_dataset(dataset, BUDGETS, rule, task_rows=1)
    assert got.budget == expected.budget
    assert_frame_equal(got.table, expected.table, check_exact=True)
    assert got.to_text() == expected.to_text()
    assert (got.reasons, got.warnings) == (expected.reasons, expected.warnings)


def test_written_splits_equal_in_memory(corpus_dir, dataset, tmp_path):
    corpus = pa.ingest.read_corpus([corpus_dir])
    expected = pa.splits(corpus.messages, BUDGETS, sessions=corpus.sessions)
    rows = write_splits(dataset, BUDGETS, tmp_path / "splits.parquet", task_rows=1)
    got = pl.read_parquet(tmp_path / "splits.parquet")
    assert rows == expected.height == got.height
    key = lambda f: f.with_columns(pl.col("session_id").cast(pl.String)).sort("session_id", "budget")  # noqa: E731
    assert_frame_equal(key(got), key(expected), check_exact=True)


def test_real_recordings(tmp_path):
    if not REALDATA.is_dir():
        pytest.skip(f"no real recordings at {REALDATA}")
    write_dataset([REALDATA], tmp_path / "ds", buckets=4, skip_invalid=True, cache=False)
    corpus = pa.ingest.read_corpus([REALDATA], skip_invalid=True)
    expected = pa.sweep(pa.splits(corpus.messages, BUDGETS, sessions=corpus.sessions))
    assert_frame_equal(sweep_dataset(tmp_path / "ds", BUDGETS, task_rows=1), expected, check_exact=True)
    got = recommend_dataset(tmp_path / "ds", BUDGETS, task_rows=1)
    assert got.to_text() == in_memory_recommend(corpus, None).to_text()


def test_unknown_engine_is_refused(dataset):
    with pytest.raises(ValueError, match="engine is one of local, ray"):
        sweep_dataset(dataset, BUDGETS, engine="spark")


def test_ray_engine_without_ray_says_how_to_install_it(dataset, monkeypatch):
    monkeypatch.setattr(engines, "ray_available", lambda: False)
    with pytest.raises(engines.EngineUnavailable, match=r"pip install 'panto_analytics\[ray\]'"):
        sweep_dataset(dataset, BUDGETS, engine="ray")


@pytest.mark.ray
@pytest.mark.slow
def test_ray_engine_equals_local_engine(dataset):
    """Ray Data, started on this machine, runs the same per-bucket function: the same figures."""
    pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'panto_analytics[ray]'")
    assert_frame_equal(sweep_dataset(dataset, BUDGETS, engine="ray", task_rows=1), sweep_dataset(dataset, BUDGETS),
                       check_exact=True)
    for rule in RULES[:3]:
        ray_rec = recommend_dataset(dataset, BUDGETS, rule, engine="ray", task_rows=1)
        local_rec = recommend_dataset(dataset, BUDGETS, rule)
        assert_frame_equal(ray_rec.table, local_rec.table, check_exact=True)
        assert ray_rec.to_text() == local_rec.to_text()


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
        assert_frame_equal(sweep_dataset(Path(tmp) / "ds", budgets, task_rows=1), expected, check_exact=True)
        rec = pa.recommend(pa.splits(corpus.messages, budgets), None, turns=pa.turns(corpus.messages),
                           windows=corpus.sessions["context_window"].to_list())
        assert recommend_dataset(Path(tmp) / "ds", budgets, task_rows=1).to_text() == rec.to_text()
