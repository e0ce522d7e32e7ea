"""``timeline``: one session call by call: its context as recorded and replayed, compactions, cache breaks."""
from __future__ import annotations

import click

from ._notes import command
from ._options import Tokens, horizon_option, input_options, replay_options
from ._output import file_output_option
from ._reading import open_source

__all__ = ["timeline_cmd"]

TIMELINE_SUFFIXES = (".png", ".svg", ".pdf", ".html")


@command("timeline")
@input_options
@click.option("--session", "session_id", default=None,
              help="The session, where PATHS hold more than one: its session_id or a prefix only it starts with.")
@replay_options(required=False)
@click.option("--policy", default="libpanto", show_default=True, metavar="NAME[:k=v,...]",
              help="The policy replayed beside the recording (with --window and --budget).")
@click.option("--budget", "-b", type=Tokens(), default=None,
              help="keep_verbatim of the replayed policy, in tokens (with --window).")
@click.option("--prices", "prices_file", type=click.Path(exists=True, dir_okay=False), default=None,
              metavar="FILE", help="A LiteLLM price file [default: genai-prices' bundled table, offline].")
@horizon_option
@file_output_option("--output", "-o", dest="output", suffixes=TIMELINE_SUFFIXES,
                    help="Write the plot (.png, .svg, .pdf) or a page with the plot and its tables (.html).")
def timeline_cmd(paths, format_, skip_invalid, session_id, window, reserve, summary_tokens, policy, budget,
                 prices_file, horizon, output):
    """One session of PATHS call by call: context, compactions, prompt cache, cost.

    For every API call: the context as recorded and, with --window and
    --budget, as --policy would have had it; each compaction the agent
    recorded and each the policy would make, with the context before and
    after it and what the agent fetched again over the next --horizon tool
    calls; what each call read from the prompt cache, wrote to it and sent
    uncached, and why the cache broke where it did (first call, compaction,
    model switch, idle past the cache's life), with what each break cost.
    Prints the compactions and the cache breaks; -o writes the plot, or an
    HTML page with the plot and both tables.

    \b
    Examples:
      panto-analytics timeline data/0963a6d2-9c87-43a8-8b29-8037e82ed488.jsonl -o out/timeline.png
      panto-analytics timeline data/ --session 0963a6d2 -w 32k -b 4k -o out/timeline.html
    """
    import polars as pl

    from ..analysis.timeline import pick_session, session_timeline
    from ._output import write_frame

    if (window is None) != (budget is None):
        raise click.UsageError("--window and --budget go together: the replay runs at one budget in one window")
    corpus = open_source(paths, format_, skip_invalid).corpus()
    ids = corpus.messages["session_id"].cast(str).unique(maintain_order=True).to_list()
    try:
        chosen = pick_session(ids, session_id)
    except ValueError as e:
        raise click.UsageError(f"{e}: --session names one (`panto-analytics sessions` lists them)") from None
    tl = session_timeline(corpus.messages, chosen, compactions=corpus.compactions, sessions=corpus.sessions,
                          window=window, policy=policy, budget=budget, reserve=reserve,
                          summary_tokens=summary_tokens, prices=prices_file if prices_file else True,
                          horizon=horizon)
    click.echo(str(tl), err=True)
    if output is None:
        breaks = tl.calls.filter(pl.col("break_cause").is_not_null()).select(
            "call", "seq", "model", "context", "cache_read", "cache_write", "break_cause", "break_cost_usd")
        click.echo("compactions:", err=True)
        write_frame(tl.compactions, None)
        click.echo("cache breaks:", err=True)
        write_frame(breaks, None)
        return
    from ..analysis.plots import save, timeline

    fig = timeline(tl)
    if output.suffix.lower() == ".html":
        from ..analysis.plots import png_bytes
        from ..analysis.report.render import timeline_html

        output.write_text(timeline_html(tl, png_bytes(fig)))
    else:
        save(fig, output)
    click.echo(f"wrote {output}", err=True)
