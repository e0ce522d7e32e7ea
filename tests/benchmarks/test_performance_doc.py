"""docs/performance.md is the generator's page (``python -m benchmarks --markdown``), not a hand-kept one.

Its structure is checked, never its figures: the headings, the prose, the goals
in :data:`benchmarks.bench.GOALS`' order with their targets, the line naming the
commit and load, and the command that wrote it.
"""
from __future__ import annotations

import re

from click.testing import CliRunner
from conftest import REPO

from benchmarks import against, bench, performance_doc
from benchmarks.cli import bench as bench_command

PAGE = REPO / "docs" / "performance.md"


def _skeleton(page: str) -> list[str]:
    """``page`` less what a run measures: the report's lines, the comparison's rows, the goals' measured values
    and verdicts, numbers and the commit; the command's options."""
    out, in_report = [], False
    for line in page.splitlines():
        if line.startswith("```"):
            in_report = line == "```text"
            out.append(line)
            continue
        if in_report or line.startswith(("| this |", "| against |")):
            continue
        if line.startswith("| ") and line.count(" | ") == 3 and not line.startswith("| goal |"):
            what, _, target, _ = line.strip("| ").split(" | ")
            line = f"| {what} | {target} |"
        line = re.sub(r"^python -m benchmarks .*--markdown", "python -m benchmarks OPTIONS --markdown", line)
        line = re.sub(r"`[0-9a-f]{4,40}\+?`", "`COMMIT`", line)
        out.append(re.sub(r"\d[\d,.]*", "#", line))
    return out


def _results() -> dict:
    goals = [{"goal": key, "what": what, "value": None, "target": target, "direction": direction, "pass": None}
             for key, what, target, direction in bench.GOALS]
    machine = {"commit": "abc1234", "date": "2026-12-05 00:00", "load": [1.0, 2.0], "cpus": 2, "python": "3.11.7",
               "polars": "1.0.0"}
    return {"goals": goals, "machine": machine}


def test_the_checked_in_page_is_the_generators():
    page = PAGE.read_text()
    compared = performance_doc.HEADINGS[1] in page
    comparison = against.format_table({"rows": [], "sessions": 1, "bytes": 1, "rounds": 1, "repeat": 1, "cpus": 2,
                                       "load": [1.0, 2.0], "instructions": {}})
    rendered = performance_doc.render(_results(), "the report", "python -m benchmarks --markdown > docs/performance.md",
                                      comparison if compared else None)
    assert _skeleton(page) == _skeleton(rendered), \
        "docs/performance.md is not the generator's page: run `python -m benchmarks --markdown > docs/performance.md`"


def test_the_page_names_its_commit_load_and_every_goal():
    page = PAGE.read_text()
    assert re.search(r"^Measured at commit `[0-9a-f]{7,}\+?` on \d{4}-\d\d-\d\d \d\d:\d\d UTC, load average "
                     r"\d+\.\d at the start and \d+\.\d at the end", page, re.M)
    rows = [line for line in page.splitlines() if line.startswith("| ") and line.count(" | ") == 3][1:]
    assert [row.split(" | ")[0].removeprefix("| ") for row in rows] == [what for _, what, _, _ in bench.GOALS]
    assert all(row.endswith(("| met |", "| missed |", "| n/a |")) for row in rows)


def test_markdown_is_an_option_of_the_benchmark_command():
    help_text = CliRunner().invoke(bench_command, ["--help"]).output
    assert "--markdown" in help_text and "--against" in help_text


def test_the_goals_table_judges_each_goal():
    results = _results()
    results["goals"][0].update(value=1.5, **{"pass": True})
    results["goals"][1].update(value=3.0, **{"pass": False})
    rows = performance_doc.goal_rows(results["goals"])
    assert rows[2] == f"| {bench.GOALS[0][1]} | 1.50x | <= 2x | met |"
    assert rows[3] == f"| {bench.GOALS[1][1]} | 3.00x | >= 20x | missed |"
    assert rows[4].endswith("| not measured | <= 64 bytes | n/a |")
