"""A session call by call (analysis.timeline, plots.timeline, the ``timeline`` command)."""
from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from conftest import DATA, REALDATA, legend_boxes

import panto_analytics as pa
from panto_analytics.analysis.timeline import BREAK_CAUSES, pick_session, session_timeline
from panto_analytics.cli import main
from panto_analytics.outcomes.cost import costs

PI_COMPACTIONS = REALDATA / "pi-compactions" / "before-compaction.jsonl"
needs_pi_compactions = pytest.mark.skipif(not PI_COMPACTIONS.is_file(), reason=f"{PI_COMPACTIONS} is not present")


def _session(path: Path, calls: list[tuple[str, str, dict]]) -> Path:
    """A canonical session: a user message, then per (time, model, usage) an assistant call and a user reply."""
    lines = [{"type": "session", "id": "s", "model": calls[0][1]}]
    for at, model, usage in calls:
        lines.append({"type": "message", "role": "user", "content": [{"type": "text", "text": "go on"}],
                      "timestamp": at})
        lines.append({"type": "message", "role": "assistant", "content": [{"type": "text", "text": "done"}],
                      "usage": usage, "timestamp": at, "model": model})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _usage(read: int, write: int, inp: int = 10, out: int = 100) -> dict:
    return {"input": inp, "output": out, "cache_read": read, "cache_write": write}


def test_each_cache_break_has_its_cause_and_its_cost(tmp_path):
    path = _session(tmp_path / "s.jsonl", [
        ("2026-01-01T10:00:00Z", "claude-sonnet-4-5", _usage(0, 10_000)),        # first call: writes the prefix
        ("2026-01-01T10:01:00Z", "claude-sonnet-4-5", _usage(10_000, 500)),      # a hit
        ("2026-01-01T10:30:00Z", "claude-sonnet-4-5", _usage(0, 10_600)),        # 29 minutes idle: written again
        ("2026-01-01T10:31:00Z", "claude-sonnet-4-5", _usage(0, 10_700)),        # another model (below)
    ])
    # The canonical format names one model a session; the last call goes to another, as a recorder would write it.
    messages = pa.read_sessions(path)
    last = messages["seq"].max()
    messages = messages.with_columns(pl.when(pl.col("seq") == last).then(pl.lit("claude-haiku-4-5"))
                                     .otherwise(pl.col("model").cast(pl.String)).cast(pl.Categorical).alias("model"))
    tl = session_timeline(messages, "s")
    assert tl.calls["break_cause"].to_list() == ["first call", None, "idle", "model switch"]
    assert set(tl.calls["break_cause"].drop_nulls()) <= set(BREAK_CAUSES)
    # A break costs what the rewritten prefix costs beyond reading it: sonnet-4-5 writes at $3.75, reads at
    # $0.30 per MTok (genai-prices); haiku-4-5 at $1.25 and $0.10.
    idle, switch = tl.calls["break_cost_usd"].to_list()[2:]
    assert idle == pytest.approx(10_600 * (3.75 - 0.30) / 1e6)
    assert switch == pytest.approx(10_700 * (1.25 - 0.10) / 1e6)
    assert tl.calls["break_cost_usd"][1] is None
    # The context is the prompt: input + cache read + cache write.
    assert tl.calls["context"].to_list() == [10_010, 10_510, 10_610, 10_710]


def test_the_calls_add_up_to_the_sessions_bill(tmp_path):
    path = _session(tmp_path / "s.jsonl", [("2026-01-01T10:00:00Z", "claude-sonnet-4-5", _usage(0, 5_000)),
                                           ("2026-01-01T10:02:00Z", "claude-sonnet-4-5", _usage(5_000, 800))])
    messages = pa.read_sessions(path)
    tl = session_timeline(messages, "s")
    assert tl.cost_usd == pytest.approx(costs(messages, by="session")["cost_usd"].item(), rel=1e-12)


def test_simulated_compactions_are_the_replays_events():
    messages = pa.read_sessions(DATA)
    sid = "0963a6d2-9c87-43a8-8b29-8037e82ed488"
    tl = session_timeline(messages, sid, window=32_000, budget=4_000, prices=None)
    events = pa.replay(messages.filter(pl.col("session_id") == sid), [4_000], window=32_000).events
    simulated = tl.compactions.filter(pl.col("kind") == "simulated")
    assert simulated.height == events.height > 0
    assert simulated["before"].to_list() == events["context_before"].cast(pl.Int64).to_list()
    assert simulated["after"].to_list() == events["context_after"].cast(pl.Int64).to_list()
    # Each sits at its trigger call: the last call at or before the trigger message.
    trigger_calls = [tl.calls.filter(pl.col("seq") <= t).height - 1 for t in events["trigger_seq"].to_list()]
    assert simulated["call"].to_list() == trigger_calls
    # After the compaction the replayed prompt is smaller than the recorded one, never larger.
    after = tl.calls.filter(pl.col("call") > trigger_calls[0])
    assert (after["replayed_context"] <= after["context"]).all()
    assert (after["replayed_context"] < after["context"]).any()


