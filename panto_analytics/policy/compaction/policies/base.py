"""What every compaction policy is: a trigger, a cut over the active window, and ``NAME:k=v`` settings.

A policy decides, when the context passes its trigger, what stays verbatim
and what its summarizer reads. :class:`Policy` is the contract the replay
engine (:mod:`panto_analytics.policy.compaction.any_policy`) drives; each policy is a
frozen dataclass in its own module whose fields are its settings, with the
defaults its source sets.

The cut is computed for every live (session, setting) state at once, on a
*window frame*: one row per message of each state's active window at its
trigger, ordered by ``(state, seq)``, with the columns of :data:`WINDOW_COLUMNS`.
It returns one row per state with :data:`CUT_COLUMNS`.

>>> from panto_analytics.policy.compaction.policies.base import parse_settings
>>> parse_settings("keep_recent_tokens=30k, reserve_tokens=8192", {"keep_recent_tokens": int, "reserve_tokens": int})
{'keep_recent_tokens': 30000, 'reserve_tokens': 8192}
"""
from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import polars as pl

from ....budgets import parse_budget
from ....frame.schema import ROLE, SEQ

__all__ = ["CUT_COLUMNS", "Policy", "WINDOW_COLUMNS", "at_or_after", "chars_to_tokens", "one_window", "parse_settings",
           "state_max", "state_min", "suffix_cut"]

#: The window frame's columns: ``state`` (the state's row in the round), ``seq``, ``role`` (a string),
#: ``user`` (a user message that is not a tool result), ``bash`` (a ``user`` one that is pi's ``bashExecution``,
#: ``bash_execution``), ``tool_result``, ``summary`` (a recorded compaction
#: summary), ``call`` (an assistant message with usage), ``cum`` (its recorded context, null elsewhere),
#: ``chars`` (the message's ``serialized_bytes``, the size of its text), ``turn_start`` (libpanto's turn start
#: over the whole session), ``next_tool_result`` (the next message is a tool result: this one called a tool),
#: ``first`` (the window's first seq), ``trigger`` (the trigger call's seq).
WINDOW_COLUMNS = ("state", SEQ, ROLE, "user", "bash", "tool_result", "summary", "call", "cum", "chars", "turn_start",
                  "next_tool_result", "first", "trigger")

#: A cut's columns, one row per state: ``prefix_end`` (the first seq not summarized: ``trigger + 1`` when all
#: is), ``kept_start`` (the first seq kept verbatim, null when nothing is), ``kept_messages``,
#: ``kept_tokens`` (null: measured by the engine from usage, as ``cum(trigger) - cum(before kept_start)``;
#: else the policy's own estimate, for a policy that keeps messages that are not a suffix), ``split_turn``.
CUT_COLUMNS = ("state", "prefix_end", "kept_start", "kept_messages", "kept_tokens", "split_turn")


