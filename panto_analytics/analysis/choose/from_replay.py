"""A budget from a replay under a context window: per-session outcomes for every (policy, budget), the rule, the frontier.

A replay (:func:`panto_analytics.replay`) gives one row per (policy, session,
budget). :func:`outcomes_table` turns it into one row per (policy, budget):

- ``sessions`` (all replayed), ``at_trigger`` (those whose context reaches the
  policy's trigger at some budget: the sessions a budget can change; every
  per-session figure below is over them), ``compacted``, ``events``,
  ``compactions_per_session``;
- cost per session, where the replay billed its calls (``replay(...,
  prices=...)``: ``total_cost_usd``, the replayed calls plus the summarizer's,
  else ``simulated_cost_usd``): ``cost_p50``, ``cost_p90``, ``cost_total``,
  ``cost_unpriced`` (sessions whose model has no price), and
  ``recorded_cost_p50`` (the recording as it is);
- loss, where it was measured (:func:`panto_analytics.loss`'s sessions:
  ``window_calls``, ``orphan_calls``, ``orphan_rate``, ``refetch_tokens``):
  ``orphan_rate`` pooled (orphan calls over the calls looked at, all sessions
  together), ``orphan_rate_p50`` (the median compacted session's),
  ``refetch_tokens`` (total) and ``refetch_tokens_p50``;
- summarizer input: ``summarized_p50`` (tokens summarized per session, median)
  and ``request_bytes_total``;
- every ``_p50`` is the median (:func:`~panto_analytics.frame.expressions.median`:
  of an even count the mean of the middle two);
- the rules: ``keeps_k_share`` (sessions that keep K whole turns at every
  compaction they have) and ``within_limit_share`` (sessions whose kept suffix
  stays within the limit at every compaction);
- ``threshold`` (the policy's trigger, ``window - reserve`` for libpanto) and
  ``proposable``: a budget at or above the trigger is never proposed (the whole
  active window fits it, so its splits are no-ops: it only looks good because
  it never compacts).

Rules count sessions, not events: a larger budget makes fewer events, so a
share of events rises with the budget until the budget passes the trigger.

:func:`choose_from_outcomes` picks a (policy, budget) by a :class:`~.rule.Rule`: the smallest proposable
budget meeting ``-k``/``-s``, or, with ``max_orphan_rate``, the cheapest point
of the Pareto front (cost per session against orphan rate) that meets it.

>>> import polars as pl
>>> s = pl.DataFrame({"session_id": ["a", "b"] * 2, "budget": [10, 10, 20, 20], "n_compactions": [1, 0, 1, 0],
...     "zero_kept_events": [0] * 4, "summarized_tokens": [50, 0, 40, 0]})
>>> e = pl.DataFrame({"session_id": ["a", "a"], "budget": [10, 20], "kept_turns": [1, 2], "kept_tokens": [9, 19]})
>>> t = outcomes_table(e, s, window=100, reserve=50)
>>> t.select("budget", "at_trigger", "keeps_k_share", "proposable").rows()
[(10, 1, 0.0, True), (20, 1, 1.0, True)]
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, cast

import polars as pl

from ...frame.expressions import median
from ...frame.schema import BUDGET, SESSION
from ...outcomes.cost import dollars_total
from ...outcomes.group_tables import grouped
from ...phrases import counted
from ...policy.compaction.engine import Replay
from ..formatting import format_tokens, has_budget, point_name
from .bootstrap import (
    HASH,
    MIN_SESSIONS,
    RESAMPLES,
    SEED,
    BudgetInterval,
    budget_interval,
    intervals,
    replicate_tables,
    session_count,
    session_hashes,
)
from .choice import Choice
from .rule import FEW_SESSIONS, Rule

__all__ = [
    "INTERVAL_FIGURES", "OUTCOME_COLUMNS", "TIE_ORDER", "choose_from_outcomes", "choose_from_replay", "chosen_by_replicate",
    "POINT_COLUMNS", "few_warnings", "outcomes_table", "pareto_front", "points_of", "pool_policy", "recorded_loss", "recorded_points",
    "replay_outcomes", "session_outcomes", "table_aggs", "table_from_sessions", "thresholds_of", "with_intervals",
]

#: Columns a replay's sessions gain from billing (per session, US dollars): the first present is the cost.
COSTS = ("total_cost_usd", "simulated_cost_usd")
RECORDED_COST = "recorded_cost_usd"
#: Columns a replay's sessions gain from the loss issue.
ORPHAN_CALLS, ORPHAN_RATE, REFETCH = "orphan_calls", "orphan_rate", "refetch_tokens"

#: The columns of :func:`session_outcomes` rows that :func:`table_from_sessions` reads (where present): all a
#: dataset's tasks keep of them (:func:`panto_analytics.dataset._decision.decision_dataset`).
OUTCOME_COLUMNS = ("policy", SESSION, HASH, BUDGET, "_reach", "_reaching", "min_kept_turns", "max_kept", "n_compactions",
                   "zero_kept_events", "summarized_tokens", "request_bytes", *COSTS, RECORDED_COST, ORPHAN_CALLS,
                   ORPHAN_RATE, REFETCH, "window_calls")
#: The columns of the replay's session rows that :func:`points_of` reads (a dataset's report collects only these of
#: the spilled rows of the sessions with a recorded compaction).
POINT_COLUMNS = ("policy", SESSION, BUDGET, "n_compactions", *COSTS, RECORDED_COST, ORPHAN_CALLS, "window_calls")


def thresholds_of(policies: list[str], window: int, reserve: int) -> dict[str, int]:
    """Each policy spec's trigger under ``window`` (libpanto without a policy column: ``window - reserve``); for a
    policy that clears tool results (no budget, no summarizing trigger), the window itself.

    >>> thresholds_of(["libpanto", "pi:reserve_tokens=8k"], 100_000, 16_384)
    {'libpanto': 83616, 'pi:reserve_tokens=8k': 92000}
    """
    from ...policy.compaction.policies import LibPanto, parse_policy

    out = {}
    for spec in policies:
        policy = LibPanto(reserve=reserve) if spec == "libpanto" else parse_policy(spec)
        # A policy that clears tool results has no budget to pass a trigger: its edits run at any size.
        out[spec] = window if policy.clears else policy.threshold(window)
    return out


def _with_policy(df: pl.DataFrame) -> pl.DataFrame:
    return df if "policy" in df.columns else df.with_columns(policy=pl.lit("libpanto"))


def session_outcomes(events: pl.DataFrame, sessions: pl.DataFrame) -> pl.DataFrame:
    """A replay's session rows (one per policy, session and budget) with what the rules read of their events:
    ``min_kept_turns`` and ``max_kept`` (null without an event), ``_reach`` (the session compacts under this
    policy at some budget), ``_reaching`` (under some policy at some budget: the sessions the bootstrap
    resamples, :func:`with_intervals`) and the session's hash (:data:`~.bootstrap.HASH`, what the bootstrap
    resamples it by). Whole sessions in, so rows of disjoint sets of sessions concatenate
    (:func:`panto_analytics.dataset._decision.decision_dataset`), and both flags are computed where the
    session's rows are (a dataset's task), not over every session's rows afterwards."""
    events, sessions = _with_policy(events), _with_policy(sessions)
    keys = ["policy", SESSION, BUDGET]
    per = events.group_by(keys).agg(min_kept_turns=pl.col("kept_turns").min(), max_kept=pl.col("kept_tokens").max())
    ses = sessions.join(per.with_columns(pl.col(SESSION).cast(sessions[SESSION].dtype)), on=keys, how="left")
    return ses.with_columns(pl.col(SESSION).cast(pl.String), pl.col("policy").cast(pl.String),
                            session_hashes(ses[SESSION]),
                            _reach=pl.col("n_compactions").max().over("policy", SESSION) > 0,
                            _reaching=pl.col("n_compactions").max().over(SESSION) > 0)


