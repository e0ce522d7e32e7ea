"""A budget from end-of-session splits: the :class:`~.rule.Rule` judged on one split per session and budget.

Two rules, alone or together, each over the sessions that have at least one
turn (a session without turns keeps nothing at any budget):

``min_kept_turns=K`` with ``coverage=P``
    the *smallest* budget at which at least P of sessions keep K or more
    whole turns verbatim. A session with fewer than K turns counts when it
    keeps all of them: no budget can do more for it.
``max_kept_share=S`` with ``context_window=W``
    the *largest* budget at which the kept suffix stays within ``S * W``
    tokens for at least P of sessions.

Both rule are monotone in the budget (a larger budget never keeps
fewer turns or tokens), so the budgets meeting the first rule are those from
some budget up, and those meeting the second are those up to some budget.
With both rules, the smallest budget meeting both is chosen: it keeps
enough turns and leaves the most room.

>>> import polars as pl
>>> s = pl.DataFrame({"session_id": ["a", "a", "b", "b"], "budget": [10, 20] * 2,
...     "kept_turns": [1, 2, 2, 2], "kept_tokens": [9, 19, 8, 8], "n_turns": [3, 3, 2, 2],
...     "summarized_tokens": [21, 11, 0, 0], "active_tokens": [30, 30, 8, 8],
...     "noop": [False, False, True, True], "capped": [False] * 4})
>>> recommend(s, Rule(min_kept_turns=2, coverage=1.0)).budget
20
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, cast

import polars as pl

from ...frame.schema import BUDGET, SESSION
from ...phrases import counted
from ...policy import sweep
from ...policy.budget_sweep import sweep_aggs
from ..formatting import format_share, format_tokens
from .bootstrap import HASH, MIN_SESSIONS, RESAMPLES, SEED, BudgetInterval, budget_interval, intervals, replicate_tables, session_count
from .choice import Choice
from .rule import FEW_SESSIONS, Rule

__all__ = [
    "SPLIT_FIGURES", "WINDOW_SHARE_WARNING", "Outcomes", "choose_from_coverage", "coverage_aggs", "coverage_table",
    "outcome_warnings", "outcomes_at", "recommend", "window_warnings", "with_split_intervals",
]


def coverage_table(splits: pl.DataFrame | pl.LazyFrame, rule: Rule) -> pl.DataFrame:
    """The sweep table (one row per budget) plus, for each rule set, its coverage and verdict.

    Adds ``sessions_with_turns``; for ``min_kept_turns``: ``keeps_k_share``,
    ``meets_min_kept_turns`` and ``fewer_than_k_turns`` (sessions that
    count when they keep all their turns); for ``max_kept_share``:
    ``within_limit_share`` and ``meets_max_kept_share``. Shares are over
    sessions with turns.
    """
    lf = splits.lazy()
    rules = lf.group_by(BUDGET).agg(**coverage_aggs(rule)).with_columns(_verdicts(rule))
    return sweep(lf).join(rules, on=BUDGET, how="left").sort(BUDGET).collect()


def coverage_aggs(rule: Rule) -> dict[str, pl.Expr]:
    """The rule's figures of :func:`coverage_table`, by name, as aggregations of split rows."""
    with_turns = pl.col("n_turns") > 0
    n = with_turns.sum()
    aggs = {"sessions_with_turns": n.cast(pl.UInt32)}
    if rule.min_kept_turns is not None:
        aggs["fewer_than_k_turns"] = (with_turns & (pl.col("n_turns") < rule.min_kept_turns)).sum().cast(pl.UInt32)
        wanted = pl.min_horizontal(pl.col("n_turns"), pl.lit(rule.min_kept_turns, pl.UInt32))
        aggs["keeps_k_share"] = ((pl.col("kept_turns") >= wanted) & with_turns).sum() / n.clip(1)
    if rule.max_kept_share is not None:
        aggs["within_limit_share"] = ((pl.col("kept_tokens") <= rule.limit) & with_turns).sum() / n.clip(1)
    return aggs


def _verdicts(rule: Rule) -> list[pl.Expr]:
    """Whether each budget meets each rule set, from the shares."""
    out = []
    if rule.min_kept_turns is not None:
        out.append((pl.col("keeps_k_share") >= rule.coverage).alias("meets_min_kept_turns"))
    if rule.max_kept_share is not None:
        out.append((pl.col("within_limit_share") >= rule.coverage).alias("meets_max_kept_share"))
    return out


