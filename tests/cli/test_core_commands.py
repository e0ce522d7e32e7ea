"""``splits`` and ``sweep`` on the command line: outputs, errors and exit codes."""
from __future__ import annotations

import polars as pl
import pytest
from click.testing import CliRunner

import panto_analytics as pa
from panto_analytics.cli import main


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.mark.parametrize("suffix,reader", [(".csv", pl.read_csv), (".parquet", pl.read_parquet),
                                           (".json", pl.read_json), (".ndjson", pl.read_ndjson)])
def test_splits_writes_by_extension_and_matches_the_library(corpus, tmp_path, suffix, reader):
    out = tmp_path / f"splits{suffix}"
    result = run("splits", corpus, "--budgets", "0,10,1k", "-o", out)
    assert result.exit_code == 0, result.output
    got = reader(out).select("session_id", "budget", "prefix_end", "kept_turns")
    want = pa.splits(pa.read_sessions([corpus]), [0, 10, 1000]).select(
        pl.col("session_id").cast(str), pl.col("budget").cast(pl.Int64),
        pl.col("prefix_end").cast(pl.Int64), pl.col("kept_turns").cast(pl.Int64))
    assert got.cast({c: want.schema[c] for c in got.columns}).equals(want)
    assert got.height == 2 * 3


def test_splits_prints_a_table_without_output(corpus):
    result = run("splits", corpus, "-b", "20k")
    assert result.exit_code == 0
    assert "prefix_end" in result.output and "kept_turns" in result.output


def test_sweep_prints_one_row_per_budget(corpus, tmp_path):
    out = tmp_path / "sweep.csv"
    result = run("sweep", corpus, "--budgets", "0:40:5", "-o", out)
    assert result.exit_code == 0, result.output
    table = pl.read_csv(out)
    assert table["budget"].to_list() == [0, 10, 20, 30, 40]
    assert table["sessions"].to_list() == [2] * 5
    # Budget 0 keeps nothing: every session has turns and none fits.
    assert table.row(0, named=True)["zero_kept_share"] == 1.0
    assert table["noop_share"].is_sorted()


def test_bad_input_exits_1_with_file_and_line(corpus):
    (corpus / "c.jsonl").write_text('{"type":"message","role":"user","content":[]}\n{"oops"\n')
    result = CliRunner().invoke(main, ["splits", str(corpus), "-b", "1k"])
    assert result.exit_code == 1
    assert f"{corpus / 'c.jsonl'}:2: malformed JSON" in result.output
    assert "Traceback" not in result.output


def test_bad_input_writes_no_partial_output(corpus, tmp_path):
    (corpus / "c.jsonl").write_text('{"oops"\n')
    out = tmp_path / "s.csv"
    result = CliRunner().invoke(main, ["splits", str(corpus), "-b", "1k", "-o", str(out)])
    assert result.exit_code == 1 and not out.exists()


def test_skip_invalid_reports_the_skips(corpus):
    (corpus / "c.jsonl").write_text('{"type":"message","role":"user","content":[]}\n{"oops"\n')
    result = CliRunner().invoke(main, ["splits", str(corpus), "-b", "1k", "--skip-invalid"])
    assert result.exit_code == 0
    assert "skipped 1 invalid line" in result.output


@pytest.mark.parametrize("args", [["splits", "x", "--budgets"], ["splits", "x", "-b", "lots"], ["sweep", "x", "-o", "out.xlsx"]])
def test_usage_errors_exit_2(corpus, args):
    args = [str(corpus) if a == "x" else a for a in args]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2


@pytest.mark.parametrize("command", ["splits", "sweep"])
def test_help_teaches(command):
    result = run(command, "--help")
    assert result.exit_code == 0
    assert "Examples:" in result.output and "--budgets" in result.output


def test_sessions_without_messages_get_split_rows(corpus, tmp_path):
    (corpus / "empty.jsonl").write_text('{"type":"session","id":"header-only"}\n')
    out = tmp_path / "s.csv"
    assert run("splits", corpus, "-b", "0,1k", "-o", out).exit_code == 0
    empty = pl.read_csv(out).filter(pl.col("session_id") == "header-only")
    # computeSplit on no messages: prefix_end = 0, kept_turns = 0; nothing to summarize.
    assert empty.select("budget", "prefix_end", "kept_turns", "noop").rows() == [(0, 0, 0, True), (1000, 0, 0, True)]


def test_splits_without_budgets_tries_the_default_grid(corpus, tmp_path):
    from panto_analytics.budgets import parse_budgets
    from panto_analytics.defaults import DEFAULT_BUDGETS

    out = tmp_path / "s.csv"
    assert run("splits", corpus, "-o", out).exit_code == 0
    assert sorted(set(pl.read_csv(out)["budget"])) == parse_budgets(DEFAULT_BUDGETS)


def test_sweep_over_a_range_ending_at_the_largest_budget(corpus):
    # 0:2^64-1:3 once rounded its last step in floats, past what a u64 holds: a traceback.
    result = run("sweep", corpus, "-b", "0:18446744073709551615:3", "--no-cache")
    assert result.exit_code == 0, result.output
    assert "18,446,744,073,709,551,615" in result.output  # the terminal table separates thousands
