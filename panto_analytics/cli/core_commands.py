"""``splits`` and ``sweep``: libpanto's split per session and budget, and its summary."""
from __future__ import annotations

import click

from .app import main
from .options import (
    PLOT_SUFFIXES,
    budgets_option,
    check_engine,
    engine_options,
    file_output_option,
    friendly_errors,
    input_options,
    output_option,
    read_input_corpus,
    write_frame,
)

__all__ = ["splits", "sweep"]


def _splits(paths, format_, skip_invalid, budgets):
    """Every session's split at every budget, sessions without messages included."""
    from ..policy import splits as compute_splits

    corpus = read_input_corpus(paths, format_, skip_invalid)
    return compute_splits(corpus.messages, budgets, sessions=corpus.sessions)


@main.command()
@input_options
@budgets_option()
@output_option
@friendly_errors
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
    ds = check_engine(paths, "local", None)
    if ds is not None and output is not None and output.suffix.lower() == ".parquet":
        from ..dataset.streaming import write_splits

        output.parent.mkdir(parents=True, exist_ok=True)
        rows = write_splits(ds, budgets, output)
        click.echo(f"wrote {rows} rows to {output}", err=True)
        return
    write_frame(_splits(paths, format_, skip_invalid, budgets), output)


@main.command()
@input_options
@budgets_option()
@output_option
@file_output_option("--plot", dest="plot", suffixes=PLOT_SUFFIXES,
                    help="Also save the kept-suffix size distribution per budget as an image (PNG, SVG, PDF).")
@engine_options
@friendly_errors
def sweep(paths, format_, skip_invalid, budgets, output, plot, engine, ray_address):
    """What each budget does across the corpus in PATHS: one row per budget.

    Columns: sessions; noop_share (nothing to summarize); zero_kept_share
    (not even the last turn fits); capped_share; kept_tokens_p10/p50/p90
    (size of the kept verbatim suffix); kept_turns_p50; summarized_share
    (share of all active tokens that would be summarized).

    PATHS may be one dataset folder (`ingest --dataset DIR`): the sweep then
    runs bucket by bucket in bounded memory, here or on Ray (--engine ray),
    with the same figures (--plot still holds every split in memory).

    \b
    Examples:
      panto-analytics sweep data/ --budgets 0:200k:21 --plot sweep.png
      panto-analytics sweep ~/.codex/sessions -b 8k,20k,50k -o sweep.csv
      panto-analytics sweep corpus.ds/ -b 0:200k:21 --engine ray
    """
    ds = check_engine(paths, engine, ray_address)
    if engine == "ray" and plot is not None:
        raise click.UsageError("--plot draws every split in memory; --engine ray does not apply to it")
    if ds is not None and plot is None:
        from ..dataset.streaming import sweep_dataset

        write_frame(sweep_dataset(ds, budgets, engine=engine, address=ray_address), output)
        return
    from ..policy import sweep

    per_session = _splits(paths, format_, skip_invalid, budgets)
    write_frame(sweep(per_session), output)
    if plot is not None:
        from ..analysis.plots import kept_tokens_by_budget

        fig = kept_tokens_by_budget(per_session)
        plot.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(plot, dpi=120, bbox_inches="tight")
        click.echo(f"saved plot to {plot}", err=True)
