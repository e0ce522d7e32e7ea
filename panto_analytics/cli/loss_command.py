"""``loss``: what agents really fetched again after the compactions they recorded, against a baseline."""
from __future__ import annotations

import click

from ..phrases import counted
from ._notes import command
from ._options import engine_options, horizon_option, input_options
from ._output import table_outputs, write_frame
from ._reading import open_source

__all__ = ["loss_cmd"]


@command("loss")
@input_options
@horizon_option
@table_outputs(("--cuts", "cuts_out", "one row per cut (each recorded compaction and each pseudo-cut)"))
@engine_options
def loss_cmd(paths, format_, skip_invalid, horizon, output, cuts_out, engine, ray_address):
    """Check the loss measure on the compactions the agents in PATHS recorded.

    After each recorded compaction, and at pseudo-cuts in sessions of the
    same agent that never compacted (after the first call whose context
    reaches the size at which the agent compacted), look at the next
    --horizon tool calls: re-reads of a target read before the cut
    (repeat_reads, repeat_rate), orphan references (orphan_calls,
    orphan_rate), how many of the orphan targets the agent really fetched
    again (refetched_targets of orphan_targets: precision), how many of the
    targets it fetched again were orphans (of fetched_again_targets: recall),
    every call that fetched an orphan target again (refetch_calls,
    refetch_tokens), and the tool calls until the first write, after the cut
    and from the session's start (re-orientation). One row per agent and
    kind of cut (compaction, baseline), with seeded bootstrap intervals of
    precision and recall where at least 30 cuts stand behind a row (a
    warning where fewer do). docs/loss.md states the rules.

    Over a dataset folder (ingest --dataset) the cuts are measured bucket
    by bucket, here or with --engine ray, to the same table; --cuts then
    gets the rows as each bucket gives them (recorded compactions first,
    then pseudo-cuts, each in bucket order; with --engine ray, in the order
    the tasks finish).

    \b
    Examples:
      panto-analytics loss ~/.pi/agent/sessions
      panto-analytics loss data/ --horizon 10 --cuts cuts.csv
      panto-analytics loss corpus.ds/ --engine ray
    """
    from contextlib import nullcontext

    from ..outcomes.recorded_refetch import ENOUGH_CUTS
    from .frame_sink import FrameSink

    source = open_source(paths, format_, skip_invalid, engine, ray_address)
    with FrameSink(cuts_out) if cuts_out is not None else nullcontext() as sink:
        found = source.refetch(horizon=horizon, on_cuts=sink)
    table, agents = found.summary, found.agents
    compacted = set(table.filter(table["cut"] == "compaction")["source_format"].to_list())
    for agent in agents:
        if agent not in compacted:
            click.echo(f"note: {agent}: no recorded compaction, nothing to check", err=True)
    for agent, kind, n in table.select("source_format", "cut", "cuts").rows():
        if n < ENOUGH_CUTS:
            click.echo(f"warning: {agent} {kind}: only {counted(n, 'cut')} behind these figures (no interval: "
                       f"a bootstrap needs {ENOUGH_CUTS})", err=True)
    write_frame(table, output)
