"""One face, three backends: every verb of a :class:`~panto_analytics.dataset.Source` gives, on a dataset bucket by
bucket (here, and on Ray), what it gives in memory, bit for bit; and the command line picks the backend by its
input alone."""
from __future__ import annotations

import warnings
from pathlib import Path

import polars as pl
import pytest
from conftest import DATA
from polars.testing import assert_frame_equal

import panto_analytics as pa
from panto_analytics.dataset import InMemory, OnDataset, OnRay, Source, write_dataset

BUDGETS = [0, 5_000, 20_000, 100_000]

#: The dataset backends, each checked against :class:`InMemory`; Ray starts Ray Data on this machine.
BACKENDS = ["dataset", pytest.param("ray", marks=[pytest.mark.ray, pytest.mark.slow])]


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("source") / "corpus.ds"
    write_dataset([DATA], root, buckets=8, cache=False)
    return root


@pytest.fixture(scope="module")
def memory() -> InMemory:
    corpus = pa.ingest.read_corpus([DATA], cache=False)
    return InMemory(lambda: corpus)


@pytest.fixture(params=BACKENDS)
def source(request, root) -> Source:
    if request.param == "ray":
        pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'panto_analytics[ray]'")
        return OnRay(root, task_rows=1)
    return OnDataset(root, task_rows=1)  # one task per bucket: eight partial results merged


def by_session(df: pl.DataFrame) -> pl.DataFrame:
    """Rows in session order (a dataset gives sessions bucket by bucket), session ids as plain strings."""
    keys = [c for c in ("session_id", "budget", "policy") if c in df.columns]
    return df.with_columns(pl.col("session_id").cast(pl.String)).sort(keys)


def test_the_in_memory_backend_is_the_library(memory):
    corpus = memory.corpus()
    assert_frame_equal(memory.sweep(BUDGETS), pa.sweep(pa.splits(corpus.messages, BUDGETS, sessions=corpus.sessions)))
    assert memory.sweep(BUDGETS)["sessions"][0] == corpus.sessions.height


def test_sweep(source, memory):
    assert_frame_equal(source.sweep(BUDGETS), memory.sweep(BUDGETS), check_exact=True)


def test_splits_and_written_splits(source, memory, tmp_path):
    expected = by_session(memory.splits(BUDGETS))
    assert_frame_equal(by_session(source.splits(BUDGETS)), expected, check_exact=True)
    rows = source.write_splits(BUDGETS, tmp_path / "splits.parquet")
    assert rows == expected.height
    assert_frame_equal(by_session(pl.read_parquet(tmp_path / "splits.parquet")), expected, check_exact=True,
                       check_dtypes=False)


@pytest.mark.parametrize("rule", [None, pa.Rule(min_kept_turns=3, coverage=0.95),
                                  pa.Rule(min_kept_turns=50, coverage=1.0)], ids=["default", "k3", "none-meets"])
def test_choose_budget_from_splits(source, memory, rule):
    got, expected = (s.choose_budget(BUDGETS, rule, resamples=20) for s in (source, memory))
    assert got.price_source is None and expected.price_source is None
    assert_frame_equal(got.choice.table, expected.choice.table, check_exact=True)
    assert got.choice.budget == expected.choice.budget


def test_choose_budget_under_a_window(source, memory):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the unpriced models: said once per backend, the same
        got, expected = (s.choose_budget(BUDGETS, pa.Rule(min_kept_turns=1, coverage=0.5), window=64_000,
                                         resamples=0) for s in (source, memory))
    assert got.price_source == expected.price_source is not None
    assert got.choice.budget == expected.choice.budget


@pytest.mark.parametrize("by", [["model", "day"], ["session"]])
def test_cost(source, memory, by):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got, expected = (s.cost(by=by) for s in (source, memory))
    assert_frame_equal(got, expected, check_exact=True)


def test_refetch(source, memory):
    pieces: list[pl.DataFrame] = []
    got = source.refetch(horizon=10, on_cuts=pieces.append)
    expected = memory.refetch(horizon=10)
    assert_frame_equal(got.summary, expected.summary, check_exact=True)
    assert got.agents == expected.agents and sum(p.height for p in pieces) > 0


@pytest.mark.parametrize("loss", [False, True], ids=["plain", "loss"])
def test_replay_table(source, memory, loss):
    rows: list[int] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = source.replay_table(BUDGETS[1:3], window=64_000, with_loss=loss, horizon=10, prices=True,
                                  on_rows=lambda events, sessions: rows.append(sessions.height))
        expected = memory.replay_table(BUDGETS[1:3], window=64_000, with_loss=loss, horizon=10, prices=True)
    assert_frame_equal(got.table, expected.table, check_exact=True)
    assert (got.summary_tokens, got.summary_source, got.price_source) == (
        expected.summary_tokens, expected.summary_source, expected.price_source)
    assert sum(rows) == memory.sessions().height * 2   # one row per session and budget


def test_the_command_line_picks_the_backend_by_its_input(root):
    """``open_source``: a dataset folder streams (on Ray with --engine ray), session files are read in memory,
    and nothing is read before a verb runs."""
    import click

    from panto_analytics.cli._reading import open_source

    with click.Context(click.Command("x")):
        assert type(open_source([root], None, False)) is OnDataset
        assert isinstance(open_source([DATA], None, False), InMemory)
        with pytest.raises(click.UsageError, match="--engine ray runs over a dataset folder"):
            open_source([DATA], None, False, "ray")


def test_a_verb_a_backend_does_not_run_is_one_line(root):
    """:class:`Unserved`, an :class:`~panto_analytics.errors.InputError` (the command line's one-line error), never
    ``NotImplementedError``: the bare face runs nothing, and Ray does not hold every split in memory."""
    from panto_analytics.dataset import Unserved
    from panto_analytics.errors import InputError

    with pytest.raises(Unserved, match=r"^the corpus: sweep does not run on this backend$"):
        Source().sweep(BUDGETS)
    with pytest.raises(InputError, match=rf"^{root}: every session's splits are held in memory here, never on Ray"):
        OnRay(root).splits(BUDGETS)


def test_sweep_plot_on_ray_is_one_line_before_any_work(root, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from panto_analytics.cli import main
    from panto_analytics.dataset import engines

    monkeypatch.setattr(engines, "ray_available", lambda: True)   # refused before Ray would start
    result = CliRunner().invoke(main, ["sweep", str(root), "--engine", "ray", "--plot", str(tmp_path / "p.png")])
    assert result.exit_code == 1
    assert result.output == (f"error: {root}: every session's splits are held in memory here, never on Ray Data "
                             "(read the dataset without --engine ray for them)\n")
    assert not (tmp_path / "p.png").exists()


def test_the_in_memory_verbs_read_a_dataset_whole(root, memory):
    """``corpus``, ``messages``, ``sessions``: the dataset gathered here, what the same files give in memory
    (sessions bucket by bucket)."""
    source = OnDataset(root)
    assert_frame_equal(by_session(source.sessions()), by_session(memory.sessions()), check_exact=True)
    key = ["session_id", "seq"]
    assert_frame_equal(by_session(source.messages()).sort(key), by_session(memory.messages()).sort(key),
                       check_exact=True)
    assert source.corpus().compactions.height == memory.corpus().compactions.height > 0
