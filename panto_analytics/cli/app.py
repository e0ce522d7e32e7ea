"""The ``panto-analytics`` group that every command module registers itself on."""
from __future__ import annotations

import sys

import click

__all__ = ["OneLineGroup", "main", "run"]


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
    main()
