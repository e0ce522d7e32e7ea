"""A budget from end-of-session splits (analysis/choose/from_splits.py): the rules, their edges, the warnings, the CLI.

Expected answers are worked out by hand from tests/fixtures/recommend/README.md
(turn costs a: 1000/1000/1000, b: 500/4000, c: 200, d: 26, e: no turns).
"""
from __future__ import annotations

import polars as pl
import pytest
from click.testing import CliRunner
from conftest import DATA, FIXTURES

import panto_analytics as pa
from panto_analytics.analysis.choose import Rule, recommend
from panto_analytics.analysis.choose.from_splits import coverage_table, outcome_warnings
from panto_analytics.cli import main

FIXTURE = FIXTURES / "recommend"
BUDGETS = [0, 1000, 2000, 3000, 4000, 5000]


@pytest.fixture(scope="module")
def messages() -> pl.DataFrame:
    return pa.read_sessions(FIXTURE)


@pytest.fixture(scope="module")
def splits(messages) -> pl.DataFrame:
    return pa.splits(messages, BUDGETS)


def test_min_kept_turns_coverage_by_hand(splits):
    # Sessions with turns: a, b, c, d. A session counts when it keeps min(2, n_turns) turns:
    # at 1000 c and d (2/4), at 2000 also a (3/4), b needs both turns = 4500 tokens, so 5000.
    table = coverage_table(splits, Rule(min_kept_turns=2))
    assert table["sessions_with_turns"].to_list() == [4] * 6
    assert table["keeps_k_share"].to_list() == [0.0, 0.5, 0.75, 0.75, 0.75, 1.0]
    assert table["fewer_than_k_turns"].to_list() == [2] * 6  # c and d have one turn


@pytest.mark.parametrize("coverage, expected", [(0.5, 1000), (0.75, 2000), (0.8, 5000), (1.0, 5000)])
def test_min_kept_turns_picks_the_smallest_budget(splits, coverage, expected):
    rec = recommend(splits, Rule(min_kept_turns=2, coverage=coverage))
    assert rec.budget == expected
    assert any("at least" in r for r in rec.reasons)


def test_max_kept_share_picks_the_largest_budget(splits):
    # Limit 0.2 x 10k = 2000 tokens. Kept tokens at 3000: a 3000 (over), b 0, c 200, d 26: 3/4 within.
    # At 4000: a 3000 and b 4000 over: 2/4.
    table = coverage_table(splits, Rule(max_kept_share=0.2, context_window=10_000))
    assert table["within_limit_share"].to_list() == [1.0, 1.0, 1.0, 0.75, 0.5, 0.5]
    assert recommend(splits, Rule(max_kept_share=0.2, context_window=10_000, coverage=0.75)).budget == 3000
    assert recommend(splits, Rule(max_kept_share=0.2, context_window=10_000, coverage=1.0)).budget == 2000


def test_both_rules_take_the_smallest_budget_meeting_both(splits):
    rec = recommend(splits, Rule(min_kept_turns=2, max_kept_share=0.2, context_window=10_000, coverage=0.75))
    assert rec.budget == 2000
    assert any("from 2k to 3k meet both" in r for r in rec.reasons)


def test_conflicting_rules_recommend_nothing_and_say_so(splits):
    # All 4 sessions keeping 2 turns needs 5000; all within 2000 tokens allows at most 2000.
    rec = recommend(splits, Rule(min_kept_turns=2, max_kept_share=0.2, context_window=10_000, coverage=1.0))
    assert rec.budget is None
    assert any("conflict" in w for w in rec.warnings)
    assert "no budget tried" in rec.to_text()


def test_unreachable_rule_says_which_budget_came_closest(splits):
    rec = recommend(splits.filter(pl.col("budget") <= 3000), Rule(min_kept_turns=2, coverage=1.0))
    assert rec.budget is None
    assert any("75.0%" in r and "larger budgets" in r for r in rec.reasons)


def test_default_rule_is_two_turns_for_ninety_percent(splits):
    rec = recommend(splits)
    assert rec.rule == Rule(min_kept_turns=2, coverage=0.9)
    assert rec.budget == 5000


def test_warns_about_sessions_whose_last_turn_exceeds_the_budget(messages, splits):
    # At 2000 only b keeps nothing: its last turn alone is 4000 tokens.
    warnings = outcome_warnings(splits, 2000, turns=pa.turns(messages))
    assert len(warnings) == 1
    assert "1 of 4 sessions" in warnings[0] and "b (4k tokens)" in warnings[0]
    assert outcome_warnings(splits, 5000) == []


