"""``python -m benchmarks.against``: both trees read the same messages, and the table has its columns (no timing)."""
from __future__ import annotations

import shutil
import subprocess

import pytest
from conftest import REPO

from benchmarks import against

pytestmark = pytest.mark.slow  # four fresh processes that import Polars


def _git_checkout() -> bool:
    return shutil.which("git") is not None and subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    if not _git_checkout():
        pytest.skip("not a git checkout")
    corpus = tmp_path_factory.mktemp("corpus")
    return against.main(["--against", "HEAD", "--sessions", "3", "--rounds", "2", "--repeat", "1",
                         "--corpus", str(corpus), "--json"])


def test_each_tree_and_jobs_has_a_row_of_every_column(result):
    rows = result["rows"]
    assert [(r["tree"], r["jobs"]) for r in rows] == [("this", "default"), ("this", "1"), ("against", "default"),
                                                     ("against", "1")]
    assert all(set(r) == {key for key, _ in against.COLUMNS} for r in rows)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout.strip()
    assert rows[2]["commit"] == head and rows[0]["commit"].rstrip("+") == head
    assert all(r["ingest_s"] > 0 and r["floor_s"] > 0 and r["cpu_s"] > 0 for r in rows)
    assert len({r["messages"] for r in rows}) == 1 and rows[0]["messages"] > 0   # the same corpus, the same frame
    assert all(r["vs_against"] == 1.0 for r in rows if r["tree"] == "against")
    assert result["sessions"] == 3 and result["rounds"] == 2 and result["instructions"] == {}


def test_the_table_is_markdown_with_a_line_per_row(result):
    table = against.format_table(result).splitlines()
    assert table[0] == "| " + " | ".join(heading for _, heading in against.COLUMNS) + " |"
    assert len([line for line in table if line.startswith("| this") or line.startswith("| against")]) == 4
    assert "load average" in table[-1] and "3 synthetic canonical sessions" in table[-1]


def test_a_commit_git_does_not_know_is_an_error(tmp_path):
    if not _git_checkout():
        pytest.skip("not a git checkout")
    with pytest.raises(subprocess.CalledProcessError):
        against.extract("no-such-revision-anywhere", tmp_path)


def test_jobs_must_be_default_or_a_count(capsys):
    with pytest.raises(SystemExit):
        against.main(["--against", "HEAD", "--jobs", "default,0"])
    assert "--jobs: 0" in capsys.readouterr().err