def outcomes_table(events: pl.DataFrame, sessions: pl.DataFrame, *, window: int, reserve: int,
                   thresholds: Mapping[str, int] | None = None, min_kept_turns: int = 2,
                   limit: int | None = None) -> pl.DataFrame:
    """One row per (policy, budget) of a replay's ``events`` and ``sessions`` (see the module docstring).

    ``thresholds``: each policy's trigger (default :func:`thresholds_of`);
    ``min_kept_turns``: the K of ``keeps_k_share``; ``limit``: the token limit
    of ``within_limit_share`` (None: the column is left out).
    """
    return table_from_sessions(session_outcomes(events, sessions), window=window, reserve=reserve,
                               thresholds=thresholds, min_kept_turns=min_kept_turns, limit=limit)


def table_from_sessions(ses: pl.DataFrame | pl.LazyFrame, *, window: int, reserve: int,
                        thresholds: Mapping[str, int] | None = None, min_kept_turns: int = 2, limit: int | None = None,
                        column_at_a_time: bool = False) -> pl.DataFrame:
    """:func:`outcomes_table` from :func:`session_outcomes` rows (of one corpus, or of its buckets concatenated,
    in any order: every figure is order-free, totals of dollars taken in whole picodollars, so both give the
    same table to the last bit). ``ses`` may be lazy (a dataset's rows, read back from Parquet);
    ``column_at_a_time`` reads one column of it at a time
    (:func:`~panto_analytics.outcomes.group_tables.grouped`), for the same table."""
    aggs = table_aggs(ses.lazy().collect_schema().names(), min_kept_turns=min_kept_turns, limit=limit)
    table = grouped(ses, ["policy", BUDGET], aggs, column_at_a_time=column_at_a_time)
    order = {p: i for i, p in enumerate(dict.fromkeys(table["policy"].to_list()))}
    given = dict(thresholds) if thresholds is not None else thresholds_of(list(order), window, reserve)
    thr = pl.col("policy").replace_strict(given, return_dtype=pl.Int64, default=window - reserve)
    return (table.with_columns(threshold=thr, proposable=pl.col(BUDGET).cast(pl.Int64) < thr,
                               _o=pl.col("policy").replace_strict(order, return_dtype=pl.Int64))
            .sort("_o", BUDGET).drop("_o"))


