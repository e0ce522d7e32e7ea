"""A budget from a replay under a window (analysis/choose/from_replay.py): per-session rules, the trigger bound,
the frontier, JSON."""
from __future__ import annotations

import dataclasses
import json
import math

import polars as pl
import pytest
from click.testing import CliRunner
from conftest import DATA, REALDATA, examples
from hypothesis import given, settings
from hypothesis import strategies as st

import panto_analytics as pa
from panto_analytics.analysis.choose import Rule
from panto_analytics.analysis.choose.from_replay import (
    choose_from_outcomes,
    choose_from_replay,
    outcomes_table,
    pareto_front,
)
from panto_analytics.analysis.choose.rule import FEW_SESSIONS as FEW
from panto_analytics.cli import main

# -- a literal reference ----------------------------------------------------------------------------------


def reference_keeps_k_share(events: list[dict], sessions: list[dict], k: int) -> dict[int, float | None]:
    """Per budget: of the sessions that compact at some budget, the share that keep >= k whole turns at every
    compaction they have at this budget (a session without a compaction at this budget keeps everything)."""
    reaching = {s["session_id"] for s in sessions if s["n_compactions"] > 0}
    out: dict[int, float | None] = {}
    for budget in sorted({s["budget"] for s in sessions}):
        good = 0
        for sid in reaching:
            kept = [e["kept_turns"] for e in events if e["session_id"] == sid and e["budget"] == budget]
            good += all(t >= k for t in kept)
        out[budget] = good / len(reaching) if reaching else None
    return out


def reference_front(points: list[tuple[float, float]]) -> set[int]:
    """Indices of the points no other point dominates (as cheap and as little loss, one strictly less)."""
    front = set()
    for i, (c, o) in enumerate(points):
        if not any((c2 <= c and o2 <= o and (c2 < c or o2 < o)) for j, (c2, o2) in enumerate(points) if j != i):
            front.add(i)
    return front


@st.composite
def replays(draw):
    n_sessions = draw(st.integers(1, 6))
    budgets = sorted(draw(st.sets(st.integers(0, 5) .map(lambda x: x * 1000), min_size=1, max_size=4)))
    sessions, events = [], []
    for s in range(n_sessions):
        for b in budgets:
            n = draw(st.integers(0, 3))
            kept = [draw(st.integers(0, 4)) for _ in range(n)]
            sessions.append({"session_id": f"s{s}", "budget": b, "n_compactions": n,
                             "zero_kept_events": sum(1 for t in kept if t == 0), "summarized_tokens": 10 * n})
            events += [{"session_id": f"s{s}", "budget": b, "kept_turns": t, "kept_tokens": 100 * t} for t in kept]
    return events, sessions


@settings(max_examples=examples(60))
@given(replays(), st.integers(1, 3))
def test_keeps_k_share_equals_the_reference(drawn, k):
    events, sessions = drawn
    ev = pl.DataFrame(events, schema={"session_id": pl.String, "budget": pl.Int64, "kept_turns": pl.Int64,
                                      "kept_tokens": pl.Int64})
    table = outcomes_table(ev, pl.DataFrame(sessions), window=100_000, reserve=16_384, min_kept_turns=k)
    want = reference_keeps_k_share(events, sessions, k)
    got = dict(zip(table["budget"].to_list(), table["keeps_k_share"].to_list(), strict=True))
    for b, share in want.items():
        assert (got[b] is None or math.isnan(got[b])) if share is None else got[b] == pytest.approx(share)


@settings(max_examples=examples(60))
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=1, max_size=12))
def test_frontier_equals_the_brute_force_front(points):
    t = pl.DataFrame({"policy": ["p"] * len(points), "budget": list(range(len(points))),
                      "cost_p50": [float(c) for c, _ in points], "orphan_rate": [o / 10 for _, o in points],
                      "proposable": [True] * len(points)})
    got = set(pareto_front(t)["budget"].to_list())
    want = reference_front([(float(c), o / 10) for c, o in points])
    # Equal points: the front keeps one of them (the smallest budget, TIE_ORDER); the reference keeps all.
    assert got <= want and {points[i] for i in got} == {points[i] for i in want}


