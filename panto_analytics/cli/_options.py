"""The click options and parameter types the commands share, as decorators (sqlite-utils style).

Like every command module, this one imports at its top only click, the standard library and modules that
import nothing heavy (``budgets``, ``errors``, ``defaults``): ``--help`` runs before Polars, Arrow or NumPy
load. The library is imported inside the functions that do the work.

>>> Tokens().convert("200k", None, None)
200000
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..budgets import budgets_as_written, parse_budget, parse_budgets
from ..defaults import (
    CLEARING_POLICY_NAMES,
    DEFAULT_BUDGETS,
    DEFAULT_RESERVE,
    DEFAULT_SUMMARY_TOKENS,
    ENGINES,
    MIN_SUMMARY_TOKENS,
    POLICY_NAMES,
    RAY_INSTALL,
    SOURCE_FORMATS,
)
from .launch import READ_KEY, launching

if TYPE_CHECKING:
    from ..outcomes.prices import Prices

__all__ = [
    "BudgetList", "Tokens", "budgets_option", "check_replay", "cost_options", "cut_policy_option", "engine_options",
    "horizon_option", "input_options", "policy_option", "policy_replay_options", "replay_options", "replay_prices",
]


def input_options(fn):
    """PATH... plus --format and --skip-invalid (what to read and how strictly), and how to read it.

    --cache DIR / --no-cache, --jobs N and --quiet do not reach the command
    function: they are kept on the click context, and :func:`read_input` /
    :func:`read_input_corpus` apply them.

    The command starts its parsing workers first thing (:func:`.launch.launching`).
    """
    fn = launching(fn)
    for option in reversed(_READ_OPTIONS + _FILTER_OPTIONS):
        fn = option(fn)
    fn = click.option("--skip-invalid", is_flag=True,
                      help="Skip bad lines instead of stopping; skips are counted and reported on stderr.")(fn)
    fn = click.option("--format", "format_", type=click.Choice(sorted(SOURCE_FORMATS)), default=None,
                      help="Force a source format instead of detecting it per file.")(fn)
    fn = click.argument("paths", nargs=-1, type=click.Path(path_type=Path))(fn)
    return fn


def _remember(ctx: click.Context, param: click.Parameter, value):
    ctx.meta.setdefault(READ_KEY, {})[param.name] = value
    return value


_READ_OPTIONS = (
    click.option("--cache", "cache_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                 envvar="PANTO_ANALYTICS_CACHE", show_envvar=True, expose_value=False, callback=_remember,
                 help="Parquet cache of parsed files [default: ~/.cache/panto_analytics, or under "
                      "$XDG_CACHE_HOME]. Unchanged files are read from it; changed ones are parsed again."),
    click.option("--no-cache", is_flag=True, expose_value=False, callback=_remember,
                 help="Neither read nor write the cache."),
    click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, expose_value=False, callback=_remember,
                 help="Processes to parse with [default: all cores]."),
    click.option("--quiet", "-q", is_flag=True, expose_value=False, callback=_remember,
                 help="No progress bar (there is none anyway when stderr is not a terminal)."),
)


def _check_when(ctx: click.Context, param: click.Parameter, value: str | None):
    if value is not None:
        from ..ingest.filters import parse_when

        try:
            parse_when(value)
        except ValueError as e:
            raise click.BadParameter(str(e), ctx, param) from None
    return _remember(ctx, param, value)


_FILTER_OPTIONS = (
    click.option("--since", metavar="DATE", default=None, expose_value=False, callback=_check_when,
                 help="Only sessions that began on or after DATE (YYYY-MM-DD, YYYYMMDD or an ISO datetime; UTC)."),
    click.option("--until", metavar="DATE", default=None, expose_value=False, callback=_check_when,
                 help="Only sessions that began on or before DATE (a date includes its whole day)."),
    click.option("--project", metavar="NAME", multiple=True, expose_value=False, callback=_remember,
                 help="Only sessions of this project: its recorded working directory, that folder's name, or "
                      "Claude Code's project folder name. Repeatable."),
    click.option("--model", metavar="NAME", multiple=True, expose_value=False, callback=_remember,
                 help="Only sessions of this model (claude-opus-4-5 also matches claude-opus-4-5-20251101). "
                      "Repeatable."),
    click.option("--no-subagents", is_flag=True, expose_value=False, callback=_remember,
                 help="Main sessions only: leave out subagents' own transcripts (Claude Code, Codex)."),
)


class BudgetList(click.ParamType):
    name = "BUDGETS"

    def convert(self, value, param, ctx):
        if isinstance(value, list):
            return value
        try:
            budgets = parse_budgets(value)
            written = budgets_as_written(value)
        except ValueError as e:
            self.fail(str(e), param, ctx)
        if written != budgets:
            what = "sorted and de-duplicated" if len(set(written)) != len(written) else "sorted"
            click.echo(f"note: budgets {what}: {','.join(map(str, budgets))}", err=True)
        return budgets


def budgets_option(*, required: bool = False, default: str = DEFAULT_BUDGETS):
    """--budgets/-b: the one default grid (:data:`~panto_analytics.defaults.DEFAULT_BUDGETS`), another
    ``default``, or required.

    (click 8.5 takes an explicit default=None as a default given, hence no default at all when required.)
    """
    extra: dict = {"required": True} if required else {"default": default, "show_default": True}
    return click.option("--budgets", "-b", type=BudgetList(),
                        help="Token budgets (keep_verbatim): a list like 8k,20k,1.5M or START:STOP:N.", **extra)


class Tokens(click.ParamType):
    """A token count written as 200000, 200k or 1M."""

    name = "TOKENS"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        try:
            return parse_budget(str(value))
        except ValueError as e:
            self.fail(str(e), param, ctx)


def engine_options(fn):
    """--engine local|ray and --ray-address: where the per-bucket work over a dataset folder runs."""
    fn = click.option("--ray-address", default=None, metavar="ADDRESS",
                      help="With --engine ray: the Ray cluster to join ('auto', 'ray://head:10001') [default: start "
                           "Ray on this machine].")(fn)
    return click.option("--engine", type=click.Choice(ENGINES), default="local", show_default=True,
                        help="Over a dataset folder: run bucket by bucket here (local) or on Ray Data (ray; "
                             f"{RAY_INSTALL}).")(fn)


def replay_options(*, required: bool):
    """--window, --reserve and --summary-tokens: the context window a replay runs under."""
    def decorate(fn):
        what = ("The model's context window, in tokens (200k, 1M, ...)." if required else
                "Replay compaction under this context window (200k, 1M, ...) and judge the budgets at the "
                "moments an agent compacts, instead of by end-of-session splits.")
        for option in reversed([
            click.option("--window", "-w", type=Tokens(), required=required, help=what),
            click.option("--reserve", type=Tokens(), default=DEFAULT_RESERVE, show_default=True,
                         help="Tokens kept free below the window: a compaction fires past window - reserve."),
            click.option("--summary-tokens", type=Tokens(), default=None,
                         help="Size of the summary that replaces the summarized prefix, in tokens [default: the "
                              f"median of the summaries recorded in PATHS; {DEFAULT_SUMMARY_TOKENS} when there are none, or when "
                              f"their median is below {MIN_SUMMARY_TOKENS} tokens (redacted recordings)]."),
        ]):
            fn = option(fn)
        return fn
    return decorate


def _parse_policies(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]):
    from ..policy.compaction.policies import parse_policy

    try:
        return tuple(parse_policy(v) if v.strip() != "libpanto" else "libpanto" for v in value)
    except ValueError as e:
        raise click.BadParameter(str(e), ctx, param) from None


def policy_option(fn):
    """--policy NAME[:k=v,...], repeatable: replay under these compaction policies and compare them."""
    return click.option(
        "--policy", "policies", multiple=True, callback=_parse_policies, metavar="NAME[:k=v,...]",
        help=f"Replay under this compaction policy ({', '.join(POLICY_NAMES)}), with settings over its defaults "
             "(pi:keep_recent_tokens=30k); repeat to compare. libpanto runs at every --budgets value; "
             "the others at their own settings (docs/replay.md).")(fn)


def policy_replay_options(*, required: bool):
    """The replay a command judges: :func:`replay_options` and :func:`policy_option`, checked together
    (:func:`check_replay`) before the command's body runs, so before any reading."""
    def decorate(fn):
        @functools.wraps(fn)
        def checked(*args, **kwargs):
            check_replay(kwargs["window"], kwargs["reserve"], kwargs["summary_tokens"], tuple(kwargs["policies"]))
            return fn(*args, **kwargs)
        return replay_options(required=required)(policy_option(checked))
    return decorate