@needs_pi_compactions
def test_a_real_recorded_compaction_is_at_its_call_and_the_cache_figures_are_costs():
    corpus = pa.ingest.read_corpus(PI_COMPACTIONS)
    sid = str(corpus.sessions["session_id"][0])
    tl = session_timeline(corpus.messages, sid, compactions=corpus.compactions, sessions=corpus.sessions)
    recorded = tl.compactions.filter(pl.col("kind") == "recorded")
    assert recorded.height == corpus.compactions.height == 2
    calls = tl.calls
    for row in recorded.iter_rows(named=True):
        at, nxt = calls.row(row["call"], named=True), calls.row(row["call"] + 1, named=True)
        # The compaction lies between its call and the next, and the context falls there, as recorded.
        assert at["seq"] < row["seq"] <= nxt["seq"]
        assert (row["before"], row["after"]) == (at["context"], nxt["context"])
        assert row["after"] < row["before"] / 2
        assert nxt["break_cause"] == "compaction"
    # The largest falls of the context are exactly the recorded compactions.
    falls = calls.with_columns(fall=pl.col("context").shift(1) - pl.col("context")).sort("fall", descending=True,
                                                                                               nulls_last=True)
    assert sorted(falls["call"][:2].to_list()) == [c + 1 for c in recorded["call"].to_list()]
    # Its cache figures are what `cost` bills for the session.
    by_session = costs(corpus.messages, by="session")
    assert tl.cost_usd == pytest.approx(by_session["cost_usd"].item(), rel=1e-12)
    billed = by_session.row(0, named=True)
    assert calls["cache_read"].sum() == billed["cache_read"]
    assert calls["cache_write"].sum() == billed["cache_write_5m"] + billed["cache_write_1h"]


def test_a_canonical_compaction_is_marked_where_the_context_drops_after_its_kept_turns():
    # data/'s 73b06f40: the summary at seq 63 is followed by the turns it kept (64..87, written before it); the
    # first call after the compaction is seq 89's, where the context falls.
    corpus = pa.ingest.read_corpus(DATA / "73b06f40-ff01-4b0a-8391-487bccbebf41.jsonl")
    tl = session_timeline(corpus.messages, "73b06f40-ff01-4b0a-8391-487bccbebf41", compactions=corpus.compactions,
                          sessions=corpus.sessions, prices=None)
    (row,) = tl.compactions.filter(pl.col("kind") == "recorded").iter_rows(named=True)
    after = tl.calls.filter(pl.col("seq") == 89).row(0, named=True)
    assert row["call"] + 1 == after["call"]
    assert (row["before"], row["after"]) == (tl.calls["context"].max(), after["context"])
    assert row["after"] < row["before"] / 2
    assert after["break_cause"] == "compaction"


def test_pick_session_by_id_or_unique_prefix():
    ids = ["abc1", "abd2", "xyz"]
    assert pick_session(ids, "abc1") == "abc1"
    assert pick_session(ids, "x") == "xyz"
    with pytest.raises(ValueError, match="'ab' begins 2 session ids .*: give more of it"):
        pick_session(ids, "ab")
    with pytest.raises(ValueError, match="no session 'q'"):
        pick_session(ids, "q")
    with pytest.raises(ValueError, match="3 sessions: name one"):
        pick_session(ids, None)
    assert pick_session(["only"], None) == "only"


def test_the_plot_draws_both_contexts_and_every_compaction():
    messages = pa.read_sessions(DATA)
    tl = session_timeline(messages, "0963a6d2-9c87-43a8-8b29-8037e82ed488", window=32_000, budget=4_000,
                          prices=None)
    fig = pa.plots.timeline(tl)
    top = fig.axes[0]
    labels = [line.get_label() for line in top.get_lines()]
    assert "context as recorded" in labels and any(label.startswith("replayed: libpanto") for label in labels)
    assert fig.axes[1].get_xlabel() == "API call"
    assert len(legend_boxes(fig)) == 1  # one legend for both panels, inside the figure


def test_the_command_writes_a_plot_a_page_and_tables(tmp_path):
    runner = CliRunner()
    png, page = tmp_path / "t.png", tmp_path / "t.html"
    out = runner.invoke(main, ["timeline", str(DATA), "--session", "0963a6d2", "-w", "32k", "-b", "4k", "-o", str(png)])
    assert out.exit_code == 0, out.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out = runner.invoke(main, ["timeline", str(DATA), "--session", "0963a6d2", "-w", "32k", "-b", "4k", "-o", str(page)])
    assert out.exit_code == 0, out.output
    text = page.read_text()
    assert "data:image/png;base64," in text and "<h2>Compactions</h2>" in text and "simulated" in text
    out = runner.invoke(main, ["timeline", str(DATA / "0963a6d2-9c87-43a8-8b29-8037e82ed488.jsonl")])
    assert out.exit_code == 0, out.output
    assert "cache breaks:" in out.output and "first call" in out.output


@pytest.mark.parametrize("args, message", [
    (["--session", "0"], "give more of it"),
    (["--session", "nope"], "no session 'nope'"),
    (["--session", "0963a6d2", "-w", "32k"], "--window and --budget go together"),
])
def test_the_command_refuses_in_one_line(args, message):
    out = CliRunner().invoke(main, ["timeline", str(DATA), *args])
    assert out.exit_code == 2
    assert message in out.output and "Traceback" not in out.output


def test_the_report_shows_the_worst_served_sessions_call_by_call():
    from panto_analytics.analysis.report.build import WORST_TIMELINES, build_report

    corpus = pa.ingest.read_corpus(DATA)
    rep = build_report(corpus, [2_000, 4_000, 8_000], window=32_000, prices=str(DATA.parent / "docs" / "synth-prices.json"))
    shown = [f for f in rep.figures if f.name.startswith("timeline_")]
    assert 0 < len(shown) <= WORST_TIMELINES
    assert all(f.png[:8] == b"\x89PNG\r\n\x1a\n" for f in shown)
    # Each is a session the replay compacted, drawn with the replayed context beside the recorded one.
    for fig in shown:
        labels = [line.get_label() for line in fig.figure.axes[0].get_lines()]
        assert any(label.startswith("replayed:") for label in labels)