#: The figures of the coverage table the bootstrap gives an interval: every one but the counts of the corpus.
SPLIT_FIGURES = ("noop_share", "zero_kept_share", "capped_share", "kept_tokens_p10", "kept_tokens_p50",
                 "kept_tokens_p90", "kept_turns_p50", "summarized_share", "keeps_k_share", "within_limit_share")


def with_split_intervals(choice: Choice, splits: pl.DataFrame | pl.LazyFrame, *, resamples: int = RESAMPLES,
                         seed: int = SEED) -> Choice:
    """``choice`` (of :func:`choose_from_coverage`) with the seeded bootstrap over the sessions of ``splits``
    (:mod:`.bootstrap`): each figure's ``*_lo``/``*_hi`` in its table, the chosen budget's interval. Every
    session is resampled (the sweep's figures are over all of them); the sessions behind the rule, and the
    count the interval names, are those with turns. ``splits`` may carry the session hash
    (:data:`~.bootstrap.HASH`) in place of the ids (a dataset's, written by its tasks): the same intervals."""
    rule, table = choice.rule, choice.table
    if resamples < 1:
        return choice
    lf = splits.lazy()
    ident = HASH if HASH in lf.collect_schema().names() else SESSION  # rows with the hash: no session ids read
    n = session_count(lf.filter(pl.col("n_turns") > 0))
    if n < MIN_SESSIONS or table.is_empty():
        choice.interval = BudgetInterval(None, None, n, 0)
        return choice
    aggs = {**sweep_aggs(), **coverage_aggs(rule)}
    figures = [f for f in SPLIT_FIGURES if f in aggs]
    reps = replicate_tables(lf.select(ident, BUDGET, "kept_turns", "kept_tokens", "n_turns", "noop", "capped",
                                      "summarized_tokens", "active_tokens"),
                            [BUDGET], {f: aggs[f] for f in figures}, resamples=resamples, seed=seed)
    choice.table = table.join(intervals(reps, [BUDGET], figures), on=BUDGET, how="left", maintain_order="left")
    choice.interval = budget_interval(_chosen_by_replicate(reps, rule), sessions=n, resamples=resamples)
    return choice


def _chosen_by_replicate(reps: pl.DataFrame, rule: Rule) -> pl.DataFrame:
    """The budget :func:`choose_from_coverage`'s rule picks in each resample (one query over all of them):
    the smallest meeting ``-k``, the largest meeting ``-s``, with both the smallest meeting both when it is
    at most the largest meeting ``-s``."""
    lf = reps.lazy().with_columns(_verdicts(rule))
    lo = hi = None
    if rule.min_kept_turns is not None:
        lo = lf.filter("meets_min_kept_turns").group_by("_replicate").agg(lo=pl.col(BUDGET).min())
    if rule.max_kept_share is not None:
        hi = lf.filter("meets_max_kept_share").group_by("_replicate").agg(hi=pl.col(BUDGET).max())
    if lo is not None and hi is not None:
        pick = lo.join(hi, on="_replicate").filter(pl.col("lo") <= pl.col("hi")).select("_replicate", budget="lo")
    else:
        pick = lo.rename({"lo": BUDGET}) if lo is not None else cast(pl.LazyFrame, hi).rename({"hi": BUDGET})
    return pick.select("_replicate", BUDGET).sort("_replicate").collect()


def recommend(splits: pl.DataFrame | pl.LazyFrame, rule: Rule | None = None, *,
              turns: pl.DataFrame | pl.LazyFrame | None = None,
              windows: Iterable[int | None] | None = None, resamples: int = RESAMPLES, seed: int = SEED) -> Choice:
    """Pick a budget from those in ``splits`` by ``rule`` (the default rule when None), with the seeded
    bootstrap's intervals (``resamples`` of the sessions, seeded by ``seed``; 0: none;
    :func:`with_split_intervals`).

    The figures are end-of-session splits (one split per session, taken where
    its recording ends); the reasons say so. Pass ``turns`` (from
    :func:`panto_analytics.turns`) to have the warning about sessions that
    keep nothing name their last turn's size, and ``windows`` (the sessions
    table's ``context_window``) to be warned when the budget takes more than
    :data:`WINDOW_SHARE_WARNING` of the smallest known window.

    Parameters
    ----------
    splits
        What :func:`~panto_analytics.splits` returns, at several budgets.
    rule
        The rule (:class:`Rule`); None: the default one.
    turns
        The turns of the same messages, for the zero-kept warning.
    windows
        Context windows of the sessions (None where unknown), for the window-share warning.

    Returns
    -------
    Choice
        ``budget`` (None when no budget meets the rule), the per-budget ``table``, reasons and warnings.

    Examples
    --------
    >>> import panto_analytics as pa
    >>> from panto_analytics import examples
    >>> pa.recommend(pa.splits(examples.messages(), [500, 2_000, 5_000])).budget
    5000
    """
    rule = (rule or Rule()).on_splits()
    chosen = choose_from_coverage(coverage_table(splits, rule), rule,
                                  outcomes=lambda budget: outcome_warnings(splits, budget, turns=turns), windows=windows)
    return with_split_intervals(chosen, splits, resamples=resamples, seed=seed)