def chars_to_tokens(chars: pl.Expr) -> pl.Expr:
    """``ceil(chars / 4)``: the chars/4 (or bytes/4) estimate pi and Codex use.

    >>> pl.DataFrame({"c": [0, 1, 4, 5]}).select(chars_to_tokens(pl.col("c"))).to_series().to_list()
    [0, 1, 1, 2]
    """
    return ((chars.cast(pl.Int64) + 3) // 4).cast(pl.Int64)


def parse_settings(text: str, types: dict[str, type]) -> dict[str, object]:
    """``k=v,k=v`` into typed values: ints accept ``20k``; floats a plain number; strings as given (a version).
    ValueError in one line."""
    out: dict[str, object] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, sep, value = part.partition("=")
        key = key.strip().replace("-", "_")
        if not sep and key in types:
            raise ValueError(f"setting {key} needs a value ({key}=...)")
        if not sep or key not in types:
            raise ValueError(f"unknown setting {part!r}; settings: {', '.join(types) or 'none'}")
        kind = types[key]
        if kind is str:
            out[key] = value.strip()
            continue
        try:
            out[key] = parse_budget(value) if kind is int else float(value)
        except ValueError as e:
            raise ValueError(f"setting {key}: {e}") from None
    return out


@dataclasses.dataclass(frozen=True)
class Policy:
    """The contract of a policy (subclasses set ``name`` and override the three methods).

    ``threshold(window)``: compaction fires after a call whose simulated
    context exceeds it. ``budget()``: the token figure shown in the result's
    ``budget`` column (0 where the policy has none). ``cut(window_frame)``:
    the cut of every state (see the module docstring). ``from_anchor``: the
    window frame starts at the latest recorded summary rather than at the
    previous cut (a policy that re-reads earlier messages, as Codex does).
    ``summarizer_cached``: the agent sends its summary request on the cached
    conversation (its prefix is the conversation itself), so the bill reads
    it from cache; otherwise the request is a separate, uncached one.
    """

    name: ClassVar[str] = ""
    #: Each setting's valid range, ``(low, high, low_open)`` (None: unbounded); a setting not named here is a
    #: token count (an int, 0 to 2**62) or a share of the window (a float, in (0, 1]).
    ranges: ClassVar[dict[str, tuple[float | None, float | None, bool]]] = {}
    #: The setting :meth:`budget` returns, the policy's token budget (``keep_recent_tokens``); None: it has
    #: none (a share of the window, a count of turns or events, nothing kept) and results name it by its settings.
    budget_setting: ClassVar[str | None] = None
    from_anchor: ClassVar[bool] = False
    #: How the agent asks for its summary, for the bill (:mod:`panto_analytics.outcomes.billing`): on its cached
    #: conversation (True) or as a separate, uncached request (False, the default).
    summarizer_cached: ClassVar[bool] = False
    #: The policy replaces old tool results in place (:mod:`..clearing`) instead of cutting a prefix and summarizing
    #: it: it has no ``cut``, no summarizer call, and is replayed on every call rather than at a trigger.
    clears: ClassVar[bool] = False

    def __post_init__(self) -> None:
        """ValueError, in one line naming the setting and its valid range, for a setting out of range."""
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, str):
                continue
            low, high, low_open = self.ranges.get(f.name) or ((0, None, False) if isinstance(value, int)
                                                              else (0, 1, True))
            if isinstance(value, int) and high is None:
                high = 2**62 - 1
            if ((low is not None and (value <= low if low_open else value < low))
                    or (high is not None and value > high)):
                raise ValueError(f"{self.name}: {f.name}={value:g} is out of range: "
                                 f"{f.name} must be {_describe_range(low, high, low_open)}")

    def threshold(self, window: int) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def token_limit(self, window: int) -> int:
        """The context a compaction must bring the session below, else it was ``ineffective``: the trigger; a
        policy that fires on a count (of turns, of events) sets its own."""
        return self.threshold(window)

    def budget(self) -> int:
        return int(getattr(self, self.budget_setting)) if self.budget_setting else 0

    def budget_name(self) -> str | None:
        """The setting its token budget is (``keep_recent_tokens``), None where it has none: results then name the
        policy by its settings, never by a budget of 0.

        >>> from panto_analytics.policy.compaction.policies import parse_policy
        >>> parse_policy("pi").budget_name(), parse_policy("gemini-cli").budget_name()
        ('keep_recent_tokens', None)
        """
        return self.budget_setting

    def settings_text(self) -> str:
        """Every setting with its value, defaults included: ``threshold_ratio=0.5, preserve=0.3``.

        >>> from panto_analytics.policy.compaction.policies import GeminiCli
        >>> GeminiCli().settings_text()
        'threshold_ratio=0.5, preserve=0.3'
        """
        return ", ".join(f"{f.name}={getattr(self, f.name):g}" if isinstance(getattr(self, f.name), float)
                         else f"{f.name}={getattr(self, f.name)}" for f in dataclasses.fields(self)
                         if getattr(self, f.name) != "")

    def cut(self, frame: pl.DataFrame) -> pl.DataFrame:  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def parse(cls, settings: str) -> Policy:
        """The policy with ``settings`` (``k=v,...``) over its defaults."""
        types = {f.name: (int if f.type in ("int", int) else str if f.type in ("str", str) else float)
                 for f in dataclasses.fields(cls)}
        return cls(**parse_settings(settings, types))  # type: ignore[arg-type]

    def spec(self) -> str:
        """``name`` plus the settings that differ from the defaults: ``pi:keep_recent_tokens=30000``."""
        changed = [f"{f.name}={getattr(self, f.name):g}" if isinstance(getattr(self, f.name), float)
                   else f"{f.name}={getattr(self, f.name)}"
                   for f in dataclasses.fields(self) if getattr(self, f.name) != f.default]
        return self.name + (":" + ",".join(changed) if changed else "")