def cut_policy_option(fn):
    """--policy NAME[:k=v,...] for ``policy-cuts``: the agents' policies only (libpanto's split is per budget)."""
    names = ", ".join(n for n in POLICY_NAMES if n != "libpanto" and n not in CLEARING_POLICY_NAMES)
    return click.option(
        "--policy", "policies", multiple=True, callback=_parse_policies, metavar="NAME[:k=v,...]",
        help=f"Cut under this compaction policy ({names}), with settings over its defaults "
             "(pi:keep_recent_tokens=30k); repeat to compare (docs/replay.md).")(fn)


def cost_options(fn):
    """--cost, --prices FILE, --summarizer and --provider: bill every call a replay simulates (docs/replay.md)."""
    for option in reversed([
        click.option("--cost", is_flag=True,
                     help="Bill every call: the recorded cost, the replayed calls' cost and the summarizer calls' "
                          "per session, and cost per session (p50, p90) and totals in the table."),
        click.option("--prices", "prices_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                     default=None, metavar="FILE",
                     help="A LiteLLM model_prices_and_context_window.json price file [default: genai-prices' "
                          "bundled table, offline]. Implies --cost."),
        click.option("--summarizer", type=click.Choice(["separate", "cached"]), default=None,
                     help="Bill every summarizer call as a separate uncached request, or on the cached "
                          "conversation [default: each policy's own way]. Implies --cost."),
        click.option("--provider", default=None, metavar="NAME",
                     help="Where several providers price a model id, take this one's price (a genai-prices "
                          "provider id, e.g. zai or zhipuai; with --prices, the key prefix NAME/), as `cost "
                          "--provider` does. Implies --cost."),
    ]):
        fn = option(fn)
    return fn