# -- rules count sessions, not events ---------------------------------------------------------------------


def test_rule_counts_sessions_not_events():
    # At budget 10, session a compacts three times keeping 2 turns, b once keeping none: 3 of 4 events (75%)
    # keep 2 turns, but only 1 of 2 sessions (50%) does at every compaction it has.
    sessions = pl.DataFrame({"session_id": ["a", "b"] * 2, "budget": [10, 10, 20, 20], "n_compactions": [3, 1, 1, 1],
                             "zero_kept_events": [0, 1, 0, 0], "summarized_tokens": [1, 1, 1, 1]})
    events = pl.DataFrame({"session_id": ["a", "a", "a", "b", "a", "b"], "budget": [10, 10, 10, 10, 20, 20],
                           "kept_turns": [2, 2, 2, 0, 2, 2], "kept_tokens": [9] * 6})
    table = outcomes_table(events, sessions, window=100, reserve=50)
    assert table["keeps_k_share"].to_list() == [0.5, 1.0]
    assert choose_from_outcomes(table, Rule(min_kept_turns=2, coverage=0.7), window=100, reserve=50).budget == 20


def test_a_budget_at_or_above_the_trigger_is_never_proposed():
    # Budget 60 >= 100 - 50: it keeps everything (no events), which would meet any rule; it is marked, not proposed.
    sessions = pl.DataFrame({"session_id": ["a", "a"], "budget": [10, 60], "n_compactions": [1, 0],
                             "zero_kept_events": [1, 0], "summarized_tokens": [5, 0]})
    events = pl.DataFrame({"session_id": ["a"], "budget": [10], "kept_turns": [0], "kept_tokens": [0]})
    table = outcomes_table(events, sessions, window=100, reserve=50)
    assert table["proposable"].to_list() == [True, False]
    dec = choose_from_outcomes(table, Rule(min_kept_turns=2), window=100, reserve=50)
    assert dec.budget is None and "at or above the trigger" in " ".join(dec.reasons)


def test_recommend_on_data_at_64k_never_answers_past_the_trigger():
    """The issue's case: the old rule (a share of events) answered 70k, 109% of a 64k window."""
    out = CliRunner().invoke(main, ["recommend", str(DATA), "--no-cache", "--window", "64k", "-k", "2", "-p", "90%",
                                    "-o", "-", "--output-format", "json"])
    obj = json.loads(out.stdout)
    assert obj["budget"] is None or obj["budget"] < 64_000 - 16_384
    assert out.exit_code == (1 if obj["budget"] is None else 0)
    assert obj["window"] == 64_000 and obj["reserve"] == 16_384


def test_json_output_is_one_object_and_prose_goes_to_stderr():
    out = CliRunner().invoke(main, ["recommend", str(DATA), "--no-cache", "--window", "32k", "-k", "1", "-p", "50%",
                                    "-b", "0:20k:5", "-o", "-", "--output-format", "json"])
    assert out.exit_code == 0, out.output
    obj = json.loads(out.stdout)  # stdout is only JSON
    assert set(obj) >= {"budget", "policy", "rule", "window", "reserve", "rows", "warnings"}
    assert obj["policy"] == "libpanto" and obj["budget"] in [r["budget"] for r in obj["rows"]]
    assert all(r["proposable"] or r["budget"] >= 32_000 - 16_384 for r in obj["rows"])
    assert "recommended keep_verbatim" in out.stderr
    # Fewer than 30 sessions reach a 32k trigger in data/: a warning with the count.
    assert any(f"fewer than {FEW}" in w for w in obj["warnings"])


def test_json_without_a_window():
    out = CliRunner().invoke(main, ["recommend", str(DATA), "--no-cache", "-b", "0:100k:11", "-o", "-",
                                    "--output-format", "json"])
    obj = json.loads(out.stdout)
    assert obj["window"] is None and obj["budget"] == (obj["budget"] and int(obj["budget"]))


