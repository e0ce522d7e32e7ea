"""``panto-analytics replay``: the per-budget table and the two frames behind it."""
from __future__ import annotations

import json

import polars as pl
import pytest
from click.testing import CliRunner
from conftest import DATA

import panto_analytics as pa
from panto_analytics.cli import main


def run(*args: str):
    return CliRunner().invoke(main, ["replay", str(DATA), "--no-cache", *args])


def test_the_table_and_frames_equal_the_library(tmp_path):
    out = run("--window", "24k", "--reserve", "4k", "-b", "2k,20k", "-o", str(tmp_path / "t.csv"),
              "--sessions", str(tmp_path / "s.parquet"), "--events", str(tmp_path / "e.parquet"))
    assert out.exit_code == 0, out.output
    result = pa.replay(pa.read_sessions(DATA), [2_000, 20_000], window=24_000, reserve=4_000)
    assert pl.read_parquet(tmp_path / "e.parquet").equals(result.events)
    assert pl.read_parquet(tmp_path / "s.parquet").equals(result.sessions)
    table = pl.read_csv(tmp_path / "t.csv")
    assert table["budget"].to_list() == [2_000, 20_000]
    assert table["events"].to_list() == [result.events.filter(pl.col("budget") == b).height for b in (2_000, 20_000)]


def test_a_window_not_above_the_reserve_is_a_usage_error():
    out = run("--window", "10k", "--reserve", "16k")
    assert out.exit_code == 2 and "window (10000) must be larger than reserve (16000)" in out.output


def test_a_16k_window_under_the_default_reserve_says_that_k_is_1000():
    out = run("--window", "16k")   # 16,000 against the default reserve of 16,384
    assert out.exit_code == 2 and "k is 1,000 here (16k is 16,000 tokens, not 16,384)" in out.output
    assert "give a larger --window (e.g. 32k) or a smaller --reserve" in out.output
    assert "k is 1,000" not in run("--window", "10k").output   # no k of 1,024 would have been enough


def test_the_window_is_required():
    out = run()
    assert out.exit_code == 2 and "--window" in out.output


def test_recommend_with_a_window_judges_sessions_at_their_compactions():
    out = CliRunner().invoke(main, ["recommend", str(DATA), "--no-cache", "--window", "32k", "-b", "0:16k:9",
                                    "-k", "1", "-p", "50%"])
    assert out.exit_code == 0, out.output
    assert "of the sessions that reach the trigger keep 1 or more whole turn verbatim at every compaction" in out.output
    assert "replayed under a 32k window" in out.output and "end-of-session" not in out.output
    r = pa.replay(pa.read_sessions(DATA), pa.budgets.parse_budgets("0:16k:9"), window=32_000)
    chosen = int(out.stdout.split("(")[1].split(" tokens")[0].replace(",", ""))  # "6k (6,000 tokens)"
    reaching = r.sessions.filter(pl.col("n_compactions").max().over("session_id") > 0)["session_id"].unique()
    worst = r.events.filter(pl.col("budget") == chosen).group_by("session_id").agg(pl.col("kept_turns").min())
    bad = worst.filter(pl.col("kept_turns") < 1).height
    assert (len(reaching) - bad) / len(reaching) >= 0.5 and chosen < 32_000 - 16_384


def test_report_with_a_window_has_the_replay_section(tmp_path):
    out = CliRunner().invoke(main, ["report", str(DATA), "--no-cache", "--window", "32k", "-b", "0:16k:5",
                                    "-k", "1", "-p", "50%", "-o", str(tmp_path / "r")])
    assert out.exit_code == 0, out.output
    folder = tmp_path / "r"
    md = (folder / "report.md").read_text()
    assert "## Compaction over the sessions' life" in md and "of the sessions that reach the trigger keep" in md
    for name in ("replay_kept_turns", "replay_compactions", "replay_summarizer_input"):
        assert (folder / f"{name}.png").stat().st_size > 1000 and f"({name}.png)" in md
    events = pl.read_parquet(folder / "replay_events.parquet")
    want = pa.replay(pa.read_sessions(DATA), pa.budgets.parse_budgets("0:16k:5"), window=32_000).events
    assert events.select(want.columns).equals(want)
    assert "Compaction over the sessions" in (folder / "index.html").read_text()
    # data/'s models have no price in genai-prices: no frontier, and the report says why.
    assert "no frontier: no session's model has a price" in md and not (folder / "frontier.png").exists()


