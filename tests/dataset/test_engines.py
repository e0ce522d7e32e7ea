"""The local engine's worker process (dataset/engines.py): the same results as task after task here."""
from __future__ import annotations

import functools
import warnings

import polars as pl
import pytest
from conftest import DATA
from polars.testing import assert_frame_equal

from panto_analytics.analysis.choose import Rule
from panto_analytics.dataset import OnDataset, engines
from panto_analytics.dataset.store import bucket_groups
from panto_analytics.errors import InputError

PRICES = DATA.parent / "docs" / "synth-prices.json"


def _sizes(root: str, parts: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"parts": [len(parts)], "first": [parts[0]]})


def _fails(root: str, parts: list[str]) -> pl.DataFrame:
    raise InputError(parts[0], 3, "a bad line", skippable=False)


def _allocator(root: str, parts: list[str]) -> str | None:
    import os

    return os.environ.get("_RJEM_MALLOC_CONF")


def test_the_worker_returns_freed_pages_at_once_and_this_process_is_left_as_it_was(data_dataset, monkeypatch):
    import os

    before = os.environ.get("_RJEM_MALLOC_CONF")  # Polars' own defaults, set as it was imported
    got = set(engines.map_buckets(data_dataset, _allocator, rows=1, workers=True))
    assert len(got) == 1 and got.pop().endswith(engines.WORKER_ALLOCATOR)  # the last setting wins
    assert os.environ.get("_RJEM_MALLOC_CONF") == before
    monkeypatch.setenv("_RJEM_MALLOC_CONF", "narenas:1")  # a setting of the user's own is kept
    got = set(engines.map_buckets(data_dataset, _allocator, rows=1, workers=True))
    assert len(got) == 1 and got.pop().endswith("narenas:1")


def test_the_worker_gives_every_task_in_order(data_dataset, monkeypatch):
    monkeypatch.setattr(engines, "TASKS_PER_WORKER", 3)
    groups = bucket_groups(data_dataset, 1)
    assert len(groups) > engines.TASKS_PER_WORKER  # so that the worker is replaced at least once
    got = list(engines.map_buckets(data_dataset, _sizes, rows=1, workers=True))
    assert [f["first"][0] for f in got] == [g[0] for g in groups]


def test_a_task_error_comes_back_as_it_was_raised(data_dataset):
    with pytest.raises(InputError) as caught:
        list(engines.map_buckets(data_dataset, _fails, rows=1, workers=True))
    assert (caught.value.line, caught.value.reason, caught.value.skippable) == (3, "a bad line", False)


def test_a_small_dataset_runs_here_a_large_one_in_a_worker(data_dataset, monkeypatch):
    seen: list[bool] = []
    monkeypatch.setattr(engines, "_in_workers", lambda root, groups, task: seen.append(True) or iter(()))
    list(engines.map_buckets(data_dataset, functools.partial(_sizes), rows=1))
    assert seen == []  # data/ is far below WORKER_MIN_ROWS
    monkeypatch.setattr(engines, "WORKER_MIN_ROWS", 0)
    list(engines.map_buckets(data_dataset, _sizes, rows=1))
    assert seen == [True]
    list(engines.map_buckets(data_dataset, _sizes, rows=10**9))  # one task: here
    assert seen == [True]
    assert list(engines.map_buckets(data_dataset, lambda root, parts: 1, rows=1)) == [1] * 8  # not picklable: here
    assert seen == [True]


def _verbs(source: OnDataset, rows: list[pl.DataFrame]) -> tuple:
    """The replay's table and session rows, the bill and the decision of ``source``."""
    kw = {"window": 64_000, "reserve": 16_384, "policy": ["libpanto", "claude-code"], "prices": PRICES}
    table = source.replay_table([8_000, 20_000], with_loss=True, on_rows=lambda e, s: rows.append(s), **kw).table
    return table, source.cost(by=["model"]), source.choose_budget("0:16k:5", Rule(max_orphan_rate=0.05), **kw).choice


def test_replay_cost_and_decision_in_the_worker_equal_those_here(data_dataset, monkeypatch):
    source = OnDataset(data_dataset, task_rows=1)
    rows_here: list[pl.DataFrame] = []
    rows_there: list[pl.DataFrame] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table_here, cost_here, decision_here = _verbs(source, rows_here)
        monkeypatch.setattr(engines, "WORKER_MIN_ROWS", 0)
        table_there, cost_there, decision_there = _verbs(source, rows_there)
    assert_frame_equal(pl.concat(rows_there), pl.concat(rows_here), check_exact=True)  # in the same order
    assert_frame_equal(table_there, table_here, check_exact=True)
    assert pl.concat(rows_here).height > 0
    assert_frame_equal(cost_there, cost_here, check_exact=True)
    assert decision_there.table.equals(decision_here.table)
    assert (decision_there.budget, decision_there.policy) == (decision_here.budget, decision_here.policy)
