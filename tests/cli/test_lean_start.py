"""A lean start: help loads no heavy library, reading loads no matplotlib nor pandas, plotting loads matplotlib.

Checked on Python's import log (``-X importtime`` writes one line per module
imported to stderr), never on a clock. Each check runs the console script's
own entry point in a fresh process.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from importlib.metadata import entry_points

import click
import pytest
from conftest import DATA

import panto_analytics as pa
from panto_analytics import defaults
from panto_analytics.cli import main
from panto_analytics.cli.launch import WORKERS_ENV

HEAVY = ("polars", "pyarrow", "numpy", "matplotlib")

(ENTRY,) = entry_points(group="console_scripts", name="panto-analytics")


def imported(code: str, *args: str) -> set[str]:
    """The modules a fresh Python loads while running ``code`` with ``args``, read from ``-X importtime``."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code, *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return {line.rpartition("|")[2].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}


def run_cli(*args: str) -> set[str]:
    """The modules ``panto-analytics ARGS`` loads, started through the installed entry point."""
    module, _, attr = ENTRY.value.partition(":")
    return imported(f"import sys; from {module} import {attr}; sys.exit({attr}())", *args)


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.partition(".")[0] in HEAVY)


def test_the_import_log_is_read():
    """The parser sees a heavy import when there is one: the checks below could fail."""
    assert {"polars", "panto_analytics.frame.schema"} <= imported("import panto_analytics.frame.schema")


def test_importing_the_package_loads_no_heavy_library():
    assert heavy(imported("import panto_analytics, panto_analytics.cli")) == []


def command_paths(group: click.Group = main, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command and subcommand, as the words that name it."""
    paths = []
    for name, command in sorted(group.commands.items()):
        paths.append((*prefix, name))
        if isinstance(command, click.Group):
            paths += command_paths(command, (*prefix, name))
    return paths


@pytest.mark.parametrize("words", [(), *command_paths()], ids=lambda w: " ".join(w) or "panto-analytics")
def test_help_loads_no_heavy_library(words):
    assert heavy(run_cli(*words, "--help")) == []


def test_reading_loads_no_matplotlib():
    loaded = run_cli("sweep", str(DATA), "-b", "20k", "--no-cache", "-q")
    assert "polars" in loaded
    assert "matplotlib" not in loaded


@pytest.mark.skipif(importlib.util.find_spec("pandas") is None, reason="pandas is not installed: nothing to keep out")
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_reading_files_loads_no_pandas_in_the_command_or_its_worker(jobs):
    """pyarrow would import pandas (installed here, as Ray's) on its first array: about 0.3 s a process."""
    loaded = run_cli("sweep", str(DATA), "-b", "20k", "--no-cache", "-q", "--jobs", jobs)
    assert "pyarrow" in loaded
    assert sorted(m for m in loaded if m.startswith("pandas.")) == []


KEPT_OUT = """
import sys
from panto_analytics.ingest.parallel import as_program, keep_pandas_out
assert not keep_pandas_out()                                 # not the command line's process: left alone
as_program()
assert keep_pandas_out() and keep_pandas_out()               # twice: one finder
import pyarrow as pa
assert pa.array(["a"]).to_pylist() == ["a"]                  # Arrow works without pandas
assert "pandas" not in sys.modules
assert [type(f).__module__ for f in sys.meta_path].count(keep_pandas_out.__module__) == 1
try:
    import pandas
except ModuleNotFoundError as e:
    print("kept out:", e.name)
"""


@pytest.mark.skipif(importlib.util.find_spec("pandas") is None, reason="pandas is not installed: nothing to keep out")
def test_a_process_kept_from_pandas_still_builds_arrow_arrays_and_one_that_may_want_pandas_is_left_alone():
    done = subprocess.run([sys.executable, "-c", KEPT_OUT], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "kept out: pandas"
    for first in ("import pandas", "import panto_analytics.ingest.pipeline"):  # a notebook's, a test's process
        left = subprocess.run([sys.executable, "-c", f"{first}; from panto_analytics.ingest.parallel import "
                               "as_program, keep_pandas_out; as_program(); import sys; "
                               "print(keep_pandas_out(), type(sys.meta_path[0]).__module__)"],
                              capture_output=True, text=True)
        assert left.stdout.split()[0] == "False", left.stderr[-2000:]
        assert "panto_analytics" not in left.stdout.split()[1]


@pytest.mark.skipif(importlib.util.find_spec("pandas") is None, reason="pandas is not installed: nothing to keep out")
def test_a_command_run_in_process_leaves_pandas_to_its_caller():
    """A notebook or a test that runs a command through CliRunner keeps pandas (Ray, say, may need it later)."""
    code = ("from click.testing import CliRunner; from panto_analytics.cli import main; "
            f"r = CliRunner().invoke(main, ['sweep', {str(DATA)!r}, '-b', '20k', '--no-cache', '-q']); "
            "assert r.exit_code == 0, r.output; import pandas; print('pandas', pandas.__name__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "pandas pandas"


def test_a_plot_loads_matplotlib_when_asked_for(tmp_path):
    assert "matplotlib" in run_cli("sweep", str(DATA), "-b", "20k", "--no-cache", "-q", "--plot",
                                   str(tmp_path / "sweep.png"))


def test_the_defaults_are_the_libraries_own():
    """``defaults`` holds what help shows; the modules that use the values agree with it."""
    from panto_analytics.formats import ADAPTERS
    from panto_analytics.policy.compaction.policies import POLICIES

    assert tuple(POLICIES) == defaults.POLICY_NAMES
    assert sorted(ADAPTERS) == sorted(defaults.SOURCE_FORMATS)


def test_the_package_resolves_every_public_name_lazily():
    assert sorted(pa._FROM) == sorted(pa.__all__)
    assert [name for name in pa.__all__ if getattr(pa, name, None) is None] == []


def test_a_read_imports_the_parsers_once_and_a_spawned_worker_again():
    """Workers inherit ``-X importtime``: a spawned one logs its own imports, forked ones share the caller's."""
    module, _, attr = ENTRY.value.partition(":")
    code = f"import sys; from {module} import {attr}; sys.exit({attr}())"
    fast_path = "panto_analytics.formats.claude_code.fast"

    def times_imported(jobs: str, workers: str | None = None) -> int:
        env = {k: v for k, v in os.environ.items() if k != WORKERS_ENV} | ({WORKERS_ENV: workers} if workers else {})
        done = subprocess.run([sys.executable, "-X", "importtime", "-c", code, "ingest", str(DATA), "--no-cache",
                               "-q", "--jobs", jobs], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr[-2000:]
        return sum(line.rpartition("|")[2].strip() == fast_path for line in done.stderr.splitlines())

    assert times_imported("1") == 1
    assert times_imported("2") == 1  # forked workers (the default) share the one import
    assert times_imported("2", "spawn") == 2
    assert times_imported("2", "off") == 1