def _describe_range(low: float | None, high: float | None, low_open: bool) -> str:
    """``in (0, 1]``, ``at least 1``, ``from 0 to 4611686018427387903``."""
    if high is None:
        return f"{'above' if low_open else 'at least'} {low:g}"
    if isinstance(high, int) and high >= 2**62 - 1:
        return f"at least {low:g} (and below 2**62)"
    return f"in {'(' if low_open else '['}{low:g}, {high:g}]"


def one_window(first: int = 0, **columns: list[Any]) -> pl.DataFrame:
    """The window of one state, for a policy's examples: ``columns`` (lists of one length), with ``state`` 0,
    ``seq`` counting from ``first``, and ``first`` and ``trigger`` (the last seq) on every row.

    >>> one_window(user=[True, False]).rows()
    [(0, 0, True, 0, 1), (0, 1, False, 0, 1)]
    """
    n = len(next(iter(columns.values())))
    return pl.DataFrame({"state": [0] * n, "seq": list(range(first, first + n)), **columns, "first": [first] * n,
                         "trigger": [first + n - 1] * n})


def at_or_after(value: pl.Expr, *within: str) -> pl.Expr:
    """Per row: the sum of ``value`` over this row and the later rows of its state (a suffix sum, no group loop),
    or of its group of the state by the columns ``within``.

    >>> df = pl.DataFrame({"state": [0, 0, 0, 1], "turn": [1, 1, 2, 1], "v": [1, 2, 3, 4]})
    >>> df.select(at_or_after(pl.col("v")), turn_rest=at_or_after(pl.col("v"), "turn")).rows()
    [(6, 3), (5, 2), (3, 3), (4, 4)]
    """
    return value.sum().over("state", *within) - value.cum_sum().over("state", *within) + value


def state_max(value: pl.Expr) -> pl.Expr:
    """``value``'s largest non-null value in the row's state, on every row of it."""
    return value.max().over("state")


def state_min(value: pl.Expr) -> pl.Expr:
    """``value``'s smallest non-null value in the row's state, on every row of it."""
    return value.min().over("state")


def suffix_cut(frame: pl.DataFrame, cut_seq: pl.Expr, *, split_turn: pl.Expr | None = None) -> pl.DataFrame:
    """The cut of a policy that keeps a suffix: ``cut_seq`` (a row expression, equal on every row of a state,
    built with :func:`state_max` and the like) is its first kept seq.

    ``prefix_end = kept_start = cut_seq`` (null ``cut_seq``: the window's first
    seq, i.e. nothing summarized). Kept tokens are left to the engine (usage).
    The frame's rows must be grouped by state; every operation is a column
    expression or a window over the state, never a per-group evaluation.
    """
    one = frame.with_columns(_cut=cut_seq, _split=split_turn if split_turn is not None else pl.lit(False)) \
        .filter(pl.col("state").is_first_distinct())
    cut = pl.coalesce(pl.col("_cut"), pl.col("first")).cast(pl.Int64)
    return one.select(
        "state", prefix_end=cut,
        kept_start=pl.when(cut <= pl.col("trigger")).then(cut),
        kept_messages=pl.max_horizontal(pl.col("trigger") + 1 - cut, 0).cast(pl.Int64),
        kept_tokens=pl.lit(None, pl.Int64), split_turn=pl.col("_split").fill_null(False))
