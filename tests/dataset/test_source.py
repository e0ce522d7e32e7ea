"""One face, three backends: the command line picks the :class:`~panto_analytics.dataset.Source` by its input alone,
a verb a backend does not run is one line, and a dataset read whole is what its files give. Each verb's results
in every lane (in memory, a dataset here, on Ray) are checked by the tests of that verb, parametrized over the
lanes (``conftest.LANES``): test_streaming.py (sweep, splits, the recommendation), test_cost_dataset.py,
test_decision_dataset.py (the decision under a window), test_replay_dataset.py, test_refetch_dataset.py,
test_report_dataset.py (the report's sections)."""
from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from conftest import DATA
from polars.testing import assert_frame_equal

import panto_analytics as pa
from panto_analytics.dataset import InMemory, OnDataset, OnRay, Source, write_dataset

BUDGETS = [0, 5_000, 20_000, 100_000]


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("source") / "corpus.ds"
    write_dataset([DATA], root, buckets=8, cache=False)
    return root


@pytest.fixture(scope="module")
def memory() -> InMemory:
    corpus = pa.ingest.read_corpus([DATA], cache=False)
    return InMemory(lambda: corpus)


def by_session(df: pl.DataFrame) -> pl.DataFrame:
    """Rows in session order (a dataset gives sessions bucket by bucket), session ids as plain strings."""
    keys = [c for c in ("session_id", "budget", "policy") if c in df.columns]
    return df.with_columns(pl.col("session_id").cast(pl.String)).sort(keys)


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
