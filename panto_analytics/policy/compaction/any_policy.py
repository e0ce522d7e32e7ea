"""Replay under any compaction policy: :func:`replay_policies`, one engine for the policies of :mod:`.policies`.

The rules are :func:`~panto_analytics.policy.compaction.engine.replay_libpanto`'s (calls, the
simulated context, one compaction at most per call, restarts at recorded
summaries, no-ops that are not events), with the policy's trigger and cut in
place of libpanto's:

- A compaction fires after a call whose simulated context exceeds the
  policy's ``threshold(window)``. The policy cuts the *active window*: the
  recorded messages from the previous cut's ``prefix_end`` (or the latest
  recorded summary, or 0) up to and including the trigger (for Codex, from
  the latest recorded summary on: it keeps user messages and re-reads them).
- A cut that summarizes nothing (``prefix_end`` at the window's start) is a
  no-op: not an event, the next call is checked again.
- ``kept_tokens``: for a policy that keeps a suffix, the recorded context it
  keeps, ``cum(trigger) - cum(last call before kept_start)`` (libpanto's
  cumulative-usage measure); for Codex, its own estimate of the kept user
  messages. An event's ``summarized_tokens`` is ``max(context - kept, 0)``
  with ``context = max(recorded - summarized so far, 0)`` (the simulated
  context without the summary), so that after it the simulated context is
  ``kept_tokens + summary_tokens``. ``kept_turns``: libpanto turns whose start
  is kept (0 for a policy that keeps no suffix); ``kept_messages``;
  ``split_turn``: pi cut inside a turn.

libpanto itself runs on :func:`~panto_analytics.policy.compaction.engine.replay_libpanto`'s own
engine, unchanged. The others share :class:`_PolicyEngine`, which reuses that
engine's per-corpus arrays and its search for the next trigger (binary
lifting over running maxima of the recorded context); each round gathers the
active windows of every live state into one frame and runs the policy's cut
on all of them at once (a ``group_by`` over the state). The only Python loop
is over rounds.

>>> import panto_analytics as pa
>>> m = pa.read_sessions(["data/"])  # doctest: +SKIP
>>> replay_policies(m, ["libpanto", "pi"], window=200_000).events["policy"].unique()  # doctest: +SKIP
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

import numpy as np
import polars as pl

from ...budgets import Budgets, as_budgets
from ...frame import expressions as ex
from ...frame.schema import AGENT_VERSION, BUDGET, ROLE, SEQ, SESSION
from ..compute_split import budget_series
from ..turn_costs import check_order
from .clearing_replay import CLEARING_EVENT_COLUMNS, replay_clearing, staged_frame
from .engine import DEFAULT_RESERVE, EVENT_SCHEMA, Engine, Replay, as_array, replay_libpanto, summary_size, validate_parameters
from .policies import Clearing, LibPanto, Policy, Staged, parse_policy
from .priced import PriceSpec, bill_replay_result
from .request_size import with_request_bytes

__all__ = ["POLICY_EVENT_SCHEMA", "check_policy_windows", "parse_policies", "replay", "replay_policies", "window_columns"]

Array = np.ndarray

#: The events of a policy replay: :data:`~panto_analytics.policy.compaction.engine.EVENT_SCHEMA` plus two columns.
POLICY_EVENT_SCHEMA: dict[str, pl.DataType] = {**EVENT_SCHEMA, "kept_start": pl.UInt32(), "kept_messages": pl.UInt32(),
                                               "split_turn": pl.Boolean()}

#: Triggers of a state cut in one round (see ``_PolicyEngine._round``).
LOOKAHEAD = 4

_CUT = ("prefix_end", "kept_start", "kept_messages", "kept_tokens", "split_turn")
_KEYS = ("sid", "bi", "B", "a", "a0", "c_from", "na", "c_to", "S", "sig", "ne")


def window_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """Per message row of ``frame``: the columns a policy's cut reads (:data:`~.policies.base.WINDOW_COLUMNS`
    but ``state``, ``first`` and ``trigger``, which belong to the window), plus ``before``, the recorded
    context of the session's last call before the row (0 when none).

    >>> from panto_analytics.frame.schema import MESSAGE_SCHEMA
    >>> window_columns(pl.DataFrame(schema=MESSAGE_SCHEMA)).columns[:4]
    ['seq', 'role', 'user', 'tool_result']
    """
    role = pl.col(ROLE)
    user_msg = (role == "user") & ~pl.col("has_tool_result")
    chars = pl.col("serialized_bytes") if "serialized_bytes" in frame.columns else pl.lit(0)
    bash = pl.col("bash_execution") if "bash_execution" in frame.columns else pl.lit(False)
    version = pl.col(AGENT_VERSION).cast(pl.String) if AGENT_VERSION in frame.columns else pl.lit(None, pl.String)
    return frame.select(
        pl.col(SEQ).cast(pl.Int64), role=role.cast(pl.String), user=user_msg & ~pl.col("has_summary"),
        tool_result="has_tool_result", summary="has_summary", bash=(user_msg & ~pl.col("has_summary") & bash).fill_null(False),
        call=ex.assistant_cumulative().is_not_null(), cum=ex.assistant_cumulative().cast(pl.Int64),
        chars=chars.fill_null(0).cast(pl.Int64),
        turn_start=user_msg & ~ex.follows_user(),
        next_tool_result=pl.when(ex.session_end()).then(False).otherwise(pl.col("has_tool_result").shift(-1)),
        before=ex.prior_assistant_cumulative().fill_null(0).cast(pl.Int64),
        version=version,
    )


class _PolicyEngine(Engine):
    """The rounds of a policy replay: next trigger, the policy's cut on every live state's window, next state."""

    #: ``kept_start`` is -1 for none here (numpy has no null); :func:`_with_policy` makes it null.
    event_schema = {**POLICY_EVENT_SCHEMA, "kept_start": pl.Int64()}

    def __init__(self, frame: pl.DataFrame, policy: Policy, *, window: int, summary_tokens: int):
        super().__init__(frame, budget_series([policy.budget()]), window=window, reserve=0,
                         summary_tokens=summary_tokens)
        self.policy = policy
        self.threshold = policy.threshold(window)
        self.ineffective_above = policy.token_limit(window)

    def _prepare(self) -> None:
        super()._prepare()
        self.rows = window_columns(self.frame)
        self.before_row = as_array(self.rows["before"], pad=0)

    def _initial_states(self) -> dict[str, Array]:
        st = super()._initial_states()
        st["a0"] = st["a"].copy()
        return st

    def _cut(self, hit: dict[str, Array], k: Array) -> dict[str, Array]:
        """The policy's cut of each state's window ``[a, trigger]`` (``[a0, trigger]`` for ``from_anchor``)."""
        row0 = self.row0[hit["sid"]]
        trigger = self.call_seq[k]
        first = hit["a0"] if self.policy.from_anchor else hit["a"]
        lens = trigger + 1 - first
        owner = np.repeat(np.arange(len(k)), lens)
        offsets = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
        idx = row0[owner] + first[owner] + offsets
        context = np.maximum(self.cum[k] - hit["S"], 0) + hit["sig"]
        window = self.rows[idx].with_columns(
            state=pl.Series(owner), first=pl.Series(first[owner]), trigger=pl.Series(trigger[owner]),
            start=pl.Series(hit["a"][owner]), context=pl.Series(context[owner]), window=pl.lit(self.window, pl.Int64))
        cut = self.policy.cut(window).sort("state")
        return {c: cut[c].to_numpy() for c in _CUT}

    def _round(self, st: dict[str, Array]) -> tuple[dict[str, Array], dict[str, Array], dict[str, Array]]:
        """One round: each state's next event (its first trigger whose cut is no no-op), or restart, or end.

        A no-op leaves the state as it was, so the next :data:`LOOKAHEAD`
        triggers of each state are cut in the same frame and the first that
        summarizes something fires: a chain of no-ops costs one round per
        ``LOOKAHEAD`` triggers instead of one per trigger.
        """
        sid, c_from, c_to, summarized, sig = (st[key] for key in ("sid", "c_from", "c_to", "S", "sig"))
        x = np.where(sig > self.threshold, -1, self.threshold - sig + summarized)
        k = self.cum_table.first_above(c_from, c_to, x)
        found = k < c_to
        hit = {key: v[found] for key, v in st.items()}
        hi, xs = c_to[found], x[found]
        candidates = [k[found]]
        for _ in range(LOOKAHEAD - 1):
            prev = candidates[-1]
            candidates.append(np.where(prev < hi, self.cum_table.first_above(np.minimum(prev + 1, hi), hi, xs), hi))
        ks = np.stack(candidates)  # (LOOKAHEAD, found states)
        valid = ks < hi
        j_idx, s_idx = np.nonzero(valid)
        cut_flat = self._cut({key: v[s_idx] for key, v in hit.items()}, ks[j_idx, s_idx]) if len(s_idx) \
            else {c: np.zeros(0, dtype=np.int64) for c in _CUT}
        fires = np.zeros(ks.shape, dtype=bool)
        fires[j_idx, s_idx] = cut_flat["prefix_end"] > hit["a"][s_idx]
        fired = fires.any(axis=0)
        first = np.argmax(fires, axis=0)
        # Per fired state, its row in the flat cut: the position of (first[i], i) among the valid pairs.
        flat = np.full(ks.shape, -1, dtype=np.int64)
        flat[j_idx, s_idx] = np.arange(len(j_idx))
        pick = flat[first[fired], np.flatnonzero(fired)]
        kk = ks[first, np.arange(ks.shape[1])]
        fire = {key: v[fired] for key, v in hit.items()}
        events, after = self._policy_events(fire, kk[fired], {c: v[pick] for c, v in cut_flat.items()})
        waiting = {key: v[~fired] for key, v in hit.items()}
        last = ks[-1][~fired]
        waiting["c_from"] = np.where(last < hi[~fired], last + 1, hi[~fired])
        seg_hi = c_to.copy()
        found_hi = np.empty(int(found.sum()), dtype=np.int64)
        found_hi[fired] = kk[fired] + 1
        found_hi[~fired] = waiting["c_from"]
        seg_hi[found] = found_hi
        segments = {"sid": sid, "bi": st["bi"], "S": summarized, "sig": sig, "lo": c_from, "hi": seg_hi}
        rest_mask = ~found & (st["na"] < self.n[sid])
        rest = {key: v[rest_mask] for key, v in st.items()}
        r, r_row0, r_n = rest["na"], self.row0[rest["sid"]], self.n[rest["sid"]]
        na = np.where(r + 1 < r_n, self.next_anchor.take(r_row0 + r + 1, mode="clip"), r_n)
        zero = np.zeros(len(r), dtype=np.int64)
        rest.update(a=r + 1, a0=r + 1, c_from=self.next_call[r_row0 + self.resume[r_row0 + r]], na=na,
                    c_to=self.next_call[r_row0 + na], S=zero, sig=zero)
        nxt = {key: np.concatenate([after[key], waiting[key], rest[key]]) for key in _KEYS}
        return events, segments, nxt

    def _policy_events(self, hit: dict[str, Array], k: Array,
                cut: dict[str, Array]) -> tuple[dict[str, Array], dict[str, Array]]:
        row0 = self.row0[hit["sid"]]
        cum, seq = self.cum[k], self.call_seq[k]
        summarized_before, sig = hit["S"], hit["sig"]
        start = np.nan_to_num(cut["kept_start"].astype(np.float64), nan=-1).astype(np.int64)
        some = start >= 0
        from_usage = np.maximum(cum - self.before_row.take(row0 + np.maximum(start, 0), mode="clip"), 0)
        own = cut["kept_tokens"]
        own_given = ~np.isnan(own.astype(np.float64))
        kept_tokens = np.where(own_given, np.nan_to_num(own.astype(np.float64)).astype(np.int64),
                               np.where(some, from_usage, 0))
        kept_turns = np.where(some & ~own_given, self.next_turn[row0 + seq + 1]
                              - self.next_turn.take(row0 + np.maximum(start, 0), mode="clip"), 0)
        context = np.maximum(cum - summarized_before, 0)
        summarized_now = np.maximum(context - kept_tokens, 0)
        summarized = summarized_before + summarized_now
        events = {
            "sid": hit["sid"], "bi": hit["bi"], "event": hit["ne"], "trigger_seq": seq,
            "context_before": context + sig, "active_start": hit["a"], "prefix_end": cut["prefix_end"],
            "kept_turns": kept_turns, "kept_tokens": kept_tokens, "summarized_tokens": summarized_now,
            "context_after": np.maximum(cum - summarized, 0) + self.summary_tokens,
            "kept_start": start, "kept_messages": cut["kept_messages"], "split_turn": cut["split_turn"],
        }
        after = {**hit, "a": cut["prefix_end"], "c_from": k + 1, "S": summarized,
                 "sig": np.full(len(k), self.summary_tokens, dtype=np.int64), "ne": hit["ne"] + 1}
        return events, after


def _with_policy(result: Replay, policy: Policy, frame: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``result``'s frames with a leading ``policy`` column and the request sizes (libpanto's: the two extra columns)."""
    name = pl.lit(policy.spec(), pl.String).alias("policy")
    events = result.events
    if "kept_messages" not in events.columns:
        events = events.with_columns(
            kept_start=pl.when(pl.col("kept_turns") > 0).then(pl.col("prefix_end")),
            kept_messages=(pl.col("trigger_seq").cast(pl.Int64) + 1 - pl.col("prefix_end").cast(pl.Int64))
            .clip(0).cast(pl.UInt32), split_turn=pl.lit(False))
    elif "cleared_calls" not in events.columns:  # a clearing policy's events carry their (zero) request sizes
        kept_start = pl.when(pl.col("kept_start") >= 0).then(pl.col("kept_start")).cast(pl.UInt32)
        events = with_request_bytes(events.with_columns(kept_start), frame, result.summary_tokens)
        per_session = events.group_by(SESSION, BUDGET).agg(request_bytes=pl.col("request_bytes").sum())
        sessions = result.sessions.join(per_session, on=[SESSION, BUDGET], how="left", maintain_order="left")
        result = replace(result, sessions=sessions.with_columns(
            pl.col("request_bytes").fill_null(0) if "serialized_bytes" in frame.columns else pl.col("request_bytes")))
    events = events.with_columns(pl.lit(None, dtype).alias(c) for c, dtype in CLEARING_EVENT_COLUMNS.items()
                                 if c not in events.columns)
    return (events.select(name, *POLICY_EVENT_SCHEMA, "transcript_bytes", "request_bytes", *CLEARING_EVENT_COLUMNS),
            result.sessions.select(name, pl.all()))


