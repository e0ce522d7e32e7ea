"""The loss on real recordings, cut by cut, against the literal readings of ``docs/loss.md`` (issue 28).

The literal readings (:func:`test_orphan_loss.reference_cut_loss`, :func:`test_recorded_refetch.reference_targets`)
walk each cut's next calls in plain Python and look back for each target; here they read the references of
the real recordings in ``../shared/realdata`` (the targets themselves are checked call by call against a
hand-checked sample in ``tests/frame``) at every compaction the agents recorded there and at every cut a
replay of the compacting policies makes under a 200k and a 64k window. Skipped where the recordings are absent.
"""
from __future__ import annotations

import polars as pl
import pytest
from conftest import REALDATA
from test_orphan_loss import reference_cut_loss
from test_recorded_refetch import reference_targets

import panto_analytics as pa
from panto_analytics.frame.tool_targets import references
from panto_analytics.outcomes.orphan_loss import DEFAULT_HORIZON, cut_loss, recorded_cuts, replay_cuts
from panto_analytics.outcomes.recorded_refetch import TARGET_COLUMNS, target_loss
from panto_analytics.policy.compaction.any_policy import replay_policies

pytestmark = pytest.mark.skipif(not REALDATA.exists(), reason="../shared/realdata absent")

#: The compacting policies whose cuts the literal reading covers (a clearing edit's cut has its own test).
COMPACTING = ["libpanto", "claude-code", "pi", "codex"]


@pytest.fixture(scope="module")
def corpus():
    return pa.ingest.read_corpus([REALDATA], skip_invalid=True)


@pytest.fixture(scope="module")
def refs(corpus):
    return references(corpus.messages).collect().with_columns(pl.col("session_id").cast(pl.String))


def assert_every_cut_is_the_literal_reading(refs: pl.DataFrame, cuts: pl.DataFrame) -> None:
    cuts = cuts.with_columns(pl.col("session_id").cast(pl.String))
    got = cut_loss(refs, cuts, horizon=DEFAULT_HORIZON)
    targets = target_loss(refs, cuts, horizon=DEFAULT_HORIZON).select(TARGET_COLUMNS)
    ref_rows = refs.to_dicts()
    assert got.height == targets.height == cuts.height
    for cut, row, target in zip(cuts.iter_rows(named=True), got.iter_rows(named=True), targets.iter_rows()):
        want = reference_cut_loss(ref_rows, cut, DEFAULT_HORIZON)
        assert {k: row[k] for k in want} == want, cut
        orphans, refetched, again, *_ = reference_targets(ref_rows, cut, DEFAULT_HORIZON)
        assert target == (orphans, refetched, again), cut


def test_every_recorded_compaction_is_the_literal_reading(corpus, refs):
    cuts = recorded_cuts(corpus.compactions, corpus.sessions).collect()
    assert cuts.height >= 3   # pi's three real compactions at least
    assert_every_cut_is_the_literal_reading(refs, cuts)


@pytest.mark.parametrize("window", [200_000, 64_000])
def test_every_replayed_cut_is_the_literal_reading(corpus, refs, window):
    replay = replay_policies(corpus.messages, COMPACTING, window=window, budgets=[20_000])
    cuts = replay_cuts(replay.events).collect()
    assert cuts["policy"].n_unique() == len(COMPACTING) and cuts.height >= 10   # every policy compacted
    assert_every_cut_is_the_literal_reading(refs, cuts)
