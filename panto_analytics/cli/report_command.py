"""``report``: what each budget does to a corpus, as HTML, Markdown, PNGs and Parquet."""
from __future__ import annotations

from pathlib import Path

import click

from ..defaults import SEGMENT_KINDS
from ._budget_rules import Share, bootstrap_options, criteria_options, name_window, replay_window, rule_of
from ._notes import command, unpriced_notes
from ._options import budgets_option, cost_options, engine_options, horizon_option, input_options, policy_replay_options, replay_prices
from ._output import check_output_path
from ._reading import open_source

__all__ = ["report"]


@command()
@input_options
@budgets_option()
@criteria_options
@click.option("--output", "--out", "-o", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              callback=lambda ctx, param, value: value and check_output_path(value, None, "-o", folder=True),
              help="Folder to write index.html, report.md, the PNGs and the Parquet files into.")
@click.option("--by", "segment_by", type=click.Choice(SEGMENT_KINDS), multiple=True,
              help="Also plot by segment: model, source_format, project or length (session-length bucket). Repeatable.")
@click.option("--title", default=None, help="The report's title.")
@policy_replay_options(required=False)
@click.option("--max-orphan-rate", type=Share(allow_zero=True), default=None,
              help="Rule (with --window): the cheapest point of the frontier whose orphan rate is at most this.")
@cost_options
@horizon_option
@bootstrap_options
@engine_options
def report(paths, format_, skip_invalid, budgets, min_kept_turns, coverage, max_kept_share, context_window,
           out_dir, segment_by, title, window, reserve, summary_tokens, policies, max_orphan_rate, cost, prices_file,
           summarizer, provider, horizon, resamples, seed, engine, ray_address):
    """A report on what each budget does to the sessions in PATHS: HTML, Markdown, PNGs, Parquet.

    DIR/index.html opens offline (plots embedded); DIR/report.md links the
    PNGs beside it; sweep.parquet, splits.parquet and, where the agents
    recorded compactions, recorded_compactions.parquet (a row per compaction
    and budget; past a few hundred, the sections on them sum them up per
    agent) hold the numbers. The report shows the corpus, the budget table, the plots and a recommended
    budget by the same rules as `recommend`. With --window it leads with the
    decision under that window: the frontier (median cost per session against
    orphan rate, one point per policy and budget, the agents' recorded points
    marked) and the chosen point, every call billed (genai-prices' offline
    table, or --prices FILE); with --policy (repeatable), a section compares
    the policies under that window too.

    Over a dataset folder (ingest --dataset) the report runs bucket by
    bucket, here or with --engine ray: the corpus at a glance, the budget
    table, the recommendation (under --window: the decision, every session
    replayed and billed, the frontier, the replay's section, what compaction
    costs, the policies' comparison and the timelines of the sessions served
    worst), the plots of the splits and turns (--by too, from exact counts
    merged), the recorded compactions and their loss per cut, and
    splits.parquet and recorded_compactions.parquet (streamed task by task),
    equal to the same report in memory; the replay's rows as
    Parquet are left out, named in the report.

    \b
    Examples:
      panto-analytics report data/ -o report/
      panto-analytics report data/ -o report/ --window 32k --prices docs/synth-prices.json
      panto-analytics report data/ -o report/ --window 48k --policy libpanto --policy pi --policy codex
      panto-analytics report ~/.pi/agent/sessions ~/.claude/projects -o report/ --by model --by length
    """
    from ..analysis.report import write_report  # matplotlib: loaded only when a report is asked for

    source = open_source(paths, format_, skip_invalid, engine, ray_address, versions_for=list(policies) or ["libpanto"])
    window, reason = replay_window(window, source, reserve, summary_tokens, tuple(policies))
    if policies and window is None:
        raise click.UsageError("--policy compares policies under a context window: give --window (e.g. 200k)")
    rule = rule_of(min_kept_turns, coverage, max_kept_share, context_window, window, max_orphan_rate)
    with unpriced_notes():
        rep = source.report(budgets, splits_to=out_dir / ".splits.parquet.part", rule=rule,
                            segment_by=list(dict.fromkeys(segment_by)), title=title, inputs=[str(p) for p in paths],
                            window=window, reserve=reserve, summary_tokens=summary_tokens,
                            policies=[p if isinstance(p, str) else p.spec() for p in policies],
                            prices=replay_prices(True, prices_file, summarizer, provider), horizon=horizon,
                            resamples=resamples, seed=seed)
    name_window(rep.recommendation, reason)
    out = write_report(rep, out_dir)
    click.echo(rep.recommendation.headline())
    click.echo(f"wrote {out / 'index.html'} and {out / 'report.md'} ({len(rep.figures)} plots)", err=True)
