"""Replay a clearing policy: every call's prompt with old tool results replaced by a placeholder.

A clearing policy (:mod:`.policies.clearing`) edits each call's prompt by a
rule that depends only on that call (the client keeps its whole history and
the edit is applied again to every request), so every call of every session
is replayed at once, with no rounds:

- A session's *tool uses* are its tool calls in order (the ``refs`` of the
  assistant messages: one use per call, :mod:`~panto_analytics.frame.tool_targets`);
  a use's result has ``tokens`` (null where the recording holds none: nothing
  to clear). The uses in context at a call are those after the latest
  recorded summary before it (a recorded compaction removed the others).
- At a call with ``n`` uses before it, the uses that may be cleared are those
  before ``p = n - keep`` (and before the newest ``keep_turns`` turns); with
  ``keep_tokens``, those whose results, summed from ``p`` back, pass it; the
  cleared set is the uses before the boundary ``b`` whose kind is not
  excluded and that have a result. The edit applies (never at a call of an
  agent's kept block, :func:`~.engine.recorded_before_anchor`, which happened
  before its compaction) when the call's recorded
  prompt exceeds ``trigger`` and it clears at least ``clear_at_least`` tokens
  (and something): then the call's prompt is its recorded prompt less the
  cleared results plus one placeholder (:data:`~.policies.clearing.PLACEHOLDER_TOKENS`)
  each, never below 0.
- An *event* is a call at which the cleared set grew (the first edit, and
  every call that clears one more result): ``summarized_tokens`` is what the
  growth cleared, ``context_after`` the call's context after the edit,
  ``cleared_calls`` the boundary (tool calls of the session numbered as the
  references table does: the calls before it are cleared where the policy
  clears them), ``cleared_tokens`` all it clears at that call, and for the
  loss measure ``cleared_excluded`` (the kinds never cleared, ``/write/``)
  and ``cleared_inputs``.

What each call then sends to the cache (:func:`cleared_usage`) is stated
there and in ``docs/replay.md``; the literal sequential statement of both is
``reference/clearing.py``.

>>> from panto_analytics import examples
>>> from panto_analytics.policy.compaction.policies import ObservationMasking
>>> replay_clearing(examples.messages(), ObservationMasking(m=0), window=20_000).events.height  # no tool calls
0
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from ...frame import expressions as ex
from ...frame.schema import BUDGET, ROLE, SEQ, SESSION
from .cache_ttl import Prefixes, boundaries
from .engine import REPLAY_SESSION_SCHEMA, recorded_before_anchor
from .policies.clearing import PLACEHOLDER_TOKENS, TRIM_OVER_TOKENS, TRIMMED_TOKENS, Clearing, ClearRule, OpenclawCacheTtl
from .policies.staged import Staged

__all__ = ["CLEARING_EVENT_COLUMNS", "Cleared", "cleared_usage", "clearing_calls", "replay_clearing", "staged_frame",
           "tool_uses"]

_I = pl.Int64

#: The columns a clearing event adds to a policy replay's events (null on a cut policy's).
CLEARING_EVENT_COLUMNS: dict[str, pl.DataType] = {"cleared_calls": pl.UInt32(), "cleared_tokens": pl.Int64(),
                                                  "cleared_excluded": pl.String(), "cleared_inputs": pl.Boolean()}


def tool_uses(frame: pl.DataFrame, exclude: tuple[str, ...] = ()) -> pl.DataFrame:
    """One row per tool call of ``frame`` (a message frame), in frame order: ``_row`` (its message's row),
    ``tokens`` (its result's, 0 where none), ``clearable`` (it has a result and no kind of it is in ``exclude``).

    >>> from panto_analytics import examples
    >>> tool_uses(examples.messages()).columns
    ['_row', 'tokens', 'clearable']
    """
    calls = (frame.select(pl.col("refs")).with_row_index("_row").filter(pl.col("refs").list.len() > 0)
             .explode("refs").unnest("refs"))
    per_call = calls.group_by("_row", "call", maintain_order=True).agg(
        tokens=pl.col("tokens").first(),
        excluded=pl.col("kind").cast(pl.String).is_in(list(exclude)).any())
    return per_call.select(
        pl.col("_row").cast(_I), tokens=pl.col("tokens").fill_null(0).cast(_I),
        clearable=pl.col("tokens").is_not_null() & (pl.col("tokens") > 0) & ~pl.col("excluded"))


def _minutes_since_assistant(columns: list[str]) -> pl.Expr:
    """Per row: minutes since the session's latest assistant message before it (null: none, or no timestamps).

    >>> import datetime as dt
    >>> t = [dt.datetime(2026, 1, 1, 0, m) for m in (0, 1, 50)]
    >>> f = pl.DataFrame({"session_id": ["s"] * 3, "role": ["assistant", "user", "assistant"], "timestamp": t})
    >>> f.select(_minutes_since_assistant(f.columns)).to_series().to_list()
    [None, 1.0, 50.0]
    """
    if "timestamp" not in columns:
        return pl.lit(None, pl.Float64)
    last = pl.when(pl.col(ROLE) == "assistant").then(pl.col("timestamp")).shift(1).forward_fill().over(SESSION)
    return (pl.col("timestamp") - last).dt.total_milliseconds().cast(pl.Float64) / 60_000


@dataclass(frozen=True)
class _Arrays:
    """Per global use index (one past the end): the prefix sums (:class:`~.cache_ttl.Prefixes`; ``g``: all results'
    tokens), the first clearable
    and the first trimmable use at or after it (``nxt``, ``nxm``); per use, its recorded position (``pos``)."""

    pre: Prefixes
    g: np.ndarray
    nxt: np.ndarray
    nxm: np.ndarray
    pos: np.ndarray


@dataclass(frozen=True)
class Cleared:
    """What :func:`replay_clearing` returns: the events, one row per session, and one row per call."""

    events: pl.DataFrame
    sessions: pl.DataFrame
    calls: pl.DataFrame


def _prefix(values: np.ndarray) -> np.ndarray:
    """Exclusive prefix sums with the total appended: ``out[j]`` is the sum of ``values[:j]``."""
    return np.concatenate([[0], np.cumsum(values, dtype=np.int64)]).astype(np.int64)


def _next_true(flags: np.ndarray) -> np.ndarray:
    """Per index (one past the end included): the first index at or after it where ``flags`` holds (its length
    where none does)."""
    n = len(flags)
    out = np.full(n + 1, n, dtype=np.int64)
    idx = np.flatnonzero(flags)
    if len(idx):
        out[:-1] = idx[np.minimum(np.searchsorted(idx, np.arange(n)), len(idx) - 1)]
        out[:-1] = np.where(np.arange(n) <= idx[-1], out[:-1], n)
    return out


def _use_arrays(uses: pl.DataFrame, pos: np.ndarray, trims: bool) -> _Arrays:
    """The per-use arrays of ``uses`` (:func:`tool_uses`); ``trims``: results over
    :data:`~.policies.clearing.TRIM_OVER_TOKENS` can be trimmed (OpenClaw), else none is."""
    tokens = uses["tokens"].to_numpy()
    clearable = uses["clearable"].to_numpy()
    trimmable = clearable & (tokens > TRIM_OVER_TOKENS) if trims else np.zeros(len(tokens), dtype=bool)
    size = np.where(trimmable, TRIMMED_TOKENS, tokens)
    pre = Prefixes(hs=_prefix(np.where(clearable, tokens - PLACEHOLDER_TOKENS, 0)),
                   ss=_prefix(np.where(trimmable, tokens - TRIMMED_TOKENS, 0)),
                   ct=_prefix(np.where(clearable, tokens, 0)), nc=_prefix(clearable.astype(np.int64)),
                   nm=_prefix(trimmable.astype(np.int64)),
                   hd=_prefix(np.where(clearable, size - PLACEHOLDER_TOKENS, 0)))
    return _Arrays(pre=pre, g=_prefix(tokens), nxt=_next_true(clearable), nxm=_next_true(trimmable), pos=pos)


def _rule_boundary(calls: pl.DataFrame, arrays: _Arrays, rule: ClearRule, *, n: np.ndarray, a: np.ndarray,
                   uses_before: np.ndarray, turn_rows: np.ndarray, turns_upto: np.ndarray) -> np.ndarray:
    """Per call: the boundary ``b`` a :class:`ClearRule` clears before (``a`` where its edit does not apply)."""
    r = calls["_row"].to_numpy()
    pre = arrays.pre
    p = n - rule.keep
    if rule.keep_turns > 0:
        # The uses from the keep_turns-th newest turn start at or before the call are protected.
        t = turns_upto[r] - rule.keep_turns
        has = t >= 0
        start_row = np.where(has, turn_rows.take(np.maximum(t, 0), mode="clip") if len(turn_rows) else 0, -1)
        protect = np.where(has & (start_row >= calls["_from"].to_numpy()), uses_before[np.maximum(start_row, 0)], a)
        p = np.minimum(p, protect)
    p = np.maximum(p, a)
    if rule.keep_tokens > 0:
        b = np.minimum(np.maximum(np.searchsorted(arrays.g, arrays.g[p] - rule.keep_tokens, side="left"), a), p)
    else:
        b = p
    gross = pre.ct[b] - pre.ct[a]
    count = pre.nc[b] - pre.nc[a]
    prompt = calls["prompt"].to_numpy()
    # The calls of an agent's kept block happened before its compaction: as recorded, never edited.
    inert = calls["inert"].to_numpy()
    active = (prompt > rule.trigger) & (gross >= rule.clear_at_least) & (count > 0) & ~inert
    if rule.gap_minutes > 0:
        # A cache-gated edit fires only after an idle gap, and the agent keeps what it cleared: the boundary is
        # the largest one fired so far in the same context.
        idle = calls["_gap"].fill_null(-1.0).to_numpy() > rule.gap_minutes
        fired = pl.DataFrame({"k": calls[SESSION], "s": calls["_from"], "b": np.where(active & idle, b, a)})
        b = fired.select(pl.col("b").cum_max().over("k", "s")).to_series().to_numpy()
        active = (pre.nc[b] - pre.nc[a] > 0) & ~inert
    return np.where(active, b, a)


def _openclaw_boundaries(calls: pl.DataFrame, arrays: _Arrays, policy: OpenclawCacheTtl, clearable: np.ndarray, *,
                         window: int, a: np.ndarray, uses_before: np.ndarray, assistant_rows: np.ndarray,
                         assistants_upto: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per call: OpenClaw's projection boundaries ``(h, P)`` (:mod:`.cache_ttl`)."""
    r = calls["_row"].to_numpy()
    start = calls["_from"].to_numpy()
    # The uses before the keep_assistants-th newest assistant message in context before the call are prunable.
    k = assistants_upto[r] - policy.keep_assistants
    has = k >= assistants_upto[start]
    cutoff = assistant_rows.take(np.maximum(k, 0), mode="clip") if len(assistant_rows) else np.zeros(len(r), np.int64)
    p = np.maximum(np.where(has, uses_before[cutoff], a), a)
    inert = calls["inert"].to_numpy()
    fires = (calls["_gap"].fill_null(-1.0).to_numpy() >= policy.ttl) & ~inert
    h, soft = boundaries(ctx=start, a=a, p=p, fires=fires, prompt=calls["prompt"].to_numpy(), prefix=arrays.pre,
                         clearable=clearable, window=window, soft_ratio=policy.soft_ratio, hard_ratio=policy.hard_ratio,
                         min_prunable=policy.min_prunable, hard_clear=bool(policy.hard_clear))
    return np.where(inert, a, h), np.where(inert, a, soft)


def clearing_calls(frame: pl.DataFrame, policy: Clearing, *, window: int | None = None) -> tuple[pl.DataFrame, _Arrays]:
    """One row per call (an assistant message with usage) of ``frame``: what ``policy`` clears in its prompt
    (``window``: the context window, which OpenClaw's pruning reads).

    Columns: ``_row`` (the call's row), ``session_id``, ``seq``, ``prompt`` (recorded), ``cum`` (recorded
    context), ``inert`` (inside an agent's kept block: :func:`~.engine.recorded_before_anchor`), ``a`` (the
    first use in context, a global use index), ``start`` (the first row in context), ``turns`` (turns started from
    there through the call), ``b`` (the boundary: clearable uses before it are cleared; ``a`` where
    nothing is), ``soft`` (trimmable uses in ``[b, soft)`` are trimmed: OpenClaw; ``b`` elsewhere), ``use0`` (the
    session's first use), ``cleared`` (uses cleared or trimmed), ``hard`` (uses cleared), ``cleared_tokens`` (the
    tokens the edit removes, placeholders counted: may be negative) and ``first_pos`` (the recorded position of
    the first edited result, null where none); and the per-use arrays :func:`cleared_usage` needs to find where
    two calls' edits first differ.
    """
    rule = policy.rule()
    uses = tool_uses(frame, rule.exclude)
    use_row = uses["_row"].to_numpy()
    # A use's position in later prompts: the recorded context at its calling message (or the last call before).
    pos_col = frame.select(pl.coalesce(ex.assistant_cumulative(), ex.prior_assistant_cumulative()).fill_null(0)
                           .cast(_I)).to_series().to_numpy()
    pos = pos_col[use_row] if len(use_row) else np.zeros(0, dtype=np.int64)
    openclaw = isinstance(policy, OpenclawCacheTtl)
    arrays = _use_arrays(uses, pos, openclaw)
    pre = arrays.pre
    n_rows = frame.height
    turn_start = (pl.col(ROLE) == "user") & ~pl.col("has_tool_result") & ~pl.col("has_summary") & ~ex.follows_user()
    rows = frame.select(
        SESSION, pl.col(SEQ).cast(_I), _row=pl.int_range(pl.len(), dtype=_I),
        _call=ex.assistant_cumulative().is_not_null() & (pl.col(ROLE) == "assistant"),
        cum=ex.assistant_cumulative().cast(_I),
        prompt=(pl.col("input").cast(_I) + pl.col("cache_read") + pl.col("cache_write")),
        inert=recorded_before_anchor(frame.columns) | pl.col("has_summary"),
        # The row after the latest recorded summary at or before the row (the session's first row when none).
        _from=pl.when(pl.col("has_summary")).then(pl.int_range(pl.len(), dtype=_I) + 1)
        .when(ex.session_start()).then(pl.int_range(pl.len(), dtype=_I)).forward_fill(),
        _row0=pl.when(ex.session_start()).then(pl.int_range(pl.len(), dtype=_I)).forward_fill(),
        _turn=turn_start, _assistant=pl.col(ROLE) == "assistant",
        # Minutes since the session's previous assistant message (null: none, or no timestamps).
        _gap=_minutes_since_assistant(frame.columns),
    )
    uses_before = np.searchsorted(use_row, np.arange(n_rows + 1), side="left").astype(np.int64)
    # The rows of every turn start, and per row how many started at or before it (global).
    turn_flag = rows["_turn"].to_numpy()
    turn_rows = np.flatnonzero(turn_flag).astype(np.int64)
    turns_upto = np.cumsum(turn_flag, dtype=np.int64)
    calls = rows.filter("_call")
    r = calls["_row"].to_numpy()
    n = uses_before[r]
    a = uses_before[np.minimum(calls["_from"].to_numpy(), n_rows)]
    use0 = uses_before[calls["_row0"].to_numpy()]
    if openclaw:
        assert isinstance(policy, OpenclawCacheTtl) and window is not None, "OpenClaw's pruning reads the window"
        flags = rows["_assistant"].to_numpy()
        # Per row, the assistant messages before it (global), and the rows of every assistant message.
        upto = np.concatenate([[0], np.cumsum(flags, dtype=np.int64)])
        b, soft = _openclaw_boundaries(calls, arrays, policy, uses["clearable"].to_numpy(), window=window, a=a,
                                       uses_before=uses_before, assistant_rows=np.flatnonzero(flags).astype(np.int64),
                                       assistants_upto=upto)
    else:
        b = _rule_boundary(calls, arrays, rule, n=n, a=a, uses_before=uses_before, turn_rows=turn_rows,
                           turns_upto=turns_upto)
        soft = b
    hard = pre.nc[b] - pre.nc[a]
    count = hard + pre.nm[soft] - pre.nm[b]
    removed = (pre.hs[b] - pre.hs[a]) + (pre.ss[soft] - pre.ss[b])
    big = len(uses) + 1
    first = np.minimum(np.where(arrays.nxt[a] < b, arrays.nxt[a], big), np.where(arrays.nxm[b] < soft, arrays.nxm[b], big))
    first_pos = np.where(first < big, pos.take(np.minimum(first, max(len(pos) - 1, 0)), mode="clip") if len(pos) else 0,
                         -1)
    start = calls["_from"].to_numpy()
    before_start = np.where(start > 0, turns_upto.take(np.maximum(start - 1, 0), mode="clip"), 0)
    return calls.select(SESSION, SEQ, "_row", "prompt", "cum", "inert").with_columns(
        start=pl.Series(start), turns=pl.Series(turns_upto[r] - before_start),
        a=pl.Series(a), b=pl.Series(b), soft=pl.Series(soft), use0=pl.Series(use0), cleared=pl.Series(count),
        hard=pl.Series(hard), cleared_tokens=pl.Series(removed), first_pos=pl.Series(first_pos),
    ).with_columns(pl.col("first_pos").replace(-1, None)), arrays


def _divergence(calls: pl.DataFrame, arrays: _Arrays) -> np.ndarray:
    """Per call: the position, in the previous call's (to the same model) edited prompt, of the first result whose
    edit differs between the two calls; -1 where none differs (or the previous call is in another context).

    A result is cleared below ``b``, trimmed (if trimmable) in ``[b, soft)``: between two projections the
    clearable results in ``[min b, max b)`` differ, and the trimmable ones in ``[max b, max soft)`` from
    ``min soft`` on."""
    b, a, soft = calls["b"].to_numpy(), calls["a"].to_numpy(), calls["soft"].to_numpy()
    pb, ps = calls["_prev_b"].to_numpy(), calls["_prev_soft"].to_numpy()
    same = calls["_same"].to_numpy() & (calls["_prev_start"].to_numpy() == calls["start"].to_numpy())
    pb, ps = np.where(same, pb, b), np.where(same, ps, soft)
    big = len(arrays.pos) + 1
    lo, hi = np.minimum(b, pb), np.maximum(b, pb)
    d1 = np.where(arrays.nxt.take(lo, mode="clip") < hi, arrays.nxt.take(lo, mode="clip"), big)
    lo_s, hi_s = np.maximum(hi, np.minimum(soft, ps)), np.maximum(soft, ps)
    first_m = arrays.nxm.take(np.minimum(lo_s, len(arrays.nxm) - 1), mode="clip")
    d2 = np.where((lo_s < hi_s) & (first_m < hi_s), first_m, big)
    first = np.minimum(d1, d2)
    differs = same & (first < big)
    pre = arrays.pre
    x = np.minimum(first, len(arrays.pos))
    removed_before = ((pre.hs.take(np.clip(x, a, pb), mode="clip") - pre.hs.take(a, mode="clip"))
                      + (pre.ss.take(np.clip(x, pb, np.maximum(ps, pb)), mode="clip") - pre.ss.take(pb, mode="clip")))
    at = arrays.pos.take(x, mode="clip") - removed_before if len(arrays.pos) else np.zeros(len(b), dtype=np.int64)
    return np.where(differs, np.maximum(at, 0), -1)


def cleared_usage(frame: pl.DataFrame, policy: Clearing, *, window: int | None = None
                  ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``frame`` with each edited call's usage as the provider would have billed it, and the per-call table
    (``window``: the context window, which OpenClaw's pruning reads).

    Where nothing is cleared at a call nor at the previous call to its model,
    the call keeps its recorded usage, digit for digit. Elsewhere its prompt
    ``P'`` is the recorded prompt less ``cleared_tokens`` (never below 0), its
    output the recorded one, and its cache read is the least of:

    - what it read as recorded, less the cleared tokens where the recorded read
      went past the first cleared result (never below that result's position:
      the prefix before the first cleared block is unchanged);
    - what the previous call to its model left cached (its ``P'`` less its
      uncached tail), and the position in that prompt of the first result whose
      clearing differs between the two calls: an edit invalidates the cached
      prefix from the first block it changes;
    - ``P'`` less the call's uncached tail (its recorded ``input``, where the
      session writes its cache).

    Where the session writes its cache (some call wrote) the rest of ``P'``
    past the read and the tail is written, at the kind (1 hour or 5 minutes) of
    the latest recorded write; an automatic cache (Codex) sends it uncached.
    An edit that waits for the cache to expire pays no extra write: the call
    read nothing as recorded and rewrites its (smaller) prompt anyway.
    """
    calls, arrays = clearing_calls(frame, policy, window=window)
    model = pl.col("model") if "model" in frame.columns else pl.lit(None, pl.String)
    w1h = pl.col("cache_write_1h").fill_null(0).cast(_I) if "cache_write_1h" in frame.columns else pl.lit(0, _I)
    recorded = frame.select(
        model=model.cast(pl.String), input=pl.col("input").cast(_I), cache_read=pl.col("cache_read").cast(_I),
        cache_write=pl.col("cache_write").cast(_I), _w1h=w1h, _write_kind=pl.when(pl.col("cache_write") > 0)
        .then(w1h > 0).forward_fill().over(SESSION).fill_null(False),
        _writes=(pl.col("cache_write").fill_null(0) > 0).any().over(SESSION))[calls["_row"]]
    c = pl.concat([calls, recorded], how="horizontal")
    c = c.with_columns(_gm=pl.concat_str(pl.col(SESSION).cast(pl.String), pl.lit("\x00"), pl.col("model").fill_null("")))
    c = c.with_row_index("_k").sort("_gm", "_k", maintain_order=True)
    c = c.with_columns(
        _same=((pl.col("_gm") == pl.col("_gm").shift(1)).fill_null(False)),
        sim_prompt=(pl.col("prompt") - pl.col("cleared_tokens")).clip(0),
    ).with_columns(
        _prev_b=pl.col("b").shift(1).fill_null(0), _prev_soft=pl.col("soft").shift(1).fill_null(0),
        _prev_start=pl.col("start").shift(1).fill_null(-1),
        _prev_removed=pl.when("_same").then(pl.col("cleared_tokens").shift(1)).otherwise(0),
        _prev_cached=pl.when("_same").then(
            pl.col("sim_prompt").shift(1) - pl.when("_writes").then(pl.min_horizontal(pl.col("input").shift(1),
                                                                                       pl.col("sim_prompt").shift(1)))
            .otherwise(0)),
    )
    div = _divergence(c, arrays)
    tail = pl.when("_writes").then(pl.min_horizontal("input", "sim_prompt")).otherwise(0)
    mapped = pl.when(pl.col("first_pos").is_null() | (pl.col("cache_read") <= pl.col("first_pos"))) \
        .then(pl.col("cache_read")).otherwise(pl.max_horizontal(pl.col("cache_read") - pl.col("cleared_tokens"),
                                                                pl.col("first_pos")))
    c = c.with_columns(_div=pl.Series(div).replace(-1, None), _tail=tail).with_columns(
        _read=pl.min_horizontal(mapped, pl.col("_prev_cached"), pl.col("_div"), pl.col("sim_prompt") - pl.col("_tail"))
        .clip(0),
        _changed=(pl.col("cleared_tokens") != 0) | (pl.col("_prev_removed") != 0),
    ).with_columns(
        _write=pl.when("_writes").then(pl.col("sim_prompt") - pl.col("_tail") - pl.col("_read")).otherwise(0),
    ).with_columns(
        sim_input=pl.when("_changed").then(pl.col("sim_prompt") - pl.col("_read") - pl.col("_write"))
        .otherwise(pl.col("input")),
        sim_cache_read=pl.when("_changed").then(pl.col("_read")).otherwise(pl.col("cache_read")),
        sim_cache_write=pl.when("_changed").then(pl.col("_write")).otherwise(pl.col("cache_write")),
        sim_cache_write_1h=pl.when("_changed").then(pl.when("_write_kind").then(pl.col("_write")).otherwise(0))
        .otherwise(pl.col("_w1h")),
    ).sort("_k")
    edited = (frame.with_row_index("_row")
              .join(c.select(pl.col("_row").cast(pl.UInt32), "sim_input", "sim_cache_read", "sim_cache_write",
                             "sim_cache_write_1h", "_changed"), on="_row", how="left", maintain_order="left"))
    changed = pl.col("_changed").fill_null(False)
    replaced = {name: pl.when(changed).then(pl.col(f"sim_{name}")).otherwise(pl.col(name)).cast(frame.schema[name])
                for name in ("input", "cache_read", "cache_write")}
    if "cache_write_1h" in frame.columns:
        replaced["cache_write_1h"] = pl.when(changed).then(pl.col("sim_cache_write_1h")).otherwise(
            pl.col("cache_write_1h")).cast(frame.schema["cache_write_1h"])
    out = edited.with_columns(**replaced).select(frame.columns)
    return out, c.select(SESSION, SEQ, "_row", "prompt", "cum", "inert", "a", "b", "use0", "cleared", "cleared_tokens",
                         "sim_prompt", "_changed")


def replay_clearing(frame: pl.DataFrame, policy: Clearing, *, window: int) -> Cleared:
    """``policy`` over every call of ``frame`` (the module docstring states the rules): events, sessions, calls.

    ``sessions`` has :data:`~.engine.REPLAY_SESSION_SCHEMA`'s columns at the policy's ``budget()``:
    ``n_compactions`` counts its events, ``summarized_tokens`` what they cleared, ``peak_context`` the largest
    edited context, ``overflow`` a peak past ``window``, ``ineffective`` an edit that left the prompt above its
    trigger (never for a policy without one).
    """
    rule = policy.rule()
    calls, _ = clearing_calls(frame, policy, window=window)
    budget = policy.budget()
    # The previous call of the session, in the same context (no recorded summary between them).
    same_context = ((pl.col(SESSION) == pl.col(SESSION).shift(1)) & (pl.col("start") == pl.col("start").shift(1))
                    ).fill_null(False)
    c = calls.with_columns(
        context=(pl.col("cum") - pl.col("cleared_tokens")).clip(0),
        _prev_cleared=pl.when(same_context).then(pl.col("cleared").shift(1)).otherwise(0),
        _prev_hard=pl.when(same_context).then(pl.col("hard").shift(1)).otherwise(0),
        _prev_removed=pl.when(same_context).then(pl.col("cleared_tokens").shift(1)).otherwise(0),
    )
    # The first seq in context (seqs number a session's rows from 0).
    c = c.with_columns(active_start=pl.col(SEQ) - (pl.col("_row") - pl.col("start")))
    # An event: a result edited that was not, or trimmed before and cleared now.
    ev = c.filter((pl.col("cleared") > pl.col("_prev_cleared")) | (pl.col("hard") > pl.col("_prev_hard"))).with_columns(
        event=(pl.int_range(pl.len()).over(SESSION)).cast(pl.UInt32))
    events = ev.select(
        SESSION, pl.lit(budget, pl.UInt64).alias(BUDGET), "event", trigger_seq=pl.col(SEQ).cast(pl.UInt32),
        context_before=(pl.col("cum") - pl.col("_prev_removed")).clip(0).cast(pl.UInt64),
        active_start=pl.col("active_start").cast(pl.UInt32), prefix_end=pl.col("active_start").cast(pl.UInt32),
        kept_turns=pl.col("turns").cast(pl.UInt32), kept_tokens=pl.col("context").cast(pl.UInt64),
        summarized_tokens=(pl.col("cleared_tokens") - pl.col("_prev_removed")).clip(0).cast(pl.UInt64),
        context_after=pl.col("context").cast(pl.UInt64),
        kept_start=pl.col("active_start").cast(pl.UInt32),
        kept_messages=(pl.col(SEQ) + 1 - pl.col("active_start")).cast(pl.UInt32), split_turn=pl.lit(False),
        cleared_calls=(pl.col("b") - pl.col("use0")).cast(pl.UInt32), cleared_tokens=pl.col("cleared_tokens"),
        cleared_excluded=pl.lit("/" + "/".join(rule.exclude) + "/"), cleared_inputs=pl.lit(rule.inputs),
    )
    ids = frame.filter(ex.session_start()).select(SESSION)
    per_call = c.filter(~pl.col("inert")).group_by(SESSION, maintain_order=True).agg(peak_context=pl.col("context").max())
    per_event = events.group_by(SESSION).agg(
        n_compactions=pl.len(), summarized_tokens=pl.col("summarized_tokens").sum(),
        ineffective=((pl.col("context_after") > rule.trigger) & pl.lit(rule.trigger > 0)).any())
    sessions = (ids.join(per_call, on=SESSION, how="left", maintain_order="left")
                .join(per_event, on=SESSION, how="left", maintain_order="left")
                .select(SESSION, pl.lit(budget).alias(BUDGET), pl.col("n_compactions").fill_null(0),
                        zero_kept_events=pl.lit(0), summarized_tokens=pl.col("summarized_tokens").fill_null(0),
                        peak_context="peak_context", overflow=(pl.col("peak_context") > window).fill_null(False),
                        ineffective=pl.col("ineffective").fill_null(False))
                .cast({k: v for k, v in REPLAY_SESSION_SCHEMA.items() if k != SESSION}))
    return Cleared(events=events, sessions=sessions, calls=c)


def staged_frame(frame: pl.DataFrame, policy: Staged, *, window: int) -> tuple[pl.DataFrame, list[Cleared]]:
    """``frame`` with every call edited by the clearing stages of ``policy`` in turn (each on the calls the stages
    before it left), and each of those stages' replay (:func:`~.clearing.replay_clearing`)."""
    edited, replays = frame, []
    for stage in policy.clearing:
        assert isinstance(stage, Clearing)
        replays.append(replay_clearing(edited, stage, window=window))
        edited, _ = cleared_usage(edited, stage, window=window)
    return edited, replays
