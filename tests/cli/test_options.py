"""What every command shares: reading messy folders, one-line errors, outputs people can pipe."""
from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from conftest import FIXTURES, canonical_session

from panto_analytics.cli import main
from panto_analytics.cli._output import TABLE_ROWS


def run(*args):
    return CliRunner().invoke(main, [*map(str, args), "--no-cache"] if args and args[0] != "--help" else list(args))


def error_lines(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


# --- reading folders as they are ---------------------------------------------------------------------------

def test_an_unfinished_last_line_is_a_note_not_an_error(corpus):
    with (corpus / "b.jsonl").open("a") as f:
        f.write('{"type": "message", "role": "us')
    result = run("splits", corpus, "-b", "1k", "-o", "-")
    assert result.exit_code == 0, result.output
    assert "note: skipped the unfinished last line of 1 file " in result.stderr
    assert "invalid" not in result.stderr


def test_a_bad_line_says_that_skip_invalid_exists(corpus):
    with (corpus / "a.jsonl").open("a") as f:
        f.write("not json\n")
    result = run("splits", corpus, "-b", "1k")
    assert result.exit_code == 1
    [line] = error_lines(result)
    assert "a.jsonl:7: malformed JSON" in line and "--skip-invalid" in line


@pytest.mark.parametrize("what", ["empty folder", "glob", "no sessions"])
def test_nothing_to_read_is_one_line_and_exit_1(tmp_path, what):
    d = tmp_path / "d"
    d.mkdir()
    (d / "notes.txt").write_text("not a session")
    target, skip = d, []
    if what == "glob":
        target = d / "*.jsonl"
    elif what == "no sessions":  # every file skipped whole
        (d / "export.jsonl").write_text('{"type": "sanitization_notice"}\n{"text": "x"}\n')
        skip = ["--skip-invalid"]
    for command in (["splits", target, "-b", "1k"], ["report", target, "-o", tmp_path / "rep"], ["ingest", target]):
        command += skip
        result = run(*command)
        assert result.exit_code == 1, (command, result.output)
        lines = error_lines(result)
        assert len(lines) == 1 or skip  # under --skip-invalid the skipped files are listed first
        line = lines[-1]
        assert line.startswith("error: ") and str(d) in line and "--skip-invalid" not in line
    assert not (tmp_path / "rep").exists()  # no empty plots


def test_skip_invalid_reports_each_file_with_its_lines_and_reasons(corpus):
    with (corpus / "a.jsonl").open("a") as f:
        f.write("not json\nnot json\n" + json.dumps({"type": "nope"}) + "\n")
    with (corpus / "b.jsonl").open("a") as f:
        f.write("[1]\n")
    result = run("splits", corpus, "-b", "1k", "--skip-invalid")
    assert result.exit_code == 0
    lines = result.stderr.splitlines()
    assert lines[0] == "skipped 4 invalid lines in 2 files:"
    assert lines[1] == f"  {corpus / 'a.jsonl'}: 3 lines"
    assert lines[2].startswith("    2 x malformed JSON") and lines[3].startswith("    1 x unknown record type 'nope'")
    assert lines[4] == f"  {corpus / 'b.jsonl'}: 1 line" and lines[5] == "    1 x expected a JSON object, got array"


def test_a_copied_session_is_one_error_or_a_note(corpus):
    (corpus / "backup").mkdir()
    shutil.copyfile(corpus / "a.jsonl", corpus / "backup" / "a.jsonl")
    result = run("splits", corpus, "-b", "1k")
    assert result.exit_code == 1 and len(error_lines(result)) == 1 and "is also the id of" in result.stderr
    result = run("splits", corpus, "-b", "1k", "-o", "-", "--skip-invalid")
    assert result.exit_code == 0
    assert pl.read_csv(io.StringIO(result.stdout))["session_id"].to_list() == ["a", "b"]
    assert f"{corpus / 'backup' / 'a.jsonl'}: the whole file" in result.stderr and str(corpus / "a.jsonl") in result.stderr
    assert "skipped 1 whole file:" in result.stderr  # a file, not "1 invalid lines"


def test_a_forced_format_on_another_format_is_an_error(tmp_path):
    result = run("ingest", FIXTURES / "claude_code" / "blocks.jsonl", "--format", "pi")
    assert result.exit_code == 1 and "this is a claude-code file, not pi" in result.stderr


# --- output people can pipe ----------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt,read", [(None, pl.read_csv), ("csv", pl.read_csv), ("json", pl.read_json),
                                      ("ndjson", pl.read_ndjson)])
