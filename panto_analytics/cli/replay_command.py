"""``replay``: compaction over each session's life under a context window, for many budgets."""
from __future__ import annotations

import contextlib

import click

from ._notes import command, unpriced_notes
from ._options import budgets_option, cost_options, engine_options, horizon_option, input_options, policy_replay_options, replay_prices
from ._output import table_outputs, write_frame
from ._reading import open_source

__all__ = ["replay_cmd"]


@command("replay")
@input_options
@budgets_option()
@policy_replay_options(required=True)
@cost_options
@table_outputs(("--sessions", "sessions_out", "one row per (session, budget)"),
               ("--events", "events_out", "one row per compaction event"))
@click.option("--loss", "with_loss", is_flag=True,
              help="Add what each compaction loses: orphan references among the next --horizon tool calls "
                   "(orphan_calls, orphan_rate, refetch_tokens; docs/loss.md), to the table, --sessions and --events.")
@horizon_option
@engine_options
def replay_cmd(paths, format_, skip_invalid, budgets, window, reserve, summary_tokens, policies, cost, prices_file,
               summarizer, provider, output, sessions_out, events_out,
               with_loss, horizon, engine, ray_address):
    """Replay libpanto's compaction over each session's life in PATHS.

    An agent compacts when its context nears the model's window, again and
    again over a long session. This walks every recorded session call by
    call: once the simulated context passes WINDOW - RESERVE, libpanto's
    computeSplit runs on the transcript as it stands, the summarized prefix
    is replaced by a summary of --summary-tokens, and the walk goes on.

    One row per budget: sessions compacted, compactions per session, events
    that keep no whole turn, turns and tokens kept at events, summarizer
    input (request bytes), and sessions whose context overflowed the window
    or stayed above the trigger after compacting. A _p50 is the median: of
    an even count the mean of the middle two (p10 and p90 are observed
    values). docs/replay.md states the rules.

    With --policy (repeatable), the same replay runs under each policy that
    agents ship (pi, pi-whole-turn, codex, claude-code, gemini-cli, and the
    last-n-turns baseline, beside libpanto) and the table compares them: one
    row per policy (per budget for libpanto), with compactions, kept tokens
    percentiles, summarized tokens, summarizer input and overflow.

    With --cost (or --prices FILE), every call is billed: before a
    session's first compaction as recorded, after it with the prompt the
    compaction left and the cache reads it allows, plus one summarizer call
    per compaction. The --sessions rows gain the recorded, replayed and
    summarizer cost, the --events rows each summarizer call's cost, and the
    table the cost per session (p50, p90) and the totals.

    Over a dataset folder (ingest --dataset) each bucket replays its own
    sessions, here or with --engine ray, to the same table; --sessions and
    --events then get the same rows as each task gives them (with several
    policies interleaved task by task, not policy after policy; with
    --engine ray, in the order the tasks finish).

    \b
    Examples:
      panto-analytics replay data/ --window 200k
      panto-analytics replay ~/.claude/projects --window 200k -b 8k,20k,50k --events events.parquet
      panto-analytics replay data/ --window 200k -b 20k --policy libpanto --policy pi --policy codex
      panto-analytics replay ~/.claude/projects -w 200k -b 20k --policy libpanto --policy claude-code --cost
      panto-analytics replay data/ --window 64k -b 8k,20k --policy libpanto --policy claude-code --loss
      panto-analytics replay corpus.ds/ --window 200k -b 20k --cost --engine ray
    """
    from ..policy.compaction.summary import budgets_shown
    from .frame_sink import FrameSink

    source = open_source(paths, format_, skip_invalid, engine, ray_address, messages_only=True,
                         versions_for=list(policies) or ["libpanto"])
    with contextlib.ExitStack() as files:
        # The rows asked for go to their files as they come (a dataset: task by task); the table is computed
        # from the columns it reads. (Opened events first: the files close in reverse, sessions first, as
        # write_frame writes them in memory.)
        ids = ("session_id",)  # plain strings from a dataset's tasks, Categorical in memory
        to_events, to_sessions = (None if t is None else files.enter_context(FrameSink(t, categorical=ids))
                                  for t in (events_out, sessions_out))

        def on_rows(events, sessions):
            for sink, rows in ((to_sessions, sessions), (to_events, events)):
                if sink is not None:
                    sink(rows)

        with unpriced_notes():
            result = source.replay_table(budgets, window=window, reserve=reserve, summary_tokens=summary_tokens,
                                         policy=list(policies) or None,
                                         prices=replay_prices(cost, prices_file, summarizer, provider),
                                         summarizer=summarizer,
                                         with_loss=with_loss, horizon=horizon,
                                         on_rows=on_rows if to_events or to_sessions else None)
        click.echo(f"summary: {result.summary_tokens:,} tokens ({result.summary_source})", err=True)
        if result.price_source is not None:
            click.echo(f"prices: {result.price_source}", err=True)
    write_frame(budgets_shown(result.table), output)