def test_decision_from_replay_with_policies():
    m = pa.read_sessions(DATA)
    r = pa.replay(m, [0, 5_000, 10_000, 20_000], window=32_000, policy=["libpanto", "pi", "codex"])
    dec = choose_from_replay(r, Rule(min_kept_turns=1, coverage=0.5))
    assert set(dec.table["policy"]) == {"libpanto", "pi", "codex"}
    assert dec.policy == "libpanto" and dec.budget is not None and dec.budget < 32_000 - 16_384
    # pi's budget is its keep_recent_tokens (20k): at or above its 32k - 16,384 trigger, so marked, never proposed.
    pi = dec.table.filter(pl.col("policy") == "pi").row(0, named=True)
    assert pi["proposable"] == (pi["budget"] < 32_000 - 16_384)


def _outcomes(rows: list[tuple[str, int, float, float]]) -> pl.DataFrame:
    return pl.DataFrame({"policy": [r[0] for r in rows], "budget": [r[1] for r in rows],
                         "at_trigger": [40] * len(rows), "events": [80] * len(rows),
                         "compactions_per_session": [2.0] * len(rows),
                         "cost_p50": [r[2] for r in rows], "orphan_rate": [r[3] for r in rows],
                         "refetch_tokens": [1000] * len(rows), "threshold": [100_000] * len(rows),
                         "proposable": [r[1] < 100_000 for r in rows]})


def test_max_orphan_rate_picks_the_cheapest_front_point_that_meets_it():
    t = _outcomes([("libpanto", 10_000, 1.0, 0.20), ("libpanto", 20_000, 1.2, 0.08), ("libpanto", 30_000, 1.5, 0.04),
                   ("libpanto", 40_000, 1.6, 0.06), ("pi", 20_000, 1.3, 0.045), ("libpanto", 120_000, 0.5, 0.0)])
    dec = choose_from_outcomes(t, Rule(max_orphan_rate=0.05), window=200_000, reserve=16_384)
    # 120k is cheapest and loses nothing, but it is past the trigger; 40k is dominated by 30k.
    assert (dec.policy, dec.budget) == ("pi", 20_000)
    text = " ".join(dec.reasons)
    assert "one step down" not in text or "at 10k" in text
    dec = choose_from_outcomes(t, Rule(max_orphan_rate=0.10), window=200_000, reserve=16_384)
    assert (dec.policy, dec.budget) == ("libpanto", 20_000)
    assert any("one step down, at 10k" in r and "orphan rate +12.0 points" in r for r in dec.reasons)
    assert any("one step up, at 30k" in r for r in dec.reasons)
    dec = choose_from_outcomes(t, Rule(max_orphan_rate=0.01), window=200_000, reserve=16_384)
    assert dec.budget is None and dec.to_dict()["budget"] is None


def test_max_orphan_rate_without_cost_or_loss_says_so():
    t = _outcomes([("libpanto", 10_000, 1.0, 0.2)]).drop("orphan_rate")
    dec = choose_from_outcomes(t, Rule(max_orphan_rate=0.05), window=200_000, reserve=16_384)
    assert dec.budget is None and "orphan_rate" in " ".join(dec.warnings)


def test_few_sessions_warn_with_the_count():
    t = _outcomes([("libpanto", 10_000, 1.0, 0.2)]).with_columns(at_trigger=pl.lit(12), events=pl.lit(7),
                                                                  keeps_k_share=pl.lit(1.0))
    dec = choose_from_outcomes(t, Rule(min_kept_turns=2), window=200_000, reserve=16_384)
    assert any("12 sessions" in w for w in dec.warnings) and any("7 compaction events" in w for w in dec.warnings)
    enough = t.with_columns(at_trigger=pl.lit(FEW), events=pl.lit(FEW))
    assert choose_from_outcomes(enough, Rule(min_kept_turns=2), window=200_000, reserve=16_384).warnings == []


# -- with cost and loss: the frontier on data/ ------------------------------------------------------------

PRICES = DATA.parent / "docs" / "synth-prices.json"


