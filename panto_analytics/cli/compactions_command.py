"""``compactions``: what agents kept at their recorded compactions, beside libpanto's split at that moment."""
from __future__ import annotations

import click

from ..defaults import DEFAULT_COMPACTION_BUDGETS
from ._notes import command
from ._options import budgets_option, input_options
from ._output import PLOT_SUFFIXES, file_output_option, output_option, to_stdout, write_frame
from ._reading import open_source

__all__ = ["compactions_cmd"]


@command("compactions")
@input_options
@budgets_option(default=DEFAULT_COMPACTION_BUDGETS)
@output_option(what="Without it the table of compactions is printed; with it, one row per (compaction, budget) "
                   "with every column.")
@file_output_option("--plot", dest="plot", suffixes=PLOT_SUFFIXES,
                    help="Also save a plot (.png, .svg or .pdf): libpanto's kept tokens per budget against the "
                         "agents'.")
def compactions_cmd(paths, format_, skip_invalid, budgets, output, plot):
    """What the agents in PATHS kept at each compaction they recorded, beside libpanto's split.

    For every recorded compaction (pi, Claude Code, Codex), libpanto's
    computeSplit runs on the conversation as it stood when the agent
    compacted, at each budget. One row per compaction: session, anchor (seq
    of the summary message), the context the agent recorded before
    compacting, the agent's first kept message, kept messages and kept
    tokens (in libpanto's turn costs: Claude Code keeps none unless it
    preserved a segment, Codex keeps the user messages of its replacement
    history, pi keeps from its first kept entry), then libpanto's kept turns
    and tokens per budget.

    \b
    Examples:
      panto-analytics compactions ~/.pi/agent/sessions -b 8k,20k,50k
      panto-analytics compactions ~/.claude/projects -b 20k -o compactions.parquet --plot kept.png
    """
    from ..analysis.compactions import agent_vs_libpanto, compaction_table

    corpus = open_source(paths, format_, skip_invalid).corpus()
    rows = agent_vs_libpanto(corpus, budgets)
    if plot is not None:
        from ..analysis.plots import agent_vs_libpanto_kept, save

        save(agent_vs_libpanto_kept(rows), plot)
        click.echo(f"wrote {plot}", err=True)
    if not rows.height:
        click.echo("no recorded compactions in these sessions", err=True)
    if output is not None or to_stdout(None):
        write_frame(rows, output)
    else:
        write_frame(compaction_table(rows), None)