def test_dash_writes_to_stdout_in_the_output_format(corpus, fmt, read):
    result = run("splits", corpus, "-b", "0,1k", "-o", "-", *(["--output-format", fmt] if fmt else []))
    assert result.exit_code == 0, result.output
    got = read(io.BytesIO(result.stdout_bytes))
    assert got.height == 4 and set(got["session_id"]) == {"a", "b"}


def test_long_session_ids_are_never_shortened(tmp_path):
    sid = "0123456789abcdef-0123456789abcdef-0123456789abcdef/agent-0123456789"
    d = tmp_path / "c"
    d.mkdir()
    canonical_session(d / "s.jsonl", 2, sid=sid)
    for args in ([], ["-o", "-"], ["-o", "-", "--output-format", "json"]):
        result = run("splits", d, "-b", "1k", *args)
        assert sid in result.stdout, args


def test_a_terminal_table_says_how_many_rows_it_hides(corpus):
    result = run("splits", corpus, "-b", f"0:{TABLE_ROWS + 50}:{TABLE_ROWS + 51}")
    assert result.exit_code == 0
    hidden = 2 * (TABLE_ROWS + 51) - TABLE_ROWS
    assert f"({hidden:,} of {2 * (TABLE_ROWS + 51):,} rows not shown" in result.stdout


@pytest.mark.parametrize("args,message", [
    (["splits", "C", "-b", "1k", "-o", "m.txt"], "cannot tell the format from 'm.txt'"),
    (["sweep", "C", "--plot", "x.txt"], "cannot tell the format from 'x.txt'"),
    (["ingest", "C", "--sessions", "s.xlsx"], "cannot tell the format from 's.xlsx'"),
    (["ingest", "C", "--compactions", "FILE/c.csv"], "is a file, not a folder"),
    (["splits", "C", "-b", "1k", "-o", "FILE/deeper/m.csv"], "is a file, not a folder"),
    (["report", "C", "-o", "FILE"], "is a file"),
    (["splits", "C", "-b", "1k", "-o", "/nonexistent-panto/m.csv"], "does not exist"),
    (["splits", "C", "-b", "18446744073709551616"], "above the largest libpanto holds"),
    (["request", "C", "-b", "1k", "-o", "/nonexistent-panto/r.txt"], "folder /nonexistent-panto does not exist"),
    (["request", "C", "-b", "1k", "-o", "FILE/r.txt"], "is a file, not a folder"),
    (["request", "C", "-b", "1k", "-o", "C"], "is a folder, not a file"),
    (["compactions", "C", "-b", "1k", "--plot", "x.txt"], "cannot tell the format from 'x.txt'"),
    (["compactions", "C", "-b", "1k", "--plot", "/nonexistent-panto/x.png"], "folder /nonexistent-panto does not"),
    (["compactions", "C", "-b", "1k", "--plot", "FILE/x.png"], "is a file, not a folder"),
    (["report", "C", "-o", "/nonexistent-panto/deeper/rep"], "folder /nonexistent-panto does not exist"),
    (["report", "C", "-o", "/nonexistent-panto/rep"], "folder /nonexistent-panto does not exist"),
])
def test_output_paths_and_budgets_are_checked_before_any_work_in_one_line(corpus, tmp_path, args, message):
    (tmp_path / "FILE").write_text("a file")
    args = [str(corpus) if a == "C" else str(tmp_path / a) if a.startswith("FILE") else a for a in args]
    result = CliRunner().invoke(main, args)  # a cache would be written by any work done
    assert result.exit_code == 2, result.output
    [line] = error_lines(result)
    assert line.startswith("error: ") and message in line
    assert "Traceback" not in result.output


