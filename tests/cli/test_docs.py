"""docs/cli.md is the generated ``--help`` of every command, kept in step with the code."""

import pytest
from conftest import REPO

from panto_analytics.cli.docs import cli_reference

CLI_MD = REPO / "docs" / "cli.md"


def test_cli_reference_is_up_to_date():
    assert CLI_MD.read_text() == cli_reference(), \
        "docs/cli.md is stale: run `python -m panto_analytics.cli.docs > docs/cli.md`"


def test_every_command_is_documented_with_examples():
    text = cli_reference()
    for command in ("splits", "sweep", "report", "recommend", "ingest", "bench", "cache info", "cache clear"):
        assert f"## panto-analytics {command}\n" in text
    for command in ("splits", "sweep", "report", "recommend", "ingest", "bench"):
        section = text.split(f"## panto-analytics {command}\n", 1)[1].split("\n## ", 1)[0]
        assert "Example" in section, f"{command} --help shows no example"


def test_the_readme_is_a_five_minute_read():
    """Issue 31: what the tool answers, run and test, a decision's five commands, the library, where the docs
    are; the long forms live in docs/ (guide.md, performance.md), so the README stays short."""
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    for command in ("ingest", "cost", "replay", "recommend", "report"):
        assert f"panto-analytics {command} " in readme, command
    for doc in ("docs/guide.md", "docs/performance.md", "docs/cli.md", "docs/architecture.md"):
        assert doc in readme and (REPO / doc).is_file(), doc
    assert "## Speed" not in readme and "load average" not in readme


def test_the_quick_start_plot_is_ignored_by_git():
    # The Quick start writes its plot where it runs, the checkout's root: git must not see it (issue 32).
    import re
    import shutil
    import subprocess

    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    quick_start = (REPO / "README.md").read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    plots = re.findall(r"--plot (\S+)", quick_start)
    assert plots
    for plot in plots:
        assert subprocess.run(["git", "check-ignore", "-q", plot], cwd=REPO).returncode == 0, plot