def test_report_under_a_window_leads_with_the_frontier_and_the_chosen_point(tmp_path):
    prices = DATA.parent / "docs" / "synth-prices.json"
    out = CliRunner().invoke(main, ["report", str(DATA), "--no-cache", "--window", "32k", "-b", "0:16k:9",
                                    "--policy", "gemini-cli", "--max-orphan-rate", "5%", "--prices", str(prices),
                                    "-o", str(tmp_path / "r")])
    assert out.exit_code == 0, out.output
    folder = tmp_path / "r"
    md = (folder / "report.md").read_text()
    # The decision comes first: the recommendation, then the frontier, before the corpus.
    assert md.index("## Recommendation") < md.index("### The frontier") < md.index("## Corpus")
    assert (folder / "frontier.png").stat().st_size > 1000 and "![What each budget costs and loses](frontier.png)" in md
    assert "canonical (recorded)" in md and "## Budgets under the window" in md
    table = pl.read_parquet(folder / "decision.parquet")
    assert {"cost_p50", "orphan_rate", "proposable"} <= set(table.columns)
    rec = CliRunner().invoke(main, ["recommend", str(DATA), "--no-cache", "--window", "32k", "-b", "0:16k:9",
                                    "--policy", "libpanto", "--policy", "gemini-cli", "--max-orphan-rate", "5%",
                                    "--prices", str(prices), "-o", "-", "--output-format", "json"])
    obj = json.loads(rec.stdout)
    headline = next(line for line in rec.stderr.splitlines() if line.startswith(("recommended", "no proposable")))
    assert out.stdout.splitlines()[0] == headline  # the report and recommend make the same choice
    assert obj["budget"] is not None and f"**{obj['policy']}**" in md


def test_bad_replay_parameters_fail_before_any_work(tmp_path):
    for command in (["report", "-o", str(tmp_path / "r")], ["recommend"]):
        out = CliRunner().invoke(main, [*command, str(DATA), "--window", "10k", "--reserve", "20k"])
        assert out.exit_code == 2 and "window (10000) must be larger than reserve (20000)" in out.output
    assert not (tmp_path / "r").exists()


def test_the_summary_size_defaults_to_the_recorded_median_and_says_so():
    from panto_analytics.policy.compaction.engine import summary_size

    tokens, source = summary_size(pa.read_sessions(DATA))
    assert source.startswith("the median of") and tokens > 0
    out = run("--window", "64k", "-b", "20k")
    assert out.exit_code == 0 and f"summary: {tokens:,} tokens ({source})" in out.stderr
    given = run("--window", "64k", "-b", "20k", "--summary-tokens", "3k")
    assert "summary: 3,000 tokens (given)" in given.stderr


def test_policies_are_compared_in_one_table(tmp_path):
    out = run("--window", "64k", "-b", "8k,20k", "--policy", "libpanto", "--policy", "pi", "--policy",
              "codex:user_tokens=10k", "--policy", "claude-code", "-o", str(tmp_path / "t.csv"),
              "--events", str(tmp_path / "e.parquet"))
    assert out.exit_code == 0, out.output
    result = pa.replay(pa.read_sessions(DATA), [8_000, 20_000], window=64_000,
                       policy=["libpanto", "pi", "codex:user_tokens=10k", "claude-code"])
    assert pl.read_parquet(tmp_path / "e.parquet").equals(result.events)
    table = pl.read_csv(tmp_path / "t.csv")
    assert table.select("policy", "budget").rows() == [("libpanto", 8_000), ("libpanto", 20_000), ("pi", 20_000),
                                                       ("codex:user_tokens=10000", 10_000), ("claude-code", None)]
    per_policy = result.events.group_by("policy", "budget").len()
    for policy, budget, events in table.select("policy", "budget", "events").rows():
        # The table shows no budget for a policy that has none (claude-code); its events hold 0 there.
        expected = per_policy.filter((pl.col("policy") == policy) & (pl.col("budget") == (budget or 0)))["len"]
        assert events == (expected.item() if len(expected) else 0)
    assert (table.filter(pl.col("policy") == "claude-code")["kept_tokens_p90"] == 0).all()


def test_an_unknown_policy_or_setting_is_a_one_line_usage_error():
    out = run("--window", "64k", "--policy", "aider")
    assert out.exit_code == 2 and "unknown policy 'aider'" in out.output and "Traceback" not in out.output
    out = run("--window", "64k", "--policy", "pi:keep=3")
    assert out.exit_code == 2 and "unknown setting 'keep=3'" in out.output