def test_the_largest_budget_libpanto_holds_is_fine(corpus):
    assert run("splits", corpus, "-b", str(2**64 - 1), "-o", "-").exit_code == 0


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_one_line(corpus, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    for args in (["splits", corpus, "-b", "1k", "-o", ro / "m.csv"], ["request", corpus, "-b", "1k", "-o", ro / "r"],
                 ["compactions", corpus, "-b", "1k", "--plot", ro / "k.png"], ["report", corpus, "-o", ro / "rep"]):
        result = run(*args)
        assert result.exit_code == 2 and "permission denied" in result.stderr, args


@pytest.mark.skipif(not Path("/proc/self").is_dir() or not Path("/sys/kernel").is_dir(), reason="needs /proc and /sys")
@pytest.mark.parametrize("args", [["sweep", "C", "-o", "/proc/out.csv"], ["sweep", "C", "--plot", "/sys/x.png"],
                                  ["report", "C", "-o", "/proc/rep"], ["ingest", "C", "-o", "/proc/m.parquet"],
                                  ["request", "C", "-b", "1k", "-o", "/proc/r.txt"]])
def test_a_folder_that_refuses_new_files_is_one_line_before_any_work_even_as_root(corpus, args):
    # os.access says yes to root for /proc and /sys; the check tries (issue 32: a traceback after the work, before).
    result = run(*[str(corpus) if a == "C" else a for a in args])
    assert result.exit_code == 2, result.output
    [line] = error_lines(result)
    assert line.startswith("error: ") and "cannot write in /" in line and "Traceback" not in result.output


def test_an_output_that_fails_as_it_is_written_is_one_line(corpus, tmp_path, monkeypatch):
    def full(self, *args, **kwargs):
        raise OSError(28, "No space left on device", str(tmp_path / "m.csv"))

    monkeypatch.setattr(pl.DataFrame, "write_csv", full)
    result = run("splits", corpus, "-b", "1k", "-o", tmp_path / "m.csv")
    assert result.exit_code == 1 and result.exception is None or isinstance(result.exception, SystemExit)
    assert error_lines(result) == [f"error: cannot write {tmp_path / 'm.csv'}: No space left on device"]


def test_missing_folders_are_created_only_under_the_current_one(corpus, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run("splits", corpus, "-b", "1k", "-o", "new/sub/m.csv")
    assert result.exit_code == 0 and (tmp_path / "new" / "sub" / "m.csv").is_file()


def test_unsorted_and_repeated_budgets_are_accepted_and_said_once(corpus):
    result = run("splits", corpus, "-b", "20k,8k,8k", "-o", "-")
    assert result.exit_code == 0
    assert result.stderr.count("note: budgets sorted and de-duplicated: 8000,20000") == 1
    assert sorted(set(pl.read_csv(io.StringIO(result.stdout))["budget"])) == [8000, 20000]
    assert "note" not in run("splits", corpus, "-b", "8k,20k", "-o", "-").stderr


def _commands(group=main, path=""):
    import click

    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            yield from _commands(command, f"{path}{name} ")
        else:
            yield f"{path}{name}", command


#: Short options whose long names differ by command but say one thing (-b: the one budget, or the list of them).
_SAME_MEANING = {"--budget": "--budgets"}


def test_each_short_option_means_one_thing_in_every_command():
    import click

    meaning: dict[str, dict[str, list[str]]] = {}
    for name, command in _commands():
        for param in command.params:
            if isinstance(param, click.Option):
                long = max(param.opts, key=len)
                for short in (o for o in param.opts if not o.startswith("--")):
                    meaning.setdefault(short, {}).setdefault(_SAME_MEANING.get(long, long), []).append(name)
    mixed = {short: longs for short, longs in meaning.items() if len(longs) > 1}
    assert not mixed, f"a short option with several meanings: {mixed}"
    assert "--window" in meaning["-w"]  # the docs write `replay -w 200k`


def test_every_command_tries_one_default_budget_grid(corpus):
    import click

    from panto_analytics.budgets import parse_budgets
    from panto_analytics.defaults import DEFAULT_BUDGETS, DEFAULT_COMPACTION_BUDGETS

    options = {name: param for name, command in _commands() for param in command.params
               if isinstance(param, click.Option) and param.name == "budgets"}
    assert not [name for name, param in options.items() if param.required]   # none asks for -b (issue 32)
    defaults = {name: param.default for name, param in options.items()}
    assert {"sweep", "replay", "recommend", "report", "splits"} <= set(defaults)
    # compactions sets a few budgets beside each compaction (two columns a budget), the others the one grid
    assert defaults.pop("compactions") == DEFAULT_COMPACTION_BUDGETS
    assert set(defaults.values()) == {DEFAULT_BUDGETS}, defaults
    assert run("compactions", corpus).exit_code == 0
    # and what runs is that grid: sweep's rows, recommend's table
    swept = pl.read_csv(io.StringIO(run("sweep", corpus, "-o", "-").output))
    assert swept["budget"].to_list() == parse_budgets(DEFAULT_BUDGETS)


#: Every command that writes a table, with the arguments it needs (recommend: issue 21 makes its -o - JSON-only).
_TABLE_COMMANDS = {
    "splits": ["-b", "1k"], "sweep": ["-b", "1k"], "replay": ["--window", "20k", "--reserve", "1k", "-b", "1k"], "sessions": [],
    "compactions": ["-b", "1k"], "policy-cuts": [], "ingest": [],
}


@pytest.mark.parametrize("command", sorted(_TABLE_COMMANDS))
@pytest.mark.parametrize("fmt", ["csv", "json", "ndjson"])
def test_every_table_command_writes_only_the_table_to_stdout_with_dash(corpus, command, fmt):
    result = run(command, corpus, *_TABLE_COMMANDS[command], "-o", "-", "--output-format", fmt)
    assert result.exit_code == 0, result.output
    text = result.stdout
    if fmt == "json":
        assert isinstance(json.loads(text), list)
    elif fmt == "ndjson":
        assert all(isinstance(json.loads(line), dict) for line in text.splitlines())
    else:
        assert pl.read_csv(io.StringIO(text)).width > 1


@pytest.mark.parametrize("command", sorted(_TABLE_COMMANDS))
def test_every_table_command_writes_to_dev_null(corpus, command):
    result = run(command, corpus, *_TABLE_COMMANDS[command], "-o", os.devnull)
    assert result.exit_code == 0, result.output
    assert result.stdout == "" or command == "ingest"  # ingest still says what it read


def test_a_terminal_table_fits_the_terminal_and_names_the_columns_it_leaves_out(tmp_path):
    sid = "0123456789abcdef-0123456789abcdef-0123456789abcdef"
    d = tmp_path / ("a-long-folder-name-" * 4)
    d.mkdir()
    canonical_session(d / "s.jsonl", 2, sid=sid)
    result = CliRunner().invoke(main, ["sessions", str(d), "--no-cache"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    table = [line for line in lines if not line.startswith("(")]
    assert max(map(len, table)) <= 100
    assert sid not in result.stdout and sid[:8] + "…" in result.stdout  # shortened to a unique prefix (issue 32)
    [note] = [line for line in lines if "not shown to fit the terminal" in line]
    assert "file" in note and "-o FILE or -o - writes them all" in note
    wide = CliRunner().invoke(main, ["sessions", str(d), "--no-cache"], env={"COLUMNS": "1000"})
    assert "not shown" not in wide.stdout and str(d / "s.jsonl") in wide.stdout