def table_aggs(columns: list[str], *, min_kept_turns: int = 2, limit: int | None = None) -> dict[str, pl.Expr]:
    """The figures of :func:`table_from_sessions`, by name, as aggregations of :func:`session_outcomes` rows
    with ``columns`` (the bootstrap groups the same ones by resample too: :func:`with_intervals`)."""
    at = pl.col("_reach")
    keeps = pl.col("min_kept_turns").is_null() | (pl.col("min_kept_turns") >= min_kept_turns)
    n_at = at.sum()
    aggs: dict[str, pl.Expr] = {
        "sessions": pl.len().cast(pl.UInt32),
        "at_trigger": n_at.cast(pl.UInt32),
        "compacted": (pl.col("n_compactions") > 0).sum().cast(pl.UInt32),
        "events": pl.col("n_compactions").sum().cast(pl.UInt64),
        "compactions_per_session": pl.col("n_compactions").filter(at).mean(),
        "zero_kept_events": pl.col("zero_kept_events").sum().cast(pl.UInt64),
        "keeps_k_share": (keeps & at).sum() / n_at,
        "summarized_p50": median(pl.col("summarized_tokens").filter(at)),
    }
    if limit is not None:
        aggs["within_limit_share"] = ((pl.col("max_kept").is_null() | (pl.col("max_kept") <= limit)) & at).sum() / n_at
    if "request_bytes" in columns:
        aggs["request_bytes_total"] = pl.col("request_bytes").sum().cast(pl.UInt64)
    billed = next((c for c in COSTS if c in columns), None)
    if billed is not None:
        cost = pl.col(billed).filter(at)
        aggs |= {"cost_p50": median(cost), "cost_p90": cost.quantile(0.9, "linear"),
                 "cost_total": dollars_total(billed), "cost_unpriced": pl.col(billed).is_null().sum().cast(pl.UInt32)}
    if RECORDED_COST in columns:
        aggs["recorded_cost_p50"] = median(pl.col(RECORDED_COST).filter(at))
    if ORPHAN_CALLS in columns and ORPHAN_RATE in columns:
        looked = _looked_at(columns)
        if looked is not None:
            aggs["orphan_rate"] = pl.col(ORPHAN_CALLS).sum() / looked.sum()
        compacted = pl.col("n_compactions") > 0
        aggs |= {"orphan_calls": pl.col(ORPHAN_CALLS).sum().cast(pl.UInt64),
                 "orphan_rate_p50": median(pl.col(ORPHAN_RATE).filter(compacted))}
        if "orphan_rate" not in aggs:  # no denominator column: the events' mean rate, each session weighed by events
            aggs["orphan_rate"] = ((pl.col(ORPHAN_RATE).fill_null(0) * pl.col("n_compactions")).sum()
                                   / pl.col("n_compactions").sum())
    if REFETCH in columns:
        aggs |= {"refetch_tokens": pl.col(REFETCH).sum().cast(pl.UInt64),
                 "refetch_tokens_p50": median(pl.col(REFETCH).filter(at))}
    return aggs


def _looked_at(columns: list[str]) -> pl.Expr | None:
    """The calls the orphan rate is a share of, per session, when the replay gives them."""
    for name in ("window_calls",):
        if name in columns:
            return pl.col(name)
    return None


#: How the choices break a tie between rows equal in every figure they compare: the smaller budget, then the
#: policy first by name (the order the policies were given in, or a table's rows, must not decide).
TIE_ORDER = (BUDGET, "policy")


def pareto_front(table: pl.DataFrame, *, cost: str = "cost_p50", loss: str = "orphan_rate") -> pl.DataFrame:
    """The Pareto front of ``table``'s proposable rows: no other row is as cheap and loses as little, and one of
    them strictly less. Sorted by cost; rows without both figures are left out. Of rows equal in both, the front
    keeps the smallest budget, then the first policy by name (:data:`TIE_ORDER`): not the one the table happens to
    list first, so that the order the policies were given in, or a resample's table, picks the same point.

    >>> t = pl.DataFrame({"policy": ["p"] * 4, "budget": [1, 2, 3, 4], "cost_p50": [1.0, 2.0, 3.0, 2.5],
    ...     "orphan_rate": [0.3, 0.1, 0.05, 0.2], "proposable": [True] * 4})
    >>> pareto_front(t)["budget"].to_list()
    [1, 2, 3]
    """
    pts = table.filter(pl.col("proposable") & pl.col(cost).is_not_null() & pl.col(loss).is_not_null())
    pts = pts.filter(pl.col(cost).is_not_nan() & pl.col(loss).is_not_nan()).sort(cost, loss, *TIE_ORDER)
    # Sorted by cost then loss: a row is on the front when its loss is below every cheaper row's.
    best_before = pl.col(loss).cum_min().shift(1)
    return pts.filter(best_before.is_null() | (pl.col(loss) < best_before))


