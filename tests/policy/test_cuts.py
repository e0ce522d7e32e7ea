"""splits_at: libpanto's split at each recorded compaction, against the Zig oracle, and the agent's side."""
from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from adapter_checks import BUDGETS, canonical, first_line_is_json, parse
from click.testing import CliRunner
from conftest import FIXTURES, REALDATA, oracle_module

import panto_analytics as pa
from panto_analytics.analysis.compactions import agent_vs_libpanto, compaction_table
from panto_analytics.cli import main
from panto_analytics.policy.cuts import splits_at

PI_COMPACTIONS = REALDATA / "pi-compactions" / "before-compaction.jsonl"
needs_pi_compactions = pytest.mark.skipif(not PI_COMPACTIONS.is_file(), reason=f"{PI_COMPACTIONS} is not present")

FIXTURE_FILES = [FIXTURES / "pi" / "v1.jsonl", FIXTURES / "pi" / "v3_branching.jsonl",
                 FIXTURES / "claude_code" / "compaction.jsonl", FIXTURES / "claude_code" / "preserved.jsonl",
                 FIXTURES / "codex" / "compacted.jsonl"]


def _real_files_with_compactions() -> list[Path]:
    if not REALDATA.is_dir():
        return []
    files = [p for p in sorted(REALDATA.rglob("*.jsonl")) if first_line_is_json(p)]
    corpus = pa.ingest.read_corpus(files, skip_invalid=True, cache=False)
    with_compactions = corpus.sessions.filter(pl.col("compactions") > 0)["file"].to_list()
    return [Path(f) for f in with_compactions]


def _moments(path: Path) -> list[list[dict]]:
    """The conversation at each recorded compaction, as the oracle's canonical messages."""
    messages, meta, _ = parse(path, skip_invalid=True)  # a real bad line (xcsh-session.jsonl:440) is skipped
    out = []
    for c in meta.compactions:
        a, t = c["anchor_index"], c["trigger_index"]
        later = [m for m in messages[a + 1:t] if not any(b["type"] == "compaction_summary" for b in m.content)]
        out.append(canonical(messages[:a] + later))
    return out


def assert_matches_oracle(paths: list[Path]) -> int:
    oracle = oracle_module()
    moments = [m for p in paths for m in _moments(p)]
    want = [pair for row in oracle.oracle_splits(moments, BUDGETS) for pair in row]
    corpus = pa.ingest.read_corpus(paths, cache=False, skip_invalid=True)
    got = splits_at(corpus.messages, corpus.compactions, BUDGETS)
    assert got.height == len(moments) * len(BUDGETS)
    assert list(got.select("prefix_end", "kept_turns").iter_rows()) == want
    assert got["n_messages"].to_list() == [len(m) for m in moments for _ in BUDGETS]
    return len(moments)


def test_fixture_compactions_match_the_oracle():
    assert assert_matches_oracle(FIXTURE_FILES) == 7


@needs_pi_compactions
def test_real_pi_compactions_match_the_oracle_and_the_recording():
    assert assert_matches_oracle([PI_COMPACTIONS]) == 2
    corpus = pa.ingest.read_corpus([PI_COMPACTIONS], cache=False)
    table = corpus.compactions
    # pi keeps from its first kept entry up to the compaction record, which comes after them in the file.
    assert table.select("anchor_seq", "first_kept_seq", "trigger_seq", "kept_end_seq").rows() == [
        (288, 289, 355, 355), (546, 547, 624, 624)]
    rows = agent_vs_libpanto(corpus, [20_000])
    assert rows["agent_kept_messages"].to_list() == [66, 77]
    # libpanto's turn costs of the whole conversation at the moment add up to what pi recorded before compacting
    # for the first one (its context had no summary yet); the agent keeps about 20k-25k of it.
    assert rows["active_tokens"].to_list()[0] == table["tokens_before"][0]
    assert rows["agent_kept_tokens"].to_list() == [21_511, 24_858]
    assert rows["kept_tokens"].to_list() == [0, 8_312]


