"""``ingest`` and ``cache info|clear`` on the command line: the summary, outputs, the cache, exit codes."""
from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from conftest import FIXTURES, canonical_session

import panto_analytics as pa
from panto_analytics.cli import main
from panto_analytics.ingest.cache import Cache, FileKey


@pytest.fixture
def corpus(tmp_path) -> Path:
    d = tmp_path / "corpus"
    d.mkdir()
    canonical_session(d / "a.jsonl", 2, user="q", assistant="a", usage=True)
    canonical_session(d / "b.jsonl", 3, user="q", assistant="a", usage=True)
    return d


@pytest.fixture
def env(tmp_path) -> dict:
    """The default cache in a temporary folder, never in the user's home."""
    return {"XDG_CACHE_HOME": str(tmp_path / "xdg"), "PANTO_ANALYTICS_CACHE": None}


def run(env, *args):
    return CliRunner(env=env).invoke(main, [str(a) for a in args])


def summary(output: str) -> dict[str, str]:
    """The summary table as {label: count}, plus {"cache": what the cache did}."""
    rows = {}
    for line in output.splitlines():
        if m := re.match(r"^\s*([\d,]+)  (.*)$", line):
            rows[m.group(2)] = m.group(1)
        elif m := re.match(r"^\s*cache: (.*)$", line):
            rows["cache"] = m.group(1)
    return rows


def test_ingest_ends_with_the_summary_and_fills_the_default_cache(corpus, env, tmp_path):
    first = run(env, "ingest", corpus)
    assert first.exit_code == 0, first.output
    s = summary(first.stdout)
    # 2 + 3 turns: 10 messages, 5 assistant calls with usage
    assert (s["files"], s["sessions"], s["messages"], s["API calls"]) == ("2", "2", "10", "5")
    assert (s["skipped lines"], s["ignored records"]) == ("0", "0")
    assert s["cache"] == "0 cached, 2 parsed, 0 rebuilt"
    assert Cache(tmp_path / "xdg" / "panto_analytics").info()["entries"] == 2
    second = run(env, "ingest", corpus)
    assert summary(second.stdout)["cache"] == "2 cached, 0 parsed, 0 rebuilt"


def test_no_cache_reads_and_writes_nothing(corpus, env, tmp_path):
    result = run(env, "ingest", corpus, "--no-cache", "--quiet")
    assert result.exit_code == 0
    assert summary(result.stdout)["cache"] == "off"
    assert not (tmp_path / "xdg").exists()


def test_cache_option_and_environment_choose_the_folder(corpus, env, tmp_path):
    assert run(env, "ingest", corpus, "--cache", tmp_path / "mine").exit_code == 0
    assert Cache(tmp_path / "mine").info()["entries"] == 2
    env = {**env, "PANTO_ANALYTICS_CACHE": str(tmp_path / "from-env")}
    assert run(env, "ingest", corpus).exit_code == 0
    assert Cache(tmp_path / "from-env").info()["entries"] == 2


def test_outputs_are_the_library_tables(corpus, env, tmp_path):
    out, sess, comp = tmp_path / "m.parquet", tmp_path / "s.csv", tmp_path / "c.json"
    result = run(env, "ingest", corpus, FIXTURES / "codex" / "compacted.jsonl", "-o", out, "--sessions", sess,
                 "--compactions", comp)
    assert result.exit_code == 0, result.output
    c = pa.ingest.read_corpus([corpus, FIXTURES / "codex" / "compacted.jsonl"])
    assert pl.read_parquet(out).equals(c.messages)
    assert pl.read_csv(sess)["session_id"].to_list() == c.sessions["session_id"].cast(str).to_list()
    assert pl.read_json(comp).height == c.compactions.height > 0
    assert f"wrote {c.messages.height} rows to {out}" in result.stderr


def test_skipped_lines_and_ignored_records_are_listed_by_reason_and_type(corpus, env):
    with (corpus / "b.jsonl").open("a") as f:
        f.write("not json\nnot json either\n")
    strict = run(env, "ingest", corpus)
    assert strict.exit_code == 1
    assert f"{corpus / 'b.jsonl'}:7: malformed JSON" in strict.stderr and "Traceback" not in strict.output
    result = run(env, "ingest", corpus, FIXTURES / "claude_code" / "streaming.jsonl", "--skip-invalid")
    assert result.exit_code == 0, result.output
    s = summary(result.stdout)
    assert s["skipped lines"] == "2"
    reasons = [k for k in s if k.startswith("  malformed JSON")]
    assert reasons and sum(int(s[k]) for k in reasons) == 2
    ignored = {k.strip(): int(v.replace(",", "")) for k, v in s.items() if k.startswith("  claude-code: ")}
    assert ignored and sum(ignored.values()) == int(s["ignored records"])


def test_a_corrupt_cache_entry_is_reported_and_rebuilt(corpus, env, tmp_path):
    cache = tmp_path / "c"
    for f in ("a.jsonl", "b.jsonl"):  # one read each: a pack each
        run(env, "ingest", corpus / f, "--cache", cache)
    entry = Cache(cache).pack_of(FileKey.of(corpus / "a.jsonl"), None)
    assert entry is not None
    entry.write_bytes(b"garbage")
    result = run(env, "ingest", corpus, "--cache", cache)
    assert result.exit_code == 0
    assert "warning: cache: 1 corrupt or foreign cache file in" in result.stderr
    assert summary(result.stdout)["cache"] == "1 cached, 1 parsed, 1 rebuilt"


def test_every_reading_command_takes_the_cache_options(corpus, env):
    for command in ("splits", "sweep", "ingest"):
        result = run(env, command, "--help")
        assert all(opt in result.output for opt in ("--cache", "--no-cache", "--quiet", "--jobs")), command


def test_cache_info_and_clear(corpus, env, tmp_path):
    cache = tmp_path / "c"
    run(env, "ingest", corpus, "--cache", cache)
    info = run(env, "cache", "info", "--cache", cache)
    assert info.exit_code == 0
    rows = dict(re.split(r"\s{2,}", line, maxsplit=1) for line in info.stdout.splitlines())
    assert rows["cache"] == str(cache) and rows["entries"] == "2" and rows["packs"] == "1"
    cleared = run(env, "cache", "clear", "--cache", cache)
    assert cleared.exit_code == 0 and "removed 3 files" in cleared.stdout  # the pack, the manifest and the tag
    assert not cache.exists()
    assert re.search(r"^entries\s+0$", run(env, "cache", "info", "--cache", cache).stdout, re.M)


def test_the_summary_counts_agree_and_a_whole_skipped_file_is_a_file(tmp_path):
    one = tmp_path / "one"
    one.mkdir()
    (one / "s.jsonl").write_text('{"type":"session","id":"s"}\n'
                                 '{"type":"message","role":"user","content":[{"type":"text","text":"hi"}]}\n')
    (one / "pretty.jsonl").write_text('{\n  "a": 1\n}\n')
    # Named (found in a folder, it would be a stray: left out with a note, issue 32), it is read and skipped whole.
    result = CliRunner().invoke(main, ["ingest", str(one / "s.jsonl"), str(one / "pretty.jsonl"), "--no-cache",
                                       "--skip-invalid"])
    assert result.exit_code == 0, result.output
    rows = dict(m.group(2, 1) for m in re.finditer(r"^\s*([\d,]+)  (\S.*)$", result.stdout, re.M))
    assert rows["session"] == "1" and rows["message"] == "1"
    assert rows["file skipped whole"] == "1" and rows["skipped lines"] == "0"
    assert "1 sessions" not in result.stdout and "skipped line\n" not in result.stdout