def choose_from_outcomes(table: pl.DataFrame, rule: Rule, *, window: int, reserve: int) -> Choice:
    """Pick a (policy, budget) from an :func:`outcomes_table` by ``rule`` (``-k 2`` when none is set).

    >>> t = pl.DataFrame({"policy": ["libpanto"] * 3, "budget": [10, 20, 90], "at_trigger": [40] * 3,
    ...     "events": [80, 60, 0], "keeps_k_share": [0.5, 0.95, 1.0], "threshold": [84] * 3,
    ...     "proposable": [True, True, False]})
    >>> choose_from_outcomes(t, Rule(min_kept_turns=2), window=100, reserve=16).budget
    20
    """
    rule = rule.under(window)
    dec = Choice(None, rule, table, window=window, reserve=reserve)
    if table.is_empty() or int(cast(int, table["at_trigger"].max() or 0)) == 0:
        dec.warnings.append(f"no session reaches the trigger under a {format_tokens(window)} window (reserve "
                            f"{format_tokens(reserve)}): no budget changes anything; try a smaller --window")
        return dec
    policy = pool_policy(table, rule)
    pool = table if policy is None else table.filter(pl.col("policy") == policy)
    above = pool.filter(~pl.col("proposable"))
    if not above.is_empty():
        dec.reasons.append(f"{counted(above.height, 'row')} at or above the trigger are never proposed (from "
                           f"{format_tokens(cast(int, above['budget'].min()))}: the whole active window fits them, so they "
                           "never compact)")
    ok = pool.filter("proposable")
    met = pl.lit(True)
    if rule.min_kept_turns is not None:
        met = met & (pl.col("keeps_k_share") >= rule.coverage)
    if rule.max_kept_share is not None:
        met = met & (pl.col("within_limit_share") >= rule.coverage)
    meeting = ok.filter(met)
    if rule.max_orphan_rate is not None:
        if "orphan_rate" not in table.columns or "cost_p50" not in table.columns:
            missing = [c for c in ("cost_p50", "orphan_rate") if c not in table.columns]
            dec.warnings.append(f"--max-orphan-rate needs cost and loss figures; the replay has no {', '.join(missing)}")
            return dec
        front = pareto_front(meeting)
        fits = front.filter(pl.col("orphan_rate") <= rule.max_orphan_rate)
        if fits.is_empty():
            best = front.sort("orphan_rate").head(1)
            dec.reasons.append("no point of the frontier meets the orphan rate" + (
                f" (the lowest: {best['orphan_rate'][0]:.1%}, {point_name(best['policy'][0], best['budget'][0])})"
                if not best.is_empty() else ""))
        else:
            pick = fits.row(0, named=True)
            dec.policy, dec.budget = pick["policy"], int(pick[BUDGET])
            dec.reasons.append(f"{counted(front.height, 'point')} on the frontier; the cheapest with an orphan rate of at "
                               f"most {rule.max_orphan_rate:.1%}: {point_name(pick['policy'], dec.budget)}, "
                               f"median ${pick['cost_p50']:.4f} per session, orphan rate {pick['orphan_rate']:.1%}")
            dec.reasons.append("the frontier: " + "; ".join(
                f"{point_name(r['policy'], r['budget'])} (${r['cost_p50']:.4f}, {r['orphan_rate']:.1%})"
                for r in front.iter_rows(named=True)))
            dec.reasons += _neighbours(table, pick)
    else:
        if rule.max_kept_share is not None and rule.min_kept_turns is None:
            chosen = meeting.sort(*TIE_ORDER, descending=[True, False]).head(1)
        else:
            chosen = meeting.sort(*TIE_ORDER).head(1)
        if not chosen.is_empty():
            pick = chosen.row(0, named=True)
            dec.policy, dec.budget = pick["policy"], int(pick[BUDGET])
            dec.reasons.append(_rule_reason(ok, pick, rule))
            if "cost_p50" in table.columns or "orphan_rate" in table.columns:
                dec.reasons += _neighbours(table, pick)
        else:
            best = (ok.sort("keeps_k_share", *TIE_ORDER, descending=[True, False, False]).head(1)
                    if "keeps_k_share" in ok.columns else ok.head(0))
            dec.reasons.append("no proposable budget meets the rule" + (
                f" (best: {best['keeps_k_share'][0]:.1%} of sessions at {format_tokens(best['budget'][0])})"
                if not best.is_empty() and rule.min_kept_turns is not None else ""))
    if dec.policy is not None:
        dec.policy = str(dec.policy)
    if "cost_p50" in table.columns and table["cost_p50"].is_null().all():
        dec.warnings.append("no cost: no session's model has a price in the price table (give a price file, "
                            "--prices FILE)")
    if dec.budget is not None:
        row = table.filter((pl.col("policy") == dec.policy) & (pl.col(BUDGET) == dec.budget))
        dec.warnings += few_warnings(row)
        unpriced = int(cast(int, row["cost_unpriced"][0])) if "cost_unpriced" in row.columns else 0
        if unpriced and not table["cost_p50"].is_null().all():
            verb = "has" if unpriced == 1 else "have"
            dec.warnings.append(f"{counted(unpriced, 'session')} {verb} no price (their model is not in the price table): "
                                "the cost figures leave them out")
    else:
        dec.warnings += few_warnings(pool.filter("proposable"))
    return dec