def test_recommend_max_orphan_rate_on_data_picks_a_front_point_that_meets_it():
    out = CliRunner().invoke(main, ["recommend", str(DATA), "--no-cache", "--window", "32k", "--policy", "libpanto",
                                    "--policy", "gemini-cli", "-b", "0:16k:9", "--max-orphan-rate", "5%",
                                    "--prices", str(PRICES), "-o", "-", "--output-format", "json"])
    assert out.exit_code == 0, out.output
    obj = json.loads(out.stdout)
    chosen = next(r for r in obj["rows"] if r["budget"] == obj["budget"] and r["policy"] == obj["policy"])
    assert chosen["orphan_rate"] <= 0.05 and chosen["proposable"]
    # Recomputed from the library: the chosen point is on the front and no cheaper front point meets 5%.
    from panto_analytics.analysis.choose.from_replay import replay_outcomes

    r = replay_outcomes(pa.read_sessions(DATA), "0:16k:9", window=32_000, reserve=16_384,
                        policy=["libpanto", "gemini-cli"], prices=PRICES)
    t = outcomes_table(r.events, r.sessions, window=32_000, reserve=16_384)
    front = pareto_front(t)
    meets = front.filter(pl.col("orphan_rate") <= 0.05).sort("cost_p50")
    assert (meets["policy"][0], meets["budget"][0]) == (obj["policy"], obj["budget"])
    assert chosen["cost_p50"] == pytest.approx(meets["cost_p50"][0])
    # The pooled rate is orphan calls over the calls looked at, summed over sessions.
    s = r.sessions.filter((pl.col("policy") == obj["policy"]) & (pl.col("budget") == obj["budget"]))
    assert chosen["orphan_rate"] == pytest.approx(s["orphan_calls"].sum() / s["window_calls"].sum())


def test_recorded_points_and_the_frontier_plot():
    from panto_analytics.analysis import plots
    from panto_analytics.analysis.choose.from_replay import recorded_points, replay_outcomes

    c = pa.ingest.read_corpus([DATA])
    r = replay_outcomes(c.messages, "0:16k:5", window=32_000, reserve=16_384, policy=["libpanto", "gemini-cli"],
                        prices=PRICES)
    rec = recorded_points(c.messages, c.compactions, c.sessions, r.sessions, budget=8_000)
    own = rec.filter(pl.col("point") == "recorded")
    assert own["agent"].to_list() == ["canonical"] and own["compactions"].item() == c.compactions.height
    assert 0 <= own["orphan_rate"].item() <= 1 and own["cost_p50"].item() > 0
    assert rec.filter(pl.col("point") == "libpanto")["budget"].to_list() == [8_000]
    t = outcomes_table(r.events, r.sessions, window=32_000, reserve=16_384)
    fig = plots.frontier(t, recorded=rec, chosen=("libpanto", 0))
    ax = fig.axes[0]
    assert ax.get_ylabel() == "cost per session, median (USD)"
    labels = [h.get_label() for legend in fig.legends for h in legend.legend_handles]
    assert {"libpanto", "gemini-cli", "Pareto front", "chosen"} <= set(labels)
    texts = [t.get_text() for t in ax.texts]
    assert "canonical (recorded, 5 sessions)" in texts and "libpanto 8k, same sessions" in texts
    # Replays of the agent's sessions right beside its star: every label still readable, none on another.
    x0, y0 = own["orphan_rate"].item(), own["cost_p50"].item()
    beside = pl.col("point") != "recorded"
    close = rec.with_columns(orphan_rate=pl.when(beside).then(x0 * 1.05).otherwise("orphan_rate"),
                             cost_p50=pl.when(beside).then(y0 * 0.995).otherwise("cost_p50"))
    fig = plots.frontier(t, recorded=close, chosen=("libpanto", 0))
    fig.draw_without_rendering()
    boxes = [text.get_window_extent() for text in fig.axes[0].texts]
    assert len(boxes) >= 3 and not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_the_agents_points_come_in_the_same_order_whatever_the_order_of_their_cuts():
    """Two agents' recorded cuts in either order (the files' order in memory, the buckets' on a dataset): the same
    points table, agents by name, each recorded point before the replayed ones (before: the first agent whose cut
    came first, so the two lanes could list the agents in other orders)."""
    from panto_analytics.analysis.choose.from_replay import points_of

    lost = pl.DataFrame({"session_id": ["p1", "p2", "c1", "c2"], "agent": ["pi", "pi", "claude-code", "claude-code"],
                         "window_calls": [10, 10, 10, 10], "orphan_calls": [1, 0, 2, 3]})
    replayed = pl.DataFrame({"session_id": ["p1", "p2", "c1", "c2"], "policy": ["libpanto"] * 4, "budget": [8] * 4,
                             "n_compactions": [1] * 4, "orphan_calls": [0] * 4, "window_calls": [10] * 4,
                             "total_cost_usd": [1.0, 2.0, 3.0, 4.0]})
    a, b = (points_of(x, replayed, budget=8, resamples=0) for x in (lost, lost.reverse()))
    assert a.equals(b)
    assert a.select("agent", "point").rows() == [("claude-code", "recorded"), ("claude-code", "libpanto"),
                                                 ("pi", "recorded"), ("pi", "libpanto")]


