"""``sessions``, the session filters every reading command takes, and the default locations."""
from __future__ import annotations

import io
import json

import polars as pl
import pytest
from click.testing import CliRunner

from panto_analytics.cli import main


def _session(path, sid, created, turns, *, cwd=None, model="claude-opus-4-5-20251101"):
    """A canonical session of ``turns`` (user words, assistant usage total) pairs."""
    lines = [{"type": "session", "id": sid, "model": model, "created_at": created}]
    for words, total in turns:
        lines.append({"type": "message", "role": "user", "content": [{"type": "text", "text": "w " * words}]})
        lines.append({"type": "message", "role": "assistant", "content": [{"type": "text", "text": "ok"}],
                      "usage": {"input": total - 10, "output": 10, "cache_read": 0, "cache_write": 0}})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


@pytest.fixture
def corpus(tmp_path):
    d = tmp_path / "c"
    d.mkdir()
    _session(d / "small.jsonl", "small", "2026-11-01T10:00:00Z", [(3, 1000), (3, 2000)])
    _session(d / "huge.jsonl", "huge", "2026-11-02T10:00:00Z", [(3, 1000), (3, 31000)], model="gpt-5")
    _session(d / "mid.jsonl", "mid", "2026-11-03T10:00:00Z", [(3, 1000), (3, 9000)])
    return d


def run(*args, env=None):
    return CliRunner().invoke(main, [*map(str, args), "--no-cache"], env=env)


def _csv(result) -> pl.DataFrame:
    assert result.exit_code == 0, result.output
    return pl.read_csv(io.StringIO(result.stdout))


def test_sessions_lists_one_row_per_session(corpus):
    table = _csv(run("sessions", corpus, "-o", "-"))
    assert sorted(table["session_id"]) == ["huge", "mid", "small"]
    assert {"project", "is_subagent", "model", "model_raw"} <= set(table.columns)
    assert set(table["model"]) == {"claude-opus-4-5", "gpt-5"}


def test_worst_ranks_by_the_share_of_the_last_turn_the_budget_covers(corpus):
    table = _csv(run("sessions", corpus, "--budget", "5k", "--worst", "2", "-o", "-"))
    # Last turns: huge 30,000 tokens (5k covers 1/6), mid 8,000 (5/8); small's 1,000 fits.
    assert table["session_id"].to_list() == ["huge", "mid"]
    assert table["kept_turns"].to_list() == [0, 0]
    assert table["last_turn_tokens"].to_list() == [30_000, 8_000]
    assert table["line"].to_list() == [4, 4]           # the last turn's user message, line 4 of its file
    assert table["file"].str.ends_with("huge.jsonl")[0]


def test_worst_needs_a_budget(corpus):
    result = run("sessions", corpus, "--worst", "3")
    assert result.exit_code == 2 and "--worst N needs --budget" in result.stderr


def test_filters_apply_to_every_reading_command(corpus):
    result = run("splits", corpus, "-b", "5k", "--since", "2026-11-02", "--model", "claude-opus-4-5", "-o", "-")
    assert _csv(result)["session_id"].to_list() == ["mid"]
    assert "--since 2026-11-02 --model claude-opus-4-5: kept 1 of 3 sessions" in result.stderr
    sweep = _csv(run("sweep", corpus, "-b", "5k", "--until", "2026-11-01", "-o", "-"))
    assert sweep["sessions"].to_list() == [1]


def test_a_filter_that_keeps_nothing_is_an_error_not_an_empty_table(corpus):
    result = run("sweep", corpus, "-b", "5k", "--project", "nowhere")
    assert result.exit_code == 1
    assert "none of the 3 sessions read matches --project nowhere (projects: " in result.stderr


def test_a_bad_date_is_a_usage_error(corpus):
    result = run("sessions", corpus, "--since", "last tuesday")
    assert result.exit_code == 2 and "YYYY-MM-DD" in result.stderr


def test_no_path_reads_the_default_locations_that_exist(corpus, tmp_path):
    home = tmp_path / "home"
    projects = home / ".claude" / "projects"
    projects.mkdir(parents=True)
    (projects / "s.jsonl").write_text((corpus / "mid.jsonl").read_text())
    env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": None, "CODEX_HOME": None}
    result = run("sessions", "-o", "-", env=env)
    assert _csv(result)["session_id"].to_list() == ["mid"]
    assert f"no PATH given: reading {projects}" in result.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run("sessions", env={"HOME": str(empty), "CLAUDE_CONFIG_DIR": None, "CODEX_HOME": None})
    assert result.exit_code == 1
    assert "no PATH given and none of the default session folders exists" in result.stderr
    assert str(empty / ".claude" / "projects") in result.stderr


def test_a_filter_that_keeps_nothing_says_what_there_is(corpus):
    result = run("sweep", corpus, "-b", "5k", "--model", "nothing")
    assert result.exit_code == 1
    line = result.stderr.strip()
    assert "\n" not in line and "models: " in line
    for model in _csv(run("sessions", corpus, "-o", "-"))["model"].unique().to_list():
        assert model in line
