"""``policy-cuts``: each compaction policy's cut at the compactions agents recorded, beside the agent's."""
from __future__ import annotations

import click

from ._notes import command
from ._options import cut_policy_option, input_options
from ._output import table_outputs, write_frame
from ._reading import open_source, versioned_corpus

__all__ = ["policy_cuts_cmd"]


@command("policy-cuts")
@input_options
@cut_policy_option
@table_outputs(("--rows", "rows_out", "one row per (recorded compaction, policy)"))
def policy_cuts_cmd(paths, format_, skip_invalid, policies, output, rows_out):
    """Each policy's cut at every compaction the agents in PATHS recorded, beside what the agent kept.

    The conversation as it stood when the agent compacted is cut by each
    policy (default: every policy but libpanto) at that moment. One row per (policy, source format):
    recorded compactions, exact matches (same first kept message and count),
    and the distance in messages and tokens where they differ (its median,
    _p50: of an even count the mean of the middle two, and its maximum);
    `own` marks the policies the format's agent ran. docs/replay.md explains
    the rules.

    \b
    Examples:
      panto-analytics policy-cuts ~/.pi/agent/sessions
      panto-analytics policy-cuts ~/.codex/sessions --policy codex --policy codex:user_tokens=10k --rows cuts.csv
    """
    if "libpanto" in policies:
        raise click.UsageError("libpanto's split at recorded compactions is `panto-analytics compactions -b LIST`")
    from ..analysis.compactions import policies_vs_agents, recorded_cut_summary
    from ..policy.compaction.recorded_cuts import no_cut_reason

    reason = next((r for r in map(no_cut_reason, policies) if r), None)
    if reason:
        raise click.UsageError(reason)

    corpus = versioned_corpus(open_source(paths, format_, skip_invalid).corpus(), list(policies) or None)
    rows = policies_vs_agents(corpus, list(policies) or None)
    if not rows.height:
        click.echo("no recorded compactions in these sessions", err=True)
    if rows_out is not None:
        write_frame(rows, rows_out)
    write_frame(recorded_cut_summary(rows), output)
