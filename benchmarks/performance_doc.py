"""docs/performance.md, written from one run of the benchmark (issue 31 item 8): never kept by hand.

``python -m benchmarks --markdown > docs/performance.md`` runs the benchmark
(:func:`benchmarks.bench.run_bench`) and prints :func:`render` of its
results: the goals table with the commit and the load average it was
measured at, the command that measured it, and the full report as the
benchmark prints it. With ``--against COMMIT`` the run also compares this
checkout's cold ingest with that commit's (:mod:`benchmarks.against`), and
the page shows that table too.

``tests/benchmarks/test_performance_doc.py`` checks that the checked-in page
has the structure :func:`render` gives (its headings, the goals' rows in
order, the line naming the commit and load), never its timings.

>>> verdict({"pass": None}), verdict({"pass": True}), verdict({"pass": False})
('n/a', 'met', 'missed')
"""
from __future__ import annotations

import shlex
from collections.abc import Sequence

__all__ = ["HEADINGS", "bench_command", "goal_rows", "measured_at", "render", "verdict"]

#: The page's second-level headings, in order (the comparison's only with ``--against``).
HEADINGS = ("## Goals", "## Comparison with an earlier commit", "## The whole report", "## How to read and rerun it")

#: Units of a goal's value, by key (the rest are ratios).
_UNITS = {"bytes_per_message": " bytes", "claude_resident_bytes": " bytes", "reread_seconds": " s"}


def verdict(goal: dict) -> str:
    """A goal's verdict as the page writes it."""
    return "n/a" if goal["pass"] is None else "met" if goal["pass"] else "missed"


def _value(key: str, value: float | None) -> str:
    """A goal's measured value as the page writes it.

    >>> _value("ingest_vs_floor", 1.234), _value("bytes_per_message", 78.94), _value("reread_seconds", None)
    ('1.23x', '78.9 bytes', 'not measured')
    """
    if value is None:
        return "not measured"
    unit = _UNITS.get(key, "x")
    return f"{value:,.1f}{unit}" if unit == " bytes" else f"{value:.2f}{unit}"


def _target(goal: dict) -> str:
    return f"{'<=' if goal['direction'] == 'max' else '>='} {goal['target']:g}{_UNITS.get(goal['goal'], 'x')}"


def goal_rows(goals: Sequence[dict]) -> list[str]:
    """The goals table: one row per goal of :data:`benchmarks.bench.GOALS`, in its order."""
    rows = ["| goal | measured | target | verdict |", "|---|---|---|---|"]
    rows += [f"| {g['what']} | {_value(g['goal'], g['value'])} | {_target(g)} | {verdict(g)} |" for g in goals]
    return rows


def measured_at(machine: dict) -> str:
    """The line that says where the figures come from: commit, time, load average, machine.

    >>> measured_at({"commit": "abc1234", "date": "2026-12-05 00:10", "load": [1.5, 2.25], "cpus": 2,
    ...              "python": "3.11.7", "polars": "1.0"})[:87]
    'Measured at commit `abc1234` on 2026-12-05 00:10 UTC, load average 1.5 at the start and'
    """
    start, end = machine["load"]
    return (f"Measured at commit `{machine['commit']}` on {machine['date']} UTC, load average {start:.1f} at the start "
            f"and {end:.1f} at the end ({machine['cpus']} CPUs, Python {machine['python']}, Polars {machine['polars']}).")


def bench_command(options: dict, defaults: dict) -> str:
    """The command that measured the page: ``python -m benchmarks`` with the options that differ from their defaults.

    ``options`` and ``defaults`` by option (``--sessions``); a flag's value is True or False.

    >>> bench_command({"--sessions": 3000, "--seed": 0, "--no-native": True}, {"--sessions": 1000, "--seed": 0,
    ...               "--no-native": False})
    'python -m benchmarks --sessions 3000 --no-native --markdown > docs/performance.md'
    >>> bench_command({"--no-native": False, "--against": None}, {"--no-native": None, "--against": None})
    'python -m benchmarks --markdown > docs/performance.md'
    """
    words = ["python", "-m", "benchmarks"]
    for flag, value in options.items():
        if value == defaults.get(flag) or value is None or value is False:   # a default, or a flag not given
            continue
        words += [flag] if value is True else [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    return shlex.join([*words, "--markdown"]) + " > docs/performance.md"


def render(results: dict, report: str, command: str, comparison: str | None = None) -> str:
    """The page, from :func:`benchmarks.bench.run_bench`'s ``results``, their ``report`` (:func:`~benchmarks.bench.format_report`),
    the ``command`` that measured them and, when it compared, :func:`benchmarks.against.format_table`'s table."""
    lines = [
        "# Performance",
        "",
        "<!-- Written by the command below from one run of the benchmark; do not edit: run it again. -->",
        "",
        "What the benchmark measures, the goals the issues set, and where this checkout stands, from one run",
        "on the machine named below. Timings on a shared machine are noisy: the ratios, measured side by",
        "side in one run, are what to compare; each goal is a ratio or a size unless it says seconds.",
        "",
        measured_at(results["machine"]),
        "",
        "```sh",
        command,
        "```",
        "",
        HEADINGS[0],
        "",
        *goal_rows(results["goals"]),
        "",
    ]
    if comparison is not None:
        lines += [HEADINGS[1], "",
                  "A cold in-process `read_sessions` of the same synthetic canonical corpus, this checkout and the",
                  "commit named (`python -m benchmarks.against`), fresh processes interleaved, best of each:", "",
                  comparison, ""]
    lines += [HEADINGS[2], "", "```text", report.rstrip("\n"), "```", "",
              HEADINGS[3], "",
              "`python -m benchmarks --help` says what each figure measures and how. Before a change lands,",
              "`python -m benchmarks.against --against main` (or any commit) times its cold ingest against that",
              "commit's in one run; `--instructions` adds callgrind's instruction counts, which load does not move.",
              "`python -m benchmarks.replacements CORPUS` measures each hand-written replacement of a library call",
              "against the call (issue 31 item 9). The figures of earlier runs are in the git history of this page.",
              ""]
    return "\n".join(lines)