def test_the_recorded_point_and_the_replayed_points_beside_it_are_over_the_same_sessions():
    """A corpus where the sessions an agent compacted itself are not the sessions that reach the replay's
    trigger (nor all of that agent's sessions): every row of the agent is over the first, exactly."""
    from panto_analytics.analysis.choose.from_replay import recorded_points, replay_outcomes

    c = pa.ingest.read_corpus([DATA])
    r = replay_outcomes(c.messages, [0, 4_000, 8_000], window=32_000, reserve=16_384, policy=["libpanto", "pi"],
                        prices=PRICES)
    compacted_itself = set(c.compactions["session_id"].cast(pl.String))
    reaching = set(r.sessions.filter(pl.col("n_compactions") > 0)["session_id"].cast(pl.String))
    assert compacted_itself != reaching and compacted_itself - reaching or reaching - compacted_itself
    rows = recorded_points(c.messages, c.compactions, c.sessions, r.sessions, budget=4_000)
    assert set(rows["sessions"]) == {len(compacted_itself)}
    assert rows["point"].to_list()[0] == "recorded" and set(rows["point"][1:]) == {"libpanto", "pi"}
    ses = r.sessions.with_columns(pl.col("session_id").cast(pl.String), pl.col("policy").cast(pl.String))
    mine = ses.filter(pl.col("session_id").is_in(sorted(compacted_itself)))
    # By hand, over exactly those sessions: the recording's median cost, and libpanto's at 4k.
    assert rows["cost_p50"][0] == pytest.approx(mine.group_by("session_id").agg(pl.col("recorded_cost_usd").first())
                                                ["recorded_cost_usd"].median())
    lib = mine.filter((pl.col("policy") == "libpanto") & (pl.col("budget") == 4_000))
    got = rows.filter(pl.col("point") == "libpanto").row(0, named=True)
    assert got["cost_p50"] == pytest.approx(lib["total_cost_usd"].median())
    assert got["orphan_rate"] == pytest.approx(lib["orphan_calls"].sum() / lib["window_calls"].sum())
    # Each row with its bootstrap range over the same sessions, the same run after run.
    assert (rows["orphan_rate_lo"] <= rows["orphan_rate_hi"]).all() and (rows["cost_p50_lo"] <= rows["cost_p50_hi"]).all()
    assert rows.equals(recorded_points(c.messages, c.compactions, c.sessions, r.sessions, budget=4_000))


def test_the_points_read_only_their_columns_of_the_replays_rows():
    """points_of over the replay's session rows cut to POINT_COLUMNS (what a dataset's report collects of its
    spilled rows, not every column) is the same table, intervals too; a column it reads missing changes it."""
    from panto_analytics.analysis.choose.from_replay import POINT_COLUMNS, points_of, recorded_loss, replay_outcomes

    c = pa.ingest.read_corpus([DATA])
    r = replay_outcomes(c.messages, [0, 4_000, 8_000], window=32_000, reserve=16_384, policy=["libpanto", "pi"],
                        prices=PRICES)
    lost = recorded_loss(c.messages, c.compactions, c.sessions)
    assert set(r.sessions.columns) - set(POINT_COLUMNS)  # there is something to leave out
    full = points_of(lost, r.sessions, budget=4_000)
    assert full.equals(points_of(lost, r.sessions.select(c for c in POINT_COLUMNS if c in r.sessions.columns),
                                 budget=4_000))
    assert not full.equals(points_of(lost, r.sessions.drop("recorded_cost_usd"), budget=4_000))


