"""What a rule chose: :class:`Choice`, the one result type, from end-of-session splits or from a replay.

Without a window (``window`` None) its ``table`` is the coverage table of the splits
(:func:`~panto_analytics.analysis.choose.from_splits.coverage_table`, one row per budget); under a window it
is the outcomes table of a replay
(:func:`~panto_analytics.analysis.choose.from_replay.outcomes_table`, one row per policy and budget, and a
``proposable`` column). It prints as ``panto-analytics recommend`` prints it (:meth:`Choice.to_text`) and
turns into the JSON object ``-o - --output-format json`` writes (:meth:`Choice.to_dict`).

>>> import polars as pl
>>> from panto_analytics.analysis.choose.rule import Rule
>>> c = Choice(2000, Rule(min_kept_turns=2), pl.DataFrame({"budget": [1000, 2000], "sessions": [4, 4]}))
>>> c.headline()
'recommended keep_verbatim: 2k (2,000 tokens)'
>>> c.to_dict()["rows"]
[{'budget': 1000, 'sessions': 4}, {'budget': 2000, 'sessions': 4}]
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from ...frame.schema import BUDGET
from ..formatting import format_tokens, has_budget, point_name, render_table
from .bootstrap import BudgetInterval
from .rule import Rule

__all__ = ["MARK", "Choice", "display_columns"]


@dataclass
class Choice:
    """The chosen budget (None when none meets the rule), the policy under a window, why, and what to watch."""

    budget: int | None
    rule: Rule
    #: One row per budget (splits) or per (policy, budget) (a replay): every figure the rule read.
    table: pl.DataFrame
    #: Under a window: the chosen policy, the window and the reserve replayed; None on splits.
    policy: str | None = None
    window: int | None = None
    reserve: int | None = None
    reasons: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: The seeded bootstrap's budgets across resamples of the sessions (:mod:`.bootstrap`); None: not computed.
    interval: BudgetInterval | None = None

    @property
    def sessions(self) -> int:
        """The sessions behind the choice: those that reach the trigger (under a window), or with turns."""
        if self.interval is not None:
            return self.interval.sessions
        column = "at_trigger" if "at_trigger" in self.table.columns else "sessions_with_turns"
        if column not in self.table.columns or self.table.is_empty():
            return 0
        rows = self.table
        if self.budget is not None:
            rows = rows.filter(pl.col(BUDGET) == self.budget)
            if self.policy is not None and "policy" in rows.columns:
                rows = rows.filter(pl.col("policy") == self.policy)
        return int(rows[column].max() or 0)  # type: ignore[arg-type]

    @property
    def replayed(self) -> bool:
        """Whether the choice was made on a replay under a window (else on end-of-session splits)."""
        return self.window is not None

    def rules(self) -> list[str]:
        """The rule, as sentences."""
        return self.rule.describe(replayed=self.replayed)

    def around(self, n: int = 2) -> pl.DataFrame:
        """The rows of the chosen budget (of the chosen policy) and ``n`` budgets either side. When none is
        chosen: on splits the rows around the best budget (:meth:`best`), or the whole table where there is
        none; under a window every proposable row and each policy's first row at or above its trigger."""
        if self.budget is None:
            if "proposable" not in self.table.columns:
                best = self.best()
                return self.table if best is None else _rows_around(self.table, best, n)
            first_above = (~pl.col("proposable")) & ((~pl.col("proposable")).cum_sum().over("policy") == 1)
            return self.table.filter(pl.col("proposable") | first_above)
        rows = self.table
        if self.policy is not None and "policy" in rows.columns:
            rows = rows.filter(pl.col("policy") == self.policy)
        return _rows_around(rows, self.budget, n)

    def best(self) -> int | None:
        """On splits, where no budget meets the rule: the one that comes nearest (the highest of the shares the
        rule asks for, the least of them where it asks for two; the smallest budget of equals); else None.

        >>> from panto_analytics.analysis.choose.rule import Rule
        >>> t = pl.DataFrame({"budget": [1, 2, 3], "keeps_k_share": [0.2, 0.5, 0.5]})
        >>> Choice(None, Rule(min_kept_turns=2), t).best()
        2
        """
        shares = [c for c in _RULE_SHARES if c in self.table.columns]
        if self.budget is not None or self.table.is_empty() or not shares or "proposable" in self.table.columns:
            return None
        nearest = self.table.with_columns(pl.min_horizontal(shares).alias("_nearest"))
        return int(nearest.sort("_nearest", BUDGET, descending=[True, False], nulls_last=True)[BUDGET][0])

    def key_columns(self) -> list[str]:
        """The columns of the printed table that carry the answer (kept at any width, see
        :func:`~panto_analytics.analysis.formatting.render_table`): the policy, the budget, the figures the
        rule judges, and the mark of the chosen row."""
        judged = [c for c in (*_RULE_SHARES, "orphan_rate") if c in self.table.columns]
        return ["policy", BUDGET, *judged, MARK]

    def headline(self) -> str:
        """One line: the budget (and a policy other than libpanto), or that none meets the rule."""
        if self.budget is None:
            none = "no proposable budget meets the rule" if self.replayed else "no budget tried meets the rule"
            return none + self._spread()
        if self.policy is None or self.policy.split(":")[0] == "libpanto":
            return f"recommended keep_verbatim: {format_tokens(self.budget)} ({self.budget:,} tokens){self._spread()}"
        if has_budget(self.policy):
            from ...policy.compaction.policies import parse_policy

            setting = parse_policy(self.policy).budget_name()
            return (f"recommended policy: {self.policy}, {setting} {format_tokens(self.budget)} "
                    f"({self.budget:,} tokens){self._spread()}")
        return f"recommended policy: {point_name(self.policy, self.budget)}, no token budget{self._spread()}"

    def _spread(self) -> str:
        """`` (90% of resamples: 37.5k-60k; 5 sessions)``, or that there were too few to resample; or nothing."""
        if self.interval is None:
            return ""
        return f" ({self.interval.describe(budgets=self.budget is None or has_budget(self.policy))})"

    def to_dict(self, n: int = 2) -> dict[str, Any]:
        """What ``-o - --output-format json`` prints: one JSON-ready object."""
        return {"budget": self.budget, "policy": self.policy, "sessions": self.sessions,
                "interval": None if self.interval is None else self.interval.to_dict(), "rule": self.rules(),
                "window": self.window, "reserve": self.reserve, "rows": _json_rows(self.around(n)),
                "reasons": list(self.reasons), "warnings": list(self.warnings)}

    def to_text(self, n: int = 2, width: int | None = None) -> str:
        """A plain-text account: the choice, the rule, the reasons, the rows around it and the warnings; its table
        fits ``width`` characters, leaving out the columns the rule does not judge first (None: every column)."""
        lines = [self.headline(), ""]
        lines += [f"rule: {r}" for r in self.rules()]
        lines += [f"why: {r}" for r in self.reasons]
        rows = self.around(n)
        if not rows.is_empty():
            best = self.best()
            marked = self.budget if self.budget is not None else best if best is not None else -1
            chosen = pl.col(BUDGET) == marked
            if self.policy is not None and "policy" in rows.columns:
                chosen = chosen & (pl.col("policy") == self.policy)
            said = "<- chosen" if self.budget is not None else "<- nearest"
            mark = pl.when(chosen).then(pl.lit(said)).otherwise(pl.lit(""))
            if "proposable" in rows.columns:
                mark = pl.when(~pl.col("proposable")).then(pl.lit("at/above trigger")).otherwise(mark)
            shown = rows.with_columns(mark.alias(MARK)).select([*display_columns(rows), MARK])
            if "policy" in shown.columns and BUDGET in shown.columns:  # no budget of 0 for a policy that has none
                budgeted = {p: has_budget(p) for p in shown["policy"].unique().to_list()}
                shown = shown.with_columns(pl.when(pl.col("policy").replace_strict(budgeted, return_dtype=pl.Boolean))
                                           .then(pl.col(BUDGET)).alias(BUDGET))
            if not self.replayed:
                shown = shown.with_columns(pl.col("^kept_.*$").round().cast(pl.Int64))
            text, hidden = render_table(shown, width=width, key=self.key_columns())
            lines += ["", text]
            if hidden:
                lines.append(f"({len(hidden)} column{'' if len(hidden) == 1 else 's'} not shown to fit the terminal: "
                             f"{', '.join(hidden)}; -o FILE or -o - writes them all)")
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    def __str__(self) -> str:
        """``print(choice)``: the account :meth:`to_text` gives, as ``panto-analytics recommend`` prints it."""
        return self.to_text()

    def __repr__(self) -> str:
        """One line: the budget, the rule, how many rows were tried and the warnings."""
        said = f", {len(self.warnings)} warning{'' if len(self.warnings) == 1 else 's'}" if self.warnings else ""
        tried = f"{self.table.height} {'rows' if self.replayed else 'budgets'} tried"
        return f"<Choice: {self.headline()} (rule: {'; '.join(self.rules())}; {tried}{said})>"


