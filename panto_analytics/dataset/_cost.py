"""The bill of a dataset, bucket by bucket: :func:`cost_dataset`.

Each task bills the calls of some whole buckets and returns their
:func:`~panto_analytics.outcomes.cost.cost_partials`: per group (and model,
and whether priced) only sums, of calls, tokens, picodollars and unpriced
calls. Those merge exactly by summing
(:func:`~panto_analytics.outcomes.cost.merge_cost_partials`), so the table
equals ``costs(corpus, ...)`` of the whole corpus in memory, bit for bit;
memory holds one task's messages plus the partial rows, which grow with the
groups (days, models, ...), not with the calls (with ``by="session"`` they
grow with the sessions).
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from ..outcomes.cost import Grouping, cost_partials, merge_cost_partials
from ..outcomes.prices import Prices, load_prices
from .engines import map_buckets
from .store import TASK_ROWS, collect, scan_parts

__all__ = ["cost_dataset"]


def _cost_task(root: str, parts: list[str], *, by: list[Grouping], prices: Prices, timezone: str) -> pl.DataFrame:
    """One group of buckets' :func:`cost_partials` (the per-bucket function both engines run)."""
    messages = collect(scan_parts(root, "messages", parts), root)
    sessions = collect(scan_parts(root, "sessions", parts).select("session_id", "project"), root) \
        if "project" in by else None
    return cost_partials(messages, by=by, prices=prices, timezone=timezone, sessions=sessions)


def cost_dataset(root: str | Path, *, by: Grouping | Sequence[Grouping] = (), prices: Prices | str | None = None,
                 timezone: str = "UTC", engine: str = "local", address: str | None = None,
                 task_rows: int = TASK_ROWS) -> pl.DataFrame:
    """:func:`~panto_analytics.outcomes.costs` of the dataset at ``root``, bucket by bucket, here or on Ray
    (``engine="ray"``); the same table, bit for bit, as in memory (and the same unpriced warnings).

    Examples
    --------
    >>> import warnings
    >>> from panto_analytics.dataset.write import dataset_example
    >>> with warnings.catch_warnings(record=True):
    ...     cost_dataset(dataset_example(usage=True)).select("api_calls", "input", "output").rows()
    [(1, 9, 1)]
    """
    groups: list[Grouping] = [by] if isinstance(by, str) else list(by)
    table = load_prices(prices)
    task = functools.partial(_cost_task, by=groups, prices=table, timezone=timezone)
    partials: list[Any] = list(map_buckets(root, task, engine=engine, address=address, rows=task_rows))
    partials = partials or [task(str(root), [])]
    return merge_cost_partials(partials, by=groups)
