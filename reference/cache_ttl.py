"""A literal, sequential reference of OpenClaw's ``cache-ttl`` pruning (``policy/compaction/cache_ttl.py``).

OpenClaw's ``pruneExpiredCacheTtlToolResults`` (npm ``openclaw`` 2026.9.6,
``dist/tool-result-truncation-*.mjs``), one request at a time, in tokens
(its characters at 4 per token): a projection records each old result as
trimmed or cleared, and stays; a recorded summary drops it (a new context).
At a request at least ``ttl`` minutes after the previous assistant message:

- no pruning unless the context holds ``keep_assistants`` assistant messages
  (the cutoff is the ``keep_assistants``-th newest) and the context, the
  recorded prompt less what the projection removed, is at ``soft_ratio`` of
  the window;
- every result before the cutoff (its calling message is before it), not
  cleared, is *eligible*; one over ``TRIM_OVER`` tokens not yet trimmed is
  trimmed to ``TRIMMED``;
- if then the context is at ``hard_ratio`` and the eligible results hold
  ``min_prunable`` tokens (at their present size), they are cleared in order
  while the context stays at ``hard_ratio``.

Each call's edit is then a :class:`~reference.clearing.CallEdit` and the rest
(events, sessions, usage) is :func:`~reference.clearing.expected_clearing`'s.
"""
from __future__ import annotations

from collections.abc import Callable

from .clearing import PLACEHOLDER, TRIMMED, USAGE, CallEdit, Use, expected_clearing, inert_rows, is_call, minutes_idle

__all__ = ["TRIM_OVER", "expected_cache_ttl", "openclaw_edits"]

#: A result over 4,000 characters (1,000 tokens) is trimmed.
TRIM_OVER = 1_000


def _prune(msgs: list[dict], uses: list[Use], i: int, start: int, proj: dict[int, str], s: dict, window: int,
           excluded: set[str]) -> None:
    """One pruning round at call ``i`` (the context from ``start``), updating the projection ``proj``."""
    assistants = [j for j in range(start, i) if msgs[j]["role"] == "assistant"]
    if len(assistants) < s["keep_assistants"]:
        return
    cutoff = assistants[-s["keep_assistants"]]

    def size(k: int) -> int:
        return {"hard": PLACEHOLDER, "soft": TRIMMED}.get(proj.get(k, ""), uses[k].tokens or 0)

    total = sum(msgs[i][c] for c in USAGE if c != "output") - sum((uses[k].tokens or 0) - size(k) for k in proj)
    if total / window < s["soft_ratio"]:
        return
    eligible = []
    for k, u in enumerate(uses):
        if not (start <= u.msg < cutoff) or not (u.tokens or 0) > 0 or u.kinds & excluded:
            continue
        if proj.get(k) == "hard":
            continue
        eligible.append(k)
        if proj.get(k) == "soft":
            continue
        if (u.tokens or 0) > TRIM_OVER:
            total -= (u.tokens or 0) - TRIMMED
            proj[k] = "soft"
    if s["hard_clear"] and total / window >= s["hard_ratio"] and sum(size(k) for k in eligible) >= s["min_prunable"]:
        for k in eligible:
            if total / window < s["hard_ratio"]:
                break
            total -= size(k) - PLACEHOLDER
            proj[k] = "hard"


def openclaw_edits(settings: dict, window: int) -> Callable[[list[dict], list[Use]], dict[int, CallEdit]]:
    """Every call's edit under OpenClaw's pruning with ``settings`` (the policy's fields)."""
    excluded = {k for k in settings.get("exclude", "").split("/") if k}

    def edits(msgs: list[dict], uses: list[Use]) -> dict[int, CallEdit]:
        inert = inert_rows(msgs)
        proj: dict[int, str] = {}
        start, out = 0, {}
        for i, m in enumerate(msgs):
            if m["has_summary"]:
                start, proj = i + 1, {}
            if not is_call(m):
                continue
            idle = minutes_idle(msgs, i)
            if i not in inert and idle is not None and idle >= settings["ttl"]:
                _prune(msgs, uses, i, start, proj, settings, window, excluded)
            first_use = next((k for k, u in enumerate(uses) if u.msg >= start), len(uses))
            kept = {} if i in inert else proj
            cleared = sorted(kept)
            hard = [k for k in cleared if kept[k] == "hard"]
            out[i] = CallEdit(i, start, first_use, max(hard) + 1 if hard else first_use, cleared,
                              sum((uses[k].tokens or 0) - (TRIMMED if kept[k] == "soft" else PLACEHOLDER)
                                  for k in cleared),
                              {k for k in cleared if kept[k] == "soft"})
        return out
    return edits


def expected_cache_ttl(sessions: dict[str, list[dict]], settings: dict, *, window: int
                       ) -> tuple[list[dict], list[dict], dict[tuple[str, int], dict]]:
    """Events, one row per session and the usage of every call under OpenClaw's pruning."""
    rule = {"exclude": tuple(k for k in settings.get("exclude", "").split("/") if k)}
    return expected_clearing(sessions, rule, window=window, edits=openclaw_edits(settings, window))
