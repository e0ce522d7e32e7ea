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
    assert "dataset: 40 files read" in result.output
    return root


def test_second_ingest_reads_nothing(dataset):
    result = run("ingest", DATA, "--dataset", dataset)
    assert result.exit_code == 0
    assert result.output.startswith("dataset: 0 files read, 40 unchanged, 0 removed")


@pytest.mark.parametrize("command", [["sweep", "-b", "0:100k:5"], ["splits", "-b", "8k,20k"],
                                     ["recommend", "-k", "2"], ["replay", "--window", "64k", "-b", "20k"],
                                     ["compactions", "-b", "20k"], ["cost", "--by", "model", "--by", "day"],
                                     ["cost", "--by", "session"],
                                     ["replay", "--window", "64k", "-b", "8k,20k", "--policy", "libpanto", "--policy",
                                      "claude-code", "--cost", "--loss"],
                                     ["replay", "--window", "64k", "-b", "20k", "--cost"],
                                     ["loss", "--horizon", "10"],
                                     # the commands whose verb exists in memory only: the Source gathers the dataset
                                     ["sessions"], ["sessions", "--budget", "8k", "--worst", "5"], ["policy-cuts"],
                                     ["timeline", "--session", "0963a6d2", "-w", "32k", "-b", "4k"],
                                     ["request", "--session", "0963a6d2", "-b", "2k"]])
def test_a_dataset_gives_what_its_files_give(dataset, command):
    out = [] if command[0] in ("timeline", "request") else ["-o", "-"]   # both print without -o
    from_files = run(command[0], DATA, *command[1:], *out)
    from_dataset = run(command[0], dataset, *command[1:], *out)
    assert from_files.exit_code == from_dataset.exit_code == 0, from_dataset.output
    def key(text: str) -> list[str]:
        lines = text.splitlines()
        if command[0] == "compactions":  # its first column numbers the rows
            lines = [line.split(",", 1)[1] for line in lines]
        return sorted(lines) if command[0] in ("splits", "compactions", "sessions") else lines  # bucket by bucket

    expected = key(from_files.output)
    if "--cost" in command:  # the unpriced-model notes, summed over the buckets
        assert any(line.startswith("note: no price for model") for line in expected)
    assert key(from_dataset.output) == expected


def test_splits_to_parquet_streams_the_same_rows(dataset, tmp_path):
    import polars as pl

    assert run("splits", dataset, "-b", "0:200k:9", "-o", tmp_path / "a.parquet").exit_code == 0
    assert run("splits", DATA, "-b", "0:200k:9", "-o", tmp_path / "b.parquet").exit_code == 0
    a, b = (pl.read_parquet(tmp_path / f"{n}.parquet").with_columns(pl.col("session_id").cast(pl.String))
            .sort("session_id", "budget") for n in "ab")
    assert a.equals(b)


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_replay_writes_the_same_session_and_event_rows(dataset, tmp_path, suffix):
    import polars as pl

    args = ["-w", "64k", "-b", "8k,20k", "--policy", "libpanto", "--policy", "pi", "--cost", "--loss", "-o", "-"]
    for name, source in (("files", DATA), ("ds", dataset)):
        out = run("replay", source, *args, "--sessions", tmp_path / f"s-{name}{suffix}", "--events",
                  tmp_path / f"e-{name}{suffix}")
        assert out.exit_code == 0, out.output
    read = pl.read_parquet if suffix == ".parquet" else pl.read_csv
    for kind, key in (("s", ["policy", "session_id", "budget"]), ("e", ["policy", "session_id", "budget", "event"])):
        a, b = (read(tmp_path / f"{kind}-{name}{suffix}").sort(key) for name in ("files", "ds"))
        assert a.height > 0 and a.equals(b)



def test_replay_with_no_event_writes_the_empty_file_of_the_files_one(dataset, tmp_path):
    """Nothing compacts under a 2M window: the dataset's empty --events file has the in-memory one's schema
    (session_id Categorical, not String)."""
    import polars as pl

    for name, source in (("files", DATA), ("ds", dataset)):
        out = run("replay", source, "--window", "2000k", "-b", "8k", "-o", "-", "--events", tmp_path / f"e-{name}.parquet")
        assert out.exit_code == 0, out.output
    a, b = (pl.read_parquet(tmp_path / f"e-{name}.parquet") for name in ("files", "ds"))
    assert a.height == 0 and a.schema["session_id"] == pl.Categorical
    assert b.schema == a.schema

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


