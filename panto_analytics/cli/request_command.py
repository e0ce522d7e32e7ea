"""``request``: the exact text libpanto would send to its summarizer for one session at one budget."""
from __future__ import annotations

import sys

import click

from ._notes import command
from ._options import Tokens, input_options
from ._output import file_output_option
from ._reading import open_source

__all__ = ["request"]


@command()
@input_options
@click.option("--budget", "-b", type=Tokens(), required=True, help="keep_verbatim, in tokens (20k, 1.5M, ...).")
@click.option("--session", "session_id", default=None,
              help="The session, where PATHS hold more than one: its session_id, as `splits` prints it, or a "
                   "prefix of it that no other session shares (a terminal table's shortened id).")
@file_output_option("--output", "-o", dest="output", suffixes=None,
                    help="Write the request to this file instead of stdout.")
def request(paths, format_, skip_invalid, budget, session_id, output):
    """The summarizer request libpanto would send for one session of PATHS at --budget.

    libpanto keeps the newest whole turns that fit in the budget and sends
    the older part of the active window to a summarizer, framed by
    buildRequestBody (with the previous summary in its own section). This
    prints that text exactly (its bytes, nothing added), re-read from the session's files; its length
    in UTF-8 bytes is the split's request_bytes. A budget at which nothing
    is summarized sends no request: then nothing is printed, and stderr says
    so.

    \b
    Examples:
      panto-analytics request data/0963a6d2-9c87-43a8-8b29-8037e82ed488.jsonl --budget 20k
      panto-analytics request ~/.claude/projects --session 5f1c... -b 50k -o request.txt
    """
    from ..analysis.exact_request import summary_request
    from ..analysis.timeline import pick_session

    messages = open_source(paths, format_, skip_invalid, messages_only=True).messages()
    ids = messages["session_id"].cast(str).unique(maintain_order=True).to_list()
    if session_id is None:
        if len(ids) != 1:
            raise click.UsageError(f"PATHS hold {len(ids)} sessions: name one with --session "
                                   "(`panto-analytics splits` lists them)")
        session_id = ids[0]
    else:
        try:
            session_id = pick_session(ids, session_id)
        except ValueError as e:
            raise click.UsageError(f"--session: {e}") from None
    text = summary_request(messages, session_id, budget)
    if text is None:
        click.echo(f"nothing to summarize at {budget:,} tokens: the whole active window fits, and libpanto sends "
                   "no request", err=True)
        return
    exact = text.encode("utf-8")  # request_bytes of them: nothing added (a newline), nothing taken (an escape)
    if output is None:
        stdout = click.get_binary_stream("stdout")
        stdout.write(exact)
        stdout.flush()
        if not exact.endswith(b"\n") and sys.stdout.isatty():   # the prompt on a line of its own, not the request's
            click.echo("", err=True)
    else:
        output.parent.mkdir(parents=True, exist_ok=True)  # checked before any work: only inside the current folder
        output.write_bytes(exact)
        click.echo(f"wrote {len(exact)} bytes to {output}", err=True)