def test_the_report_names_one_budget_in_its_headline_and_its_frontier_table(tmp_path):
    from panto_analytics.analysis.formatting import format_tokens
    from panto_analytics.analysis.report import build_report

    c = pa.ingest.read_corpus([DATA])
    rep = build_report(c, "0:16k:9", window=32_000, prices=PRICES, rule=pa.Rule(min_kept_turns=1, coverage=0.5))
    chosen = [row for row in rep.frontier_table.rows if row[-1].startswith("chosen")]
    assert len(chosen) == 1 and rep.frontier_table.rows.index(chosen[0]) == rep.frontier_table.highlight
    budget = rep.recommendation.budget
    assert budget is not None and chosen[0][1] == format_tokens(budget)
    assert f"at {format_tokens(budget)}, the budget of the recommendation" in (
        rep.frontier.caption)
    assert "(90% of resamples: " in rep.recommendation.headline()
    assert all("(" in row[3] for row in rep.frontier_table.rows if row[-1] in ("front", "chosen"))


@pytest.mark.skipif(not REALDATA.is_dir(), reason=f"{REALDATA} is not there")
def test_the_decision_on_the_real_recordings_as_docs_replay_md_says():
    """The old rule answered 120k at 64k and 128k windows here; now no budget past the trigger is proposed."""
    for window in ("64k", "128k"):
        out = CliRunner().invoke(main, ["recommend", str(REALDATA), "--no-cache", "--skip-invalid", "--window", window,
                                        "-k", "2", "-p", "90%", "-o", "-", "--output-format", "json"])
        obj = json.loads(out.stdout)
        assert out.exit_code == 1 and obj["budget"] is None
        assert all(r["proposable"] == (r["budget"] < r["threshold"]) for r in obj["rows"])
    out = CliRunner().invoke(main, ["recommend", str(REALDATA), "--no-cache", "--skip-invalid", "--window", "128k",
                                    "--policy", "libpanto", "--policy", "pi", "--policy", "claude-code",
                                    "--max-orphan-rate", "5%", "-o", "-", "--output-format", "json"])
    obj = json.loads(out.stdout)
    assert out.exit_code == 0 and obj["budget"] < 128_000 - 16_384
    chosen = next(r for r in obj["rows"] if r["budget"] == obj["budget"] and r["policy"] == obj["policy"])
    assert chosen["orphan_rate"] <= 0.05


# -- the seeded bootstrap over sessions ----------------------------------------------------------------------


def test_recommend_window_json_carries_the_interval_and_the_sessions_and_repeats():
    args = ["recommend", str(DATA), "--no-cache", "--window", "32k", "-k", "1", "-p", "50%", "-b", "0:16k:9",
            "--prices", str(PRICES), "-o", "-", "--output-format", "json"]
    first, again = (CliRunner().invoke(main, args) for _ in range(2))
    assert first.exit_code == 0, first.output
    a, b = json.loads(first.stdout), json.loads(again.stdout)
    assert a["interval"] == b["interval"] and a["rows"] == b["rows"]  # seeded: the same run, the same interval
    iv = a["interval"]
    assert iv["resamples"] == 200 and iv["level"] == 0.9 and iv["sessions"] == a["sessions"] > 0
    assert iv["lo"] <= a["budget"] <= iv["hi"] and f"{a['sessions']} sessions" in iv["text"]
    chosen = next(r for r in a["rows"] if r["budget"] == a["budget"])
    assert chosen["at_trigger"] == a["sessions"]
    for figure in ("keeps_k_share", "cost_p50", "orphan_rate"):
        assert chosen[f"{figure}_lo"] <= chosen[f"{figure}_hi"]
    headline = next(line for line in first.stderr.splitlines() if line.startswith("recommended"))
    assert f"(90% of resamples: {iv['text'].split(': ', 1)[1]})" in headline