def _clearing_result(frame: pl.DataFrame, policy: Clearing, *, window: int, summary_tokens: int) -> Replay:
    """A clearing policy's replay (:mod:`.clearing`) as a :class:`Replay`: no summarizer request (0 bytes)."""
    cleared = replay_clearing(frame, policy, window=window)
    zero = pl.lit(0, pl.UInt64)
    return Replay(events=cleared.events.with_columns(transcript_bytes=zero, request_bytes=zero),
                  sessions=cleared.sessions.with_columns(request_bytes=zero), window=window, reserve=0,
                  summary_tokens=summary_tokens)


def _one_policy(frame: pl.DataFrame, policy: Policy, *, window: int, budgets: Iterable[int] | None,
                summary_tokens: int) -> Replay:
    """One policy's replay of ``frame``: libpanto's engine, the clearing replay or the round engine."""
    if isinstance(policy, LibPanto):
        return replay_libpanto(frame, [20_000] if budgets is None else budgets, window=window, reserve=policy.reserve,
                               summary_tokens=summary_tokens)
    if isinstance(policy, Clearing):
        return _clearing_result(frame, policy, window=window, summary_tokens=summary_tokens)
    result = _PolicyEngine(frame, policy, window=window, summary_tokens=summary_tokens).run()
    return replace(result, summary_tokens=summary_tokens)


