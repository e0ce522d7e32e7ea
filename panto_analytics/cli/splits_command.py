"""``splits``: libpanto's split per session and budget."""
from __future__ import annotations

import click

from ._notes import command
from ._options import budgets_option, input_options
from ._output import output_option, write_frame
from ._reading import open_source

__all__ = ["splits"]


@command()
@input_options
@budgets_option()
@output_option
def splits(paths, format_, skip_invalid, budgets, output):
    """libpanto's computeSplit for every session in PATHS at every budget.

    One row per (session_id, budget): prefix_end and kept_turns exactly as
    libpanto computes them, plus kept_tokens, summarized_tokens,
    active_tokens, n_turns, noop (nothing to summarize), capped (more
    than 4096 turns, of which libpanto sees only the first 4096) and
    request_bytes (the size of the request libpanto sends to its summarizer,
    in UTF-8 bytes; empty for a no-op; `panto-analytics request` prints it).

    PATHS may be one dataset folder (`ingest --dataset DIR`); then -o
    FILE.parquet is written bucket after bucket, without holding the rows
    (sessions grouped by bucket).

    \b
    Examples:
      panto-analytics splits data/ --budgets 20k
      panto-analytics splits ~/.pi/agent/sessions -b 8k,20k,50k -o splits.parquet
      panto-analytics splits corpus.ds/ -b 0:200k:21 -o splits.parquet
    """
    source = open_source(paths, format_, skip_invalid)
    if output is not None and output.suffix.lower() == ".parquet":
        rows = source.write_splits(budgets, output)
        click.echo(f"wrote {rows} rows to {output}", err=True)
        return
    write_frame(source.splits(budgets), output)