def test_a_dataset_names_its_files_absolutely_wherever_it_was_written_from(tmp_path, monkeypatch):
    # A dataset written from `ingest src/` once stored `src/x.jsonl`: request from elsewhere said the file was gone.
    import shutil

    import polars as pl

    from panto_analytics.dataset import scan_dataset

    here = tmp_path / "here"
    shutil.copytree(DATA, here / "src")
    monkeypatch.chdir(here)
    assert run("ingest", "src", "--dataset", "ds", "--no-cache").exit_code == 0
    files = scan_dataset(here / "ds", "sessions").select(pl.col("file").cast(pl.String)).collect()["file"]
    assert files.str.starts_with(str(here / "src") + "/").all()
    sid = sorted(DATA.glob("*.jsonl"))[0].stem
    monkeypatch.chdir(tmp_path)
    result = run("request", here / "ds", "-b", "1k", "--session", sid)
    assert result.exit_code == 0 and result.output.strip(), result.output
    monkeypatch.chdir(here)  # and updating it from where it was written finds nothing changed
    assert run("ingest", "src", "--dataset", "ds", "--no-cache").output.startswith("dataset: 0 files read, 40 unchanged")


def test_ingesting_another_folder_adds_it_and_says_so_first(tmp_path):
    # `ingest B --dataset DS` into a dataset made from A once printed "20 removed" and dropped A's sessions.
    import shutil

    from panto_analytics.dataset import read_info

    files = sorted(DATA.glob("*.jsonl"))
    a, b, ds = tmp_path / "A", tmp_path / "B", tmp_path / "ds"
    for folder, share in ((a, files[:25]), (b, files[25:])):
        folder.mkdir()
        for f in share:
            shutil.copy(f, folder / f.name)
    assert run("ingest", a, "--dataset", ds, "--no-cache").exit_code == 0
    result = CliRunner().invoke(main, ["ingest", str(b), "--dataset", str(ds), "--no-cache"])
    assert result.exit_code == 0, result.output
    note = f"note: {ds} holds 25 files (25 sessions) that PATHS do not name: kept beside PATHS' sessions"
    assert note in result.stderr and "0 removed" in result.stdout
    assert result.output.index(note) < result.output.index("dataset: ")  # said before it happens
    assert (read_info(ds).files, read_info(ds).sessions) == (40, 40)
    # Updating either folder leaves the other alone; a file gone from a folder named is removed.
    (a / files[0].name).unlink()
    result = CliRunner().invoke(main, ["ingest", str(a), "--dataset", str(ds), "--no-cache"])
    assert "1 removed" in result.stdout and read_info(ds).sessions == 39
    # --replace: the dataset holds PATHS alone, and says so first.
    result = CliRunner().invoke(main, ["ingest", str(b), "--dataset", str(ds), "--no-cache", "--replace"])
    assert result.exit_code == 0, result.output
    assert f"note: {ds} holds 24 files (24 sessions) that PATHS do not name: --replace drops them" in result.stderr
    assert "24 removed" in result.stdout and read_info(ds).sessions == 15
    assert run("ingest", b, "--replace").exit_code == 2  # --replace is for --dataset


def test_files_gone_from_a_folder_not_named_are_kept(tmp_path):
    import shutil

    from panto_analytics.dataset import read_info

    files = sorted(DATA.glob("*.jsonl"))
    a, b, ds = tmp_path / "A", tmp_path / "B", tmp_path / "ds"
    for folder, share in ((a, files[:2]), (b, files[2:4])):
        folder.mkdir()
        for f in share:
            shutil.copy(f, folder / f.name)
    assert run("ingest", a, "--dataset", ds, "--no-cache").exit_code == 0
    shutil.rmtree(a)  # the recordings are gone; the dataset is their copy
    result = CliRunner().invoke(main, ["ingest", str(b), "--dataset", str(ds), "--no-cache"])
    assert result.exit_code == 0 and "0 removed" in result.stdout
    assert read_info(ds).sessions == 4


@pytest.mark.parametrize("command", [["replay", "--window", "64k", "-b", "20k"], ["recommend", "--window", "64k"],
                                     ["loss"], ["sweep"], ["cost"], ["sessions"], ["compactions"], ["policy-cuts"]])
def test_a_dataset_without_sessions_is_the_one_line_error_of_its_files(tmp_path, command):
    """Not a traceback (replay, recommend --window) nor an empty table (loss): what the files read in memory say."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "empty.jsonl").write_text("")
    ds = tmp_path / "empty.ds"
    assert run("ingest", tmp_path / "src", "--dataset", ds).exit_code == 0
    from_files = run(command[0], tmp_path / "src", *command[1:], "--sessions" if command[0] == "replay" else "-o",
                     tmp_path / "rows.csv")
    from_dataset = run(command[0], ds, *command[1:], "--sessions" if command[0] == "replay" else "-o",
                       tmp_path / "rows.csv")
    assert from_files.exit_code == from_dataset.exit_code == 1
    assert from_dataset.output == from_files.output.replace(str(tmp_path / "src"), str(ds))
    assert from_dataset.output == f"error: {ds}: no sessions in the 1 file read\n"
    assert not (tmp_path / "rows.csv").exists()
