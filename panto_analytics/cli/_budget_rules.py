"""The options and checks ``recommend`` and ``report`` share: the rule a budget must meet
(:class:`Share`, :func:`criteria_options`, :func:`rule_of`) and the window the recordings imply.

>>> Share().convert("90%", None, None)
0.9
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ..defaults import DEFAULT_COVERAGE, DEFAULT_MIN_KEPT_TURNS
from ._options import Tokens, check_replay

if TYPE_CHECKING:
    from ..analysis.choose import Choice, Rule
    from ..dataset import Source

__all__ = ["Share", "bootstrap_options", "criteria_options", "name_window", "replay_window", "rule_of"]


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


def replay_window(window: int | None, source: Source, reserve: int, summary_tokens: int | None,
                  policies: tuple) -> tuple[int | None, str | None]:
    """``(window, reason)``: --window as given; without it, where the sessions name models the table knows, the
    window the recordings imply (``outcomes.context_windows.corpus_window``), checked as a given one is
    (:func:`check_replay`), and the sentence that names it (the replay runs under it; a note on stderr says so
    too); else nothing: the splits, as a dataset folder gives them."""
    from ..outcomes.context_windows import corpus_window

    if window is not None:
        return window, None
    implied = corpus_window(source.sessions())
    if implied.window is None or not implied.from_models:
        return None, None
    click.echo(f"note: no --window given: {implied.source} (give --window to choose another)", err=True)
    check_replay(implied.window, reserve, summary_tokens, policies)
    return implied.window, implied.source


def name_window(rec: Choice, reason: str | None) -> None:
    """The implied window's sentence (:func:`replay_window`) as the choice's first reason."""
    if reason is not None:
        rec.reasons.insert(0, reason)