def choose_from_coverage(table: pl.DataFrame, rule: Rule, *, outcomes: Callable[[int], list[str]] | None = None,
                         windows: Iterable[int | None] | None = None) -> Choice:
    """Pick a budget from a :func:`coverage_table` (however it was computed) by ``rule``.

    ``outcomes(budget)`` gives the warnings about the chosen budget's
    pathological sessions (:func:`outcome_warnings`); the streaming path
    computes them bucket by bucket.

    >>> import polars as pl
    >>> s = pl.DataFrame({"session_id": ["a"], "budget": [10], "kept_turns": [2], "kept_tokens": [9], "n_turns": [2],
    ...     "summarized_tokens": [0], "active_tokens": [9], "noop": [True], "capped": [False]})
    >>> c = Rule(min_kept_turns=2).or_default()
    >>> choose_from_coverage(coverage_table(s, c), c).budget
    10
    """
    rec = Choice(None, rule, table)
    if table.is_empty() or table["sessions_with_turns"].max() == 0:
        rec.warnings.append("no session has a turn: there is nothing to choose a budget for")
        return rec
    budgets = table[BUDGET]
    lo: int | None = None
    hi: int | None = None
    if rule.min_kept_turns is not None:
        lo = cast("int | None", table.filter("meets_min_kept_turns")[BUDGET].min())
        rec.reasons.append(_min_turns_reason(table, rule, lo))
    if rule.max_kept_share is not None:
        hi = cast("int | None", table.filter("meets_max_kept_share")[BUDGET].max())
        rec.reasons.append(_max_share_reason(table, rule, hi))
    both = rule.min_kept_turns is not None and rule.max_kept_share is not None
    if both:
        if lo is not None and hi is not None and lo <= hi:
            rec.budget = lo
            rec.reasons.append(f"budgets from {format_tokens(lo)} to {format_tokens(hi)} meet both rules; the "
                               "smallest is chosen: it keeps enough turns and leaves the most room")
        elif lo is not None and hi is not None:
            rec.warnings.append(f"the rules conflict: keeping enough turns needs at least {format_tokens(lo)}, "
                                f"but the kept-share limit allows at most {format_tokens(hi)}")
    else:
        rec.budget = lo if lo is not None else hi
    if rec.budget is not None:
        rec.budget = int(rec.budget)
        rec.warnings += _edge_warnings(rec.budget, budgets, rule, lo, hi)
        if outcomes is not None:
            rec.warnings += outcomes(rec.budget)
    rec.reasons.append("these are end-of-session splits: each session split once, where its recording ends; "
                       "`--window` replays compaction at the moments an agent would compact")
    if rec.budget is not None:
        rec.warnings += window_warnings(rec.budget, windows)
    with_turns = int(cast(int, table["sessions_with_turns"].max() or 0))
    if 0 < with_turns < FEW_SESSIONS:
        rec.warnings.append(f"the figures rest on {counted(with_turns, 'session')} with turns (fewer than "
                            f"{FEW_SESSIONS}): read them as examples, not rates")
    no_turns = int(table["sessions"][0] - table["sessions_with_turns"][0])
    if no_turns:
        rec.reasons.append(f"{counted(no_turns, 'session')} without turns {'is' if no_turns == 1 else 'are'} left out: "
                           "they keep nothing at any budget")
    return rec


