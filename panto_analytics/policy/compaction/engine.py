"""Compaction over each session's life: :func:`replay` under a context window, for many budgets at once.

:func:`~panto_analytics.policy.splits` takes one split at the end of each
recorded session. An agent compacts when its context nears the window, again
and again; :func:`replay` simulates that on the recorded sessions, for every
budget, and returns the compaction events and one row per (session, budget).

The rules (the literal sequential statement is ``reference/replay.py``;
the engine equals it on every row):

- A *call* is an assistant message with usage; its *recorded context* is
  ``input + cache_read + cache_write + output`` (libpanto's ``cumulativeAt``).
- The *simulated context* at a call is ``max(recorded - summarized, 0)``, plus
  ``summary_tokens`` once a simulated compaction has happened (one summary at a
  time: a new one replaces the old). ``summarized`` ("tokens summarized so
  far") is the sum of the ``summarized_tokens`` of the simulated compactions
  since the latest restart.
- A compaction fires after a call whose simulated context exceeds
  ``window - reserve``, at most one per call. Its split is libpanto's
  ``computeSplit`` over the recorded messages up to and including that call,
  the active window starting at the previous simulated compaction's
  ``prefix_end``, exactly as if a compaction-summary message stood just before
  it (before any simulated compaction: after the latest recorded summary, or
  at 0). Turn costs are libpanto's on that transcript: cumulative-usage deltas,
  else words; the last active turn ends at the trigger. An event's
  ``summarized_tokens`` is the cost of the active turns before its
  ``prefix_end`` (active cost minus ``kept_tokens``).
- A *no-op* split (every active turn fits the budget, or there is no active
  turn) changes nothing and is **not** listed as an event; the next call is
  checked again.
- A recorded compaction summary (``has_summary``) restarts the state when the
  replay reaches it: the active window starts after it, ``summarized`` is 0 and
  no simulated summary is counted, since the recorded usage after it already
  holds the recorded summary. The latest anchor, recorded or simulated, starts
  the active window.
- The agent's own kept block is where the simulated context starts after a
  recorded anchor: the messages right after it that the agent recorded
  *before* its compaction record (pi writes its compaction after the entries
  it keeps; in the frame they follow the summary, with a lower file ``line``:
  :func:`recorded_before_anchor`) carry the usage of the conversation before
  the compaction, which is not growth of the context after it. Their calls
  (and the summary's own, if it has one) are no triggers and count in no peak;
  the first call after the block, whose recorded usage holds the agent's
  summary and kept block, is the first one checked.
- ``prefix_end`` and ``active_start`` are ``seq`` values of the recorded
  session (``prefix_end`` is ``trigger_seq + 1`` when no turn is kept).
  ``context_after`` is the trigger's simulated context after the compaction.
- Per (session, budget): ``peak_context`` is the largest simulated context at
  any call, before that call's compaction (null without calls);
  ``overflow``: ``peak_context > window`` (that call would have failed);
  ``ineffective``: some event's ``context_after`` is still above
  ``window - reserve``.

How it is vectorized. Turn costs do not depend on where the window starts,
only the last active turn does (it ends at the trigger), so every base turn
(a turn start of the whole recorded session) gets its cost and a prefix sum
``P`` once. For a window starting at base turn ``f`` and a trigger ``k`` whose
last turn is ``L``, the active cost is ``P[L] - P[f] + max(recorded(k) -
before(L), 0)`` and the split is one ``search_sorted`` in ``P``, as in
:func:`~panto_analytics.policy.splits`. The split is no-op unless that cost
exceeds the budget, i.e. ``V(k) > budget + P[f]`` with ``V(k)`` a per-call
value; the context test is ``recorded(k) > threshold - summary + summarized``.
So the next event of a (session, budget) state is the first call after the
previous one where two per-call values exceed two per-state thresholds: found
by binary lifting over sparse tables of running maxima (each step one gather
over all states), alternating between the two conditions a few times, then a
scan of what is left. libpanto's 4096-turn cap (counted from the window's
first turn) fixes the last turn, and the no-op test becomes a threshold on
``recorded(k)`` alone. The only Python loop is over compaction rounds (each
round: every live (session, budget) state's next event, or its restart at the
next recorded summary, or its end), plus fixed loops over the levels of the
tables. The per-corpus arrays come from one Polars query (the base turn costs
from :mod:`~panto_analytics.policy.turn_costs`' own machinery); the rounds do their
index arithmetic on numpy views of those columns, since at a few thousand
live states Polars' per-operation overhead would dominate the late rounds.
Sessions whose recorded context never exceeds ``window - reserve`` cannot
compact and skip the rounds.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import cast

import numpy as np
import polars as pl

from ...defaults import DEFAULT_RESERVE, DEFAULT_SUMMARY_TOKENS, MIN_SUMMARY_TOKENS
from ...frame import expressions as ex
from ...frame.schema import BUDGET, ROLE, SEQ, SESSION
from ..compute_split import budget_series
from ..turn_costs import annotated_turns, check_order
from .request_size import with_request_bytes

__all__ = [
    "DEFAULT_RESERVE", "DEFAULT_SUMMARY_TOKENS", "EVENT_SCHEMA", "Engine", "MIN_SUMMARY_TOKENS", "REPLAY_SESSION_SCHEMA",
    "Replay", "as_array",
    "recorded_before_anchor", "replay_libpanto", "resume_after_anchor", "summary_size", "validate_parameters",
]



#: Sizes (window, reserve, summary, budgets) are clamped or checked against this bound.
_MAX_SIZE = 2**62

#: Alternations of the two binary lifts before the remaining states are scanned call by call.
MAX_ALTERNATIONS = 4

EVENT_SCHEMA: dict[str, pl.DataType] = {
    SESSION: pl.Categorical(),
    BUDGET: pl.UInt64(),
    "event": pl.UInt32(),
    "trigger_seq": pl.UInt32(),
    "context_before": pl.UInt64(),
    "active_start": pl.UInt32(),
    "prefix_end": pl.UInt32(),
    "kept_turns": pl.UInt32(),
    "kept_tokens": pl.UInt64(),
    "summarized_tokens": pl.UInt64(),
    "context_after": pl.UInt64(),
}

REPLAY_SESSION_SCHEMA: dict[str, pl.DataType] = {
    SESSION: pl.Categorical(),
    BUDGET: pl.UInt64(),
    "n_compactions": pl.UInt32(),
    "zero_kept_events": pl.UInt32(),
    "summarized_tokens": pl.UInt64(),
    "peak_context": pl.UInt64(),
    "overflow": pl.Boolean(),
    "ineffective": pl.Boolean(),
}


@dataclass(frozen=True)
class Replay:
    """What :func:`replay` returns: the events, one row per (session, budget), and the parameters used."""

    events: pl.DataFrame
    sessions: pl.DataFrame
    window: int
    reserve: int
    summary_tokens: int
    #: Where ``summary_tokens`` came from: given, the recorded summaries' median, or the default.
    summary_source: str = "given"
    #: The price table that billed the calls (``replay(..., prices=...)``); None when nothing was billed.
    price_source: str | None = None
    #: The recorded calls the price table left unpriced, one row per model (``model``, ``api_calls``,
    #: ``tokens``; :func:`~panto_analytics.outcomes.cost.unpriced`); None when nothing was billed.
    unpriced: pl.DataFrame | None = None


def _check_size(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number of tokens, got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be non-negative, got {value}")
    if value >= _MAX_SIZE:
        raise ValueError(f"{name} must be below 2**62 tokens, got {value}")
    return value


def summary_size(messages: pl.DataFrame) -> tuple[int, str]:
    """The summary size a replay assumes, in tokens, and where it came from.

    The median of libpanto's word estimate (``ceil(words * 1.3)``) of the
    summaries recorded in ``messages`` (the messages holding one; an observed value: of an even count the
    larger middle one), else
    :data:`DEFAULT_SUMMARY_TOKENS`; the default also when that median is
    below :data:`MIN_SUMMARY_TOKENS` (redacted recordings), and the source says so.

    >>> summary_size(pl.DataFrame({"words": [10, 100, 300], "has_summary": [True, False, True]}))
    (390, 'the median of 2 recorded summaries (the larger middle one: a size a summary had)')
    >>> summary_size(pl.DataFrame({"words": [10], "has_summary": [False]}))
    (2000, 'the default: no recorded summaries')
    """
    sizes = messages.filter("has_summary").select(ex.word_tokens()).to_series()
    if sizes.is_empty():
        return DEFAULT_SUMMARY_TOKENS, "the default: no recorded summaries"
    # An observed size on purpose, not the tables' median (frame.expressions.median, the mean of the middle two):
    # a simulated summary is as long as a recorded one was, a whole number of tokens; the source says which.
    median = int(cast(float, sizes.quantile(0.5, "nearest")))
    recorded = f"{len(sizes)} recorded summar{'y' if len(sizes) == 1 else 'ies'}"
    which = "" if len(sizes) % 2 else " (the larger middle one: a size a summary had)"
    if median < MIN_SUMMARY_TOKENS:
        return DEFAULT_SUMMARY_TOKENS, (f"the default: the median of {recorded}{which} is {median:,} "
                                        f"token{'' if median == 1 else 's'}, below {MIN_SUMMARY_TOKENS}, "
                                        "too small to be a real summary (redacted?)")
    return median, f"the median of {recorded}{which}"


def recorded_before_anchor(columns: Iterable[str]) -> pl.Expr:
    """True on the rows of an agent's kept block recorded before its compaction: the rows right after a recorded
    summary (``has_summary``), in one run, from the same ``file`` with a lower ``line`` than the summary's
    (False everywhere when the frame has no ``line``). Over a frame ordered by ``(session_id, seq)``.

    >>> f = pl.DataFrame({"session_id": ["s"] * 5, "has_summary": [False, True, False, False, False],
    ...     "line": [1, 9, 2, 3, 10], "file": ["f"] * 5})
    >>> f.select(recorded_before_anchor(f.columns)).to_series().to_list()
    [False, False, True, True, False]
    """
    if "line" not in set(columns):
        return pl.lit(False)
    summary = pl.col("has_summary")
    sid = ex.session_start().cast(pl.Int64).cum_sum()
    same = (pl.when(summary).then(sid).forward_fill() == sid) & (pl.col("line") < pl.when(summary).then(pl.col("line"))
                                                                 .forward_fill())
    if "file" in set(columns):
        same = same & (pl.col("file").cast(pl.String) == pl.when(summary).then(pl.col("file").cast(pl.String))
                       .forward_fill())
    cond = same.fill_null(False) & ~summary
    broken = (~cond & ~summary).cast(pl.Int64).cum_sum()
    return cond & (broken == pl.when(summary).then(broken).forward_fill())


def resume_after_anchor(kept: pl.Expr) -> pl.Expr:
    """Per row: the seq where the replay checks calls again after a recorded anchor on this row: the row itself
    when no kept block follows it, else the first row after the agent's kept block (``kept``:
    :func:`recorded_before_anchor`; ``n`` past the end).

    >>> f = pl.DataFrame({"session_id": ["s"] * 4, "seq": [0, 1, 2, 3], "k": [False, False, True, True]})
    >>> f.select(resume_after_anchor(pl.col("k"))).to_series().to_list()  # row 1 resumes past the end
    [0, 4, 4, 3]
    """
    seq = pl.col(SEQ).cast(pl.Int64)
    fresh = pl.when(~kept).then(seq).when(ex.session_end()).then(seq + 1).backward_fill()
    block_follows = (~ex.session_end() & kept.shift(-1)).fill_null(False)
    return pl.when(block_follows).then(fresh.shift(-1)).otherwise(seq)


def validate_parameters(window: int, reserve: int, summary_tokens: int) -> None:
    """ValueError, in one line, unless the sizes are whole, non-negative tokens and ``window > reserve``."""
    _check_size("window", window)
    _check_size("reserve", reserve)
    _check_size("summary_tokens", summary_tokens)
    if window <= reserve:
        raise ValueError(f"window ({window}) must be larger than reserve ({reserve})")


def replay_libpanto(messages: pl.DataFrame | pl.LazyFrame, budgets: Iterable[int], *, window: int,
           reserve: int = DEFAULT_RESERVE, summary_tokens: int | None = None) -> Replay:
    """Replay compaction over each session's life under ``window``, for every budget.

    ``messages`` is a message frame (``DataFrame`` or ``LazyFrame``, ordered by
    ``(session_id, seq)`` as :func:`~panto_analytics.read_sessions` returns it);
    the result holds DataFrames: ``events``, one row per compaction event
    (sessions in input order, budgets ascending, events in order), and
    ``sessions``, one row per (session, budget). The rules are in the module
    docstring. Events also carry ``transcript_bytes`` and ``request_bytes``
    (what the summarizer reads, :mod:`.compaction.request_size`), and sessions the sum
    of their events' ``request_bytes``. ``summary_tokens`` defaults to
    :func:`summary_size`: the median size of the summaries recorded in
    ``messages``, else :data:`DEFAULT_SUMMARY_TOKENS`; ``summary_source``
    says which. Raises ValueError on bad parameters (``window <= reserve``,
    negative sizes).

    Parameters
    ----------
    messages
        A message frame (see above).
    budgets
        ``keep_verbatim`` budgets, in tokens.
    window
        The model's context window, in tokens.
    reserve
        Tokens kept free below the window: a compaction fires past ``window - reserve``.
    summary_tokens
        Size of a simulated summary; None: :func:`summary_size`.

    Returns
    -------
    Replay
        ``events``, ``sessions`` and the parameters used.

    Examples
    --------
    >>> from panto_analytics import examples
    >>> r = replay_libpanto(examples.messages(), [1_000, 3_000], window=20_000, summary_tokens=500)
    >>> r.events.select("session_id", "budget", "trigger_seq", "kept_turns", "context_after").rows()
    [('a', 1000, 5, 0, 500), ('a', 3000, 5, 1, 3500)]
    """
    frame = messages.collect() if isinstance(messages, pl.LazyFrame) else messages
    source = "given"
    if summary_tokens is None:
        summary_tokens, source = summary_size(frame)
    validate_parameters(window, reserve, summary_tokens)
    budget = budget_series(budgets)
    check_order(frame)
    result = Engine(frame, budget, window=window, reserve=reserve, summary_tokens=summary_tokens).run()
    events = with_request_bytes(result.events, frame, summary_tokens)
    if "serialized_bytes" not in frame.columns:
        return replace(result, events=events, sessions=result.sessions.with_columns(request_bytes=pl.lit(None, pl.UInt64)),
                       summary_source=source)
    per_session = events.group_by(SESSION, BUDGET).agg(request_bytes=pl.col("request_bytes").sum())
    sessions = result.sessions.join(per_session, on=[SESSION, BUDGET], how="left", maintain_order="left").with_columns(
        pl.col("request_bytes").fill_null(0).cast(pl.UInt64))
    return replace(result, events=events, sessions=sessions, summary_source=source)


# -- the engine ----------------------------------------------------------------------------------------
#
# The arrays below are numpy views of Polars columns (Int64). Each round does
# index arithmetic on them for all live states at once: Polars' per-call
# overhead (an expression collect per operation) would dominate the many
# small late rounds.

Array = np.ndarray


def as_array(s: pl.Series, pad: int | None = None) -> Array:
    """An Int64 column as a numpy array, with one ``pad`` value appended (so that no gather is ever out of range)."""
    a = s.cast(pl.Int64).to_numpy()
    return a if pad is None else np.append(a, np.int64(pad))


def _as_int(e: pl.Expr) -> pl.Expr:
    return e.cast(pl.Int64)


def _floor_log2(x: Array) -> Array:
    """``floor(log2(x))`` for integers ``x >= 1``, exactly (frexp's exponent)."""
    return (np.frexp(x.astype(np.float64))[1] - 1).astype(np.int64)


class _MaxTable:
    """Running maxima of an array over windows of 2**j, for first-exceeding searches and range maxima."""

    def __init__(self, values: Array, longest: int):
        levels = [values]
        while (1 << len(levels)) <= max(longest, 1):
            prev, half = levels[-1], 1 << (len(levels) - 1)
            shifted = np.concatenate([prev[half:], np.full(min(half, len(prev)), -1, dtype=np.int64)])
            levels.append(np.maximum(prev, shifted))
        self.levels = levels

    def first_above(self, pos: Array, hi: Array, threshold: Array) -> Array:
        """The first index in ``[pos, hi)`` whose value exceeds ``threshold``, else a value ``>= hi``.

        Greedy binary lifting: skip 2**j values while they all stay at or
        below the threshold, for j from the largest useful level down. Only
        states with a non-empty range take part.
        """
        pos = pos.copy()
        live = np.flatnonzero(pos < hi)
        if len(live) == 0:
            return pos
        p, h, t = pos[live], hi[live], threshold[live]
        top = min(len(self.levels) - 1, int(_floor_log2(np.array([int((h - p).max())]))[0]))
        for j in range(top, -1, -1):
            step = 1 << j
            ok = (p + step <= h) & (self.levels[j].take(p, mode="clip") <= t)
            p = np.where(ok, p + step, p)
        pos[live] = p
        return pos

    def range_max(self, lo: Array, hi: Array) -> Array:
        """``max(values[lo:hi])`` for non-empty ranges."""
        level = _floor_log2(hi - lo)
        out = np.empty(len(lo), dtype=np.int64)
        for j in np.unique(level):
            sel = level == j
            table = self.levels[j]
            out[sel] = np.maximum(table.take(lo[sel], mode="clip"), table.take(hi[sel] - (1 << int(j)), mode="clip"))
        return out


def _first_of_runs(*keys: Array) -> tuple[Array, Array]:
    """Adjacent rows with equal keys: the index of each run's first row, and each row's run number."""
    n = len(keys[0])
    change = np.zeros(n, dtype=bool)
    change[:1] = True
    for k in keys:
        change[1:] |= k[1:] != k[:-1]
    return np.flatnonzero(change), np.cumsum(change) - 1


_STATE = ("sid", "bi", "B", "a", "c_from", "na", "c_to", "S", "sig", "ne")


class Engine:
    """The per-corpus arrays and the rounds of :func:`replay`."""

    #: The events' columns (a subclass replaying another policy adds its own).
    event_schema: dict[str, pl.DataType] = EVENT_SCHEMA

    def __init__(self, frame: pl.DataFrame, budget: pl.Series, *, window: int, reserve: int, summary_tokens: int):
        self.frame, self.budget = frame, budget
        self.window, self.reserve, self.summary_tokens = window, reserve, summary_tokens
        self.threshold = window - reserve
        #: ``ineffective``: a compaction left the context above this (the trigger; a policy that fires on a count
        #: has its own token limit, :meth:`~.policies.base.Policy.token_limit`).
        self.ineffective_above = self.threshold

    # -- the arrays, computed once -------------------------------------------------------------

    def _prepare(self) -> None:
        is_call = ex.assistant_cumulative().is_not_null()
        base_start = (pl.col(ROLE) == "user") & ~pl.col("has_tool_result") & ~ex.follows_user()
        annotated = (
            self.frame.lazy()
            .with_columns(
                ex.message_tokens(), ex.assistant_cumulative(), ex.prior_assistant_cumulative(),
                is_turn_start=base_start, _call=is_call,
                # The seq of the session's first summary at or after each row (n when none).
                _anchor=pl.when(pl.col("has_summary")).then(_as_int(pl.col(SEQ)))
                .when(ex.session_end()).then(_as_int(pl.col(SEQ)) + 1).backward_fill(),
                _sid=_as_int(ex.session_start()).cum_sum() - 1,
                _kept=recorded_before_anchor(self.frame.columns),
            )
            .with_columns(_resume=resume_after_anchor(pl.col("_kept")))
            # A call the replay never checks: in an agent's kept block, or a summary's own when a block follows.
            .with_columns(_inert=pl.col("_kept") | (pl.col("has_summary") & (_as_int(pl.col("_resume"))
                                                                              > _as_int(pl.col(SEQ)))))
            # Every turn start of the recorded session, uncapped: the base turns.
            .with_columns(turn=pl.when(ex.count_in_session(pl.col("is_turn_start")) > 0)
                          .then(ex.count_in_session(pl.col("is_turn_start")) - 1))
            .with_columns(
                # Global index of the first call / base turn at or after each row.
                _calls_before=_as_int(pl.col("_call")).cum_sum() - _as_int(pl.col("_call")),
                _turns_before=_as_int(pl.col("is_turn_start")).cum_sum() - _as_int(pl.col("is_turn_start")),
            )
            .with_row_index("_row")
            .cache()
        )
        # Base turn costs as complete turns (ending at the next base turn start): turn_costs.py's own machinery.
        base_turns = annotated_turns(annotated).select(cost=_as_int(pl.col("tokens")))
        turn_rows_lf = annotated.filter(pl.col("is_turn_start")).select(
            start_seq=SEQ, before=pl.col("prior_cumulative").fill_null(0), call_at_start="_calls_before")
        calls_lf = annotated.filter(pl.col("_call")).select(
            "_sid", SEQ, "_inert", cum="assistant_cumulative", last_turn=pl.col("_turns_before") - 1)
        per_row_lf = annotated.select("_calls_before", "_turns_before", "_anchor", "_resume")
        sessions_lf = annotated.filter(ex.session_start()).select(SESSION, row0="_row", c0="_calls_before", g0="_turns_before")
        ends_lf = annotated.filter(ex.session_end()).select(
            n=_as_int(pl.col(SEQ)) + 1,
            c1=pl.col("_calls_before") + _as_int(pl.col("_call")),
            g1=pl.col("_turns_before") + _as_int(pl.col("is_turn_start")))
        base_turns_df, turn_rows, calls, per_row, sessions, ends = pl.collect_all(
            [base_turns, turn_rows_lf, calls_lf, per_row_lf, sessions_lf, ends_lf])
        self.ids = sessions[SESSION]
        ses = pl.concat([sessions.drop(SESSION), ends], how="horizontal")
        self.row0, self.n, self.c0, self.c1, self.g0, self.g1 = (as_array(ses[c]) for c in ("row0", "n", "c0", "c1", "g0", "g1"))
        n_calls, n_turns = calls.height, turn_rows.height
        self.n_calls = n_calls
        # Per message row (one more past the end).
        self.next_call = as_array(per_row["_calls_before"], pad=n_calls)
        self.next_turn = as_array(per_row["_turns_before"], pad=n_turns)
        self.next_anchor = as_array(per_row["_anchor"], pad=0)
        # Per row: after a recorded anchor on it, the seq of the first row past the agent's kept block.
        self.resume = as_array(per_row["_resume"], pad=0)
        # Per base turn (one dummy past the end): start seq, prior cumulative usage, first call at
        # or after its start; and the exclusive prefix sums of the costs (P[G] = the total).
        self.start_seq = as_array(turn_rows["start_seq"], pad=0)
        self.before = as_array(turn_rows["before"], pad=0)
        self.call_at_start = as_array(turn_rows["call_at_start"], pad=n_calls)
        self.prefix = np.concatenate([[0], np.cumsum(as_array(base_turns_df["cost"]))]).astype(np.int64)
        # Per call (one dummy past the end): session, seq, recorded context, last base turn
        # started at or before it, and V = P[last] + max(cum - before[last], 0), the active
        # cost of a window that starts at base turn 0 (-1 when no turn has started).
        self.call_sid = as_array(calls["_sid"], pad=-1)
        self.call_seq = as_array(calls[SEQ], pad=0)
        self.call_inert = calls["_inert"].to_numpy()
        self.cum = as_array(calls["cum"], pad=-1)
        self.last_turn = as_array(calls["last_turn"], pad=-1)
        lt = self.last_turn
        v = self.prefix.take(lt, mode="clip") + np.maximum(self.cum - self.before.take(lt, mode="clip"), 0)
        valid = (lt >= np.append(self.g0, 0).take(self.call_sid, mode="clip")) & (self.call_sid >= 0)
        self.value = np.where(valid, v, -1)
        longest = int((self.c1 - self.c0).max()) if len(self.c0) else 0
        self.cum_table = _MaxTable(self.cum, longest)
        self.value_table = _MaxTable(self.value, longest)

    # -- rounds ----------------------------------------------------------------------------------

    def _initial_states(self) -> dict[str, Array]:
        """One state per (session, budget) of the sessions whose recorded context ever exceeds the threshold.

        In the others no compaction can fire (before the first one the simulated
        context is the recorded one), so their only figure is the peak.
        """
        peak = np.full(len(self.row0), -1, dtype=np.int64)
        np.maximum.at(peak, self.call_sid[:-1], np.where(self.call_inert, -1, self.cum[:-1]))
        self.cold_peak = peak
        hot = np.flatnonzero(peak > self.threshold)
        nb = len(self.budget)
        sid = np.repeat(hot, nb)
        bi = np.tile(np.arange(nb, dtype=np.int64), len(hot))
        budget = np.minimum(self.budget.to_numpy().astype(np.uint64), np.uint64(_MAX_SIZE)).astype(np.int64)
        na = self.next_anchor[self.row0[sid]] if len(sid) else np.zeros(0, dtype=np.int64)
        zero = np.zeros(len(sid), dtype=np.int64)
        return {"sid": sid, "bi": bi, "B": budget[bi] if len(sid) else zero, "a": zero, "c_from": self.c0[sid],
                "na": na, "c_to": self.next_call[self.row0[sid] + na], "S": zero, "sig": zero, "ne": zero}

    def _search_both(self, lo: Array, hi: Array, x: Array, y: Array) -> Array:
        """The first call in ``[lo, hi)`` with ``cum > x`` and ``value > y``, else a value ``>= hi``.

        Alternates a lift on ``cum`` and a lift on ``value`` (each skips calls
        that fail one condition) until both hold; after :data:`MAX_ALTERNATIONS`
        rounds, what is still open is scanned call by call.
        """
        pos = lo.copy()
        open_ = np.flatnonzero(pos < hi)
        for i in range(MAX_ALTERNATIONS):
            if len(open_) == 0:
                return pos
            p, h, xx = pos[open_], hi[open_], x[open_]
            if i == 0:
                # The context lift depends on no budget: lift each run of equal states once.
                first, run = _first_of_runs(p, h, xx)
                p = self.cum_table.first_above(p[first], h[first], xx[first])[run]
            else:
                p = self.cum_table.first_above(p, h, xx)
            p = self.value_table.first_above(p, h, y[open_])
            pos[open_] = p
            still = (p < h) & (self.cum.take(p, mode="clip") <= xx)
            open_ = open_[still]
        if len(open_) == 0:
            return pos
        # What the alternations left open: scan the rest of each range.
        lens = hi[open_] - pos[open_]
        owner = np.repeat(np.arange(len(open_)), lens)
        offsets = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
        c = pos[open_][owner] + offsets
        good = (self.cum[c] > x[open_][owner]) & (self.value[c] > y[open_][owner])
        found_owner, first = np.unique(owner[good], return_index=True)
        result = hi[open_].copy()
        result[found_owner] = c[good][first]
        pos[open_] = result
        return pos

    def _round(self, st: dict[str, Array]) -> tuple[dict[str, Array], dict[str, Array], dict[str, Array]]:
        """One round: each state's next event, or restart, or end. Returns (events, segments, next states)."""
        sid, a, c_from, c_to, budget, summarized, sig = (st[k] for k in ("sid", "a", "c_from", "c_to", "B", "S", "sig"))
        g1, row0, n = self.g1[sid], self.row0[sid], self.n[sid]
        f = self.next_turn[row0 + a]  # the window's first base turn (g1 when none)
        c_f = np.where(f < g1, self.call_at_start.take(f, mode="clip"), c_to)
        g_cap = f + ex.MAX_TURNS
        capped = g_cap < g1
        c_cap = np.where(capped, self.call_at_start.take(g_cap, mode="clip"), c_to)
        x = np.where(sig > self.threshold, -1, self.threshold - sig + summarized)
        y = budget + self.prefix.take(f, mode="clip")
        # Below libpanto's cap: the two conditions on (cum, value).
        hi1 = np.minimum(c_to, c_cap)
        k1 = self._search_both(np.maximum(c_from, c_f), hi1, x, y)
        found1 = k1 < hi1
        # Past it the last turn is fixed (the window's 4096th): the no-op test is a threshold on cum.
        cap_last = g_cap - 1
        w = y - self.prefix.take(cap_last, mode="clip")
        x2 = np.where(w < 0, x, np.maximum(x, self.before.take(cap_last, mode="clip") + w))
        lo2 = np.where(capped & ~found1, np.maximum(c_from, c_cap), c_to)
        k2 = self.cum_table.first_above(lo2, c_to, x2)
        found = found1 | (k2 < c_to)
        k = np.where(found1, k1, k2)
        segments = {"sid": sid, "bi": st["bi"], "S": summarized, "sig": sig, "lo": c_from,
                    "hi": np.where(found, k + 1, c_to)}
        hit = {key: v[found] for key, v in st.items()}
        events, after = self._events(hit, k[found], f[found])
        # No event before the next recorded summary: restart there, or end.
        rest_mask = ~found & (st["na"] < n)
        rest = {key: v[rest_mask] for key, v in st.items()}
        r, r_row0, r_n = rest["na"], row0[rest_mask], n[rest_mask]
        na = np.where(r + 1 < r_n, self.next_anchor.take(r_row0 + r + 1, mode="clip"), r_n)
        zero = np.zeros(len(r), dtype=np.int64)
        rest.update(a=r + 1, c_from=self.next_call[r_row0 + self.resume[r_row0 + r]], na=na,
                    c_to=self.next_call[r_row0 + na], S=zero, sig=zero)
        nxt = {key: np.concatenate([after[key], rest[key]]) for key in _STATE}
        return events, segments, nxt

    def _events(self, hit: dict[str, Array], k: Array, f: Array) -> tuple[dict[str, Array], dict[str, Array]]:
        """libpanto's split at each found trigger ``k`` (window from base turn ``f``), and the states after it."""
        budget, summarized_before, sig = hit["B"], hit["S"], hit["sig"]
        cum = self.cum[k]
        last = np.minimum(self.last_turn[k], f + ex.MAX_TURNS - 1)
        last_cost = np.maximum(cum - self.before[last], 0)
        p_last = self.prefix[last]
        total = p_last - self.prefix[f] + last_cost
        # Kept turns: those whose suffix sum P[L] - P[j] + last_cost is <= budget, i.e. P[j] >= z.
        z = p_last + last_cost - budget
        first_kept = np.maximum(f, np.searchsorted(self.prefix, z, side="left"))
        first_kept = np.where(last_cost > budget, last + 1, first_kept)
        some_kept = first_kept <= last
        kept_tokens = np.where(some_kept, p_last - self.prefix.take(first_kept, mode="clip") + last_cost, 0)
        summarized_now = total - kept_tokens
        seq = self.call_seq[k]
        prefix_end = np.where(some_kept, self.start_seq.take(first_kept, mode="clip"), seq + 1)
        summarized = summarized_before + summarized_now
        events = {
            "sid": hit["sid"], "bi": hit["bi"], "event": hit["ne"], "trigger_seq": seq,
            "context_before": np.maximum(cum - summarized_before, 0) + sig,
            "active_start": hit["a"], "prefix_end": prefix_end, "kept_turns": last + 1 - first_kept,
            "kept_tokens": kept_tokens, "summarized_tokens": summarized_now,
            "context_after": np.maximum(cum - summarized, 0) + self.summary_tokens,
        }
        after = {**hit, "a": prefix_end, "c_from": k + 1, "S": summarized,
                 "sig": np.full(len(k), self.summary_tokens, dtype=np.int64), "ne": hit["ne"] + 1}
        return events, after

    def run(self) -> Replay:
        self._prepare()
        states = self._initial_states()
        events: list[dict[str, Array]] = []
        segments: list[dict[str, Array]] = []
        while len(states["sid"]):
            found, segs, states = self._round(states)
            events.append(found)
            segments.append(segs)
        return self._result(events, segments)

    # -- the frames --------------------------------------------------------------------------------

    def _result(self, events: list[dict[str, Array]], segments: list[dict[str, Array]]) -> Replay:
        ids, nb = self.ids, len(self.budget)
        ev_cols = [c for c in self.event_schema if c not in (SESSION, BUDGET)]
        ev = {c: np.concatenate([e[c] for e in events]) if events else np.zeros(0, dtype=np.int64)
              for c in ["sid", "bi", *ev_cols]}
        order = np.lexsort((ev["event"], ev["bi"], ev["sid"]))
        ev = {c: v[order] for c, v in ev.items()}
        # Peaks: per segment of constant state, its largest recorded context.
        seg = {c: np.concatenate([s[c] for s in segments]) if segments else np.zeros(0, dtype=np.int64)
               for c in ("sid", "bi", "S", "sig", "lo", "hi")}
        keep = seg["hi"] > seg["lo"]
        seg = {c: v[keep] for c, v in seg.items()}
        seg_peak = np.maximum(self.cum_table.range_max(seg["lo"], seg["hi"]) - seg["S"], 0) + seg["sig"]
        # Per (session, budget), flat index sid * nb + bi: the cold peak, then the hot one where replayed.
        n_sessions = len(self.row0)
        peak = np.repeat(self.cold_peak, nb)
        pair = seg["sid"] * nb + seg["bi"]
        replayed = np.zeros(n_sessions * nb, dtype=bool)
        replayed[pair] = True
        hot_peak = np.full(n_sessions * nb, -1, dtype=np.int64)
        np.maximum.at(hot_peak, pair, seg_peak)
        peak = np.where(replayed, hot_peak, peak)
        ev_pair = ev["sid"] * nb + ev["bi"]
        n_comp = np.bincount(ev_pair, minlength=n_sessions * nb)
        zero_kept = np.bincount(ev_pair, weights=ev["kept_turns"] == 0, minlength=n_sessions * nb)
        summarized = np.zeros(n_sessions * nb, dtype=np.int64)
        np.add.at(summarized, ev_pair, ev["summarized_tokens"])
        ineffective = np.bincount(ev_pair, weights=ev["context_after"] > self.ineffective_above, minlength=n_sessions * nb) > 0
        sid_all = np.repeat(np.arange(n_sessions), nb)
        budget_all = np.tile(np.arange(nb), n_sessions)
        sessions = pl.DataFrame({
            SESSION: ids.gather(sid_all), BUDGET: self.budget.gather(budget_all),
            "n_compactions": n_comp, "zero_kept_events": zero_kept.astype(np.int64), "summarized_tokens": summarized,
            "peak_context": pl.Series(peak).set(pl.Series(peak < 0), None) if len(peak) else pl.Series([], dtype=pl.Int64),
            "overflow": peak > self.window, "ineffective": ineffective,
        })
        events_out = pl.DataFrame({SESSION: ids.gather(ev["sid"]), BUDGET: self.budget.gather(ev["bi"]),
                                   **{c: ev[c] for c in ev_cols}})
        return Replay(events=_schema(events_out, self.event_schema, ids.dtype),
                      sessions=_schema(sessions, REPLAY_SESSION_SCHEMA, ids.dtype),
                      window=self.window, reserve=self.reserve, summary_tokens=self.summary_tokens)


def _schema(df: pl.DataFrame, schema: dict[str, pl.DataType], id_dtype: pl.DataType) -> pl.DataFrame:
    return df.cast({k: v for k, v in schema.items() if k != SESSION}).with_columns(pl.col(SESSION).cast(id_dtype)).select(list(schema))