def test_policy_cuts_summarizes_the_rows_it_writes(tmp_path):
    out = CliRunner().invoke(main, ["policy-cuts", str(DATA), "--no-cache", "--policy", "pi", "--policy",
                                    "claude-code", "-o", str(tmp_path / "t.csv"), "--rows", str(tmp_path / "r.csv")])
    assert out.exit_code == 0, out.output
    rows, table = pl.read_csv(tmp_path / "r.csv"), pl.read_csv(tmp_path / "t.csv")
    assert rows["policy"].unique(maintain_order=True).to_list() == ["pi", "claude-code"]
    # claude-code keeps nothing verbatim (no version named): it matches the compactions that kept nothing.
    kept_nothing = pa.ingest.compactions(DATA)["first_kept_seq"].null_count()
    assert 0 < kept_nothing < 7
    assert table.select("policy", "recorded", "exact").rows() == [
        ("pi", 7, int(rows.filter(pl.col("policy") == "pi")["exact"].sum())), ("claude-code", 7, kept_nothing)]
    out = CliRunner().invoke(main, ["policy-cuts", str(DATA), "--no-cache", "--policy", "libpanto"])
    assert out.exit_code == 2 and "compactions -b" in out.output


def test_a_policy_setting_out_of_range_is_a_one_line_usage_error():
    out = run("--window", "64k", "--policy", "codex:trigger_ratio=2")
    assert out.exit_code == 2 and "Traceback" not in out.output
    assert len(out.output.strip().splitlines()) == 1
    assert "trigger_ratio must be in (0, 1]" in out.output


def test_implausibly_small_recorded_summaries_give_way_to_the_default_and_say_why():
    from panto_analytics.defaults import DEFAULT_SUMMARY_TOKENS
    from panto_analytics.policy.compaction.engine import MIN_SUMMARY_TOKENS, summary_size

    tiny = pl.DataFrame({"words": [3, 3, 4], "has_summary": [True, True, True]})
    tokens, source = summary_size(tiny)
    assert tokens == DEFAULT_SUMMARY_TOKENS
    assert "median of 3 recorded summaries is 4 tokens" in source and f"below {MIN_SUMMARY_TOKENS}" in source
    plausible = pl.DataFrame({"words": [300], "has_summary": [True]})
    assert summary_size(plausible) == (390, "the median of 1 recorded summary")


def test_policy_cuts_help_names_only_what_the_command_takes():
    out = CliRunner().invoke(main, ["policy-cuts", "--help"], terminal_width=200)
    assert out.exit_code == 0, out.output
    policy_help = out.output[out.output.index("--policy NAME"):].split("\n  -", 1)[0]
    assert "--budgets" not in out.output
    assert "libpanto" not in policy_help
    assert "codex" in policy_help and "pi-whole-turn" in policy_help


def test_a_window_too_small_for_a_policys_reserve_is_a_usage_error_before_any_work(tmp_path):
    # claude-code reserves 33k: at a 32k window it has no trigger. It was a traceback from deep in the replay.
    for command in ("replay", "recommend", "report"):
        out = CliRunner().invoke(main, [command, str(tmp_path / "nothing-read-yet"), "-w", "32k", "--policy", "claude-code",
                                        *(["-o", str(tmp_path / "r")] if command == "report" else [])])
        assert out.exit_code == 2, (command, out.output)
        assert "policy claude-code: its trigger (-1,000) is below 0 at a window of 32,000" in out.output
        assert out.exception is None or isinstance(out.exception, SystemExit)


@pytest.mark.parametrize(("field", "value"), [
    ("input_cost_per_token", float("nan")), ("output_cost_per_token", float("inf")),
    ("input_cost_per_token", float("-inf")), ("cache_read_input_token_cost", -1e-07), ("input_cost_per_token", 1e20),
    ("output_cost_per_token_above_200k_tokens", float("nan")), ("input_cost_per_token", 10**400)])
def test_a_price_that_is_not_a_finite_dollar_amount_per_token_is_a_one_line_error(tmp_path, field, value):
    # A price file's NaN, infinity, negative or absurd rate would fail (or silently wrap) the picodollar sums.
    table = json.loads((DATA.parent / "docs" / "synth-prices.json").read_text())
    path = tmp_path / "prices_bad.json"
    table["synth-pro"][field] = value
    path.write_text(json.dumps(table))   # NaN, Infinity and -Infinity as Python's json writes (and reads) them
    for command in (["replay", str(DATA), "--window", "64k", "-b", "8k"], ["cost", str(DATA)]):
        out = CliRunner().invoke(main, [*command, "--no-cache", "--prices", str(path)])
        assert out.exit_code == 1 and isinstance(out.exception, SystemExit), out.exception
        lines = out.stderr.strip().splitlines()
        assert lines == [lines[0]] and str(path) in lines[0] and "'synth-pro'" in lines[0] and field in lines[0]
        assert "Traceback" not in out.output
