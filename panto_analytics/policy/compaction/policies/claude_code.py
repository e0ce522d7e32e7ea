"""``claude-code``: Claude Code's auto-compact, by version: a summary plus, where the version keeps one, a preserved segment.

Claude Code is closed source; the rules here were read in the minified code
it ships on npm (``@anthropic-ai/claude-code``, ``cli.js`` up to 2.1.112, the
JavaScript inside the native ``claude`` binary of
``@anthropic-ai/claude-code-linux-x64`` from there on). ``docs/replay.md``
names the versions read and what each holds.

- Trigger: the context reaches ``window - output_reserve - buffer``, i.e.
  ``window - min(max output, 20,000) - 13,000`` (the code's effective window
  less its 13,000-token buffer): 167,000 of a 200k window, 967,000 of 1M.
- Cut, versions before ``preserved_since`` (and a recording that names no
  version): everything is summarized, nothing kept (Claude Code's classic
  compaction: one summary, no ``preservedSegment``).
- Cut, versions from ``preserved_since`` on, where the automatic compaction
  goes through Claude Code's *reactive* compaction: the conversation is cut
  into API rounds (an assistant response and the messages after it), the
  newest round is kept and the rest summarized. With the *precomputed*
  compaction, that summary is made in the background when the context first
  reaches ``min(E - round(precompute * E), E - buffer)`` (``E = window -
  output_reserve``; ``precomputeBufferFraction``, 0.2: 144,000 of a 200k
  window) and swapped in at the trigger, keeping the newest round at that
  moment and everything after it; Claude Code 2.1.185 runs it on windows of
  ``precompute_from`` (200,000) and more. Claude Code checks the line after a
  call, on its context, and before the next, on that context plus its
  estimate of the messages since (here ``ceil(bytes / 4)``): either way the
  round kept starts at that call. Here: the first call of the active window
  that reaches the line so, and every message after it, are kept; on a
  smaller window, or with ``precompute=0``, the trigger's round alone (the
  frame has one message per API call). At a compaction an agent
  recorded (no replay window) the window is 200,000 for a context within it,
  else 1,000,000.
- ``version``: empty, each recording's own (the message frame's
  ``agent_version``, Claude Code's ``version`` field); set, it is forced
  (``claude-code:version=2.1.185``).

>>> from panto_analytics.policy.compaction.policies.base import one_window
>>> w = one_window(role=["user", "assistant"] * 3, call=[False, True] * 3, chars=[4_000] * 6,
...     cum=[None, 100_000, None, 143_500, None, 170_000], context=[170_000] * 6, window=[200_000] * 6,
...     version=["2.1.112"] * 6)
>>> ClaudeCode().cut(w).select("prefix_end", "kept_messages").rows()  # a version that keeps nothing
[(6, 0)]
>>> ClaudeCode(version="2.1.185").cut(w).select("prefix_end", "kept_messages").rows()  # 143,500 + 1,000 >= 144,000
[(3, 3)]
>>> ClaudeCode(version="2.1.185", precompute=0).cut(w).select("prefix_end", "kept_messages").rows()
[(5, 1)]
>>> ClaudeCode(version="2.1.185").cut(w.with_columns(window=190_000)).select("prefix_end", "kept_messages").rows()
[(5, 1)]
>>> ClaudeCode().threshold(200_000)
167000
>>> ClaudeCode.parse("version=2.1.185").spec()
'claude-code:version=2.1.185'
"""
from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ....frame.schema import SEQ
from .base import Policy, chars_to_tokens, state_max, state_min, suffix_cut

__all__ = ["ClaudeCode", "recorded_window", "version_key"]

#: The window of a compaction recorded without a replay window: Claude Code's 200k, or 1M above it.
RECORDED_WINDOWS = (200_000, 1_000_000)


def version_key(version: pl.Expr) -> pl.Expr:
    """``MAJOR.MINOR.PATCH`` (a suffix ignored) as one comparable integer; null for anything else.

    >>> pl.DataFrame({"v": ["2.1.185", "2.1.22", "1.0.17-beta", "x", None]}).select(
    ...     version_key(pl.col("v"))).to_series().to_list()
    [2000001000185, 2000001000022, 1000000000017, None, None]
    """
    parts = version.str.extract_groups(r"^(\d{1,6})\.(\d{1,6})\.(\d{1,6})")
    number = [parts.struct.field(str(i)).cast(pl.Int64) for i in (1, 2, 3)]
    return number[0] * 10**12 + number[1] * 10**6 + number[2]


