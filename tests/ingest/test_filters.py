"""Choosing sessions by date, project, model and subagent (``SessionFilter``, ``filter_corpus``)."""
from __future__ import annotations

import json
from datetime import UTC, datetime

import polars as pl
import pytest
from conftest import REALDATA

import panto_analytics as pa
from panto_analytics.ingest.filters import SessionFilter, filter_corpus, parse_when

UTC = UTC


def _write(path, sid, created, model="claude-opus-4-5-20251101"):
    lines = [{"type": "session", "id": sid, "model": model, "created_at": created},
             {"type": "message", "role": "user", "content": [{"type": "text", "text": "hi there"}]},
             {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "ok"}],
              "usage": {"input": 10, "output": 2, "cache_read": 0, "cache_write": 0}}]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


@pytest.fixture
def corpus(tmp_path):
    _write(tmp_path / "a.jsonl", "a", "2026-10-31T23:59:59Z")
    _write(tmp_path / "b.jsonl", "b", "2026-11-01T00:00:00Z", model="gpt-5")
    _write(tmp_path / "c.jsonl", "c", "2026-11-02T12:00:00Z")
    return pa.ingest.read_corpus(tmp_path)


def _ids(corpus, **kw):
    kept = filter_corpus(corpus, SessionFilter.parse(**kw))
    ids = sorted(kept.sessions["session_id"].cast(str))
    assert sorted(kept.messages["session_id"].cast(str).unique()) == ids  # every table agrees
    return ids


def test_dates_cover_whole_days_in_utc(corpus):
    assert _ids(corpus, since="2026-11-01") == ["b", "c"]
    assert _ids(corpus, until="2026-11-01") == ["a", "b"]
    assert _ids(corpus, since="20261101", until="20261101") == ["b"]
    assert _ids(corpus, until="2026-11-01T00:00:00Z") == ["a", "b"]   # a datetime is inclusive
    assert _ids(corpus, until="2026-10-31T23:59:58") == []


def test_models_match_normalized_or_raw(corpus):
    assert _ids(corpus, model=["claude-opus-4-5"]) == ["a", "c"]
    assert _ids(corpus, model=["claude-opus-4-5-20251101"]) == ["a", "c"]
    assert _ids(corpus, model=["gpt-5", "nothing"]) == ["b"]


def test_no_filter_is_the_same_corpus(corpus):
    assert filter_corpus(corpus, SessionFilter()) is corpus
    assert not SessionFilter.parse().active


def test_a_session_without_timestamps_fails_a_date_filter():
    t = pl.DataFrame({"first_timestamp": [None, datetime(2026, 1, 1, tzinfo=UTC)]},
                     schema={"first_timestamp": pl.Datetime("ms", "UTC")})
    assert t.filter(SessionFilter.parse(since="2025-01-01").expr()).height == 1


@pytest.mark.parametrize("bad", ["yesterday", "2026-13-01", "2026/11/01"])
def test_a_bad_date_says_what_is_accepted(bad):
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        parse_when(bad)


needs_realdata = pytest.mark.skipif(not REALDATA.is_dir(), reason="../shared/realdata is not present")


@needs_realdata
def test_real_recordings_have_projects_and_subagents():
    corpus = pa.ingest.read_corpus([REALDATA / "claude-code", REALDATA / "codex", REALDATA / "pi"], skip_invalid=True)
    s = corpus.sessions
    sub = s.filter(pl.col("is_subagent"))
    # Claude Code's subagents/ transcripts and Codex's spawned threads, and nothing else.
    assert sub["file"].str.contains("subagents/|rollout-").all()
    assert sub.filter(pl.col("source_format") == "claude-code").height == len(list(REALDATA.glob("claude-code/*/*/subagents/*.jsonl")))
    assert sub.filter(pl.col("source_format") == "codex").height >= 1
    assert s.filter(pl.col("is_subagent"))["parent_session_id"].null_count() == 0
    # Every session has a project: a recorded working directory, or its Claude Code folder.
    assert s["project"].null_count() == 0
    pi = s.filter(pl.col("source_format") == "pi")
    assert set(pi["project"]) == {"/Users/badlogic/workspaces/pi-mono"}
    mains = filter_corpus(corpus, SessionFilter.parse(subagents=False))
    assert mains.sessions.height == s.height - sub.height
    by_folder = filter_corpus(corpus, SessionFilter.parse(project=["-Users-badlogic-workspaces-pi-mono"]))
    assert by_folder.sessions.height == pi.height
    assert filter_corpus(corpus, SessionFilter.parse(project=["pi-mono"])).sessions.height == pi.height
    # The date-stamped raw names group under one model.
    raw = s.filter(pl.col("model_raw") == "claude-opus-4-5-20251101")
    assert raw.height > 0 and set(raw["model"]) == {"claude-opus-4-5"}


def test_models_and_projects_match_whatever_the_case(corpus, tmp_path):
    assert _ids(corpus, model=["Claude-Opus-4-5"]) == ["a", "c"]
    assert _ids(corpus, model=["GPT-5"]) == ["b"]
    t = pl.DataFrame({"session_id": ["a", "b"], "project": ["/home/me/My-App", "/w/other"], "model": ["m", "m"],
                      "model_raw": ["m", "m"], "is_subagent": [False, False], "first_timestamp": [None, None]})
    for name in ("my-app", "MY-APP", "/home/me/my-app", "-HOME-ME-MY-APP"):
        assert t.filter(SessionFilter.parse(project=[name]).expr())["session_id"].to_list() == ["a"], name


def test_what_exists_lists_the_values_a_filter_could_have_matched(corpus):
    text = SessionFilter.parse(model=["nothing"]).what_exists(corpus.sessions)
    assert text == "models: claude-opus-4-5 (2 sessions), gpt-5 (1 session)"
    text = SessionFilter.parse(since="2030-01-01", project=["x"]).what_exists(corpus.sessions)
    assert text.startswith("sessions began 2026-10-31 to 2026-11-02; projects: none recorded")
