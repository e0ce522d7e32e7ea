"""One session's life, call by call: its context as recorded and as replayed, its compactions, its cache.

:func:`session_timeline` answers what users of session-analysis tools ask of
one session: how large the context was at every API call, where the agent
compacted (and where a policy would have, at a budget), what each compaction
took from the context and what the agent fetched again afterwards, and what
the prompt cache did: what every call read from it, wrote to it and sent
uncached, why the cache broke where it did, and what each break cost.

The figures come from the package's one definition of each: a call's cost
is :func:`~panto_analytics.outcomes.cost.bill` of its recorded tokens (so the
calls of a session add up to ``cost --by session``), the cache rule's columns
are :func:`~panto_analytics.outcomes.billing.call_rows`', a replayed call's
prompt is :func:`~panto_analytics.outcomes.billing.simulated_calls`', and a
compaction's re-fetches are :func:`~panto_analytics.outcomes.orphan_loss.cut_loss`'s.

**Why a cache broke** (``break_cause``), the first that holds of a call:

- ``first call``: the session's first call (nothing was cached yet);
- ``compaction``: the first call after a recorded compaction at which the prompt shrank (the prefix changed);
- ``model switch``: the previous call went to another model (each model has its own cache);
- ``idle``: the gap since the previous call to the model passed the cache's lifetime (5 minutes, or an
  hour after a 1-hour write);

and null where none does. ``break_cost_usd`` is what the break cost beyond a
hit: the call's bill minus the bill of the same call had the prefix it wrote
again (a writing session's cache writes; an automatically caching session's
uncached input up to the previous prompt) been read from the cache instead.

>>> import panto_analytics as pa
>>> tl = session_timeline(pa.examples.messages(), "a", prices=None)
>>> tl.calls.select("call", "context", "break_cause").rows()
[(0, 900, 'first call'), (1, 1850, None), (2, 4600, None)]
"""
from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ..frame.schema import SEQ, SESSION
from ..frame.tool_targets import references
from ..outcomes.billing import call_rows, simulated_calls
from ..outcomes.cost import bill
from ..outcomes.orphan_loss import DEFAULT_HORIZON, cut_loss, recorded_cuts, replay_cuts
from ..outcomes.prices import Prices, load_prices
from ..phrases import counted
from ..policy import replay
from .formatting import has_budget, point_name

__all__ = ["BREAK_CAUSES", "Timeline", "pick_session", "session_timeline"]

#: The causes of a cache break, in the order they are tested.
BREAK_CAUSES = ("first call", "compaction", "model switch", "idle")

_TOKENS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")


@dataclass(frozen=True)
class Timeline:
    """A session call by call (:func:`session_timeline`).

    ``calls``: one row per recorded API call: ``call`` (0-based), ``seq``, ``timestamp``, ``model``,
    ``context`` (the prompt: input + cache read + cache write, in tokens), the recorded ``input``,
    ``cache_read``, ``cache_write`` and ``output``, ``cost_usd`` (null where the model is unpriced),
    ``break_cause`` and ``break_cost_usd``, and, under a replay, ``replayed_context`` (the prompt the policy
    would have sent) and ``replayed_cost_usd``.
    ``compactions``: one row per compaction, recorded (``kind`` ``recorded``) or simulated (``simulated``):
    ``call`` (the last call before it: the one that triggered it), ``seq`` (the first message after it),
    ``before`` and ``after`` (the context either side; ``after`` null when no call follows), and
    ``refetch_calls``, ``refetch_tokens`` and ``orphan_calls`` over the next ``horizon`` tool calls.
    """

    session_id: str
    calls: pl.DataFrame
    compactions: pl.DataFrame
    window: int | None = None
    policy: str | None = None
    budget: int | None = None
    price_source: str | None = None

    @property
    def cost_usd(self) -> float | None:
        """The session's recorded bill (null when a call is unpriced), as ``cost --by session`` gives it."""
        costs = self.calls["cost_usd"]
        return None if costs.null_count() else float(costs.sum())

    @property
    def peak_context(self) -> int:
        """The largest recorded prompt, in tokens (0 without calls)."""
        return int(self.calls.select(pl.col("context").cast(pl.Int64).max().fill_null(0)).item())

    def __str__(self) -> str:
        breaks = self.calls.filter(pl.col("break_cause").is_not_null() & (pl.col("break_cause") != "first call"))
        recorded = self.compactions.filter(pl.col("kind") == "recorded").height
        simulated = self.compactions.filter(pl.col("kind") == "simulated").height
        cost = "unpriced" if self.cost_usd is None else f"${self.cost_usd:,.4f}"
        # A policy with no token budget of its own is named by its settings, not by the budget given.
        replay = ""
        if self.window is not None and self.budget is not None:
            point = (f"{self.policy} at {self.budget:,} tokens" if has_budget(self.policy)
                     else point_name(self.policy, self.budget))
            replay = f"; {counted(simulated, 'compaction')} under {point} in a {self.window:,} window"
        return (f"session {self.session_id}: {counted(self.calls.height, 'call')}, peak context "
                f"{self.peak_context:,} tokens, {counted(recorded, 'recorded compaction')}{replay}; "
                f"{counted(breaks.height, 'cache break')} after the first call; recorded cost {cost}")


