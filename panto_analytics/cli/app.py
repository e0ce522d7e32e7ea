"""The ``panto-analytics`` group that every command module registers itself on."""
from __future__ import annotations

import click

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="panto_analytics")
def main() -> None:
    """What does a compaction budget do to real LLM-agent sessions?

    panto-analytics reads recorded sessions (canonical JSONL, pi, Claude Code,
    Codex), finds the turns libpanto sees, and computes libpanto's
    computeSplit for every session and budget, exactly.

    \b
    Start with:
      panto-analytics sweep data/ --budgets 0:200k:21 --plot sweep.png
      panto-analytics splits ~/.claude/projects --budgets 20k -o splits.csv
    """
