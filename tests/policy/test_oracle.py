"""Differential tests against libpanto's own computeSplit, compiled from ``../shared/reference``.

The harness (``../shared/reference/harness/oracle.py``, see its README)
builds compaction.zig unchanged and runs it over canonical sessions. The
frame engine and the Python port must both agree with it on ``prefix_end``
and ``kept_turns`` for every (session, budget): on the bundled corpus in
``data/``, on a seeded batch of random sessions (some past 4096 turns), on
hypothesis-drawn batches, and on the scenarios of compaction.zig's tests.
Skipped when ``../shared`` is absent.
"""
from __future__ import annotations

import random
from pathlib import Path

import pytest
from conftest import DATA, HARNESS, examples, oracle_module
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import U64_MAX, boundary_budgets, budgets, conversations, random_conversation
from test_properties import suffix_sums

import panto_analytics as pa
from reference import port as ref

#: Budgets for fixed batches: every small value, a geometric ladder, the u64 maximum.
LADDER = sorted({*range(0, 41), *(int(1.6**k) for k in range(60)), 20_000, 200_000, U64_MAX})

pytestmark = pytest.mark.skipif(not (HARNESS / "oracle.py").is_file(),
                                reason=f"libpanto's reference harness is absent ({HARNESS}): no oracle to compare with")


@pytest.fixture(scope="session")
def oracle():
    """The harness module, with its binary built (the first build takes about a minute)."""
    return oracle_module()


def oracle_by_key(oracle, sessions: dict[str, list[dict]], budgets: list[int]) -> dict:
    """``{(session_id, budget): (prefix_end, kept_turns)}`` from libpanto's compiled code."""
    rows = oracle.oracle_splits(list(sessions.values()), budgets)
    return {(sid, b): split for sid, row in zip(sessions, rows, strict=True)
            for b, split in zip(budgets, row, strict=True)}


def engine_by_key(engine, paths, budgets: list[int], kind: str = "eager") -> dict:
    """``{(session_id, budget): (prefix_end, kept_turns)}`` from panto_analytics, empty sessions included."""
    corpus = pa.ingest.read_corpus(paths)
    return {(r["session_id"], r["budget"]): (r["prefix_end"], r["kept_turns"])
            for r in engine.splits(corpus.messages, budgets, kind, sessions=corpus.sessions)}


def assert_request_bytes_match(oracle, sessions: dict[str, list[dict]], paths, budgets: list[int]) -> int:
    """Every split's ``request_bytes`` equals the size of the request libpanto's own code builds.

    A no-op split sends nothing: its ``request_bytes`` is null (libpanto's code
    still builds a request with an empty transcript there). Returns the
    number of requests compared.
    """
    rows = oracle.oracle_requests(list(sessions.values()), budgets)
    want = {(sid, b): (pe, kt, size) for sid, row in zip(sessions, rows, strict=True)
            for b, (pe, kt, size, _) in zip(budgets, row, strict=True)}
    corpus = pa.ingest.read_corpus(paths)
    compared = 0
    for r in pa.splits(corpus.messages, budgets, sessions=corpus.sessions).iter_rows(named=True):
        prefix_end, kept_turns, size = want[r["session_id"], r["budget"]]
        assert (r["prefix_end"], r["kept_turns"]) == (prefix_end, kept_turns)
        assert r["request_bytes"] == (None if r["noop"] else size), (r["session_id"], r["budget"])
        compared += not r["noop"]
    return compared


def port_by_key(sessions: dict[str, list[dict]], budgets: list[int]) -> dict:
    out = {}
    for sid, msgs in sessions.items():
        usages = ref.usages_of(msgs)
        for b in budgets:
            s = ref.compute_split(msgs, usages, b)
            out[sid, b] = (s.prefix_end, s.kept_turns)
    return out


def write_all(folder: Path, sessions: dict[str, list[dict]]) -> Path:
    for sid, msgs in sessions.items():
        ref.write_session(folder / f"{sid}.jsonl", msgs)
    return folder


# --- (a) the bundled corpus ---------------------------------------------------

def test_bundled_corpus(oracle, engine):
    files = sorted(DATA.rglob("*.jsonl")) if DATA.is_dir() else []
    if not files:
        pytest.skip(f"no *.jsonl in {DATA}")
    sessions = dict(oracle.load_session(f) for f in files)
    assert len(sessions) == len(files)
    budgets = sorted({*LADDER, *pa.budgets.parse_budgets("0:200k:21")})
    assert engine_by_key(engine, DATA, budgets) == oracle_by_key(oracle, sessions, budgets)
    assert assert_request_bytes_match(oracle, sessions, DATA, budgets) > 1000


