"""How a benchmark times a step: the best wall time of repeated runs, and the CPU time of one.

>>> out, seconds = best_of(2, sorted, [3, 1, 2])
>>> out, seconds >= 0
([1, 2, 3], True)
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

__all__ = ["best_of", "cpu_seconds"]


def best_of(repeat: int, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float]:
    """``fn(*args, **kwargs)`` run ``repeat`` times: its last result, and the least wall time one run took."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        best = min(best, time.perf_counter() - t0)
    return out, best


def cpu_seconds(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> float:
    """The CPU time of this process (all its threads) in ``fn``: what a loaded machine does not stretch.

    >>> cpu_seconds(sum, range(10)) >= 0
    True
    """
    t0 = time.process_time()
    fn(*args, **kwargs)
    return time.process_time() - t0
