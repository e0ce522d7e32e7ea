"""``bench``: the benchmark of a source checkout (``python -m benchmarks``), run from the product's command."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from .app import main

__all__ = ["CHECKOUT", "HOW_TO_GET", "bench", "benchmark_command"]

#: Where the benchmark lives in a source checkout: beside the package folder.
CHECKOUT = Path(__file__).resolve().parents[2]

HOW_TO_GET = ("the benchmark is not part of the installed package: it lives in the source repository's "
              "benchmarks/ folder. Clone the repository, `pip install -e .` there, and run "
              "`python -m benchmarks` (or `panto-analytics bench`) from it")


def benchmark_command() -> click.Command:
    """The ``python -m benchmarks`` command of the source checkout; UsageError saying how to get it otherwise."""
    if not (CHECKOUT / "benchmarks" / "cli.py").is_file():
        raise click.UsageError(HOW_TO_GET)
    if str(CHECKOUT) not in sys.path:
        sys.path.append(str(CHECKOUT))
    # The one import of ours from outside the package, and a plain one: the architecture test sees it and allows
    # it here only (docs/architecture.md).
    from benchmarks.cli import bench as command

    return command


@main.command(context_settings={"ignore_unknown_options": True, "help_option_names": []})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def bench(args: tuple[str, ...]) -> None:
    """Measure ingest, frame size and the budget sweep on a synthetic corpus.

    Runs the benchmark of the source checkout (`python -m benchmarks`) with
    ARGS; `panto-analytics bench --help` lists its options. The benchmark and
    its synthetic corpora are not part of the installed package: from an
    installed wheel this command says where to get them.

    \b
    Examples:
      panto-analytics bench
      panto-analytics bench --sessions 50 --budgets 16 --json
      panto-analytics bench --claude-sessions 0
    """
    benchmark_command().main(args=list(args), prog_name="panto-analytics bench", standalone_mode=False)