def pick_session(ids: list[str], wanted: str | None) -> str:
    """The session ``wanted`` names among ``ids``: its whole id, or a prefix of it no other id shares (a
    terminal table's shortened id, its ``…`` included); the only one when ``wanted`` is None. A ValueError
    that says why otherwise (the commands' ``--session`` turn it into a usage error).

    >>> pick_session(["0963a6d2-9c87", "12d91d84-ee2c"], "0963a6d2…")
    '0963a6d2-9c87'
    """
    if wanted is None:
        if len(ids) != 1:
            raise ValueError(f"{len(ids)} sessions: name one (its session_id, or a prefix of it)")
        return ids[0]
    if wanted in ids:
        return wanted
    prefix = wanted.removesuffix("…")
    matches = [i for i in ids if i.startswith(prefix)] if prefix else []
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise ValueError(f"{wanted!r} begins {len(matches)} session ids ({', '.join(matches[:3])}"
                         f"{', ...' if len(matches) > 3 else ''}): give more of it")
    raise ValueError(f"no session {wanted!r} ({len(ids)} sessions read)")


def _break_cause() -> pl.Expr:
    """Why the call's cache broke (:data:`BREAK_CAUSES`), from :func:`call_rows`' columns; null: it did not."""
    first_of_session = pl.col(SEQ) == pl.col(SEQ).min()
    switched = pl.col("model") != pl.col("model").shift(1)
    return (pl.when(first_of_session).then(pl.lit("first call"))
            .when(pl.col("restart") & (pl.col("anchor") >= 0)).then(pl.lit("compaction"))
            .when(switched.fill_null(False)).then(pl.lit("model switch"))
            .when(~pl.col("fresh")).then(pl.lit("idle"))
            .otherwise(None).alias("break_cause"))


def _as_hit() -> list[pl.Expr]:
    """The call's tokens had it read from cache what it wrote (or sent uncached) again: the bill of a hit."""
    rewritten = pl.when(pl.col("writes")).then(pl.col("cache_write_5m") + pl.col("cache_write_1h")).otherwise(
        pl.min_horizontal(pl.col("input"), (pl.col("_prev_prompt") - pl.col("cache_read")).clip(0)).fill_null(0))
    moved = pl.when(pl.col("break_cause").is_not_null() & (pl.col("break_cause") != "first call")).then(
        rewritten).otherwise(0)
    return [pl.when(pl.col("writes")).then(pl.col("input")).otherwise(pl.col("input") - moved).alias("input"),
            (pl.col("cache_read") + moved).alias("cache_read"),
            pl.when(pl.col("writes") & (moved > 0)).then(0).otherwise(pl.col("cache_write_5m")).alias("cache_write_5m"),
            pl.when(pl.col("writes") & (moved > 0)).then(0).otherwise(pl.col("cache_write_1h")).alias("cache_write_1h")]