def _staged(frame: pl.DataFrame, policy: Staged, *, window: int, budgets: Iterable[int] | None,
            summary_tokens: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A staged policy's events and sessions: its clearing stages edit the calls, its last stage replays the
    edited frame; the clearing events are listed under every budget of the last stage, the sessions count both."""
    edited, replays = staged_frame(frame, policy, window=window)
    zero = pl.lit(0, pl.UInt64)
    if policy.last.clears:
        last = replays.pop()
        base = _with_policy(Replay(events=last.events.with_columns(transcript_bytes=zero, request_bytes=zero),
                                   sessions=last.sessions.with_columns(request_bytes=zero), window=window, reserve=0,
                                   summary_tokens=summary_tokens), policy, frame)
    else:
        base = _with_policy(_one_policy(edited, policy.last, window=window, budgets=budgets,
                                        summary_tokens=summary_tokens), policy, edited)
    clear_events = [r.events for r in replays]
    cut_events, sessions = base
    budget_values = sessions.select(BUDGET).unique(maintain_order=True)
    cleared = [_with_policy(Replay(events=e.drop(BUDGET).join(budget_values, how="cross").select(e.columns)
                                   .with_columns(transcript_bytes=zero, request_bytes=zero),
                                   sessions=sessions.head(0).drop("policy"), window=window, reserve=0,
                                   summary_tokens=summary_tokens),
                            policy, frame)[0] for e in clear_events]
    order = frame.select(pl.col(SESSION).unique(maintain_order=True)).with_row_index("_s")
    events = (pl.concat([*cleared, cut_events], how="vertical_relaxed")
              .join(order, on=SESSION, how="left", maintain_order="left")
              .sort("_s", BUDGET, "trigger_seq", maintain_order=True).drop("_s")
              .with_columns(event=pl.int_range(pl.len(), dtype=pl.UInt32).over(SESSION, BUDGET)))
    per_session = pl.concat(cleared, how="vertical_relaxed").group_by(SESSION, BUDGET).agg(
        _n=pl.len(), _s=pl.col("summarized_tokens").sum()) if cleared else None
    if per_session is not None:
        sessions = (sessions.join(per_session, on=[SESSION, BUDGET], how="left", maintain_order="left")
                    .with_columns((pl.col("n_compactions") + pl.col("_n").fill_null(0)).cast(pl.UInt32),
                                  (pl.col("summarized_tokens") + pl.col("_s").fill_null(0)).cast(pl.UInt64))
                    .drop("_n", "_s"))
    return events, sessions


def replay(messages: pl.DataFrame | pl.LazyFrame, budgets: Budgets, *, window: int,
           reserve: int = DEFAULT_RESERVE, summary_tokens: int | None = None,
           policy: Sequence[str | Policy] | str | Policy | None = None, prices: PriceSpec | None = None,
           summarizer: str | None = None) -> Replay:
    """Replay compaction over each session's life under ``window``: libpanto at every budget, or the given policies.

    Without ``policy`` this is :func:`~panto_analytics.policy.compaction.engine.replay_libpanto`,
    unchanged (its docstring states the rules). Given ``policy`` it is
    :func:`replay_policies`: the same sessions compacted as each policy would
    (``"libpanto"``, ``"pi"``, ``"pi-whole-turn"``, ``"codex"``,
    ``"claude-code"``, ``"gemini-cli"``, ``"last-n-turns"``, each with
    ``NAME:k=v`` settings over its defaults), and both frames gain a
    ``policy`` column. Given ``prices``, every call is billed
    (:mod:`panto_analytics.outcomes.billing` states the rules, ``docs/replay.md``
    too): the session rows gain ``recorded_cost_usd``, ``simulated_cost_usd``,
    ``summarizer_cost_usd``, ``total_cost_usd`` and their parts, the events
    their summarizer call's cost and the cost of the calls after them. Raises
    ValueError (one line) on bad parameters or an unknown policy or setting.

    Parameters
    ----------
    messages
        A message frame (``DataFrame`` or ``LazyFrame``), ordered by ``(session_id, seq)``.
    budgets
        ``keep_verbatim`` budgets, in tokens (libpanto's; the other policies have their own settings): ints, or
        strings as the command line takes them (``"20k"``, ``"8k,20k"``).
    window
        The model's context window, in tokens.
    reserve
        libpanto's reserve below the window (for a plain ``"libpanto"`` too).
    summary_tokens
        Size of a simulated summary; None: the median of the recorded ones, else 2,000.
    policy
        None (libpanto), or one policy or several: names, ``NAME:k=v`` specs or
        :class:`~panto_analytics.policy.compaction.policies.Policy` objects.
    prices
        None (no bill), True (genai-prices' bundled table, offline), a
        :class:`~panto_analytics.outcomes.prices.Prices` or a LiteLLM price file.
    summarizer
        How the summarizer call is billed: ``"separate"`` (uncached) or ``"cached"`` (on the cached
        conversation) for every policy; None: each policy's own way (``Policy.summarizer_cached``).

    Returns
    -------
    Replay
        ``events`` (one row per compaction) and ``sessions`` (one row per session and budget, or per
        policy, session and budget), and the parameters used.

    Examples
    --------
    >>> from panto_analytics import examples
    >>> r = replay(examples.messages(), [1_000], window=8_000, reserve=4_000, summary_tokens=500,
    ...            policy=["libpanto", "pi:reserve_tokens=4k,keep_recent_tokens=100"])
    >>> r.events.select("policy", "trigger_seq", "prefix_end", "kept_messages", "split_turn").rows()
    [('libpanto:reserve=4000', 5, 6, 0, False), ('pi:reserve_tokens=4000,keep_recent_tokens=100', 5, 5, 1, True)]
    """
    budgets = as_budgets(budgets)
    if policy is None:
        result = replay_libpanto(messages, budgets, window=window, reserve=reserve, summary_tokens=summary_tokens)
    else:
        result = replay_policies(messages, policy, window=window, budgets=budgets, reserve=reserve,
                                 summary_tokens=summary_tokens)
    if prices is None:
        return result
    return bill_replay_result(result, messages, prices, summarizer=summarizer)


def parse_policies(policies: str | Policy | Iterable[str | Policy], *, reserve: int = DEFAULT_RESERVE) -> list[Policy]:
    """Each policy spec as a :class:`Policy` (``libpanto`` with ``reserve``); ValueError, in one line, on a bad spec.

    >>> [p.spec() for p in parse_policies(["libpanto", "pi"])]
    ['libpanto', 'pi']
    """
    given = [policies] if isinstance(policies, (str, Policy)) else list(policies)
    parsed = [LibPanto(reserve=reserve) if isinstance(p, str) and p.strip() == "libpanto" else parse_policy(p)
              for p in given]
    if not parsed:
        raise ValueError("no policy given")
    return parsed


def check_policy_windows(policies: Iterable[Policy], window: int) -> None:
    """ValueError, in one line, for a policy whose trigger falls below 0 at ``window`` (its reserve is larger).

    >>> check_policy_windows(parse_policies(["claude-code"]), 32_000)
    Traceback (most recent call last):
    ValueError: policy claude-code: its trigger (-1,000) is below 0 at a window of 32,000: give a larger window
    """
    for policy in policies:
        if policy.threshold(window) < 0:
            raise ValueError(f"policy {policy.spec()}: its trigger ({policy.threshold(window):,}) is below 0 "
                             f"at a window of {window:,}: give a larger window")


def replay_policies(messages: pl.DataFrame | pl.LazyFrame, policies: Sequence[str | Policy] | str | Policy, *,
                    window: int, budgets: Iterable[int] | None = None, reserve: int = DEFAULT_RESERVE,
                    summary_tokens: int | None = None) -> Replay:
    """Replay each of ``policies`` over each session's life under ``window``; one frame, a ``policy`` column.

    ``policies``: names or ``NAME:k=v`` specs (:func:`~panto_analytics.policy.compaction.policies.parse_policy`) or
    :class:`~panto_analytics.policy.compaction.policies.Policy` objects. ``libpanto``
    runs at every budget of ``budgets`` (default: 20,000) with its
    ``reserve``; the other policies run at their own settings, their
    ``budget`` column holding their token budget (0 where they have none).
    A plain ``"libpanto"`` (no settings) uses ``reserve``.
    Events have :data:`POLICY_EVENT_SCHEMA`'s columns and the request sizes;
    sessions one row per (policy, session, budget). The result's ``reserve``
    is libpanto's default. ValueError (one line) on a bad policy or size.

    >>> import polars as pl
    >>> replay_policies(pl.DataFrame(schema=__import__("panto_analytics").schema.MESSAGE_SCHEMA),
    ...                 ["pi", "codex"], window=100_000, summary_tokens=500).events.height
    0
    """
    frame = messages.collect() if isinstance(messages, pl.LazyFrame) else messages
    parsed = parse_policies(policies, reserve=reserve)
    check_policy_windows(parsed, window)
    source = "given"
    if summary_tokens is None:
        summary_tokens, source = summary_size(frame)
    validate_parameters(window, 0, summary_tokens)
    check_order(frame)
    events, sessions = [], []
    for policy in parsed:
        if isinstance(policy, Staged):
            e, s = _staged(frame, policy, window=window, budgets=budgets, summary_tokens=summary_tokens)
        else:
            e, s = _with_policy(_one_policy(frame, policy, window=window, budgets=budgets,
                                            summary_tokens=summary_tokens), policy, frame)
        events.append(e)
        sessions.append(s)
    all_events = pl.concat(events, how="vertical_relaxed")
    if not any(p.clears or isinstance(p, Staged) for p in parsed):  # the clearing columns where some policy clears
        all_events = all_events.drop(*CLEARING_EVENT_COLUMNS)
    return Replay(events=all_events, sessions=pl.concat(sessions, how="vertical_relaxed"),
                  window=window, reserve=DEFAULT_RESERVE, summary_tokens=summary_tokens, summary_source=source)