#: The name of the printed table's last column, which marks the chosen row (or the nearest, where none is chosen).
MARK = "choice"

#: The shares a rule on splits judges (coverage_table): one per criterion.
_RULE_SHARES = ("keeps_k_share", "within_limit_share")


def _rows_around(rows: pl.DataFrame, budget: int, n: int) -> pl.DataFrame:
    """The row of ``budget`` in ``rows`` and ``n`` rows either side.

    >>> _rows_around(pl.DataFrame({"budget": [1, 2, 3, 4, 5]}), 1, 1)["budget"].to_list()
    [1, 2]
    """
    rows = rows.with_row_index("_i")
    idx = rows.filter(pl.col(BUDGET) == budget)["_i"][0]
    return rows.slice(max(0, idx - n), min(idx, n) + n + 1).drop("_i")


#: The columns worth showing when a table is printed, in order: of splits, and of a replay.
_SHOWN_SPLITS = [BUDGET, "sessions", "events", "noop_share", "zero_kept_share", "capped_share", "kept_tokens_p50",
                 "kept_turns_p50", "summarized_share", "keeps_k_share", "within_limit_share"]
_SHOWN_REPLAY = ["policy", BUDGET, "at_trigger", "events", "compactions_per_session", "keeps_k_share",
                 "within_limit_share", "cost_p50", "cost_p90", "orphan_rate", "orphan_rate_p50", "refetch_tokens",
                 "summarized_p50"]


def display_columns(table: pl.DataFrame) -> list[str]:
    """The columns worth showing when ``table`` (of splits, or of a replay: it has ``proposable``) is printed.

    >>> display_columns(pl.DataFrame({"budget": [1], "noop_share": [0.5], "n": [3]}))
    ['budget', 'noop_share']
    """
    wanted = _SHOWN_REPLAY if "proposable" in table.columns else _SHOWN_SPLITS
    return [c for c in wanted if c in table.columns]


def _json_rows(rows: pl.DataFrame) -> list[dict[str, Any]]:
    """Rows as JSON-ready dicts: NaN and infinities as null."""
    return [{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}
            for row in rows.to_dicts()]