def test_too_few_sessions_say_so_instead_of_an_interval():
    m = pa.read_sessions(DATA)
    two = m.filter(pl.col("session_id").is_in(m["session_id"].unique().sort().head(2).implode()))
    choice, _ = pa.choose_budget(two, [0, 4_000], pa.Rule(min_kept_turns=1, coverage=0.01), window=8_000,
                                 reserve=2_000, summary_tokens=100, prices=None)
    assert choice.interval is not None and not choice.interval.resampled
    assert "too few to resample" in choice.to_text() and choice.to_dict()["interval"]["lo"] is None
    assert not any(c.endswith("_lo") for c in choice.table.columns)


def test_the_intervals_do_not_depend_on_the_order_of_the_sessions():
    m = pa.read_sessions(DATA)
    r = pa.replay(m, [0, 4_000, 8_000], window=32_000, prices=None)
    shuffled = dataclasses.replace(r, sessions=r.sessions.sample(fraction=1.0, shuffle=True, seed=3),
                                   events=r.events.sample(fraction=1.0, shuffle=True, seed=4))
    a = choose_from_replay(r, Rule(min_kept_turns=1, coverage=0.5))
    b = choose_from_replay(shuffled, Rule(min_kept_turns=1, coverage=0.5))
    assert a.interval == b.interval and a.table.equals(b.table)


@settings(max_examples=examples(30), deadline=None)
@given(st.data())
def test_the_rule_over_every_resample_at_once_equals_the_rule_on_each(data):
    """chosen_by_replicate (one query over every replicate) against choose_from_outcomes on each replicate alone."""
    from panto_analytics.analysis.choose.from_replay import chosen_by_replicate, pool_policy

    n_rep = data.draw(st.integers(1, 4))
    rows = []
    for rep in range(n_rep):
        for policy in ("libpanto", "pi"):
            for budget in (0, 10, 20, 30):
                rows.append({"_replicate": rep, "policy": policy, "budget": budget, "at_trigger": 5, "events": 9,
                             "compactions_per_session": 1.0, "refetch_tokens": 0,
                             "keeps_k_share": data.draw(st.sampled_from([0.0, 0.5, 0.9, 1.0])),
                             "within_limit_share": data.draw(st.sampled_from([0.0, 0.5, 0.9, 1.0])),
                             "cost_p50": float(data.draw(st.integers(0, 4))),
                             "orphan_rate": data.draw(st.integers(0, 4)) / 10,
                             "proposable": budget < data.draw(st.sampled_from([20, 40]))})
    reps = pl.DataFrame(rows)
    rule = data.draw(st.sampled_from([Rule(min_kept_turns=2), Rule(max_kept_share=0.5, context_window=100),
                                      Rule(min_kept_turns=1, max_kept_share=0.5, context_window=100),
                                      Rule(max_orphan_rate=0.2), Rule(min_kept_turns=1, max_orphan_rate=0.3),
                                      Rule(min_kept_turns=2, policy="pi")]))
    got = dict(chosen_by_replicate(reps, rule, pool_policy(reps, rule)).iter_rows())
    for rep in range(n_rep):
        one = reps.filter(pl.col("_replicate") == rep).drop("_replicate")
        want = choose_from_outcomes(one, rule, window=100, reserve=10)
        assert got.get(rep) == want.budget, (rep, rule)


def test_of_two_equal_points_the_front_keeps_the_smaller_budget_whatever_the_order_of_the_rows():
    """pi at 20k and libpanto at 10k cost and lose the same: the front and the frontier rule's pick are
    libpanto's 10k in either row order (before: the row listed first, so ``--policy pi --policy libpanto`` chose
    pi at 20k while the resamples, their tables sorted by policy name, chose 10k: an interval of another pick)."""
    from panto_analytics.analysis.choose.from_replay import chosen_by_replicate

    t = pl.DataFrame({"policy": ["pi", "libpanto", "pi"], "budget": [20_000, 10_000, 30_000], "at_trigger": [5] * 3, "events": [9] * 3,
                      "cost_p50": [1.0, 1.0, 2.0], "orphan_rate": [0.1, 0.1, 0.0], "proposable": [True] * 3})
    rule = Rule(max_orphan_rate=0.2)
    for rows in (t, t.reverse()):
        assert pareto_front(rows).select("policy", "budget").rows() == [("libpanto", 10_000), ("pi", 30_000)]
        pick = choose_from_outcomes(rows, rule, window=100_000, reserve=10)
        assert (pick.policy, pick.budget) == ("libpanto", 10_000)
        assert chosen_by_replicate(rows.with_columns(_replicate=pl.lit(0)), rule, None)["budget"].to_list() == [10_000]