def _rule_reason(ok: pl.DataFrame, pick: dict[str, Any], rule: Rule) -> str:
    text = (f"{point_name(pick['policy'], pick['budget'])}: "
            + (f"{pick['keeps_k_share']:.1%} of the {pick['at_trigger']} sessions that reach the trigger keep "
               f"{rule.min_kept_turns}+ whole turns at every compaction" if rule.min_kept_turns is not None else
               f"{pick['within_limit_share']:.1%} of the {pick['at_trigger']} sessions that reach the trigger stay "
               "within the limit at every compaction"))
    mine = ok.filter(pl.col("policy") == pick["policy"]).sort(BUDGET)
    smaller = mine.filter(pl.col(BUDGET) < pick[BUDGET]).tail(1)
    if rule.min_kept_turns is not None and not smaller.is_empty():
        text += (f"; at {format_tokens(smaller['budget'][0])}, the next smaller budget, only "
                 f"{smaller['keeps_k_share'][0]:.1%}")
    return text


def _neighbours(table: pl.DataFrame, pick: dict[str, Any]) -> list[str]:
    """What the next budgets down and up cost and lose against the chosen one (same policy)."""
    mine = table.filter(pl.col("policy") == pick["policy"]).sort(BUDGET)
    out: list[str] = []
    if not has_budget(pick["policy"]):
        return out  # one point: no budget to move down or up
    for what, rows in (("down", mine.filter(pl.col(BUDGET) < pick[BUDGET]).tail(1)),
                       ("up", mine.filter(pl.col(BUDGET) > pick[BUDGET]).head(1))):
        if rows.is_empty():
            out.append(f"no budget tried {'below' if what == 'down' else 'above'} {format_tokens(pick['budget'])}")
            continue
        r = rows.row(0, named=True)
        parts = []
        if "cost_p50" in r and r["cost_p50"] is not None and pick.get("cost_p50") is not None:
            parts.append(f"median cost per session {_signed(r['cost_p50'] - pick['cost_p50'], '$', 4)}")
        if "orphan_rate" in r and r["orphan_rate"] is not None and pick.get("orphan_rate") is not None:
            parts.append(f"orphan rate {_signed(100 * (r['orphan_rate'] - pick['orphan_rate']), '', 1)} points")
        if "refetch_tokens" in r and r["refetch_tokens"] is not None and pick.get("refetch_tokens") is not None:
            parts.append(f"re-fetch tokens {int(r['refetch_tokens']) - int(pick['refetch_tokens']):+,}")
        more = (r["compactions_per_session"] or 0) - (pick["compactions_per_session"] or 0)
        parts.append(f"compactions per session {_signed(more, '', 2)}")
        flag = "" if r["proposable"] else " (at or above the trigger: never proposed)"
        out.append(f"one step {what}, at {format_tokens(r['budget'])}{flag}: " + ", ".join(parts))
    return out


def _signed(x: float, unit: str, digits: int) -> str:
    return f"{'+' if x >= 0 else '-'}{unit}{abs(x):.{digits}f}"


def few_warnings(rows: pl.DataFrame) -> list[str]:
    """A warning for each figure in ``rows`` that rests on fewer than :data:`~.rule.FEW_SESSIONS` sessions or events."""
    out: list[str] = []
    if rows.is_empty():
        return out
    n = int(cast(int, rows["at_trigger"].min() or 0))
    if n < FEW_SESSIONS:
        verb = "reaches" if n == 1 else "reach"
        out.append(f"the figures rest on {counted(n, 'session')} that {verb} the trigger (fewer than {FEW_SESSIONS}): read them as "
                   "examples, not rates")
    ev = int(cast(int, rows["events"].min() or 0))
    if ev < FEW_SESSIONS:
        out.append(f"as few as {counted(ev, 'compaction event')} behind a row (fewer than {FEW_SESSIONS})")
    return out


def pool_policy(table: pl.DataFrame, rule: Rule) -> str | None:
    """The policy whose rows the rule chooses among: ``rule.policy``; else libpanto's where it was replayed,
    unless the frontier rule looks at every policy (None: every policy)."""
    if rule.policy is not None:
        return rule.policy
    if rule.max_orphan_rate is not None:
        return None
    policies = table["policy"].unique(maintain_order=True).to_list()
    return next((p for p in policies if p.split(":")[0] == "libpanto"), None)