def _calls(rows: pl.DataFrame, table: Prices | None) -> pl.DataFrame:
    """One row per recorded call of one session (``rows``: its :func:`call_rows`), its bill and its cache breaks."""
    rows = rows.with_columns(_break_cause()).with_columns(pl.col(c).cast(pl.Int64) for c in _TOKENS)
    base = rows.select(
        call=pl.int_range(pl.len(), dtype=pl.UInt32), seq=SEQ, timestamp="timestamp", model="model",
        context="prompt", input="input", cache_read="cache_read",
        cache_write=pl.col("cache_write_5m") + pl.col("cache_write_1h"), output="output",
        break_cause="break_cause")
    if table is None:
        return base.with_columns(cost_usd=pl.lit(None, pl.Float64), break_cost_usd=pl.lit(None, pl.Float64))
    tokens = rows.select("model", *_TOKENS)
    billed = bill(tokens, table)["cost_usd"]
    as_hit = bill(rows.with_columns(_as_hit()).select("model", *_TOKENS), table)["cost_usd"]
    return base.with_columns(cost_usd=billed, break_cost_usd=pl.when(pl.col("break_cause").is_not_null()).then(
        (billed - as_hit).clip(0)))


def _compaction_rows(cuts: pl.DataFrame, calls: pl.DataFrame, kind: str) -> pl.DataFrame:
    """``cuts`` (with their loss) placed on the calls: ``call``, the last call before the compaction (the one
    that triggered it), and the context either side: ``before``, that call's (or the cut's ``context_before``),
    ``after``, the next call's (or the cut's ``context_after``; null when no call follows)."""
    ctx = calls.select("call", _seq=pl.col(SEQ).cast(pl.Int64), context=pl.col("context").cast(pl.Int64))
    given = [c for c in ("context_before", "context_after") if c in cuts.columns]
    probe = (cuts.select(pl.col("after_seq").cast(pl.Int64).alias("_after"), "refetch_calls", "refetch_tokens",
                         "orphan_calls", *(pl.col(c).cast(pl.Int64) for c in given))
             .with_row_index("_cut").with_columns(_probe=pl.col("_after") - 1).sort("_probe"))
    located = (probe.join_asof(ctx, left_on="_probe", right_on="_seq", strategy="backward", check_sortedness=False)
               .sort("_after")
               .join_asof(ctx.select(_next="_seq", after="context"), left_on="_after", right_on="_next",
                          strategy="forward", check_sortedness=False))
    before = pl.col("context_before") if "context_before" in given else pl.col("context")
    after = pl.col("context_after") if "context_after" in given else pl.col("after")
    return located.sort("_cut").select(
        kind=pl.lit(kind), call="call", seq="_after", before=before, after=after,
        refetch_calls="refetch_calls", refetch_tokens="refetch_tokens", orphan_calls="orphan_calls")


_COMPACTIONS_SCHEMA = pl.Schema({
    "kind": pl.String(), "call": pl.UInt32(), "seq": pl.Int64(), "before": pl.Int64(), "after": pl.Int64(),
    "refetch_calls": pl.UInt32(), "refetch_tokens": pl.UInt64(), "orphan_calls": pl.UInt32()})


