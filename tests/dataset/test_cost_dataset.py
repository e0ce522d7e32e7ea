"""`cost` in every lane (in memory, a dataset bucket by bucket here, on Ray): the same table as the library's in
memory, bit for bit, and the same unpriced-model warnings."""
from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from conftest import LANES, lanes_of, our_warnings
from polars.testing import assert_frame_equal

import panto_analytics as pa
from benchmarks.synth_dataset import write_synthetic_dataset
from panto_analytics.dataset import dataset_corpus
from panto_analytics.outcomes import costs
from panto_analytics.outcomes.cost import UnpricedWarning

GROUPINGS = [(), ("session",), ("model",), ("day", "model"), ("week",), ("month", "project"), ("format",)]


@pytest.fixture(scope="module")
def synthetic_dataset(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("synth") / "ds"
    write_synthetic_dataset(root, 300, seed=5, buckets=16, chunk=70)
    return root


def _both(root: Path, by, source):
    with warnings.catch_warnings(record=True) as mem_notes:
        warnings.simplefilter("always")
        expected = costs(dataset_corpus(root), by=list(by), timezone="Europe/Paris")
    with warnings.catch_warnings(record=True) as lane_notes:
        warnings.simplefilter("always")
        got = source.cost(by=by, timezone="Europe/Paris")
    return expected, got, our_warnings(mem_notes), our_warnings(lane_notes)


@pytest.mark.parametrize("lane", LANES)
@pytest.mark.parametrize("by", GROUPINGS)
@pytest.mark.parametrize("which", ["data", "synthetic"])
def test_cost_equals_in_memory(by, which, lane, data_dataset, synthetic_dataset):
    root = data_dataset if which == "data" else synthetic_dataset
    for source in lanes_of(lane, root):  # on a dataset: a task per bucket, then one for all; the partials merge
        expected, got, mem_notes, lane_notes = _both(root, by, source)
        assert_frame_equal(got, expected, check_exact=True)
        assert lane_notes == mem_notes  # the same unpriced warnings, once per model
    assert expected["api_calls"].sum() > 0


def test_partials_merge_exactly_whatever_the_split():
    m = pa.examples.messages()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnpricedWarning)
        whole = costs(m, by="session")
        parts = [pa.outcomes.cost.cost_partials(m.filter(m["session_id"] == s), by="session")
                 for s in m["session_id"].unique().to_list()]
        assert_frame_equal(pa.outcomes.cost.merge_cost_partials(parts, by="session"), whole, check_exact=True)