def _decided_at(table: pl.DataFrame, share: str, budget: int | None, step: int,
                ) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The rows a rule's reason quotes: the row of the ``budget`` it chose and the next budget tried ``step``
    away (the one that fails it; None past the grid's edge), or, where no budget meets the rule (``budget`` None),
    the row with the highest ``share`` (the smallest budget among equals) and None."""
    if budget is None:
        return table.sort(share, BUDGET, descending=[True, False]).row(0, named=True), None
    at = table[BUDGET].to_list().index(budget)
    return table.row(at, named=True), table.row(at + step, named=True) if 0 <= at + step < len(table) else None


def _next_tried(row: dict[str, Any] | None, share: str, side: str, verb: str = "") -> str:
    """The clause on the next budget tried on ``side`` (``smaller`` or ``larger``) of the chosen one, the first that
    fails the rule: its ``share``, or, past the grid's edge, that the chosen one is the smallest or largest tried.

    >>> _next_tried({"budget": 20_000, "s": 0.5}, "s", "smaller", " do"), _next_tried(None, "s", "larger")
    ('; at 20k, the next smaller budget tried, only 50.0% do', '; it is the largest budget tried')
    """
    if row is None:
        return f"; it is the {side[:-1]}st budget tried"
    return f"; at {format_tokens(row['budget'])}, the next {side} budget tried, only {row[share]:.1%}{verb}"


def _min_turns_reason(table: pl.DataFrame, c: Rule, lo: int | None) -> str:
    k = c.min_kept_turns
    assert k is not None  # only called when the min_kept_turns rule is set
    what = f"keep {k}+ whole turn{'s' if k > 1 else ''}" + " (or all of theirs)"
    row, prev = _decided_at(table, "keeps_k_share", lo, -1)
    if lo is None:
        return (f"no budget tried is enough: at most {row['keeps_k_share']:.1%} of sessions {what}, "
                f"at {format_tokens(row['budget'])}; try larger budgets")
    text = (f"at {format_tokens(lo)}, {row['keeps_k_share']:.1%} of the {row['sessions_with_turns']} sessions with turns "
            f"{what}, at least the {c.coverage:.0%} asked for")
    text += _next_tried(prev, "keeps_k_share", "smaller", " do")
    if row["fewer_than_k_turns"]:
        text += (f" ({row['fewer_than_k_turns']} of them have fewer than {k} turns and count when they keep them all)")
    return text


def _max_share_reason(table: pl.DataFrame, c: Rule, hi: int | None) -> str:
    limit = format_tokens(c.limit)
    row, nxt = _decided_at(table, "within_limit_share", hi, +1)
    if hi is None:
        return (f"no budget tried keeps the suffix within {limit} tokens for {c.coverage:.0%} of sessions (best: "
                f"{row['within_limit_share']:.1%} at {format_tokens(row['budget'])}); try smaller budgets")
    text = (f"at {format_tokens(hi)}, the kept suffix stays within {limit} tokens for "
            f"{row['within_limit_share']:.1%} of sessions, at least the {c.coverage:.0%} asked for")
    text += _next_tried(nxt, "within_limit_share", "larger")
    return text


def _edge_warnings(budget: int, budgets: pl.Series, c: Rule, lo: int | None, hi: int | None) -> list[str]:
    """A choice at the edge of the grid may be an artefact of the budgets tried."""
    out = []
    if lo is not None and budget == lo and lo == budgets.min() and lo > 0:
        out.append(f"{format_tokens(budget)} is the smallest budget tried; a smaller one may meet the rule too")
    if c.min_kept_turns is None and hi is not None and budget == hi == budgets.max():
        out.append(f"{format_tokens(budget)} is the largest budget tried; a larger one may meet the rule too")
    return out


@dataclass
class Outcomes:
    """The pathological sessions at one budget: those that keep nothing (the first few, largest last turn
    first) and how many are capped; facts of disjoint sets of sessions add up (:meth:`merge`)."""

    budget: int
    #: ``session_id`` (and ``last_turn_tokens`` when turns were given) of the first sessions that keep nothing.
    examples: pl.DataFrame
    zero: int
    with_turns: int
    capped: int

    @classmethod
    def merge(cls, parts: list[Outcomes], examples: int = 3) -> Outcomes:
        """The facts of all ``parts`` together (each computed with turns, so examples are ranked alike)."""
        shown = pl.concat([p.examples for p in parts])
        return cls(parts[0].budget, _ranked(shown).head(examples), sum(p.zero for p in parts),
                   sum(p.with_turns for p in parts), sum(p.capped for p in parts))

    def warnings(self, examples: int = 3) -> list[str]:
        """The warnings :func:`outcome_warnings` gives."""
        out = []
        if self.zero:
            if "last_turn_tokens" in self.examples.columns:
                shown = ", ".join(f"{sid} ({format_tokens(t)} tokens)" for sid, t in self.examples.head(examples).iter_rows())
            else:
                shown = ", ".join(str(s) for s in self.examples[SESSION].head(examples))
            more = f" and {self.zero - examples} more" if self.zero > examples else ""
            out.append(f"{self.zero} of {self.with_turns} sessions ({self.zero / self.with_turns:.1%}) keep "
                       f"nothing verbatim at {format_tokens(self.budget)}: their last turn alone exceeds the budget, so "
                       f"libpanto summarizes everything (e.g. {shown}{more})")
        if self.capped:
            out.append(f"{counted(self.capped, 'session')} {'has' if self.capped == 1 else 'have'} more than 4096 "
                       "turns: libpanto records only the first "
                       "4096 turn starts, so everything after them counts as one long last turn")
        return out


def _ranked(zero: pl.DataFrame) -> pl.DataFrame:
    """Sessions that keep nothing, largest last turn first, ties by session id (so every path shows the same)."""
    if "last_turn_tokens" not in zero.columns:
        return zero
    return zero.sort("last_turn_tokens", SESSION, descending=[True, False], nulls_last=True)


def outcomes_at(splits: pl.DataFrame | pl.LazyFrame, budget: int, *,
                turns: pl.DataFrame | pl.LazyFrame | None = None, examples: int = 3) -> Outcomes:
    """The :class:`Outcomes` of ``splits`` at ``budget``."""
    at = splits.lazy().filter(pl.col(BUDGET) == budget)
    zero_lf = at.filter((pl.col("kept_turns") == 0) & (pl.col("n_turns") > 0)).select(pl.col(SESSION).cast(pl.String))
    if turns is not None:
        last = (turns.lazy().group_by(SESSION).agg(last_turn_tokens=pl.col("tokens").sort_by("turn").last())
                .with_columns(pl.col(SESSION).cast(pl.String)))
        zero_lf = zero_lf.join(last, on=SESSION, how="left")
    counts_lf = at.select(with_turns=(pl.col("n_turns") > 0).sum(), capped=pl.col("capped").sum())
    counts = counts_lf.collect().row(0, named=True)
    zero = zero_lf.collect()
    return Outcomes(budget, _ranked(zero).head(examples), zero.height, int(counts["with_turns"] or 0),
                    int(counts["capped"] or 0))


def outcome_warnings(splits: pl.DataFrame | pl.LazyFrame, budget: int, *,
                     turns: pl.DataFrame | pl.LazyFrame | None = None, examples: int = 3) -> list[str]:
    """Pathological outcomes at ``budget``: sessions that keep nothing, capped sessions.

    A session keeps nothing verbatim when its newest turn alone is larger
    than the budget; libpanto then summarizes the whole active window.
    """
    return outcomes_at(splits, budget, turns=turns, examples=examples).warnings(examples)


#: A budget above this share of the model's context window leaves little room after a compaction.
WINDOW_SHARE_WARNING = 0.25


def window_warnings(budget: int, windows: Iterable[int | None] | None) -> list[str]:
    """A warning when ``budget`` exceeds :data:`WINDOW_SHARE_WARNING` of the smallest known window.

    >>> window_warnings(115_000, [200_000, None])
    ['115k is 57% of the smallest known context window (200k): after a compaction, the kept suffix alone would fill more than 25% of it']
    >>> window_warnings(20_000, [200_000])
    []
    >>> window_warnings(2**64 - 1, [32_000])[0].split(":")[0]
    '18446744074G is more than 1,000 times the smallest known context window (32k)'

    """
    known = [w for w in (windows or ()) if w]
    if not known:
        return []
    smallest = min(known)
    if budget <= WINDOW_SHARE_WARNING * smallest:
        return []
    share = budget / smallest  # "57% of" it, or "12 times" it
    how = format_share(share) + (" of" if share < 10 else "")
    return [f"{format_tokens(budget)} is {how} the smallest known context window "
            f"({format_tokens(smallest)}): after a compaction, the kept suffix alone would fill more than "
            f"{WINDOW_SHARE_WARNING:.0%} of it"]