def test_warns_about_capped_sessions():
    s = pl.DataFrame({"session_id": ["x", "y"], "budget": [10, 10], "kept_turns": [1, 1], "kept_tokens": [5, 5],
                      "n_turns": [4096, 2], "summarized_tokens": [9, 0], "active_tokens": [14, 5],
                      "noop": [False, True], "capped": [True, False]})
    warnings = outcome_warnings(s, 10)
    assert len(warnings) == 1 and "4096" in warnings[0]


def test_sessions_without_turns_are_left_out_and_said_to_be(splits):
    rec = recommend(splits, Rule(min_kept_turns=1, coverage=1.0))
    assert rec.budget == 4000  # b's last turn is 4000 tokens; e has no turns and does not block 100%
    assert any("1 session without turns is left out" in r for r in rec.reasons)


def test_smallest_budget_in_the_grid_is_flagged(splits):
    rec = recommend(splits.filter(pl.col("budget") >= 1000), Rule(min_kept_turns=1, coverage=0.75))
    assert rec.budget == 1000  # a, c and d keep their last turn
    assert any("smallest budget tried" in w for w in rec.warnings)


def test_around_gives_the_rows_either_side(splits):
    rec = recommend(splits, Rule(min_kept_turns=2, coverage=0.75))
    assert rec.around(1)["budget"].to_list() == [1000, 2000, 3000]
    assert rec.around(5)["budget"].to_list() == BUDGETS


@pytest.mark.parametrize("kwargs", [
    {"coverage": 0}, {"coverage": 1.5}, {"min_kept_turns": 0}, {"max_kept_share": 2, "context_window": 1000},
    {"max_orphan_rate": 1.5}, {"context_window": 0},
])
def test_bad_rules_are_refused(kwargs):
    with pytest.raises(ValueError):
        Rule(**kwargs)


@pytest.mark.parametrize("kwargs", [{"max_kept_share": 0.3}, {"max_orphan_rate": 0.05}, {"policy": "pi"}])
def test_rules_that_need_a_window_or_a_replay_are_refused_on_splits(splits, kwargs):
    with pytest.raises(ValueError):
        recommend(splits, Rule(**kwargs))


def test_coverage_is_computed_lazily_too(splits):
    eager = coverage_table(splits, Rule(min_kept_turns=2))
    lazy = coverage_table(splits.lazy(), Rule(min_kept_turns=2))
    assert eager.equals(lazy)


# --- CLI ---------------------------------------------------------------------------------------------------

def run(*args):
    return CliRunner().invoke(main, ["recommend", str(FIXTURE), "-b", "0,1k,2k,3k,4k,5k", *args])


def test_cli_prints_budget_rule_rows_and_warnings():
    result = run("-k", "2", "-p", "75%")
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.startswith("recommended keep_verbatim: 2k (2,000 tokens)")
    assert "rule: the smallest budget" in out and "why: at 2k, 75.0%" in out
    assert "<- chosen" in out
    assert "warning: 1 of 4 sessions" in out


def test_cli_max_kept_share(tmp_path):
    result = run("-s", "0.2", "--context-window", "10k", "-p", "0.75", "-o", str(tmp_path / "t.csv"))
    assert result.exit_code == 0, result.output
    assert "recommended keep_verbatim: 3k" in result.output
    table = pl.read_csv(tmp_path / "t.csv")
    assert table["budget"].to_list() == BUDGETS and "within_limit_share" in table.columns


def test_cli_exits_1_when_no_budget_meets_the_rule():
    result = run("-k", "2", "-p", "1", "-s", "0.2", "--context-window", "10k")
    assert result.exit_code == 1
    assert "no budget tried meets the rule" in result.output


@pytest.mark.parametrize("args, message", [
    (["-s", "0.2"], "needs --context-window"),
    (["--context-window", "10k"], "give both"),
    (["-p", "150%"], "(0, 1]"),
    (["--context-window", "lots", "-s", "0.1"], "not a token budget"),
])
def test_cli_usage_errors(args, message):
    result = run(*args)
    assert result.exit_code == 2
    assert message in result.output


def test_cli_bad_input_is_one_line(tmp_path):
    (tmp_path / "bad.jsonl").write_text('{"type":"message","role":"user","content":[]}\n{not json\n')
    result = CliRunner().invoke(main, ["recommend", str(tmp_path)])
    assert result.exit_code == 1
    assert "bad.jsonl:2" in result.output and "Traceback" not in result.output