# --- (b) a seeded batch: one oracle call for all of it ------------------------

@pytest.fixture(scope="session")
def seeded_batch(tmp_path_factory) -> tuple[Path, dict[str, list[dict]]]:
    rng = random.Random(20250101)
    sessions = {f"r{i:03d}": random_conversation(rng) for i in range(300)}
    # Past 4096 turns: some noise first, then only agent turns (no summary to cut the window short).
    sessions |= {f"long{i}": random_conversation(rng) + random_conversation(rng, n, noise=0)
                 for i, n in enumerate([4900, 5200])}
    return write_all(tmp_path_factory.mktemp("seeded"), sessions), sessions


@pytest.fixture(scope="session")
def seeded_oracle(oracle, seeded_batch) -> dict:
    return oracle_by_key(oracle, seeded_batch[1], LADDER)


def test_seeded_batch_is_varied(seeded_batch):
    sessions = seeded_batch[1]
    traces = {sid: ref.walk(msgs) for sid, msgs in sessions.items() if not sid.startswith("long")}
    assert sum(bool(t.turn_starts) for t in traces.values()) > 150
    assert sum(ref.latest_compaction_index(m) is not None for m in sessions.values()) > 30
    assert sum(any(u for *_, u in t.turns) for t in traces.values()) > 50
    assert all(ref.walk(sessions[sid]).n_turns > 4096 for sid in ("long0", "long1"))


@pytest.mark.parametrize("kind", ["eager", "lazy"])
def test_seeded_batch_engine(engine, seeded_batch, seeded_oracle, kind):
    folder, sessions = seeded_batch
    assert sum(not msgs for msgs in sessions.values()) > 5  # sessions without messages: computeSplit gives (0, 0)
    assert engine_by_key(engine, folder, LADDER, kind) == seeded_oracle


def test_seeded_batch_request_bytes(oracle, seeded_batch):
    folder, sessions = seeded_batch
    short = {sid: m for sid, m in sessions.items() if not sid.startswith("long")}
    for sid in short:
        assert (folder / f"{sid}.jsonl").is_file()
    assert assert_request_bytes_match(oracle, short, [folder / f"{sid}.jsonl" for sid in short], LADDER) > 1000


def test_seeded_batch_port(seeded_batch, seeded_oracle):
    sessions = {sid: m for sid, m in seeded_batch[1].items() if not sid.startswith("long")}
    want = {k: v for k, v in seeded_oracle.items() if k[0] in sessions}
    assert port_by_key(sessions, LADDER) == want
    # The long ones: a few budgets (without usage each walk is quadratic in the port).
    longs = {sid: m for sid, m in seeded_batch[1].items() if sid.startswith("long")}
    few = [0, 5, 20_000, U64_MAX]
    assert port_by_key(longs, few) == {k: v for k, v in seeded_oracle.items() if k[0] in longs and k[1] in few}


# --- hypothesis batches: port and engine against the oracle, boundary budgets --

@pytest.mark.slow
@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(batch=st.lists(conversations(), min_size=1, max_size=5), drawn=budgets())
def test_drawn_batches(oracle, engine, tmp_path_factory, batch, drawn):
    sessions = {f"h{i}": msgs for i, msgs in enumerate(batch)}
    all_budgets = sorted({*drawn, *(b for msgs in batch for b in boundary_budgets(suffix_sums(msgs)))})
    want = oracle_by_key(oracle, sessions, all_budgets)
    assert port_by_key(sessions, all_budgets) == want
    folder = write_all(tmp_path_factory.mktemp("drawn"), sessions)
    assert engine_by_key(engine, folder, all_budgets) == want
    assert_request_bytes_match(oracle, sessions, folder, all_budgets)


# --- (c) the scenarios of compaction.zig's tests --------------------------------

@pytest.mark.parametrize("case", ref.zig_split_tests(), ids=lambda c: c.name)
def test_zig_split_tests(oracle, engine, tmp_path, case):
    budgets = sorted({case.budget, *LADDER})
    sessions = {"z": case.canonical()}
    want = oracle_by_key(oracle, sessions, budgets)
    got = ref.Split(*want["z", case.budget])
    if case.expect is not None:
        assert (got.prefix_end, got.kept_turns) == case.expect
    if case.holds is not None:
        assert case.holds(got)
    assert engine_by_key(engine, write_all(tmp_path, sessions), budgets) == want
    assert port_by_key(sessions, budgets) == want