@settings(max_examples=examples(40), deadline=None)
@given(st.data())
def test_the_choice_does_not_depend_on_the_order_of_the_rows(data):
    """Rows equal in every figure a rule compares (drawn often here): any order of the table's rows gives the
    same front, the same (policy, budget) and the same pick in a resample's table."""
    from panto_analytics.analysis.choose.from_replay import chosen_by_replicate, pool_policy

    rows = [{"policy": policy, "budget": budget, "at_trigger": 5, "events": 9, "compactions_per_session": 1.0,
             "keeps_k_share": data.draw(st.sampled_from([0.5, 1.0])),
             "within_limit_share": data.draw(st.sampled_from([0.5, 1.0])),
             "cost_p50": float(data.draw(st.integers(0, 2))), "orphan_rate": data.draw(st.integers(0, 2)) / 10,
             "proposable": True}
            for policy in ("pi", "codex", "gemini-cli") for budget in (0, 10, 20)]
    t = pl.DataFrame(rows)
    shuffled = t[data.draw(st.permutations(range(t.height)))]
    rule = data.draw(st.sampled_from([Rule(max_orphan_rate=0.2), Rule(min_kept_turns=1, max_orphan_rate=0.1),
                                      Rule(min_kept_turns=2), Rule(max_kept_share=0.5, context_window=100),
                                      Rule(min_kept_turns=2, coverage=1.0)]))
    assert pareto_front(t).equals(pareto_front(shuffled))
    a, b = (choose_from_outcomes(x, rule, window=100, reserve=10) for x in (t, shuffled))
    assert (a.policy, a.budget, a.reasons) == (b.policy, b.budget, b.reasons)
    by_rep = [chosen_by_replicate(x.with_columns(_replicate=pl.lit(0)), rule, pool_policy(x, rule)) for x in (t, shuffled)]
    assert by_rep[0].equals(by_rep[1])


def test_a_clearing_policy_has_no_trigger_to_pass_and_can_be_recommended():
    """A policy that clears tool results (budget 0, masking at every call) is proposable, named by its settings."""
    from panto_analytics.analysis.choose.from_replay import thresholds_of

    assert thresholds_of(["observation-masking:m=3", "clear-tool-uses", "libpanto"], 32_000, 16_384) == {
        "observation-masking:m=3": 32_000, "clear-tool-uses": 32_000, "libpanto": 32_000 - 16_384}


def test_reaching_flags_every_row_of_a_session_that_compacts_under_some_policy():
    """``_reaching`` (what the bootstrap filters on, computed where a session's rows are) against a reference."""
    from panto_analytics.analysis.choose.from_replay import session_outcomes

    sessions = pl.DataFrame({"policy": ["libpanto", "libpanto", "pi", "pi", "libpanto", "pi"],
                             "session_id": ["a", "a", "a", "a", "b", "b"], "budget": [0, 10, 0, 10, 0, 0],
                             "n_compactions": [0, 0, 0, 2, 0, 0]})
    events = pl.DataFrame({"policy": ["pi"], "session_id": ["a"], "budget": [10], "kept_turns": [1],
                           "kept_tokens": [5]})
    got = session_outcomes(events, sessions).sort("session_id", "policy", "budget")
    reaching = {s for s, n in zip(sessions["session_id"], sessions["n_compactions"], strict=True) if n > 0}
    assert got["_reaching"].to_list() == [s in reaching for s in got["session_id"]]
    assert got["_reach"].to_list() == [False, False, True, True, False, False]
