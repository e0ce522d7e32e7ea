"""``sessions``: the sessions table, or the sessions a budget serves worst."""
from __future__ import annotations

import click

from ._notes import command
from ._options import Tokens, input_options
from ._output import output_option, write_frame
from ._reading import open_source

__all__ = ["sessions_cmd"]


@command("sessions")
@input_options
@click.option("--budget", "-b", type=Tokens(), default=None,
              help="Rank the sessions by how badly this budget serves them (worst first).")
@click.option("--worst", type=click.IntRange(min=1), default=None, metavar="N",
              help="With --budget: only the N sessions it serves worst.")
@output_option
def sessions_cmd(paths, format_, skip_invalid, budget, worst, output):
    """One row per session in PATHS: file, format, model, project, timestamps, messages, API calls.

    With --budget B, the sessions ranked by how well B serves them, worst
    first: by the share of the last turn B covers (below 1: libpanto keeps
    nothing verbatim and the turn in progress is summarized away), then by
    the tokens kept. FILE and LINE point at the start of that last turn, so
    you can open it.

    \b
    Examples:
      panto-analytics sessions ~/.claude/projects --since 2026-11-01 --no-subagents
      panto-analytics sessions data/ --budget 8k --worst 10
      panto-analytics sessions ~/.codex/sessions --model gpt-5 -o - --output-format json
    """
    if worst is not None and budget is None:
        raise click.UsageError("--worst N needs --budget B (the budget whose worst-served sessions to list)")
    source = open_source(paths, format_, skip_invalid)
    if budget is None:
        write_frame(source.sessions(), output)
        return
    corpus = source.corpus()
    import polars as pl

    from ..analysis.worst import worst_served

    ranked = worst_served(corpus.messages, budget, worst)
    about = corpus.sessions.select(pl.col("session_id"), "project", "model", "source_format")
    write_frame(ranked.join(about, on="session_id", how="left", maintain_order="left"), output)
