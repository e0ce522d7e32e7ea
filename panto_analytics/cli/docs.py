"""The command-line reference, generated from ``--help`` (sqlite-utils style).

``python -m panto_analytics.cli.docs > docs/cli.md`` rewrites
``docs/cli.md``; a test fails when it is out of date.
"""
from __future__ import annotations

import click
from click.testing import CliRunner

from . import main

__all__ = ["cli_reference"]

_WIDTH = 100


def _commands(group: click.Group, prefix: list[str]):
    """Every command under ``group``, depth first, as (path, command)."""
    for name in sorted(group.commands):
        command = group.commands[name]
        yield [*prefix, name], command
        if isinstance(command, click.Group):
            yield from _commands(command, [*prefix, name])


def _help(args: list[str]) -> str:
    result = CliRunner().invoke(main, [*args, "--help"], terminal_width=_WIDTH, prog_name="panto-analytics")
    return result.output.rstrip() + "\n"


def cli_reference() -> str:
    """Markdown: the top-level ``--help``, then each command's."""
    parts = ["# Command-line reference\n",
             "Generated from `--help` by `python -m panto_analytics.cli.docs > docs/cli.md`; do not edit.\n",
             "```\n" + _help([]) + "```\n"]
    for path, _ in _commands(main, []):
        parts.append(f"## panto-analytics {' '.join(path)}\n")
        parts.append("```\n" + _help(path) + "```\n")
    return "\n".join(parts)


if __name__ == "__main__":
    print(cli_reference(), end="")
