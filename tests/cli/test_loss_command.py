"""``panto-analytics loss`` and ``replay --loss``: the tables equal the library's."""
from __future__ import annotations

import io

import polars as pl
from click.testing import CliRunner
from conftest import DATA
from tool_sessions import pi_session

import panto_analytics as pa
from panto_analytics.cli import main
from panto_analytics.outcomes.recorded_refetch import refetch, refetch_summary


def test_replay_with_loss_adds_the_loss_of_every_event(tmp_path):
    out = CliRunner().invoke(main, ["replay", str(DATA), "--no-cache", "--window", "24k", "--reserve", "4k",
                                    "-b", "2k,20k", "--loss", "--horizon", "10", "-o", "-",
                                    "--events", str(tmp_path / "e.parquet"), "--sessions", str(tmp_path / "s.parquet")])
    assert out.exit_code == 0, out.output
    messages = pa.read_sessions(DATA)
    lost = pa.loss(messages, pa.replay(messages, [2_000, 20_000], window=24_000, reserve=4_000), horizon=10)
    assert pl.read_parquet(tmp_path / "e.parquet").equals(lost.events)
    assert pl.read_parquet(tmp_path / "s.parquet").equals(lost.sessions)
    table = pl.read_csv(io.StringIO(out.stdout))
    for budget, orphans, calls in table.select("budget", "orphan_calls", "window_calls").rows():
        events = lost.events.filter(pl.col("budget") == budget)
        assert (orphans, calls) == (events["orphan_calls"].sum(), events["window_calls"].sum())
    assert lost.events["window_calls"].sum() > 0


def test_loss_checks_the_recorded_compactions(tmp_path):
    path = pi_session(tmp_path)
    out = CliRunner().invoke(main, ["loss", str(path), "--no-cache", "-o", "-", "--output-format", "json",
                                    "--cuts", str(tmp_path / "cuts.parquet")])
    assert out.exit_code == 0, out.output
    corpus = pa.ingest.read_corpus([path])
    cuts = refetch(corpus.messages, corpus.compactions, corpus.sessions)
    assert pl.read_parquet(tmp_path / "cuts.parquet").equals(cuts)
    assert pl.read_json(io.StringIO(out.stdout)).equals(refetch_summary(cuts))
    assert "only 1 cut behind" in out.stderr


def test_an_agent_without_a_compaction_is_named():
    out = CliRunner().invoke(main, ["loss", str(DATA), "--no-cache", "--horizon", "5"])
    assert out.exit_code == 0, out.output
