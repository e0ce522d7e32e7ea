"""The ``panto-analytics`` group that every command module registers itself on."""
from __future__ import annotations

import atexit
import os
import sys
import threading

import click

__all__ = ["SIGTERM_STATUS", "OneLineGroup", "leave", "main", "run"]


class OneLineGroup(click.Group):
    """A click group whose usage errors are one line on stderr (exit 2), not a usage block."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.ClickException as e:
            where = f" (see '{e.ctx.command_path} --help')" if isinstance(e, click.UsageError) and e.ctx else ""
            click.echo(f"error: {e.format_message()}{where}", err=True)
            sys.exit(e.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


@click.group(cls=OneLineGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="panto_analytics")
def main() -> None:
    """What does a compaction budget do to real LLM-agent sessions?

    panto-analytics reads recorded sessions (canonical JSONL, pi, Claude Code,
    Codex), finds the turns libpanto sees, and computes libpanto's
    computeSplit for every session and budget, exactly.

    Every command that reads sessions takes PATHS (files, folders, globs;
    none: ~/.pi/agent/sessions, ~/.claude/projects and ~/.codex/sessions,
    those that exist) and the filters --since/--until DATE, --project NAME,
    --model NAME and --no-subagents.

    \b
    Start with:
      panto-analytics sweep data/ --budgets 0:200k:21 --plot sweep.png
      panto-analytics splits ~/.claude/projects --budgets 20k -o splits.csv
    """


def run() -> None:
    """The ``panto-analytics`` console script: :func:`main` in a process of the command line's own.

    Marked as such (:func:`~panto_analytics.ingest.parallel.as_program`), a
    read of session files keeps pandas out of it (0.3 s of CPU saved); calling
    :func:`main` in process (a test's ``CliRunner``, a notebook) leaves the
    caller's process as it is.
    """
    from ..ingest import parallel  # the standard library only

    parallel.as_program()
    _end_on_sigterm()
    try:
        main()
    except SystemExit as done:
        parallel.close()   # done by the command already, unless a signal came just before its own close()
        leave(done.code)
    parallel.close()
    leave(0)


#: The exit status of a console script ended by SIGTERM: 128 + 15, as a shell reports a process the signal killed.
SIGTERM_STATUS = 143


def _end_on_sigterm() -> None:
    """Make SIGTERM (``timeout``, ``kill``) end the console script as Ctrl-C does: by an exception in the main
    thread, so that its ``finally`` blocks and context managers run (a dataset's spill folder is removed, an
    unfinished output file too); the status is :data:`SIGTERM_STATUS`. A worker process forked from this one
    gets SIGTERM's default (it ends at once), as before."""
    import signal

    main_pid = os.getpid()

    def end(signum: int, frame: object) -> None:
        if os.getpid() != main_pid:   # a forked worker: the default, which ends it
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        raise SystemExit(SIGTERM_STATUS)

    signal.signal(signal.SIGTERM, end)


def leave(code: object) -> None:
    """End the console script's process with ``code`` (as :class:`SystemExit` reads it), skipping the teardown.

    Python's teardown frees every object and module one by one: about 0.1 s
    of CPU after a read (Polars, Arrow, NumPy and the frames), and nobody
    waits for it. So the output is flushed, the ``atexit`` hooks run, and
    the process ends at once. Where that is not plainly safe (a thread of
    the command's own still running, an output that cannot be flushed, such
    as a closed pipe), the process ends the usual way.
    """
    status = 0 if code is None else code if isinstance(code, int) else 1
    others = [t for t in threading.enumerate() if t is not threading.current_thread() and not t.daemon and t.is_alive()]
    if not isinstance(code, (int, type(None))) or others:
        raise SystemExit(code)
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:   # None where the shell closed it (``>&-``, ``2>&-``): nothing to flush
                stream.flush()
    except (OSError, ValueError):   # a closed pipe, a closed stream: Python's own exit reports it
        raise SystemExit(code) from None
    atexit._run_exitfuncs()
    os._exit(status)