def recorded_window(window: pl.Expr, context: pl.Expr) -> pl.Expr:
    """The replay's ``window``; where it is null (a compaction an agent recorded), 200,000 for a ``context``
    within it, else 1,000,000.

    >>> pl.DataFrame({"w": [None, None, 48_000], "c": [170_000, 980_000, 40_000]}).select(
    ...     recorded_window(pl.col("w"), pl.col("c"))).to_series().to_list()
    [200000, 1000000, 48000]
    """
    small, large = RECORDED_WINDOWS
    return pl.coalesce(window.cast(pl.Int64), pl.when(context <= small).then(small).otherwise(large))


def _key(version: str) -> int | None:
    """:func:`version_key` of one string."""
    key = pl.select(version_key(pl.lit(version, pl.String))).item()
    return None if key is None else int(key)


@dataclass(frozen=True)
class ClaudeCode(Policy):
    """A summary at ``window - output_reserve - buffer``; from ``preserved_since`` on, the newest API round at the
    precompute line and everything after it kept."""

    name = "claude-code"
    ranges = {"precompute": (0, 1, False)}
    output_reserve: int = 20_000
    buffer: int = 13_000
    version: str = ""
    preserved_since: str = "2.1.153"
    precompute: float = 0.2
    precompute_from: int = 200_000

    def __post_init__(self) -> None:
        super().__post_init__()
        for key in ("version", "preserved_since"):
            value = getattr(self, key)
            if (value or key == "preserved_since") and _key(value) is None:
                raise ValueError(f"claude-code: {key}={value!r} is not a version: give MAJOR.MINOR.PATCH (2.1.185)")

    def threshold(self, window: int) -> int:
        return window - self.output_reserve - self.buffer

    def arm_line(self, window: pl.Expr) -> pl.Expr:
        """The context at which the precomputed summary starts: ``min(E - round(precompute * E), E - buffer)``,
        ``E = window - output_reserve`` (``round`` half up, as JavaScript's ``Math.round``).

        >>> pl.select(ClaudeCode().arm_line(pl.lit(200_000))).item()
        144000
        """
        effective = window - self.output_reserve
        early = effective - (effective.cast(pl.Float64) * self.precompute + 0.5).floor().cast(pl.Int64)
        return pl.min_horizontal(early, effective - self.buffer)

    def cut(self, frame: pl.DataFrame) -> pl.DataFrame:
        seq, trigger = pl.col(SEQ), pl.col("trigger")
        version = pl.lit(self.version, pl.String) if self.version else pl.col("version")
        at_trigger = pl.when(seq == trigger).then(version_key(version) >= _key(self.preserved_since))
        preserves = state_max(at_trigger).fill_null(False)  # the version that recorded the trigger call
        calls = pl.col("call") & (seq <= trigger)
        # Each row's round: the last call at or before it; the messages after a call, estimated as Claude Code
        # estimates what came after its last usage (ceil(bytes / 4) here), are what the check before the next
        # call adds to that call's context.
        rounds = frame.with_columns(_round=pl.when(calls).then(seq).forward_fill().over("state"))
        after = pl.when(~calls & pl.col("_round").is_not_null()).then(chars_to_tokens(pl.col("chars"))).otherwise(0)
        newest = state_max(pl.when(calls).then(seq))
        shift = state_max(pl.when(seq == newest).then(pl.col("cum"))) - pl.col("context")  # recorded - simulated
        window = recorded_window(pl.col("window"), pl.col("context"))
        line = pl.when(window >= self.precompute_from).then(self.arm_line(window))  # else: no precomputed summary
        before_next = pl.col("cum") - shift + after.sum().over("state", "_round")
        armed = state_min(pl.when(calls & (before_next >= line)).then(seq))
        start = pl.coalesce(armed, trigger)
        return suffix_cut(rounds, pl.when(preserves).then(start).otherwise(trigger + 1))
