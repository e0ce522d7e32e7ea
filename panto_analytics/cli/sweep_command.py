"""``sweep``: what each budget does across a corpus, one row per budget."""
from __future__ import annotations

import click

from ._notes import command
from ._options import budgets_option, engine_options, input_options
from ._output import PLOT_SUFFIXES, file_output_option, output_option, write_frame
from ._reading import open_source

__all__ = ["sweep"]


@command()
@input_options
@budgets_option()
@output_option
@file_output_option("--plot", dest="plot", suffixes=PLOT_SUFFIXES,
                    help="Also save the kept-suffix size distribution per budget as an image (PNG, SVG, PDF).")
@engine_options
def sweep(paths, format_, skip_invalid, budgets, output, plot, engine, ray_address):
    """What each budget does across the corpus in PATHS: one row per budget.

    Columns: sessions; noop_share (nothing to summarize); zero_kept_share
    (not even the last turn fits); capped_share; kept_tokens_p10/p50/p90
    (size of the kept verbatim suffix); kept_turns_p50; summarized_share
    (share of all active tokens that would be summarized). Its percentiles
    are observed values, whole tokens and turns: of an even count the p50
    is the larger middle one (the same from a dataset, bucket by bucket).

    PATHS may be one dataset folder (`ingest --dataset DIR`): the sweep then
    runs bucket by bucket in bounded memory, here or on Ray (--engine ray),
    with the same figures (--plot still holds every split in memory).

    \b
    Examples:
      panto-analytics sweep data/ --budgets 0:200k:21 --plot sweep.png
      panto-analytics sweep ~/.codex/sessions -b 8k,20k,50k -o sweep.csv
      panto-analytics sweep corpus.ds/ -b 0:200k:21 --engine ray
    """
    source = open_source(paths, format_, skip_invalid, engine, ray_address)
    if plot is None:
        write_frame(source.sweep(budgets), output)
        return
    from ..policy import sweep

    per_session = source.splits(budgets)
    write_frame(sweep(per_session), output)
    from ..analysis.plots import kept_tokens_by_budget

    fig = kept_tokens_by_budget(per_session)
    plot.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(plot, dpi=120, bbox_inches="tight")
    click.echo(f"saved plot to {plot}", err=True)