def test_agent_kept_tokens_are_libpantos_suffix_sum_when_the_agent_kept_whole_turns():
    corpus = pa.ingest.read_corpus(FIXTURE_FILES + ([PI_COMPACTIONS] if PI_COMPACTIONS.is_file() else []), cache=False)
    rows = splits_at(corpus.messages, corpus.compactions, [0, 10**12])
    full = rows.filter(pl.col("budget") == 10**12)
    conversation = pa.policy.cuts.cut_conversations(corpus.messages, corpus.compactions).collect()
    turns = pa.turns(conversation.drop("orig_seq")).join(
        conversation.select("session_id", start_seq="seq", orig_start="orig_seq"), on=["session_id", "start_seq"])
    checked = 0
    for r in full.iter_rows(named=True):
        first = r["agent_first_kept_seq"]
        if first is None or first >= r["trigger_seq"]:
            continue
        mine = turns.filter(pl.col("session_id") == r["cut"])
        if first not in mine["orig_start"].to_list():
            continue  # the agent cut a turn: charged on its kept rows
        assert r["agent_kept_tokens"] == mine.filter(pl.col("orig_start") >= first)["tokens"].sum()
        checked += 1
    assert checked >= 1


def test_nothing_kept_and_cuts_without_rows():
    corpus = pa.ingest.read_corpus([FIXTURES / "claude_code" / "compaction.jsonl"], cache=False)
    rows = splits_at(corpus.messages, corpus.compactions, [20_000])
    assert rows.select("agent_first_kept_seq", "agent_kept_messages", "agent_kept_tokens").rows() == [(None, 0, 0)]
    at_start = corpus.compactions.with_columns(anchor_seq=pl.lit(0, pl.UInt32), trigger_seq=pl.lit(0, pl.UInt32))
    empty = splits_at(corpus.messages, at_start, [0, 20_000])
    assert empty.select("n_messages", "prefix_end", "kept_turns", "kept_tokens").rows() == [(0, 0, 0, 0)] * 2


def test_codex_keeps_its_replacement_history_by_word_estimates():
    corpus = pa.ingest.read_corpus([FIXTURES / "codex" / "compacted.jsonl"], cache=False)
    rows = splits_at(corpus.messages, corpus.compactions, [20_000])
    words = corpus.messages["words"].to_list()
    # The first replacement history holds a developer item (seq 3, a system row) and one user message (seq 4):
    # Codex kept the user message; the developer item it inserts afresh is not counted.
    assert rows.select("agent_first_kept_seq", "agent_kept_messages").rows() == [(4, 1), (8, 1), (None, 0)]
    assert rows["agent_kept_tokens"].to_list()[1] == -(-words[8] * 13 // 10)


@pytest.mark.slow
def test_every_real_recording_with_compactions_matches_the_oracle():
    files = _real_files_with_compactions()
    if not files:
        pytest.skip("no real recording with compactions under ../shared/realdata")
    assert assert_matches_oracle(files) >= 1


def test_the_cli_prints_the_table_and_writes_the_rows(tmp_path):
    path = FIXTURES / "codex" / "compacted.jsonl"
    out = CliRunner().invoke(main, ["compactions", str(path), "--no-cache", "-b", "8k,20k"])
    assert out.exit_code == 0, out.output
    assert "tokens@20k" in out.output and "agent_tokens" in out.output
    out = CliRunner().invoke(main, ["compactions", str(path), "--no-cache", "-b", "8k,20k",
                                    "-o", str(tmp_path / "c.parquet"), "--plot", str(tmp_path / "c.png")])
    assert out.exit_code == 0, out.output
    written = pl.read_parquet(tmp_path / "c.parquet")
    want = agent_vs_libpanto(pa.ingest.read_corpus([path], cache=False), [8_000, 20_000])
    assert written.equals(want) and (tmp_path / "c.png").stat().st_size > 0
    assert compaction_table(want).height == 3


@needs_pi_compactions
def test_the_cli_on_the_real_pi_compactions():
    out = CliRunner().invoke(main, ["compactions", str(PI_COMPACTIONS), "--no-cache", "-b", "20k"])
    assert out.exit_code == 0, out.output
    assert "21,511" in out.output and "8,312" in out.output  # numbers as people read them (issue 19 item 15)
