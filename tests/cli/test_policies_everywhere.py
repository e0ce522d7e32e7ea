"""Every clearing, masking and staged policy where a policy appears (issue 29 item 10): `replay --policy ... --cost
--loss`, `recommend --max-orphan-rate` (the frontier), `policy-cuts` (a one-line reason where the policy has no
cut), the report; on data/ and on the real recordings when present. A policy with no token budget is named by its
settings, never by a budget of 0."""
from __future__ import annotations

import csv
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import DATA, REALDATA, REPO

from panto_analytics.analysis.formatting import point_name
from panto_analytics.cli import main
from panto_analytics.policy.compaction.policies import parse_policy

#: The policies that clear tool results, alone and in front of a summarizer, at settings that fire under 32k.
CLEARING = ["observation-masking:m=3", "clear-tool-uses:trigger=16k",
            "claude-code-microcompact:trigger=16k,clear_at_least=4k",
            "claude-code-time-microcompact", "openclaw-cache-ttl", "opencode-prune:protect=4k,minimum=2k"]
STAGED = ["clear-tool-uses:trigger=16k+libpanto", "observation-masking:m=3+pi",
          "opencode-prune:protect=4k,minimum=2k+opencode:max_output=4k,buffer=4k"]
PRICES = REPO / "docs" / "synth-prices.json"


def run(*args: str):
    out = CliRunner().invoke(main, [str(a) for a in args])
    return out


def rows_of(path: Path) -> list[dict]:
    with open(path) as f:
        return list(csv.DictReader(f))


def test_replay_bills_and_measures_every_clearing_and_staged_policy(tmp_path):
    policies = [a for p in CLEARING + STAGED for a in ("--policy", p)]
    out = run("replay", DATA, "-w", "32k", "-b", "8k", *policies, "--cost", "--loss", "--prices", PRICES,
              "-o", tmp_path / "t.csv")
    assert out.exit_code == 0, out.output
    rows = {r["policy"]: r for r in rows_of(tmp_path / "t.csv")}
    assert set(rows) == {parse_policy(p).spec() for p in CLEARING + STAGED}
    for spec, r in rows.items():
        assert r["cost_usd"] and float(r["cost_usd"]) > 0, spec
        assert r["window_calls"] != "", spec                      # --loss measured it
        # A policy with a budget of its own shows it (libpanto's 8k, pi's 20k); one without shows none, never 0.
        policy = parse_policy(spec)
        budget = "" if policy.budget_name() is None else "8000" if spec.endswith("+libpanto") else str(policy.budget())
        assert r["budget"] == budget, spec
    edited = [s for s, r in rows.items() if int(r["events"]) > 0]
    assert len(edited) >= 6, rows


@pytest.mark.parametrize("policy", ["observation-masking:m=3", "openclaw-cache-ttl", "clear-tool-uses:trigger=16k+libpanto"])
def test_recommend_puts_each_on_the_frontier_and_names_it_by_its_settings(policy):
    out = run("recommend", DATA, "--window", "32k", "--policy", "libpanto", "--policy", policy,
              "--max-orphan-rate", "100%", "--prices", PRICES)
    assert out.exit_code == 0, out.output
    spec = parse_policy(policy).spec()
    frontier = next(line for line in out.output.splitlines() if line.startswith("why: the frontier"))
    assert "0 (0 tokens)" not in out.output and f"{spec} 0 " not in out.output
    if spec.endswith("+libpanto"):
        return        # its points are libpanto's budgets: on the frontier where cheap enough
    assert point_name(spec, None) in frontier, out.output      # by its name and settings: "observation-masking (m=3)"


def test_policy_cuts_says_why_a_clearing_policy_has_no_cut_and_cuts_a_staged_one_as_its_last_stage(tmp_path):
    for policy in CLEARING:
        out = run("policy-cuts", DATA, "--policy", policy)
        assert out.exit_code == 2 and "clears tool results in place" in out.output, out.output
        assert "Traceback" not in out.output
    out = run("policy-cuts", DATA, "--policy", "clear-tool-uses:trigger=16k+libpanto")
    assert out.exit_code == 2 and "per budget" in out.output
    out = run("policy-cuts", DATA, "--policy", "observation-masking:m=3+pi", "--policy", "pi", "--rows", tmp_path / "c.csv")
    assert out.exit_code == 0, out.output
    rows = rows_of(tmp_path / "c.csv")
    staged = [r["kept_start_seq"] for r in rows if r["policy"] == "observation-masking:m=3+pi"]
    assert staged and staged == [r["kept_start_seq"] for r in rows if r["policy"] == "pi"]


def test_the_report_compares_them_beside_libpanto(tmp_path):
    policies = ["libpanto", "pi", "observation-masking:m=3", "clear-tool-uses:trigger=16k", "openclaw-cache-ttl",
                "clear-tool-uses:trigger=16k+libpanto"]
    out = run("report", DATA, "-o", tmp_path, "--window", "32k", "--prices", PRICES,
              *[a for p in policies for a in ("--policy", p)])
    assert out.exit_code == 0, out.output
    md = (tmp_path / "report.md").read_text()
    for policy in policies[2:]:
        spec = parse_policy(policy).spec()
        lines = [line for line in md.splitlines() if line.startswith(f"| {spec} ")]
        assert lines, spec
        if not spec.endswith("+libpanto"):   # every table that shows it: the decision, the costs, the policies
            assert len(lines) >= 3 and all(line.split("|")[2].strip() == "-" for line in lines), (spec, lines)


@pytest.mark.skipif(not REALDATA.is_dir(), reason="../shared/realdata is not present")
def test_every_clearing_and_staged_policy_replays_the_real_recordings_with_cost_and_loss(tmp_path):
    policies = ["observation-masking", "clear-tool-uses", "claude-code-microcompact", "claude-code-time-microcompact",
                "openclaw-cache-ttl", "opencode-prune", "clear-tool-uses+libpanto", "openclaw-cache-ttl+libpanto",
                "observation-masking+pi"]
    out = run("replay", REALDATA, "--skip-invalid", "-w", "200k", "-b", "20k", "--cost", "--loss",
              *[a for p in policies for a in ("--policy", p)], "-o", tmp_path / "t.csv")
    assert out.exit_code == 0, out.output
    rows = {r["policy"]: r for r in rows_of(tmp_path / "t.csv")}
    assert set(rows) == set(policies)
    for spec, r in rows.items():
        assert r["cost_p50_usd"] != "" and r["window_calls"] != "", spec
        assert r["budget"] == ("20000" if parse_policy(spec).budget_name() else ""), spec
    # The ones that fire on these recordings (docs/replay.md): each edits some session, with a loss measured.
    for spec in ("observation-masking", "clear-tool-uses", "openclaw-cache-ttl", "claude-code-time-microcompact"):
        assert int(rows[spec]["events"]) > 0 and int(rows[spec]["window_calls"]) > 0, spec


def test_the_timeline_names_a_policy_without_a_budget_by_its_settings():
    session = sorted(DATA.glob("*.jsonl"))[0]
    out = run("timeline", session, "--window", "32k", "--budget", "8k", "--policy", "observation-masking:m=3")
    assert out.exit_code == 0, out.output
    headline = out.output.splitlines()[0]
    assert "under observation-masking (m=3) in a 32,000 window" in headline and "8,000" not in headline
    out = run("timeline", session, "--window", "32k", "--budget", "8k", "--policy", "clear-tool-uses:trigger=16k+libpanto")
    assert "+libpanto at 8,000 tokens in a 32,000 window" in out.output.splitlines()[0]
