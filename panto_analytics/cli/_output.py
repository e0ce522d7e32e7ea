"""Writing a command's output: -o FILE|- and --output-format, output paths checked before any work, and a
table written by extension, to stdout, or printed to fit the terminal.

>>> check_output_path(Path("out.csv"), WRITERS, "-o")
PosixPath('out.csv')
"""
from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "FORMAT_KEY", "PLOT_SUFFIXES", "STDOUT_FORMATS", "TABLE_ROWS", "WRITERS", "OutputPathError", "check_output",
    "check_output_path", "csv_ready", "file_output_option", "is_device", "output_option", "table_file_option",
    "table_outputs", "terminal_width", "to_stdout", "write_frame",
]


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


def table_file_option(name: str, dest: str, rows: str):
    """An option naming a file to also write a table to (``rows``: what the table holds), in the format its suffix
    names, as -o writes it.

    >>> table_file_option("--cuts", "cuts_out", "one row per cut")(lambda cuts_out: None).__click_params__[0].help
    'Also write one row per cut to this file (.csv, .parquet, .json, .ndjson).'
    """
    return file_output_option(name, dest=dest, help=f"Also write {rows} to this file (.csv, .parquet, .json, .ndjson).")


def table_outputs(*tables: tuple[str, str, str]):
    """A command's table outputs: -o and --output-format (:func:`output_option`), then for each ``(name, dest,
    rows)`` an option naming a file to also write ``rows`` to (:func:`table_file_option`), in that order.

    >>> @table_outputs(("--cuts", "cuts_out", "one row per cut"))
    ... def cmd(output, cuts_out): ...
    >>> [p.name for p in reversed(cmd.__click_params__)]
    ['output', 'output_format', 'cuts_out']
    """
    def decorate(fn):
        for table in reversed(tables):
            fn = table_file_option(*table)(fn)
        return output_option(fn)
    return decorate


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
