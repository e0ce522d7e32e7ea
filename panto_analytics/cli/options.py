"""Options shared by several commands, as decorators (sqlite-utils style)."""
from __future__ import annotations

import contextlib
import functools
import sys
import warnings
from pathlib import Path

import click
import polars as pl

from ..budgets import parse_budget, parse_budgets
from ..errors import IngestReport, InputError
from ..ingest.formats import ADAPTERS

__all__ = [
    "Tokens",
    "check_replay",
    "replay_options",
    "check_output",
    "BudgetList", "budgets_option", "friendly_errors", "input_options", "output_option", "read_input", "read_input_corpus",
    "read_settings", "report_skips", "write_frame",
]


def input_options(fn):
    """PATH... plus --format and --skip-invalid (what to read and how strictly), and how to read it.

    --cache DIR / --no-cache, --jobs N and --quiet do not reach the command
    function: they are kept on the click context, and :func:`read_input` /
    :func:`read_input_corpus` apply them.
    """
    for option in reversed(_READ_OPTIONS):
        fn = option(fn)
    fn = click.option("--skip-invalid", is_flag=True,
                      help="Skip bad lines instead of stopping; skips are counted and reported on stderr.")(fn)
    fn = click.option("--format", "format_", type=click.Choice(sorted(ADAPTERS)), default=None,
                      help="Force a source format instead of detecting it per file.")(fn)
    fn = click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))(fn)
    return fn


_READ_KEY = "panto_analytics.read"


def _remember(ctx: click.Context, param: click.Parameter, value):
    ctx.meta.setdefault(_READ_KEY, {})[param.name] = value
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


def read_settings() -> dict:
    """``cache``, ``progress`` and ``jobs`` for ``read_sessions``/``read_corpus``, from the command line."""
    from ..ingest.cache import default_cache_dir

    given = click.get_current_context().meta.get(_READ_KEY, {})
    cache = None if given.get("no_cache") else (given.get("cache_dir") or default_cache_dir())
    return {"cache": cache, "progress": not given.get("quiet"), "jobs": given.get("jobs")}


def read_input(paths, format_, skip_invalid, report: IngestReport | None = None) -> pl.DataFrame:
    """The message frame of PATHS, read as the command line says; skips and cache trouble on stderr."""
    from ..ingest import read_sessions

    report = report if report is not None else IngestReport()
    with _cache_warnings_on_stderr():
        messages = read_sessions(paths, format=format_, skip_invalid=skip_invalid, report=report,
                                 **read_settings())
    report_skips(report)
    return messages


def read_input_corpus(paths, format_, skip_invalid, *, list_skips: bool = True):
    """Like :func:`read_input`, but the whole :class:`~panto_analytics.ingest.corpus.Corpus`."""
    from ..ingest import read_corpus

    with _cache_warnings_on_stderr():
        corpus = read_corpus(paths, format=format_, skip_invalid=skip_invalid, **read_settings())
    if list_skips:
        report_skips(corpus.report)
    return corpus


@contextlib.contextmanager
def _cache_warnings_on_stderr():
    """Show the cache's warnings as one plain line each, not as Python warnings."""
    from ..ingest.cache import CacheWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CacheWarning)
        yield
    for w in caught:
        if issubclass(w.category, CacheWarning):
            click.echo(f"warning: {w.message}", err=True)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


class BudgetList(click.ParamType):
    name = "BUDGETS"

    def convert(self, value, param, ctx):
        if isinstance(value, list):
            return value
        try:
            return parse_budgets(value)
        except ValueError as e:
            self.fail(str(e), param, ctx)


def budgets_option(default: str | None = None):
    """--budgets/-b: required without a default (click 8.5 takes an explicit default=None as a default given)."""
    extra = {"default": default, "show_default": True} if default is not None else {"required": True}
    return click.option("--budgets", "-b", type=BudgetList(),
                        help="Token budgets (keep_verbatim): a list like 8k,20k,1.5M or START:STOP:N.", **extra)


_WRITERS = {".csv": "write_csv", ".parquet": "write_parquet", ".json": "write_json",
            ".ndjson": "write_ndjson", ".jsonl": "write_ndjson"}


def check_output(ctx, param, value: Path | None) -> Path | None:
    # Checked before any work, so a typo never costs a whole run.
    if value is not None and value.suffix.lower() not in _WRITERS:
        raise click.BadParameter(f"cannot tell the format from {value.name!r}: use .csv, .parquet, .json or .ndjson")
    return value


def output_option(fn):
    """-o FILE: write csv, parquet or json (by extension) instead of a table on stdout."""
    return click.option("--output", "-o", type=click.Path(path_type=Path), default=None, callback=check_output,
                        help="Write to FILE; .csv, .parquet, .json or .ndjson chooses the format. "
                             "Without it a table is printed.")(fn)


def write_frame(df: pl.DataFrame, output: Path | None) -> None:
    """Write ``df`` to ``output`` by extension, or print it as a table."""
    if output is None:
        with pl.Config(tbl_rows=min(len(df), 200), tbl_cols=-1, tbl_width_chars=200,
                       tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True):
            click.echo(df)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    getattr(df, _WRITERS[output.suffix.lower()])(output)
    click.echo(f"wrote {len(df)} rows to {output}", err=True)


def report_skips(report: IngestReport) -> None:
    """Tell stderr how many bad lines were skipped, and where."""
    if report.n_skipped:
        click.echo(f"skipped {report.n_skipped} invalid line(s):", err=True)
        for row in report.skipped_frame().iter_rows(named=True):
            click.echo(f"  {row['file']}: {row['lines']} x {row['reason']}", err=True)


def friendly_errors(fn):
    """Turn bad input into one clear line on stderr and exit code 1, never a traceback."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except InputError as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(1)
    return wrapper


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


def replay_options(*, required: bool):
    """--window, --reserve and --summary-tokens: the context window a replay runs under."""
    from ..policy.replay import DEFAULT_RESERVE, DEFAULT_SUMMARY_TOKENS

    def decorate(fn):
        what = ("The model's context window, in tokens (200k, 1M, ...)." if required else
                "Replay compaction under this context window (200k, 1M, ...) and judge the budgets at the "
                "moments an agent compacts, instead of by end-of-session splits.")
        for option in reversed([
            click.option("--window", type=Tokens(), required=required, help=what),
            click.option("--reserve", type=Tokens(), default=DEFAULT_RESERVE, show_default=True,
                         help="Tokens kept free below the window: a compaction fires past window - reserve."),
            click.option("--summary-tokens", type=Tokens(), default=DEFAULT_SUMMARY_TOKENS, show_default=True,
                         help="Size of the summary that replaces the summarized prefix, in tokens."),
        ]):
            fn = option(fn)
        return fn
    return decorate


def check_replay(window: int | None, reserve: int, summary_tokens: int) -> None:
    """A usage error, before any work, for replay parameters that cannot work (``window <= reserve``, ...)."""
    from ..policy.replay import validate_parameters

    if window is not None:
        try:
            validate_parameters(window, reserve, summary_tokens)
        except ValueError as e:
            raise click.UsageError(str(e)) from None
