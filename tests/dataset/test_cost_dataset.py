"""`cost` over a dataset, bucket by bucket: the same table as in memory, bit for bit."""
from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from polars.testing import assert_frame_equal

import panto_analytics as pa
from benchmarks.synth_dataset import write_synthetic_dataset
from panto_analytics.dataset import dataset_corpus
from panto_analytics.dataset._cost import cost_dataset
from panto_analytics.outcomes import costs
from panto_analytics.outcomes.cost import UnpricedWarning

GROUPINGS = [(), ("session",), ("model",), ("day", "model"), ("week",), ("month", "project"), ("format",)]


@pytest.fixture(scope="module")
def synthetic_dataset(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("synth") / "ds"
    write_synthetic_dataset(root, 300, seed=5, buckets=16, chunk=70)
    return root


def _both(root: Path, by, **kw):
    with warnings.catch_warnings(record=True) as mem_notes:
        warnings.simplefilter("always")
        expected = costs(dataset_corpus(root), by=list(by), timezone="Europe/Paris")
    with warnings.catch_warnings(record=True) as ds_notes:
        warnings.simplefilter("always")
        got = cost_dataset(root, by=list(by), timezone="Europe/Paris", **kw)
    return expected, got, [str(w.message) for w in mem_notes], [str(w.message) for w in ds_notes]


@pytest.mark.parametrize("by", GROUPINGS)
@pytest.mark.parametrize("which", ["data", "synthetic"])
def test_cost_dataset_equals_in_memory(by, which, data_dataset, synthetic_dataset):
    root = data_dataset if which == "data" else synthetic_dataset
    for task_rows in (1, 10**9):  # one task per bucket, then one task for all: the partials merge exactly
        expected, got, mem_notes, ds_notes = _both(root, by, task_rows=task_rows)
        assert_frame_equal(got, expected, check_exact=True)
        assert ds_notes == mem_notes  # the same unpriced warnings, once per model
    assert expected["api_calls"].sum() > 0


def test_partials_merge_exactly_whatever_the_split():
    m = pa.examples.messages()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnpricedWarning)
        whole = costs(m, by="session")
        parts = [pa.outcomes.cost.cost_partials(m.filter(m["session_id"] == s), by="session")
                 for s in m["session_id"].unique().to_list()]
        assert_frame_equal(pa.outcomes.cost.merge_cost_partials(parts, by="session"), whole, check_exact=True)


@pytest.mark.ray
@pytest.mark.slow
def test_cost_dataset_on_ray_equals_local(synthetic_dataset):
    pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'panto_analytics[ray]'")
    for by in [("day", "model"), ("format",)]:
        assert_frame_equal(cost_dataset(synthetic_dataset, by=list(by), engine="ray", task_rows=1),
                           cost_dataset(synthetic_dataset, by=list(by)), check_exact=True)