def replay_prices(cost: bool, prices_file: Path | None, summarizer: str | None,
                  provider: str | None = None) -> Path | bool | Prices | None:
    """What ``replay(prices=...)`` gets from the cost options: None (no bill), True (genai-prices), the file, or
    with ``provider`` the table loaded with that provider first (an unknown one: a usage error)."""
    if provider is not None:
        from ..errors import InputError
        from ..outcomes.prices import load_prices

        try:
            return load_prices(prices_file, provider=provider)
        except InputError:
            raise
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="--provider") from None
    if prices_file is not None:
        return prices_file
    return True if cost or summarizer is not None else None


def check_replay(window: int | None, reserve: int, summary_tokens: int | None, policies: tuple[str, ...] = ()) -> None:
    """A usage error, before any work, for replay parameters that cannot work (``window <= reserve``, a policy
    whose own reserve leaves no trigger at ``window``, ...)."""
    from ..policy.compaction.any_policy import check_policy_windows, parse_policies
    from ..policy.compaction.engine import validate_parameters

    if window is not None:
        try:
            validate_parameters(window, reserve, DEFAULT_SUMMARY_TOKENS if summary_tokens is None else summary_tokens)
            if policies:
                check_policy_windows(parse_policies(policies, reserve=reserve), window)
        except ValueError as e:
            raise click.UsageError(str(e) + _reserve_hint(window, reserve)) from None


def _reserve_hint(window: int, reserve: int) -> str:
    """What to do when ``window`` is not above ``reserve``; where ``window`` is in thousands that would have
    been enough in units of 1,024 (16k against the default 16,384), that k means 1,000 here.

    >>> _reserve_hint(16_000, 16_384)
    ': k is 1,000 here (16k is 16,000 tokens, not 16,384); give a larger --window (e.g. 32k) or a smaller --reserve'
    >>> _reserve_hint(200_000, 16_384)
    ''
    """
    if window > reserve:
        return ""
    thousands = window % 1000 == 0 and window * 1024 // 1000 >= reserve
    said = f"k is 1,000 here ({window // 1000}k is {window:,} tokens, not {window * 1024 // 1000:,}); " if thousands else ""
    return f": {said}give a larger --window (e.g. {2 * max(window, reserve) // 1000}k) or a smaller --reserve"


def horizon_option(fn):
    """--horizon N: tool calls looked at after each compaction (the loss measure's window)."""
    return click.option("--horizon", type=click.IntRange(min=1), default=20, show_default=True, metavar="N",
                        help="Tool calls looked at after each compaction for orphan references (docs/loss.md).")(fn)
