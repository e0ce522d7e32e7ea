"""OpenClaw's ``cache-ttl`` pruning over every call at once: the firings, in rounds, and each call's projection.

OpenClaw (``pruneExpiredCacheTtlToolResults``, :class:`~.policies.clearing.OpenclawCacheTtl`)
keeps a projection of the history: each old tool result is as recorded,
*trimmed* (its first and last 1,500 characters) or *cleared* (the
placeholder), and a projection, once made, stays (until a compaction drops
the results it concerns: here, a recorded summary starts a new context).
A new pruning round, a *firing*, runs at a request when the cache has
expired (at least ``ttl`` minutes since the previous request) and the
context, as projected so far, is at ``soft_ratio`` of the window or more:

1. every result before the ``keep_assistants``-th newest assistant message
   (the uses before ``p``) over :data:`~.policies.clearing.TRIM_OVER_TOKENS`
   not yet trimmed or cleared is trimmed;
2. if the context is then at ``hard_ratio`` or more and the results before
   ``p`` not yet cleared hold ``min_prunable`` tokens or more (at their
   trimmed size), they are cleared oldest first until the context is below
   ``hard_ratio``.

Both steps touch only the results before ``p``, so a context's projection
at any call is two boundaries over its tool uses (global use indices): the
uses before ``h`` are cleared, the trimmable ones in ``[h, P)`` trimmed.
The firings depend on the projection before them (the context test), so
they are found in rounds, one firing per context per round, every context
at once (:func:`boundaries`); a round is a handful of array operations over
the calls, and a context fires a few times at most (a cache must expire
between two firings).

>>> import numpy as np
>>> z = np.zeros(1, dtype=np.int64)
>>> h, soft = boundaries(ctx=np.array([0]), a=z, p=z, fires=np.array([False]), prompt=z,
...                      prefix=Prefixes(hs=z, ss=z, ct=z, nc=z, nm=z, hd=z), clearable=np.zeros(0, bool),
...                      window=100, soft_ratio=0.3, hard_ratio=0.5, min_prunable=0, hard_clear=True)
>>> h.tolist(), soft.tolist()
([0], [0])
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

__all__ = ["Prefixes", "boundaries"]


@dataclass(frozen=True)
class Prefixes:
    """Per global use index ``k`` (one past the end included): sums over the uses before ``k``. ``hs``: what
    clearing saves (a clearable use's tokens less the placeholder), ``ss``: what trimming saves (a trimmable use's
    tokens less the trimmed size), ``ct``: clearable tokens, ``nc``: clearable uses, ``nm``: trimmable uses, ``hd``:
    what clearing saves from the trimmed size (a trimmable use's trimmed size, another's tokens, less the
    placeholder)."""

    hs: np.ndarray
    ss: np.ndarray
    ct: np.ndarray
    nc: np.ndarray
    nm: np.ndarray
    hd: np.ndarray


def _first_per_block(keys: np.ndarray) -> np.ndarray:
    """The positions where ``keys`` (grouped) starts a new value."""
    return np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]])) if len(keys) else np.zeros(0, np.int64)


def _hard_boundaries(h: np.ndarray, top: np.ndarray, context: np.ndarray, pre: Prefixes, clearable: np.ndarray,
                     limit: float, window: int) -> np.ndarray:
    """Per firing that clears: the boundary after the last result cleared, clearing the clearable uses of
    ``[h, top)`` oldest first while the context (``context`` less what was cleared) is at ``limit`` of the window."""
    lengths = top - h
    owner = np.repeat(np.arange(len(h)), lengths)
    k = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths) + h[owner]
    left = context[owner] - (pre.hd[k + 1] - pre.hd[h[owner]])
    stop = clearable[k] & (left / window < limit) if len(k) else np.zeros(0, bool)
    last = np.where(clearable[k], k, -1) if len(k) else np.zeros(0, np.int64)
    runs = pl.DataFrame({"f": owner, "k": k, "stop": stop, "last": last}).group_by("f").agg(
        stop=pl.col("k").filter("stop").min(), last=pl.col("last").max())
    out = h.copy()
    f = runs["f"].to_numpy()
    out[f] = np.where(runs["stop"].is_null().to_numpy(), runs["last"].to_numpy(), runs["stop"].fill_null(0).to_numpy()) + 1
    return out


def boundaries(*, ctx: np.ndarray, a: np.ndarray, p: np.ndarray, fires: np.ndarray, prompt: np.ndarray,
               prefix: Prefixes, clearable: np.ndarray, window: int, soft_ratio: float, hard_ratio: float,
               min_prunable: int, hard_clear: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per call (grouped by context ``ctx``, in order within it): the projection's boundaries ``(h, P)`` after the
    call's own firing, if any (the module docstring states the rule).

    ``a``: the context's first use; ``p``: the uses before the protected assistant messages; ``fires``: the cache
    has expired at the call and it may prune (not a call of an agent's kept block); ``prompt``: its recorded
    prompt; ``clearable`` per use.
    """
    n = len(ctx)
    starts = _first_per_block(ctx)
    block = np.repeat(np.arange(len(starts)), np.diff(np.concatenate([starts, [n]]))) if n else np.zeros(0, np.int64)
    h_ctx, soft_ctx = a[starts].copy(), a[starts].copy()
    next_call = starts.copy()
    fired_h = np.full(n, -1, dtype=np.int64)
    fired_soft = np.full(n, -1, dtype=np.int64)
    index = np.arange(n)
    pre = prefix
    while True:
        h, soft = h_ctx[block], soft_ctx[block]
        context = prompt - (pre.hs[h] - pre.hs[a]) - (pre.ss[soft] - pre.ss[h])
        top = np.maximum(soft, p)
        trimmed = context - (pre.ss[top] - pre.ss[soft])
        eligible = (pre.ct[top] - pre.ct[h]) - (pre.ss[top] - pre.ss[h])
        clears = (hard_clear & (trimmed / max(window, 1) >= hard_ratio) & (eligible >= min_prunable)
                  & (pre.nc[top] > pre.nc[h]))
        fire = (fires & (index >= next_call[block]) & (context / max(window, 1) >= soft_ratio)
                & ((pre.nm[top] > pre.nm[soft]) | clears))
        at = np.flatnonzero(fire)
        if not len(at):
            break
        at = at[_first_per_block(block[at])]
        b = block[at]
        new_h = h[at].copy()
        hard = at[clears[at]]
        if len(hard):
            new_h[clears[at]] = _hard_boundaries(h[hard], top[hard], trimmed[hard], pre, clearable,
                                                 hard_ratio, max(window, 1))
        h_ctx[b], soft_ctx[b] = new_h, top[at]
        fired_h[at], fired_soft[at] = new_h, top[at]
        next_call[b] = at + 1
    # Each call carries the projection of the latest firing at or before it in its context.
    state = pl.DataFrame({"b": block, "h": fired_h, "s": fired_soft, "a": a}).with_columns(
        pl.col("h", "s").replace(-1, None).forward_fill().over("b")).with_columns(
        pl.col("h", "s").fill_null(pl.col("a")))
    return state["h"].to_numpy().astype(np.int64), state["s"].to_numpy().astype(np.int64)
