"""What the command line says on stderr besides its output: skipped lines, the cache's and the price
table's warnings as plain lines, and bad input as one ``error:`` line (exit 1), never a traceback: every command
declared with :func:`command` says it so.

>>> friendly_errors(lambda: "done")()
'done'
"""
from __future__ import annotations

import contextlib
import functools
import sys
import warnings

import click

from ..errors import STRAY, IngestReport, InputError

__all__ = ["cache_warnings_on_stderr", "command", "friendly_errors", "report_skips", "unpriced_notes", "warnings_as_lines"]


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


def command(name: str | None = None):
    """Declare a command: ``fn`` registered on :data:`~.app.main` as ``name`` (default: its function's name, ``_``
    as ``-``), its bad input one line on stderr (:func:`friendly_errors`). Put it above the command's options.

    >>> from .app import main
    >>> @command("example-command")
    ... def example():
    ...     "An example."
    >>> main.commands.pop("example-command").help
    'An example.'
    """
    from .app import main

    def declare(fn):
        return main.command(name)(friendly_errors(fn))
    return declare
