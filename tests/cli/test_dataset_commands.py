"""Dataset folders on the command line: ``ingest --dataset``, and every command reading one."""
from __future__ import annotations

import pytest
from click.testing import CliRunner
from conftest import DATA

from panto_analytics.cli import main
from panto_analytics.dataset import engines


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("ds") / "corpus.ds"
    result = run("ingest", DATA, "--dataset", root, "--buckets", "8")
    assert result.exit_code == 0, result.output
    assert "dataset: 40 file(s) read" in result.output
    return root


def test_second_ingest_reads_nothing(dataset):
    result = run("ingest", DATA, "--dataset", dataset)
    assert result.exit_code == 0
    assert result.output.startswith("dataset: 0 file(s) read, 40 unchanged, 0 removed")


@pytest.mark.parametrize("command", [["sweep", "-b", "0:100k:5"], ["splits", "-b", "8k,20k"],
                                     ["recommend", "-k", "2"], ["replay", "--window", "64k", "-b", "20k"],
                                     ["compactions", "-b", "20k"]])
def test_a_dataset_gives_what_its_files_give(dataset, command):
    from_files = run(command[0], DATA, *command[1:], "-o", "-")
    from_dataset = run(command[0], dataset, *command[1:], "-o", "-")
    assert from_files.exit_code == from_dataset.exit_code == 0, from_dataset.output
    def key(text: str) -> list[str]:
        lines = text.splitlines()
        if command[0] == "compactions":  # its first column numbers the rows
            lines = [line.split(",", 1)[1] for line in lines]
        return sorted(lines) if command[0] in ("splits", "compactions") else lines  # sessions come bucket by bucket

    assert key(from_dataset.output) == key(from_files.output)


def test_splits_to_parquet_streams_the_same_rows(dataset, tmp_path):
    import polars as pl

    assert run("splits", dataset, "-b", "0:200k:9", "-o", tmp_path / "a.parquet").exit_code == 0
    assert run("splits", DATA, "-b", "0:200k:9", "-o", tmp_path / "b.parquet").exit_code == 0
    a, b = (pl.read_parquet(tmp_path / f"{n}.parquet").with_columns(pl.col("session_id").cast(pl.String))
            .sort("session_id", "budget") for n in "ab")
    assert a.equals(b)


def test_report_reads_a_dataset(dataset, tmp_path):
    result = run("report", dataset, "-b", "0:100k:5", "-o", tmp_path / "report")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "report" / "index.html").is_file()


def test_a_dataset_is_read_alone(dataset):
    result = run("sweep", dataset, DATA)
    assert result.exit_code == 2
    assert "is a dataset folder: give it alone" in result.output


def test_engine_ray_needs_a_dataset():
    result = run("sweep", DATA, "--engine", "ray")
    assert result.exit_code == 2
    assert "--engine ray runs over a dataset folder" in result.output


def test_engine_ray_without_ray_says_how_to_install_it(dataset, monkeypatch):
    monkeypatch.setattr(engines, "ray_available", lambda: False)
    result = run("recommend", dataset, "--engine", "ray")
    assert result.exit_code == 2
    assert "pip install 'panto_analytics[ray]'" in result.output


def test_dataset_and_frame_outputs_are_exclusive(dataset, tmp_path):
    result = run("ingest", DATA, "--dataset", dataset, "-o", tmp_path / "m.parquet")
    assert result.exit_code == 2
    assert "use one or the other" in result.output


def test_buckets_of_an_existing_dataset_cannot_change(dataset):
    result = run("ingest", DATA, "--dataset", dataset, "--buckets", "4")
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and "has 8 buckets, not 4" in result.output


@pytest.mark.parametrize("command", [["sweep"], ["recommend"], ["report", "-o", "rep"]])
def test_a_corrupt_part_is_one_line_of_bad_input(tmp_path, command, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run("ingest", DATA, "--dataset", "ds", "--buckets", "2").exit_code == 0
    part = next((tmp_path / "ds" / "messages").rglob("part-*.parquet"))
    part.write_bytes(b"not parquet")
    result = run(command[0], "ds", *command[1:])
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and result.output.startswith("error: ds: unreadable dataset")