#: The figures of the outcomes table the bootstrap gives an interval (``*_lo``, ``*_hi``): every one but the
#: counts of the corpus itself (sessions, unpriced sessions) and the trigger.
INTERVAL_FIGURES = ("at_trigger", "compacted", "events", "compactions_per_session", "zero_kept_events", "keeps_k_share",
                    "within_limit_share", "summarized_p50", "request_bytes_total", "cost_p50", "cost_p90", "cost_total",
                    "recorded_cost_p50", "orphan_rate", "orphan_calls", "orphan_rate_p50", "refetch_tokens",
                    "refetch_tokens_p50")


def chosen_by_replicate(tables: pl.DataFrame, rule: Rule, policy: str | None) -> pl.DataFrame:
    """The budget ``rule`` chooses in each resample's table (:func:`choose_from_outcomes`'s rule, as one
    query over every replicate): one row per replicate where one meets it, ``_replicate`` and ``budget``.

    The frontier rule's pick, the cheapest point of the front whose orphan rate is at most R, is the
    cheapest row (then the least loss) of those meeting R: a cheaper row losing as little would meet R too.
    """
    share = [c for c in ("keeps_k_share", "within_limit_share", "cost_p50", "orphan_rate") if c in tables.columns]
    lf = tables.lazy().with_columns(pl.col(share).fill_nan(None)).filter(pl.col("proposable"))
    if policy is not None:
        lf = lf.filter(pl.col("policy") == policy)
    if rule.min_kept_turns is not None:
        lf = lf.filter(pl.col("keeps_k_share") >= rule.coverage)
    if rule.max_kept_share is not None:
        lf = lf.filter(pl.col("within_limit_share") >= rule.coverage)
    if rule.max_orphan_rate is not None:
        if not {"cost_p50", "orphan_rate"} <= set(tables.columns):
            return pl.DataFrame(schema={"_replicate": pl.UInt32, BUDGET: pl.Int64})
        pick = (lf.filter(pl.col("cost_p50").is_not_null() & (pl.col("orphan_rate") <= rule.max_orphan_rate))
                .sort("_replicate", "cost_p50", "orphan_rate", *TIE_ORDER).group_by("_replicate")
                .agg(pl.col(BUDGET).first()))
    elif rule.max_kept_share is not None and rule.min_kept_turns is None:
        pick = lf.group_by("_replicate").agg(pl.col(BUDGET).max())
    else:
        pick = lf.group_by("_replicate").agg(pl.col(BUDGET).min())
    return pick.select("_replicate", BUDGET).sort("_replicate").collect()


def with_intervals(choice: Choice, ses: pl.DataFrame | pl.LazyFrame, *, resamples: int = RESAMPLES,
                   seed: int = SEED) -> Choice:
    """``choice`` with the seeded bootstrap over the sessions of ``ses`` (:func:`session_outcomes` rows, lazy
    or not, of one corpus or its buckets in any order): each figure's ``*_lo`` and ``*_hi`` in its table and
    the chosen budget's :class:`~.bootstrap.BudgetInterval`. Only the sessions that reach the trigger (under
    some policy: ``_reaching``, computed with the rows) are resampled: every per-session figure is over them,
    and they are the sessions behind it. Nothing here is computed over every session's rows but that filter
    (a window over the session ids of a million sessions' rows held 170 MiB)."""
    rule, table = choice.rule, choice.table
    if resamples < 1:
        return choice
    lf = ses.lazy()
    columns = lf.collect_schema().names()
    ident = HASH if HASH in columns else SESSION  # the session ids are not read where the rows carry the hash
    reaching = lf.filter(pl.col("_reaching"))
    n = session_count(reaching) if "_reaching" in columns else 0
    if n < MIN_SESSIONS or table.is_empty():
        choice.interval = BudgetInterval(None, None, n, 0)
        return choice
    aggs = table_aggs(columns, min_kept_turns=rule.min_kept_turns or 2, limit=rule.limit)
    figures = [f for f in INTERVAL_FIGURES if f in aggs]
    keys = ["policy", BUDGET]
    reps = replicate_tables(reaching.select(ident, *keys, *{c for c in columns if c not in (SESSION, HASH, *keys)}),
                            keys, {f: aggs[f] for f in figures}, resamples=resamples, seed=seed)
    reps = reps.join(table.select(*keys, "proposable"), on=keys, how="left")
    choice.table = table.join(intervals(reps, keys, figures), on=keys, how="left", maintain_order="left")
    picked = chosen_by_replicate(reps, rule, pool_policy(table, rule))
    choice.interval = budget_interval(picked, sessions=n, resamples=resamples)
    return choice


