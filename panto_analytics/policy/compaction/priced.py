"""A replay's bill: every simulated call and summarizer call priced (:func:`bill_replay_result`).

The rules are :mod:`panto_analytics.outcomes.billing`'s; the price of a call
is :func:`panto_analytics.outcomes.cost.bill`'s, the one definition. This
module only ties them to a :class:`~panto_analytics.policy.compaction.engine.Replay`:
its keys (``budget``, and ``policy`` for a policy replay) and each policy's
way of asking for its summary (``Policy.summarizer_cached``).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import polars as pl

from ...frame.schema import BUDGET, SESSION
from ...outcomes.billing import SUMMARIZER_MODES, bill_edited, bill_replay
from ...outcomes.cost import bill, unpriced, warn_unpriced
from ...outcomes.prices import Prices, load_prices
from .clearing_replay import cleared_usage, staged_frame
from .engine import Replay
from .policies import POLICIES, Clearing, Staged, parse_policy

__all__ = ["PriceSpec", "bill_replay_result", "resolve_prices", "summarizer_cached"]

#: What ``prices=`` accepts: True (genai-prices, offline), a loaded table, or a LiteLLM price file.
PriceSpec = Prices | str | Path | bool


def resolve_prices(prices: PriceSpec) -> Prices:
    """The price table ``prices`` names (True: genai-prices' bundled table)."""
    if isinstance(prices, Prices):
        return prices
    if prices is True:
        return load_prices()
    if prices is False:
        raise ValueError("prices=False: pass None for no bill")
    return load_prices(prices)


def summarizer_cached(summarizer: str | None, *, has_policy: bool) -> pl.Expr | bool:
    """Per event, whether the summarizer reads the conversation from cache: ``summarizer`` for all
    (``"separate"`` or ``"cached"``), else each policy's own setting (libpanto's replay: separate)."""
    if summarizer is not None:
        if summarizer not in SUMMARIZER_MODES:
            raise ValueError(f"summarizer must be one of {', '.join(SUMMARIZER_MODES)}, got {summarizer!r}")
        return summarizer == "cached"
    if not has_policy:
        return False
    by_name = {name: cls.summarizer_cached for name, cls in POLICIES.items()}
    # A staged policy asks the way its last stage does.
    last = pl.col("policy").str.split("+").list.last()
    return last.str.split(":").list.first().replace_strict(by_name, default=False, return_dtype=pl.Boolean)


def bill_replay_result(result: Replay, messages: pl.DataFrame | pl.LazyFrame, prices: PriceSpec, *,
                       summarizer: str | None = None) -> Replay:
    """``result`` with its calls billed: the session rows gain ``recorded_``, ``simulated_``, ``summarizer_``
    and ``total_`` costs (``cost_usd`` and its four parts), the events the summarizer call's tokens and cost
    and how the calls after them changed (:func:`~panto_analytics.outcomes.billing.bill_replay`), and
    ``price_source`` says which table priced them. A model the table has no
    price for costs null, never 0, and one :class:`~panto_analytics.outcomes.cost.UnpricedWarning`
    per model says how many of its recorded calls and tokens went unpriced."""
    table = resolve_prices(prices)
    cached = summarizer_cached(summarizer, has_policy="policy" in result.sessions.columns)
    has_policy = "policy" in result.sessions.columns
    keys = ["policy", BUDGET] if has_policy else [BUDGET]
    missing: list[pl.DataFrame] = []

    def price(calls: pl.DataFrame) -> pl.DataFrame:
        billed = bill(calls, table)
        if billed["cost_usd"].null_count():  # some call is unpriced
            missing.append(unpriced(billed.filter("_recorded")) if "_recorded" in billed.columns else unpriced(billed))
        return billed

    clearing = _clearing_policies(result) if has_policy else []
    if not clearing:
        events, sessions = bill_replay(messages, result.events, result.sessions, keys=keys,
                                       summary_tokens=result.summary_tokens, price=price, cached=cached)
    else:
        events, sessions = _bill_mixed(result, messages, clearing, keys=keys, price=price, cached=cached)
    left = missing[0] if missing else pl.DataFrame(schema=_UNPRICED)
    warn_unpriced(left, replay=True)
    return replace(result, events=events, sessions=sessions, price_source=table.source, unpriced=left)


_UNPRICED = {"model": pl.String, "api_calls": pl.UInt64, "tokens": pl.UInt64}


def _clearing_policies(result: Replay) -> list[Clearing | Staged]:
    """The policies of a policy replay that edit calls in place (clearing ones, and staged ones whose first stages
    clear), their specs parsed back, in the order they appear."""
    specs = result.sessions["policy"].unique(maintain_order=True).to_list()
    return [p for p in (parse_policy(s) for s in specs if not s.startswith("libpanto"))
            if isinstance(p, (Clearing, Staged))]


def _bill_mixed(result: Replay, messages: pl.DataFrame | pl.LazyFrame, clearing: list[Clearing | Staged], *,
                keys: list[str], price: Callable[[pl.DataFrame], pl.DataFrame],
                cached: pl.Expr | bool) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Bill the cut policies of ``result`` as compactions, each clearing policy on its edited calls
    (:func:`~panto_analytics.outcomes.billing.bill_edited`) and each staged one both ways: its clearing events on
    the calls its clearing stages edited, its last stage's compactions on those edited calls; the rows keep
    their order."""
    frame = messages.collect() if isinstance(messages, pl.LazyFrame) else messages
    events, sessions = result.events.with_row_index("_order"), result.sessions.with_row_index("_order")
    specs = [p.spec() for p in clearing]
    cut_events = events.filter(~pl.col("policy").is_in(specs))
    cut_sessions = sessions.filter(~pl.col("policy").is_in(specs))
    out_events, out_sessions = [], []
    if cut_sessions.height:
        e, s = bill_replay(frame, cut_events.drop("_order"), cut_sessions.drop("_order"), keys=keys,
                           summary_tokens=result.summary_tokens, price=price, cached=cached)
        out_events.append(e.with_columns(cut_events["_order"]))
        out_sessions.append(s.with_columns(cut_sessions["_order"]))
    for policy, spec in zip(clearing, specs):
        pe, ps = events.filter(pl.col("policy") == spec), sessions.filter(pl.col("policy") == spec)
        if isinstance(policy, Clearing):
            edited, _ = cleared_usage(frame, policy, window=result.window)
        else:
            edited, _ = staged_frame(frame, policy, window=result.window)
        summarizing = isinstance(policy, Staged) and not policy.last.clears
        clear_ev = pe.filter(pl.col("cleared_calls").is_not_null()) if summarizing else pe
        e, s = bill_edited(frame, edited, clear_ev.drop("_order"), ps.drop("_order"), price=price)
        out_events.append(e.with_columns(clear_ev["_order"]))
        if summarizing:
            cut_ev = pe.filter(pl.col("cleared_calls").is_null())
            # The bill of the compactions reads their count (the clearing events are billed above).
            count = cut_ev.group_by(SESSION, BUDGET).agg(_n=pl.len())
            cut_ps = (ps.join(count, on=[SESSION, BUDGET], how="left", maintain_order="left")
                      .with_columns(n_compactions=pl.col("_n").fill_null(0).cast(pl.UInt32)).drop("_n"))
            ce, cs = bill_replay(edited, cut_ev.drop("_order"), cut_ps.drop("_order"), keys=keys,
                                 summary_tokens=result.summary_tokens, price=price, cached=cached)
            out_events.append(ce.with_columns(cut_ev["_order"]))
            # The recorded cost is the recording's; the replayed one is the edited calls' after the compactions.
            recorded = [c for c in s.columns if c.startswith("recorded_")]
            s = cs.with_columns(*s.select(recorded), ps["n_compactions"],
                                cache_miss_usd=cs["cache_miss_usd"] + s["cache_miss_usd"])
        out_sessions.append(s.with_columns(ps["_order"]))
    return (pl.concat(out_events, how="diagonal_relaxed").sort("_order").drop("_order"),
            pl.concat(out_sessions, how="diagonal_relaxed").sort("_order").drop("_order"))

