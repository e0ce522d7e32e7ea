"""`loss` in every lane (in memory, a dataset bucket by bucket here, on Ray; dataset/_refetch.py): the same table
and cut rows as the library's in memory."""
from __future__ import annotations

import io
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from conftest import DATA, LANES, REALDATA, lanes_of, open_lane
from polars.testing import assert_frame_equal

from benchmarks.synth_dataset import write_synthetic_dataset
from panto_analytics.cli import main
from panto_analytics.dataset import dataset_corpus, write_dataset
from panto_analytics.outcomes.recorded_refetch import refetch, refetch_summary

CUT_KEY = ["cut", "session_id", "after_seq", "context"]


@pytest.fixture(scope="module")
def mixed_dataset(tmp_path_factory) -> Path:
    """data/ and, when present, the real pi recordings (two agents, both with recorded compactions)."""
    paths = [DATA, *([REALDATA / "pi", REALDATA / "pi-compactions"] if (REALDATA / "pi-compactions").exists() else [])]
    root = tmp_path_factory.mktemp("mixed") / "ds"
    write_dataset(paths, root, buckets=8, cache=False, skip_invalid=True)  # xcsh-session.jsonl:440
    return root


@pytest.mark.parametrize("lane", LANES)
@pytest.mark.parametrize("horizon", [5, 20])
def test_refetch_equals_in_memory(mixed_dataset, horizon, lane):
    corpus = dataset_corpus(mixed_dataset)
    cuts = refetch(corpus.messages, corpus.compactions, corpus.sessions, horizon=horizon)
    for source in lanes_of(lane, mixed_dataset):  # on a dataset: a task per bucket, then one task for all
        rows: list[pl.DataFrame] = []
        got = source.refetch(horizon=horizon, on_cuts=rows.append)
        assert_frame_equal(got.summary, refetch_summary(cuts), check_exact=True)
        assert_frame_equal(pl.concat(rows).sort(CUT_KEY), cuts.sort(CUT_KEY), check_exact=True,
                           check_dtypes=lane != "ray")
        assert got.agents == sorted(corpus.sessions["source_format"].cast(str).unique().to_list())
        # Recorded compactions come first, then the pseudo-cuts, as in memory.
        kinds = pl.concat(rows)["cut"].to_list()
        assert kinds == sorted(kinds, key=lambda k: k != "compaction")
    assert set(cuts["cut"]) == {"compaction", "baseline"}


@pytest.mark.parametrize("lane", ["memory", "dataset"])
def test_a_dataset_without_a_recorded_compaction_has_no_cut(tmp_path, lane):
    root = tmp_path / "ds"
    write_synthetic_dataset(root, 30, seed=3, buckets=4, chunk=20)
    corpus = dataset_corpus(root)
    expected = refetch_summary(refetch(corpus.messages, corpus.compactions, corpus.sessions))
    rows: list[pl.DataFrame] = []
    got = open_lane(lane, root, None).refetch(on_cuts=rows.append)
    assert_frame_equal(got.summary, expected, check_exact=True)
    assert (sum(r.height for r in rows), got.agents) == (0, ["canonical"])


@pytest.mark.parametrize("suffix", [".csv", ".json", ".ndjson", ".parquet"])
def test_loss_on_a_dataset_prints_the_same_table_and_cuts(data_dataset, tmp_path, suffix):
    on_files = CliRunner().invoke(main, ["loss", str(DATA), "--no-cache", "--horizon", "10", "-o", "-",
                                         "--cuts", str(tmp_path / f"files{suffix}")])
    on_dataset = CliRunner().invoke(main, ["loss", str(data_dataset), "--horizon", "10", "-o", "-",
                                           "--cuts", str(tmp_path / f"ds{suffix}")])
    assert on_files.exit_code == on_dataset.exit_code == 0, on_dataset.output
    assert on_dataset.stdout == on_files.stdout
    assert on_dataset.stderr.replace(f"ds{suffix}", "X") == on_files.stderr.replace(f"files{suffix}", "X")
    read = getattr(pl, f"read_{suffix[1:]}")
    a, b = read(tmp_path / f"files{suffix}"), read(tmp_path / f"ds{suffix}")
    assert_frame_equal(b.sort(CUT_KEY), a.sort(CUT_KEY), check_exact=True)
    assert pl.read_csv(io.StringIO(on_dataset.stdout))["cuts"].sum() == a.height > 0
