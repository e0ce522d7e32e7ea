"""Options shared by several commands, as decorators (sqlite-utils style).

This module and every command module import, at their top, only click, the
standard library and modules that import nothing heavy (``budgets``,
``errors``, ``defaults``): ``--help`` runs before Polars, Arrow or NumPy
load. The library is imported inside the functions that do the work.
"""
from __future__ import annotations

import contextlib
import functools
import os
import sys
import warnings
from collections.abc import Iterable
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
from ..errors import STRAY, IngestReport, InputError
from .launch import READ_KEY as _READ_KEY
from .launch import launching

if TYPE_CHECKING:
    import polars as pl

    from ..outcomes.prices import Prices

__all__ = [
    "FORMAT_KEY", "PLOT_SUFFIXES", "STDOUT_FORMATS", "WRITERS", "BudgetList", "OutputPathError", "Tokens",
    "budgets_option", "cache_warnings_on_stderr", "check_engine", "check_output", "check_output_path", "check_replay",
    "cost_options", "csv_ready", "cut_policy_option", "dataset_path", "engine_options", "file_output_option",
    "friendly_errors", "horizon_option", "input_options", "is_device", "output_option", "policy_option", "read_input",
    "read_input_corpus", "read_settings", "replay_options", "replay_prices", "report_skips", "session_files",
    "session_filter", "terminal_width", "to_stdout", "unpriced_notes", "versioned", "versioned_corpus", "write_frame",
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


def session_filter():
    """The :class:`~panto_analytics.ingest.filters.SessionFilter` the command line asks for."""
    from ..ingest.filters import SessionFilter

    given = click.get_current_context().meta.get(_READ_KEY, {})
    return SessionFilter.parse(since=given.get("since"), until=given.get("until"), project=given.get("project", ()),
                               model=given.get("model", ()), subagents=not given.get("no_subagents"))


def read_settings() -> dict:
    """``cache``, ``progress`` and ``jobs`` for ``read_sessions``/``read_corpus``, from the command line."""
    from ..ingest.cache import default_cache_dir

    given = click.get_current_context().meta.get(_READ_KEY, {})
    cache = None if given.get("no_cache") else (given.get("cache_dir") or default_cache_dir())
    return {"cache": cache, "progress": not given.get("quiet"), "jobs": given.get("jobs")}


def session_files(paths, format_: str | None = None) -> list[Path]:
    """The session files PATHS name; :class:`InputError` (one line saying what was searched) when there are none.

    No PATHS: the agents' default locations that exist (said on stderr), an error when none does. A file
    found in a folder whose format no adapter knows (a hook log, an export) is left out, and one note counts
    them (unless ``--format`` is given); a file named is read, and is an error if it is not a session file.
    """
    from ..ingest.paths import SESSION_PATTERNS, default_locations, expand_searched, known_locations

    if not paths:
        paths = default_locations()
        if not paths:
            raise InputError(", ".join(str(p) for p in known_locations()), None,
                             "no PATH given and none of the default session folders exists", skippable=False)
        click.echo(f"note: no PATH given: reading {', '.join(str(p) for p in paths)}", err=True)
    names, searched = expand_searched(paths)
    files = [Path(name) for name in _without_strays(names, searched, format_)]
    if not files:
        raise InputError(", ".join(str(p) for p in paths), None,
                         f"no session files found (searched for {', '.join(SESSION_PATTERNS)})", skippable=False)
    return files


def _without_strays(names: list[str], searched: set[str], format_: str | None) -> list[str]:
    """:func:`~panto_analytics.ingest.pipeline.without_strays`, said in one note on stderr."""
    if not searched or format_ is not None:
        return names
    from ..ingest.pipeline import without_strays
    from ..phrases import counted

    kept = without_strays(names, searched, None, report := IngestReport())
    if report.skipped:
        strays = sorted(f for f, _ in report.skipped)
        click.echo(f"note: skipped {counted(len(strays), 'file')} of no known session format found in the folders "
                   f"searched ({strays[0]}{', ...' if len(strays) > 1 else ''}); name one, with --format, to read it",
                   err=True)
    return kept


def _nothing_read(paths, report: IngestReport) -> InputError:
    where = ", ".join(str(p) for p in paths) or "the default session folders"
    from ..phrases import counted

    return InputError(where, None, f"no sessions in the {counted(report.files, 'file')} read", skippable=False)


def dataset_path(paths) -> Path | None:
    """The dataset folder PATHS name (``ingest --dataset DIR`` wrote it), or None when they name session files.

    A dataset is read alone: mixed with other paths, it is a usage error.
    """
    from ..dataset import is_dataset

    datasets = [Path(p) for p in paths if is_dataset(p)]
    if not datasets:
        return None
    if len(paths) > 1:
        raise click.UsageError(f"{datasets[0]} is a dataset folder: give it alone, without other paths")
    return datasets[0]


def read_input(paths, format_, skip_invalid) -> pl.DataFrame:
    """The message frame of PATHS, read as the command line says; skips and cache trouble on stderr.

    A dataset folder (see :func:`dataset_path`), or session filters, which need the sessions table,
    take the corpus read of :func:`read_input_corpus`.
    """
    if dataset_path(paths) is not None or session_filter().active:
        return read_input_corpus(paths, format_, skip_invalid).messages
    report = IngestReport()
    files = session_files(paths, format_)
    from ..ingest.parallel import keep_pandas_out

    keep_pandas_out()  # as in read_input_corpus
    from ..ingest import read_sessions

    with cache_warnings_on_stderr():
        messages = read_sessions(files, format=format_, skip_invalid=skip_invalid, report=report,
                                 **read_settings())
    report_skips(report)
    if not report.sessions:
        raise _nothing_read(paths, report)
    return messages


def read_input_corpus(paths, format_, skip_invalid, *, list_skips: bool = True):
    """Like :func:`read_input`, but the whole :class:`~panto_analytics.ingest.corpus.Corpus`."""
    if (ds := dataset_path(paths)) is not None:
        from ..dataset import dataset_corpus

        corpus = dataset_corpus(ds)
        if corpus.sessions.is_empty():
            raise _nothing_read(paths, corpus.report)
        return _filtered(corpus, paths)
    files = session_files(paths, format_)
    from ..ingest.parallel import keep_pandas_out

    keep_pandas_out()  # files are read here, never on Ray: pandas is not needed (a fresh process only)
    from ..ingest import open_corpus

    with cache_warnings_on_stderr():
        corpus = open_corpus(files, format=format_, skip_invalid=skip_invalid, **read_settings())
    if list_skips:
        report_skips(corpus.report)
    if corpus.sessions.is_empty():
        raise _nothing_read(paths, corpus.report)
    return _filtered(corpus, paths)


def versioned(messages: pl.DataFrame, policies) -> pl.DataFrame:
    """``messages`` with the agent version of each Claude Code message read back from its recording where a
    ``claude-code`` policy among ``policies`` (None: every policy) reads it
    (:mod:`panto_analytics.ingest.versions`)."""
    from ..defaults import POLICY_NAMES
    from ..ingest.versions import needs_agent_versions, with_agent_versions

    given = list(POLICY_NAMES) if not policies else [p if isinstance(p, str) else p.spec() for p in policies]
    return with_agent_versions(messages) if needs_agent_versions(messages, given) else messages


def versioned_corpus(corpus, policies):
    """:func:`versioned` on a corpus's messages."""
    from dataclasses import replace

    messages = versioned(corpus.messages, policies)
    return corpus if messages is corpus.messages else replace(corpus, messages=messages)


def _filtered(corpus, paths):
    """The corpus with the sessions the filter options accept; a note says how many, an error if none."""
    from ..ingest.filters import filter_corpus

    wanted = session_filter()
    if not wanted.active:
        return corpus
    kept = filter_corpus(corpus, wanted)
    what = " ".join(wanted.described)
    from ..phrases import counted

    read = counted(corpus.sessions.height, "session")
    if kept.sessions.is_empty():
        where = ", ".join(str(p) for p in paths)
        raise InputError(where, None, f"none of the {read} read matches {what} "
                                      f"({wanted.what_exists(corpus.sessions)})", skippable=False)
    click.echo(f"note: {what}: kept {kept.sessions.height:,} of {read}", err=True)
    return kept


@contextlib.contextmanager
def warnings_as_lines(category: type[Warning], prefix: str):
    """Each ``category`` warning raised inside is one plain ``PREFIX: message`` line on stderr, not a Python
    warning; any other warning is passed on as it was raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", category)
        yield
    for w in caught:
        if issubclass(w.category, category):
            click.echo(f"{prefix}: {w.message}", err=True)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


@contextlib.contextmanager
def cache_warnings_on_stderr():
    """Show the cache's warnings as one plain line each, not as Python warnings."""
    from ..ingest.cache import CacheWarning

    with warnings_as_lines(CacheWarning, "warning"):
        yield


@contextlib.contextmanager
def unpriced_notes():
    """Each model without a price (an ``UnpricedWarning``) is one ``note:`` line on stderr."""
    from ..outcomes.cost import UnpricedWarning

    with warnings_as_lines(UnpricedWarning, "note"):
        yield


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


WRITERS = {".csv": "write_csv", ".parquet": "write_parquet", ".json": "write_json",
            ".ndjson": "write_ndjson", ".jsonl": "write_ndjson"}

#: Images matplotlib writes.
PLOT_SUFFIXES = (".png", ".svg", ".pdf")

#: What ``-o -`` can write to stdout.
STDOUT_FORMATS = {"csv": "write_csv", "json": "write_json", "ndjson": "write_ndjson"}

FORMAT_KEY = "panto_analytics.output_format"


class OutputPathError(click.UsageError):
    """An output path that cannot be written: one line, exit 2, before any work."""


def check_output_path(path: Path, suffixes: Iterable[str] | None, option: str, *, folder: bool = False) -> Path:
    """``path`` if it can be written as ``option``'s output, else :class:`OutputPathError` saying why.

    Checks the extension (``suffixes``; None: any), that no file stands where
    a folder is needed, that the nearest existing folder is writable, and
    that missing folders are created only inside the current directory
    (``folder``: the output is itself a folder, which may be created).
    """
    if not folder and is_device(path):
        if suffixes is None or not set(suffixes) <= set(WRITERS):
            raise OutputPathError(f"{option} {path}: not a file this output can be written to")
        if not os.access(path, os.W_OK):
            raise OutputPathError(f"{option} {path}: cannot write to it (permission denied)")
        return path
    if suffixes is not None and path.suffix.lower() not in suffixes:
        raise OutputPathError(f"{option} {path}: cannot tell the format from {path.name!r}: "
                              f"use {', '.join(sorted(suffixes))}")
    if folder and path.exists() and not path.is_dir():
        raise OutputPathError(f"{option} {path}: is a file, not a folder")
    if not folder and path.is_dir():
        raise OutputPathError(f"{option} {path}: is a folder, not a file")
    target = path if folder else path.parent
    existing = target
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise OutputPathError(f"{option} {path}: {existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OutputPathError(f"{option} {path}: cannot write in {existing} (permission denied)")
    if (refused := _cannot_create_in(existing)) is not None:
        raise OutputPathError(f"{option} {path}: cannot write in {existing} ({refused})")
    if existing != target:
        # A report may create its own folder, not its parents; outside the current folder nothing else is created.
        needed = target.parent if folder else target
        here = Path.cwd().resolve()
        if needed != existing and not target.resolve().is_relative_to(here):
            first_missing = next(p for p in (target, *target.parents) if p.parent == existing)
            raise OutputPathError(f"{option} {path}: folder {first_missing} does not exist "
                                  "(outside the current folder nothing is created; create it first)")
    return path


def _cannot_create_in(folder: Path) -> str | None:
    """Why no file can be made in ``folder``, or None: tried with a file made and removed at once, since
    ``os.access`` says yes to root everywhere, and ``/proc`` or ``/sys`` still refuse.

    >>> import tempfile
    >>> _cannot_create_in(Path(tempfile.mkdtemp())) is None
    True
    """
    import tempfile

    try:
        fd, name = tempfile.mkstemp(prefix=".panto-analytics-check-", dir=folder)
    except OSError as e:
        return e.strerror or str(e)
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(name)
    return None


def is_device(path: Path) -> bool:
    """Whether ``path`` is an existing file that is neither a regular file nor a folder (``/dev/null``, a pipe):
    a table is written to it in ``--output-format``, whatever its name."""
    return path.exists() and not path.is_file() and not path.is_dir()


def to_stdout(output: Path | None) -> bool:
    """Whether the command line asks for a table on stdout: ``-o -``, or ``--output-format`` without ``-o``."""
    ctx = click.get_current_context(silent=True)
    fmt = ctx.meta.get(FORMAT_KEY) if ctx is not None else None
    return (output is not None and str(output) == "-") or (output is None and fmt is not None)


def check_output(ctx, param, value: Path | None) -> Path | None:
    # Checked before any work, so a typo never costs a whole run.
    if value is None or str(value) == "-":
        return value
    return check_output_path(value, WRITERS, "-o")


def _remember_format(ctx: click.Context, param: click.Parameter, value):
    ctx.meta[FORMAT_KEY] = value
    return value


def output_option(fn=None, *, what: str = "Without it a table is printed."):
    """-o FILE|- and --output-format: write csv, parquet or json (by extension, or to stdout) instead of a table.

    ``what`` ends -o's help: what the command does without it. ``@output_option`` or ``@output_option(what=...)``.
    """
    if fn is None:
        return functools.partial(output_option, what=what)
    fn = click.option("--output-format", type=click.Choice(sorted(STDOUT_FORMATS)), default=None, expose_value=False,
                      callback=_remember_format,
                      help="The format of -o - (stdout): csv, json or ndjson [default: csv]. Given without -o, "
                           "the table is written to stdout in this format.")(fn)
    return click.option("--output", "-o", type=click.Path(path_type=Path, allow_dash=True), default=None,
                        callback=check_output,
                        help="Write to FILE; .csv, .parquet, .json or .ndjson chooses the format. "
                             f"'-': stdout, as --output-format says; /dev/null: nothing. {what}")(fn)


def file_output_option(*names: str, dest: str, help: str, suffixes: Iterable[str] | None = tuple(WRITERS)):
    """An option naming a file to write (checked before any work, like -o); ``suffixes`` None: any name."""
    option = names[0]
    allowed = None if suffixes is None else set(suffixes)

    def check(ctx, param, value: Path | None) -> Path | None:
        return None if value is None else check_output_path(value, allowed, option)

    return click.option(*names, dest, type=click.Path(path_type=Path), default=None, callback=check, help=help)


#: Rows a terminal table shows; the rest are counted.
TABLE_ROWS = 200


def terminal_width() -> int | None:
    """The width a printed table must fit: the terminal's (or $COLUMNS), None (no limit) when stdout is neither a
    terminal nor given a width (a table written to a file keeps every column)."""
    import shutil

    if sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit():
        return shutil.get_terminal_size().columns
    return None


def write_frame(df: pl.DataFrame, output: Path | None) -> None:
    """Write ``df`` to ``output`` by extension, to stdout for ``-`` (``--output-format``), or print it as a table."""

    ctx = click.get_current_context(silent=True)
    fmt = ctx.meta.get(FORMAT_KEY) if ctx is not None else None
    if to_stdout(output) or (output is not None and is_device(output)):
        csv = (fmt or "csv") == "csv"
    else:
        csv = output is not None and output.suffix.lower() == ".csv"
    if csv:
        df = csv_ready(df)
    if to_stdout(output):
        text = getattr(df, STDOUT_FORMATS[fmt or "csv"])()
        if text:
            click.echo(text, nl=not text.endswith("\n"))
        return
    if output is None:
        from ..analysis.formatting import render_table
        from .table_keys import key_columns

        command = ctx.command.name if ctx is not None else None
        text, hidden = render_table(df, width=terminal_width(), rows=TABLE_ROWS, key=key_columns(command))
        click.echo(text)
        if len(df) > TABLE_ROWS:
            click.echo(f"({len(df) - TABLE_ROWS:,} of {len(df):,} rows not shown; -o FILE or -o - writes them all)")
        if hidden:
            click.echo(f"({len(hidden)} column{'' if len(hidden) == 1 else 's'} not shown to fit the terminal: "
                       f"{', '.join(hidden)}; -o FILE or -o - writes them all)")
        return
    if is_device(output):
        with open(output, "wb") as sink:
            getattr(df, STDOUT_FORMATS[fmt or "csv"])(sink)
    else:
        output.parent.mkdir(parents=True, exist_ok=True)
        getattr(df, WRITERS[output.suffix.lower()])(output)
    click.echo(f"wrote {len(df)} rows to {output}", err=True)


def csv_ready(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` with each nested column (a list, a struct) as its JSON text, which CSV can hold."""
    import polars as pl

    nested = [c for c, t in df.schema.items() if t.is_nested()]
    if not nested:
        return df
    as_json = [pl.when(pl.col(c).is_null()).then(None)
               .otherwise(pl.struct(pl.col(c).alias("v")).struct.json_encode().str.slice(len('{"v":')).str.strip_suffix("}"))
               .alias(c) for c in nested]
    return df.with_columns(as_json)


def report_skips(report: IngestReport) -> None:
    """Tell stderr what was skipped, file by file: how many lines (or the whole file), and why."""
    from ..errors import WHOLE_FILE
    from ..formats.session_files import TRUNCATED
    from ..phrases import counted

    truncated = {f for (f, reason) in report.skipped if reason == TRUNCATED}
    if truncated:
        click.echo(f"note: skipped the unfinished last line of {counted(len(truncated), 'file')} "
                   "(sessions still being written?)", err=True)
    # A stray file found in a folder was said in one note already (:func:`session_files`).
    invalid = {(f, r): n for (f, r), n in report.skipped.items() if r not in (TRUNCATED, STRAY)}
    if not invalid:
        return
    lines = {(f, r): n for (f, r), n in invalid.items() if not r.startswith(WHOLE_FILE)}
    whole = {f for (f, r) in invalid if r.startswith(WHOLE_FILE)}
    said = ([f"{counted(sum(lines.values()), 'invalid line')} in {counted(len({f for f, _ in lines}), 'file')}"]
            * bool(lines) + [f"{counted(len(whole), 'whole file')}"] * bool(whole))
    click.echo(f"skipped {' and '.join(said)}:", err=True)
    by_file: dict[str, list[tuple[str, int]]] = {}
    for (f, reason), n in sorted(invalid.items()):
        by_file.setdefault(f, []).append((reason, n))
    for f, reasons in by_file.items():
        total = sum(n for r, n in reasons if not r.startswith(WHOLE_FILE))
        click.echo(f"  {f}: {'the whole file' if f in whole and not total else counted(total, 'line')}", err=True)
        for reason, n in sorted(reasons, key=lambda rn: (-rn[1], rn[0])):
            click.echo(f"    {n} x {reason}", err=True)


def friendly_errors(fn):
    """Turn bad input into one clear line on stderr and exit code 1, never a traceback."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except InputError as e:
            hint = "" if kwargs.get("skip_invalid") or not e.skippable else " (--skip-invalid skips it and goes on)"
            click.echo(f"error: {e.for_command_line()}{hint}", err=True)
            sys.exit(1)
        except BrokenPipeError:   # stdout closed by its reader: the console script ends the usual way
            raise
        except OSError as e:   # an output that could not be written after all (a full disk, a folder gone)
            where = f"{e.filename}: {e.strerror}" if e.filename and e.strerror else str(e)
            click.echo(f"error: cannot write {where}", err=True)
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


def engine_options(fn):
    """--engine local|ray and --ray-address: where the per-bucket work over a dataset folder runs."""
    fn = click.option("--ray-address", default=None, metavar="ADDRESS",
                      help="With --engine ray: the Ray cluster to join ('auto', 'ray://head:10001') [default: start "
                           "Ray on this machine].")(fn)
    return click.option("--engine", type=click.Choice(ENGINES), default="local", show_default=True,
                        help="Over a dataset folder: run bucket by bucket here (local) or on Ray Data (ray; "
                             f"{RAY_INSTALL}).")(fn)


def check_engine(paths, engine: str, ray_address: str | None) -> Path | None:
    """The dataset folder PATHS name, to stream over, or None (session files, or session filters given: those
    run in memory); a usage error, before any work, for an engine that cannot run, and the one-line error of
    :func:`read_input_corpus` for a dataset without sessions."""
    ds = dataset_path(paths)
    if ds is not None:
        from ..dataset import read_info

        info = read_info(ds)
        if not info.sessions:  # as in memory (read_input_corpus), not an empty table or a traceback
            raise _nothing_read(paths, IngestReport(files=info.files, sessions=0, messages=info.messages))
    if ds is not None and session_filter().active:
        if engine == "ray":
            raise click.UsageError("session filters (--since, --project, ...) run in memory; --engine ray does not "
                                   "apply with them")
        return None
    if engine == "ray":
        if ds is None:
            raise click.UsageError("--engine ray runs over a dataset folder; write one with "
                                   "'panto-analytics ingest PATH... --dataset DIR'")
        from ..dataset.engines import ray_available

        if not ray_available():
            raise click.UsageError(f"--engine ray needs Ray Data, which is not installed: {RAY_INSTALL}")
    elif ray_address is not None:
        raise click.UsageError("--ray-address is for --engine ray")
    return ds


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
