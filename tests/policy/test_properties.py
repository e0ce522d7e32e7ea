"""Property tests: on random conversations the frame engine equals the Python port of computeSplit.

Each example batches several sessions into one frame (so a session's
windows must not leak into the next), hands it over eager, lazy or
streaming, and checks every ``splits`` and ``turns`` column for drawn budgets
plus the budgets at which a split moves (each suffix sum of turn costs, and
one either side).
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from conftest import FRAME_KINDS, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import boundary_budgets, budgets, conversations, long_conversations

from reference import port as ref

SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]


def suffix_sums(msgs: list[dict]) -> list[int]:
    costs = [tokens for *_, tokens, _ in ref.walk(msgs).turns]  # last turn first
    return [sum(costs[:k]) for k in range(len(costs) + 1)]


@settings(max_examples=examples(150), deadline=None, suppress_health_check=SLOW_OK)
@given(sessions=st.lists(conversations(), min_size=1, max_size=4), drawn=budgets(),
       kind=st.sampled_from(FRAME_KINDS), headers=st.booleans(), with_sessions=st.booleans())
@pytest.mark.slow
def test_frame_equals_reference(engine, sessions, drawn, kind, headers, with_sessions):
    all_budgets = drawn + [b for msgs in sessions for b in boundary_budgets(suffix_sums(msgs))]
    with tempfile.TemporaryDirectory() as folder:
        engine.check(Path(folder), {f"s{i}": msgs for i, msgs in enumerate(sessions)}, all_budgets, kind,
                     headers, with_sessions)


@pytest.mark.slow
@settings(max_examples=examples(5), deadline=None, suppress_health_check=SLOW_OK)
@given(long=long_conversations(), short=conversations(), drawn=budgets(), kind=st.sampled_from(FRAME_KINDS))
def test_frame_equals_reference_past_4096_turns(engine, long, short, drawn, kind):
    # Boundary budgets only for the short session: each one costs the port a
    # full (quadratic, without usage) walk of the long one.
    with tempfile.TemporaryDirectory() as folder:
        engine.check(Path(folder), {"long": long, "short": short},
                     drawn[:2] + boundary_budgets(suffix_sums(short)), kind)