def _replayed(session: pl.DataFrame, rows: pl.DataFrame, calls: pl.DataFrame, *, window: int, policy: str, budget: int, reserve: int,
              summary_tokens: int | None, table: Prices | None, refs: pl.LazyFrame, horizon: int
              ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The calls with the replayed prompt and bill under ``policy`` at ``budget``, and its compactions."""
    result = replay(session, [budget], window=window, reserve=reserve, summary_tokens=summary_tokens,
                    policy=[policy])
    simulated = simulated_calls(rows, result.events, keys=["policy", "budget"],
                                summary_tokens=result.summary_tokens)
    sim = simulated.select(SEQ, *(pl.col(c).cast(pl.Int64) for c in _TOKENS))
    recorded = rows.select(SEQ, "model", *(pl.col(c).cast(pl.Int64) for c in _TOKENS))
    merged = (recorded.join(sim, on=SEQ, how="left", suffix="_sim", maintain_order="left")
              .select(SEQ, "model", *(pl.coalesce(f"{c}_sim", c).alias(c) for c in _TOKENS)))
    out = calls.with_columns(replayed_context=(pl.Series(merged.select(
        pl.col("input") + pl.col("cache_read") + pl.col("cache_write_5m") + pl.col("cache_write_1h")).to_series())))
    out = out.with_columns(replayed_cost_usd=bill(merged.select("model", *_TOKENS), table)["cost_usd"]
                           if table is not None else pl.lit(None, pl.Float64))
    events = result.events
    if events.height == 0:
        return out, pl.DataFrame(schema=_COMPACTIONS_SCHEMA)
    lost = cut_loss(refs, replay_cuts(events), horizon=horizon)
    return out, _compaction_rows(lost, calls, "simulated")


def session_timeline(messages: pl.DataFrame, session_id: str, *, compactions: pl.DataFrame | None = None,
                     sessions: pl.DataFrame | None = None, window: int | None = None, policy: str = "libpanto",
                     budget: int | None = None, reserve: int = 16_384, summary_tokens: int | None = None,
                     prices: Prices | str | bool | None = True, horizon: int = DEFAULT_HORIZON) -> Timeline:
    """``session_id``'s life call by call (:class:`Timeline`): context, compactions, cache, cost.

    Parameters
    ----------
    messages
        The message frame (it may hold other sessions: only ``session_id``'s rows are read).
    session_id
        The session.
    compactions, sessions
        The corpus' compactions and sessions tables (:func:`~panto_analytics.ingest.read_corpus`): the
        compactions the agent recorded, and its format (what it restores); None: none recorded.
    window, policy, budget, reserve, summary_tokens
        With ``window`` and ``budget``: the session replayed under ``policy`` (``replay``'s settings), its
        prompts and compactions beside the recorded ones.
    prices
        True: genai-prices; a price table or a LiteLLM price file; None: no bill.
    horizon
        Tool calls looked at after each compaction for re-fetches.

    Returns
    -------
    Timeline

    Examples
    --------
    >>> import panto_analytics as pa
    >>> tl = session_timeline(pa.examples.messages(), "a", window=4_000, budget=500, reserve=1_000, prices=None)
    >>> tl.compactions.select("kind", "call", "before", "after").rows()
    [('simulated', 2, 5000, 2000)]
    """
    session = messages.filter(pl.col(SESSION).cast(pl.String) == session_id)
    if session.height == 0:
        raise ValueError(f"no session {session_id!r} in the messages")
    table = None if prices is None or prices is False else load_prices(None if prices is True else prices)
    rows = call_rows(session).collect()   # read once: the recorded calls' bill and the replay's both start here
    calls = _calls(rows, table)
    refs = references(session)
    parts = []
    if compactions is not None and compactions.height:
        mine = compactions.filter(pl.col(SESSION).cast(pl.String) == session_id)
        if mine.height:
            formats = (sessions if sessions is not None else
                       pl.DataFrame({SESSION: [session_id], "source_format": [str(session["source_format"][0])]}))
            lost = cut_loss(refs, recorded_cuts(mine, formats), horizon=horizon)
            parts.append(_compaction_rows(lost, calls, "recorded"))
    if window is not None and budget is not None:
        calls, simulated = _replayed(session, rows, calls, window=window, policy=policy, budget=budget, reserve=reserve,
                                     summary_tokens=summary_tokens, table=table, refs=refs, horizon=horizon)
        parts.append(simulated)
    found = pl.concat([p.cast(_COMPACTIONS_SCHEMA) for p in parts]) if parts else pl.DataFrame(
        schema=_COMPACTIONS_SCHEMA)
    return Timeline(session_id, calls, found, window=window, policy=policy if window is not None else None,
                    budget=budget, price_source=None if table is None else table.source)