def test_the_reasons_say_the_figures_are_end_of_session_splits():
    rec = pa.recommend(pa.splits(pa.read_sessions(DATA), [0, 20_000, 100_000]))
    assert any("end-of-session splits" in r and "--window" in r for r in rec.reasons)


def test_a_budget_past_a_quarter_of_the_smallest_known_window_is_warned():
    splits = pa.splits(pa.read_sessions(DATA), [200_000])
    rec = pa.recommend(splits, pa.Rule(min_kept_turns=1, coverage=0.01), windows=[400_000, 128_000, None])
    assert rec.budget == 200_000
    assert any("156% of the smallest known context window (128k)" in w for w in rec.warnings)
    quiet = pa.recommend(splits, pa.Rule(min_kept_turns=1, coverage=0.01), windows=[None])
    assert not any("context window" in w for w in quiet.warnings)


def test_fewer_than_thirty_sessions_behind_the_figures_warn_with_the_count(splits):
    from panto_analytics.analysis.choose.rule import FEW_SESSIONS

    n = splits.filter(pl.col("n_turns") > 0)["session_id"].n_unique()
    assert n < FEW_SESSIONS
    assert any(f"{n} sessions with turns (fewer than {FEW_SESSIONS})" in w for w in recommend(splits).warnings)
    many = pl.concat([splits.with_columns(pl.col("session_id").cast(pl.String) + f"-{i}") for i in range(10)])
    assert not any("fewer than" in w for w in recommend(many).warnings)


# --- the seeded bootstrap over sessions --------------------------------------------------------------------

def test_every_figure_has_its_interval_and_the_budget_its_spread(splits):
    rec = recommend(splits, Rule(min_kept_turns=2, coverage=0.75))
    iv = rec.interval
    assert iv is not None and iv.resamples == 200 and iv.sessions == 4  # a, b, c, d have turns; e has none
    assert iv.lo is not None and iv.hi is not None and iv.lo <= rec.budget <= iv.hi
    for figure in ("keeps_k_share", "noop_share", "kept_tokens_p50", "summarized_share"):
        lo, hi = rec.table[f"{figure}_lo"], rec.table[f"{figure}_hi"]
        assert (lo <= hi).all()
    # A Poisson resample of 4 sessions can draw none of those that meet the rule (or none at all): said, counted.
    assert "(90% of resamples: " in rec.headline() and "; 4 sessions" in rec.headline()
    assert (f"; in {iv.none} of 200 no budget meets the rule)" if iv.none else "; 4 sessions)") in rec.headline()
    again = recommend(splits, Rule(min_kept_turns=2, coverage=0.75))
    assert again.interval == iv and again.table.equals(rec.table)
    assert recommend(splits, Rule(min_kept_turns=2, coverage=0.75), resamples=0).interval is None


@pytest.mark.parametrize("rule", [Rule(min_kept_turns=2, coverage=0.75), Rule(min_kept_turns=1, coverage=1.0),
                                  Rule(max_kept_share=0.2, context_window=10_000, coverage=0.75),
                                  Rule(min_kept_turns=2, max_kept_share=0.2, context_window=10_000, coverage=0.75)])
def test_the_rule_over_every_resample_at_once_equals_the_rule_on_each(splits, rule):
    from panto_analytics.analysis.choose.bootstrap import replicate_tables
    from panto_analytics.analysis.choose.from_splits import (
        _chosen_by_replicate,
        _verdicts,
        choose_from_coverage,
        coverage_aggs,
    )
    from panto_analytics.policy.budget_sweep import sweep_aggs

    reps = replicate_tables(splits, ["budget"], {**sweep_aggs(), **coverage_aggs(rule)}, resamples=30, seed=5)
    got = dict(_chosen_by_replicate(reps, rule).iter_rows())
    for rep in range(30):
        one = reps.filter(pl.col("_replicate") == rep).drop("_replicate")
        assert got.get(rep) == choose_from_coverage(one.with_columns(_verdicts(rule)), rule).budget


def test_cli_json_without_a_window_carries_the_interval():
    import json

    result = run("-k", "2", "-p", "75%", "-o", "-", "--output-format", "json")
    obj = json.loads(result.stdout)
    assert obj["budget"] == 2000 and obj["sessions"] == 4 and obj["interval"]["resamples"] == 200
    assert {"keeps_k_share_lo", "keeps_k_share_hi"} <= set(obj["rows"][0])