def choose_from_replay(result: Replay, rule: Rule | None = None, *,
                       thresholds: Mapping[str, int] | None = None, resamples: int = RESAMPLES,
                       seed: int = SEED) -> Choice:
    """:func:`choose_from_outcomes` on the :func:`outcomes_table` of a replay (with or without a ``policy`` column),
    :func:`with_intervals` (``resamples`` of the sessions, seeded by ``seed``; 0: none).

    Examples
    --------
    >>> import panto_analytics as pa
    >>> from panto_analytics import examples
    >>> r = pa.replay(examples.messages(), [500, 1_000, 3_000, 30_000], window=8_000, reserve=4_000, summary_tokens=500)
    >>> d = choose_from_replay(r, Rule(min_kept_turns=1, coverage=1.0))
    >>> d.budget, d.table.filter(~pl.col("proposable"))["budget"].to_list()
    (3000, [30000])
    """
    rule = (rule or Rule()).under(result.window)
    ses = session_outcomes(result.events, result.sessions)
    table = table_from_sessions(ses, window=result.window, reserve=result.reserve, thresholds=thresholds,
                                min_kept_turns=rule.min_kept_turns or 2, limit=rule.limit)
    dec = with_intervals(choose_from_outcomes(table, rule, window=result.window, reserve=result.reserve), ses,
                         resamples=resamples, seed=seed)
    dec.reasons.append(f"replayed under a {format_tokens(result.window)} window (summary "
                       f"{format_tokens(result.summary_tokens)} tokens, {result.summary_source}); figures per session "
                       "are over the sessions that reach the trigger")
    return dec


def replay_outcomes(messages: pl.DataFrame, budgets: Any, *, window: int, reserve: int,
                    summary_tokens: int | None = None, policy: Any = None, prices: Any = True,
                    summarizer: str | None = None, horizon: int | None = None, loss_events: bool = False) -> Replay:
    """A replay with what the decision weighs: every call billed (``prices``: True for genai-prices' offline
    table, a LiteLLM file, or None for no bill) and the loss of every compaction (orphan references among
    the next ``horizon`` tool calls, :func:`panto_analytics.loss`) on the session rows; ``loss_events``: the
    events too are the loss's (its per-event rows, with the loss columns; what a dataset's task keeps,
    :func:`panto_analytics.dataset._replay.replay_dataset`), not the replay's.

    Examples
    --------
    >>> from panto_analytics import examples
    >>> r = replay_outcomes(examples.messages(), [1_000], window=8_000, reserve=4_000, summary_tokens=500, prices=None)
    >>> {"orphan_rate", "window_calls", "refetch_tokens"} <= set(r.sessions.columns)
    True
    """
    from ...outcomes.orphan_loss import DEFAULT_HORIZON, loss
    from ...policy import replay

    result = replay(messages, budgets, window=window, reserve=reserve, summary_tokens=summary_tokens, policy=policy,
                    prices=prices, summarizer=summarizer)
    lost = loss(messages, result, horizon=horizon or DEFAULT_HORIZON)
    return dataclasses.replace(result, sessions=lost.sessions, events=lost.events if loss_events else result.events)


def recorded_points(messages: pl.DataFrame, compactions: pl.DataFrame, sessions: pl.DataFrame,
                    replay_sessions: pl.DataFrame | None = None, *, horizon: int | None = None,
                    budget: int | None = None, resamples: int = RESAMPLES, seed: int = SEED) -> pl.DataFrame:
    """The agents' own points on the frontier, each beside the replayed points over the same sessions.

    Per agent (``source_format``, by name) that recorded compactions, its sessions with a recorded compaction (those
    the replay has, when ``replay_sessions`` is given) are the sessions of every row of that agent: the
    recorded row (``point`` ``"recorded"``: the pooled orphan rate at its recorded compactions and, where the
    replay billed the recording, ``recorded_cost_usd``, the median recorded cost) and, from
    ``replay_sessions``, one row per replayed policy (``point``: the policy) at ``budget`` (each policy's
    own budget where it has just one; every budget when ``budget`` is None): its pooled orphan rate and
    median cost over the same sessions. Like is compared with like: no row is over sessions another row of
    its agent leaves out. Columns: ``agent``, ``point``, ``budget``, ``sessions``, ``compactions``,
    ``orphan_rate``, ``cost_p50`` and, from the seeded bootstrap over those sessions (``resamples``, ``seed``;
    not with fewer than 3 sessions), ``orphan_rate_lo``/``_hi`` and ``cost_p50_lo``/``_hi``.

    >>> import polars as pl
    >>> from panto_analytics.frame.schema import COMPACTIONS_SCHEMA, MESSAGE_SCHEMA
    >>> recorded_points(pl.DataFrame(schema=MESSAGE_SCHEMA), pl.DataFrame(schema=COMPACTIONS_SCHEMA),
    ...                 pl.DataFrame({"session_id": [], "source_format": []})).height
    0
    """
    return points_of(recorded_loss(messages, compactions, sessions, horizon=horizon), replay_sessions,
                     budget=budget, resamples=resamples, seed=seed)


