"""The options and checks ``recommend`` and ``report`` share: the rule a budget must meet
(:class:`Share`, :func:`criteria_options`, :func:`rule_of`) and the window the recordings imply.

>>> Share().convert("90%", None, None)
0.9
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ..defaults import DEFAULT_COVERAGE, DEFAULT_MIN_KEPT_TURNS
from ._options import (
    Tokens,
)

if TYPE_CHECKING:
    from ..analysis.choose import Choice, Rule

__all__ = ["Share", "bootstrap_options", "criteria_options", "implied_window", "name_window", "rule_of"]


class Share(click.ParamType):
    """A share written as 0.9 or 90%."""

    name = "SHARE"

    def __init__(self, allow_zero: bool = False):
        self.allow_zero = allow_zero

    def convert(self, value, param, ctx):
        if isinstance(value, float):
            return value
        text = str(value).strip()
        try:
            share = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            self.fail(f"not a share: {value!r} (examples: 0.9, 90%)", param, ctx)
        if not (0 <= share <= 1 if self.allow_zero else 0 < share <= 1):
            self.fail(f"a share must be in {'[0' if self.allow_zero else '(0'}, 1], got {value!r}", param, ctx)
        return share


def criteria_options(fn):
    """The rules a recommended budget must meet (see :mod:`panto_analytics.analysis.choose.rule`)."""
    options = [
        click.option("--min-kept-turns", "-k", type=click.IntRange(min=1), default=None,
                     help="Rule: the smallest budget at which COVERAGE of sessions keep at least K whole turns "
                          f"(or all of theirs). The default rule is -k {DEFAULT_MIN_KEPT_TURNS}."),
        click.option("--coverage", "-p", type=Share(), default=DEFAULT_COVERAGE, show_default=True,
                     help="Share of sessions (with turns) a rule must hold for, as 0.9 or 90%."),
        click.option("--max-kept-share", "-s", type=Share(), default=None,
                     help="Rule: the largest budget at which the kept suffix stays within S x CONTEXT_WINDOW "
                          "tokens for COVERAGE of sessions. Needs --context-window."),
        click.option("--context-window", type=Tokens(), default=None,
                     help="The model's context window in tokens (e.g. 200k), for --max-kept-share."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def rule_of(min_kept_turns, coverage, max_kept_share, context_window, window=None, max_orphan_rate=None) -> Rule:
    """The one :class:`~panto_analytics.analysis.choose.rule.Rule` of the options, or a usage error."""
    from ..analysis.choose import Rule

    if window is not None and context_window is None:
        context_window = window if max_kept_share is not None else None
    if max_kept_share is not None and context_window is None:
        raise click.UsageError("--max-kept-share needs --context-window (e.g. --context-window 200k)")
    if context_window is not None and max_kept_share is None:
        raise click.UsageError("--context-window is used by --max-kept-share; give both")
    if window is None and max_orphan_rate is not None:
        raise click.UsageError("--max-orphan-rate judges a replay: give --window (e.g. 200k)")
    return Rule(min_kept_turns=min_kept_turns, coverage=coverage, max_kept_share=max_kept_share,
                context_window=context_window, max_orphan_rate=max_orphan_rate)


def bootstrap_options(fn):
    """--resamples and --seed: the bootstrap over sessions behind every interval (analysis/choose/bootstrap.py)."""
    from ..defaults import DEFAULT_RESAMPLES, DEFAULT_SEED

    fn = click.option("--seed", type=click.IntRange(min=0), default=DEFAULT_SEED, show_default=True,
                      help="The bootstrap's seed: the same seed and sessions give the same intervals.")(fn)
    return click.option("--resamples", type=click.IntRange(min=0), default=DEFAULT_RESAMPLES, show_default=True,
                        metavar="N", help="Resamples of the sessions behind each interval (0: no intervals).")(fn)


def implied_window(sessions) -> tuple[int | None, str | None, str | None]:
    """Without --window: ``(window, reason, hint)``. Where the sessions name models the table knows, the window
    the recordings imply (``outcomes.context_windows.corpus_window``) and the sentence that names it (the replay
    runs under it; a note on stderr says so too); else nothing: the splits, as a dataset folder gives them."""
    from ..outcomes.context_windows import corpus_window

    implied = corpus_window(sessions)
    if implied.window is not None and implied.from_models:
        click.echo(f"note: no --window given: {implied.source} (give --window to choose another)", err=True)
        return implied.window, implied.source, None
    return None, None, None


def name_window(rec: Choice, reason: str | None, hint: str | None) -> None:
    """The implied window's sentence as the choice's first reason, or the hint among its warnings."""
    if reason is not None:
        rec.reasons.insert(0, reason)
    if hint is not None:
        rec.warnings.append(hint)
