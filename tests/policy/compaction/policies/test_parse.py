"""``NAME[:k=v,...]``: policies by name, their settings, their specs, and one-line errors."""
from __future__ import annotations

import polars as pl
import pytest

from panto_analytics.frame.schema import MESSAGE_SCHEMA
from panto_analytics.policy import replay_policies
from panto_analytics.policy.compaction.policies import POLICIES, Codex, LastNTurns, Pi, parse_policy


def test_every_policy_parses_by_name_with_its_defaults_and_round_trips_its_spec():
    for name, cls in POLICIES.items():
        policy = parse_policy(name)
        assert isinstance(policy, cls) and policy.spec() == name
    assert parse_policy("pi:keep_recent_tokens=30k,reserve_tokens=8192") == Pi(reserve_tokens=8192,
                                                                             keep_recent_tokens=30_000)
    codex = parse_policy("codex:trigger_ratio=0.8, user-tokens=10k")
    assert codex == Codex(trigger_ratio=0.8, user_tokens=10_000)
    assert parse_policy(codex.spec()) == codex and codex.spec() == "codex:trigger_ratio=0.8,user_tokens=10000"


@pytest.mark.parametrize(("spec", "message"), [
    ("aider", "unknown policy 'aider'"),
    ("pi:keep=3", "unknown setting 'keep=3'; settings: reserve_tokens, keep_recent_tokens"),
    ("pi:keep_recent_tokens=lots", "setting keep_recent_tokens: not a token budget"),
    ("pi:keep_recent_tokens", "setting keep_recent_tokens needs a value"),
    ("codex:trigger_ratio=high", "setting trigger_ratio:"),
    ("last-n-turns:n=0", "n must be at least 1"),
    ("codex:trigger_ratio=2", r"codex: trigger_ratio=2 is out of range: trigger_ratio must be in \(0, 1\]"),
    ("codex:trigger_ratio=0", r"trigger_ratio must be in \(0, 1\]"),
    ("gemini-cli:preserve=1.5", r"preserve must be in \(0, 1\]"),
    ("pi:keep_recent_tokens=5000000000G", "below 2\\*\\*62"),
])
def test_bad_specs_are_one_line_value_errors(spec, message):
    with pytest.raises(ValueError, match=message) as e:
        parse_policy(spec)
    assert "\n" not in str(e.value)


def test_triggers_follow_the_window():
    assert Pi().threshold(200_000) == 200_000 - 16_384
    assert Codex().threshold(200_000) == 180_000
    assert LastNTurns().threshold(100_000) == 100_000 - 16_384
    assert parse_policy("gemini-cli").threshold(200_000) == 99_999  # fires at >= 100,000
    assert parse_policy("claude-code").threshold(200_000) == 167_000


def test_replay_refuses_no_policy_and_a_trigger_below_zero():
    empty = pl.DataFrame(schema=MESSAGE_SCHEMA)
    with pytest.raises(ValueError, match="no policy given"):
        replay_policies(empty, [], window=100_000, summary_tokens=10)
    with pytest.raises(ValueError, match="its trigger .* is below 0"):
        replay_policies(empty, ["pi"], window=10_000, summary_tokens=10)