def recorded_loss(messages: pl.DataFrame, compactions: pl.DataFrame, sessions: pl.DataFrame, *,
                  horizon: int | None = None) -> pl.DataFrame | None:
    """What :func:`recorded_points` reads of the recordings: one row per recorded compaction (``session_id``,
    ``agent``, ``window_calls``, ``orphan_calls``); None where none was recorded. Rows of disjoint sets of
    sessions concatenate (a dataset's buckets, in bucket order: :mod:`panto_analytics.dataset._report`)."""
    from ...frame.tool_targets import references
    from ...outcomes.orphan_loss import DEFAULT_HORIZON, cut_loss, recorded_cuts

    if compactions.is_empty():
        return None
    cuts = recorded_cuts(compactions, sessions)
    return cut_loss(references(messages), cuts, horizon=horizon or DEFAULT_HORIZON).lazy().select(
        pl.col(SESSION).cast(pl.String), pl.col("source_format").cast(pl.String).alias("agent"), "window_calls",
        "orphan_calls").collect()


def points_of(lost: pl.DataFrame | None, replay_sessions: pl.DataFrame | None = None, *, budget: int | None = None,
              resamples: int = RESAMPLES, seed: int = SEED) -> pl.DataFrame:
    """:func:`recorded_points` from :func:`recorded_loss`'s rows (None: no recorded compaction) and the replay's
    session rows (those of the sessions in ``lost`` suffice)."""
    schema = {"agent": pl.String, "point": pl.String, BUDGET: pl.Int64, "sessions": pl.UInt32,
              "compactions": pl.UInt32, "orphan_rate": pl.Float64, "cost_p50": pl.Float64}
    if lost is None:
        return pl.DataFrame(schema=schema)
    replayed = None if replay_sessions is None else _with_policy(replay_sessions).with_columns(
        pl.col(SESSION).cast(pl.String), pl.col("policy").cast(pl.String))
    if replayed is not None:  # the agent's sessions the replay has: the sessions of every row of that agent
        lost = lost.join(replayed.select(pl.col(SESSION).unique()), on=SESSION, how="semi")
    # One row per (agent, point, budget, session): what each session contributes to each point.
    per_session = [lost.group_by("agent", SESSION, maintain_order=True).agg(
        point=pl.lit("recorded"), budget=pl.lit(None, pl.Int64), compactions=pl.len(),
        orphan_calls=pl.col("orphan_calls").sum(), window_calls=pl.col("window_calls").sum())]
    if replayed is not None:
        mine = replayed.join(lost.select(SESSION, "agent").unique(), on=SESSION)
        if RECORDED_COST in mine.columns:
            recorded_cost = mine.group_by(SESSION).agg(cost=pl.col(RECORDED_COST).first())
            per_session[0] = per_session[0].join(recorded_cost, on=SESSION, how="left")
        cost = next((c for c in COSTS if c in mine.columns), None)
        at = pl.col(BUDGET) == (budget if budget is not None else -1)
        pick = at | (~at.any().over("policy") & (pl.col(BUDGET).n_unique().over("policy") == 1))
        if "window_calls" in mine.columns and ORPHAN_CALLS in mine.columns:
            per_session.append(mine.filter(pick if budget is not None else pl.lit(True)).select(
                "agent", SESSION, point="policy", budget=pl.col(BUDGET).cast(pl.Int64),
                compactions="n_compactions", orphan_calls=ORPHAN_CALLS, window_calls="window_calls",
                cost=pl.col(cost) if cost is not None else pl.lit(None, pl.Float64)))
    columns = {"agent": pl.String, SESSION: pl.String, "point": pl.String, BUDGET: pl.Int64,
               "compactions": pl.UInt32, "orphan_calls": pl.UInt64, "window_calls": pl.UInt64, "cost": pl.Float64}
    rows = pl.concat([r.select(pl.col(c).cast(t) if c in r.columns else pl.lit(None, t).alias(c)
                               for c, t in columns.items()) for r in per_session])
    keys = ["agent", "point", "_b"]
    aggs = {"orphan_rate": pl.col("orphan_calls").sum() / pl.col("window_calls").sum(),
            "cost_p50": median("cost")}
    rows = rows.with_columns(_b=pl.col(BUDGET).fill_null(-1))
    full = rows.group_by(keys, maintain_order=True).agg(
        pl.col(BUDGET).first(), sessions=pl.col(SESSION).n_unique(), compactions=pl.col("compactions").sum(),
        **aggs).select(*keys, *[pl.col(c).cast(t) for c, t in schema.items() if c not in ("agent", "point")])
    if resamples > 0 and rows[SESSION].n_unique() >= MIN_SESSIONS:
        reps = replicate_tables(rows, keys, aggs, resamples=resamples, seed=seed)
        full = full.join(intervals(reps, keys, list(aggs)), on=keys, how="left", maintain_order="left")
    # Agents by name (the order their cuts came in is the files' in memory, the buckets' on a dataset); within
    # one, the recorded point, then the replayed ones as the replay lists its policies and budgets.
    return (full.with_columns(_r=pl.col("point") != "recorded")
            .sort("agent", "_r", maintain_order=True).drop("_r", "_b"))
