"""``recommend``: pick keep_verbatim for a corpus by a stated rule, and say why."""
from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click

from ._budget_rules import Share, bootstrap_options, criteria_options, name_window, replay_window, rule_of
from ._notes import command, unpriced_notes
from ._options import budgets_option, cost_options, engine_options, horizon_option, input_options, policy_replay_options, replay_prices
from ._output import output_option, terminal_width, write_frame
from ._reading import open_source

if TYPE_CHECKING:
    from ..analysis.choose import Choice

__all__ = ["recommend_cmd"]


@command("recommend")
@input_options
@budgets_option()
@criteria_options
@click.option("--max-orphan-rate", type=Share(allow_zero=True), default=None,
              help="Rule (with --window): the cheapest point of the frontier (median cost per session against "
                   "orphan rate, over every policy and budget) whose orphan rate is at most this, as 0.05 or 5%.")
@policy_replay_options(required=False)
@cost_options
@horizon_option
@bootstrap_options
@output_option
@engine_options
def recommend_cmd(paths, format_, skip_invalid, budgets, min_kept_turns, coverage, max_kept_share,
                  context_window, max_orphan_rate, window, reserve, summary_tokens, policies, cost, prices_file,
                  summarizer, provider, horizon, resamples, seed, output, engine, ray_address):
    """Pick keep_verbatim for the sessions in PATHS by a stated rule, and say why.

    Prints the chosen budget, the rule, the reasons, the table rows around
    the choice, and warnings about sessions that keep nothing verbatim (their
    newest turn alone exceeds the budget) or are capped at 4096 turns.
    Exits with 1 when no budget tried meets the rule. -o writes the whole
    per-budget table with each rule's coverage; in JSON (-o - --output-format
    json, or -o FILE.json) it writes one object instead: budget, policy,
    rule, window, reserve, the rows around the choice, reasons and warnings.
    With -o - the account goes to stderr, so stdout holds only the output.

    With --window the rules run on per-session outcomes of a replay under
    that window, for every policy given (--policy, repeatable; libpanto at
    every budget), with every call billed (genai-prices' offline table, or
    --prices FILE) and the loss of every compaction measured (orphan
    references among the next --horizon tool calls): they count sessions
    (-k 2 -p 90%: 90% of the sessions that reach the trigger keep 2 whole
    turns at every compaction they have), and a budget at or above the
    trigger (window - reserve) is never proposed. --max-orphan-rate picks
    the cheapest point of the frontier (median cost per session against
    pooled orphan rate) that meets it, and says what the next budgets up and
    down cost and lose.

    Every figure has its interval: the sessions are resampled (--resamples,
    seeded by --seed, so a run repeats), the table recomputed and the rule
    rerun on each resample; -o outputs and JSON carry each figure's *_lo and
    *_hi (90% of resamples between them), and the chosen budget its spread
    ("47.5k (90% of resamples: 37.5k-60k; 5 sessions)"; JSON: interval,
    sessions). With fewer than 3 sessions it says so instead.

    PATHS may be one dataset folder (`ingest --dataset DIR`): the rules then
    run bucket by bucket, here or on Ray (--engine ray), with the same result
    (without --window in bounded memory; with it, keeping one row per
    policy, session and budget).

    \b
    Examples:
      panto-analytics recommend data/
      panto-analytics recommend ~/.claude/projects -k 3 -p 95%
      panto-analytics recommend data/ -s 0.25 --context-window 200k -b 0:200k:81
      panto-analytics recommend corpus.ds/ -k 2 -p 90% --engine ray
      panto-analytics recommend data/ --window 32k -k 1 -p 50% -o - --output-format json
      panto-analytics recommend data/ --window 32k --policy libpanto --policy pi --max-orphan-rate 5% --prices docs/synth-prices.json
    """
    given = [p if isinstance(p, str) else p.spec() for p in policies]
    source = open_source(paths, format_, skip_invalid, engine, ray_address, versions_for=given or ["libpanto"])
    window, reason = replay_window(window, source, reserve, summary_tokens, tuple(policies))
    if window is None and (policies or max_orphan_rate is not None):
        raise click.UsageError("--policy and --max-orphan-rate judge a replay: give --window (e.g. 200k)")
    rule = rule_of(min_kept_turns, coverage, max_kept_share, context_window, window, max_orphan_rate)
    with unpriced_notes():
        chosen = source.choose_budget(budgets, rule, window=window, reserve=reserve, summary_tokens=summary_tokens,
                                      policy=given or None, prices=replay_prices(True, prices_file, summarizer, provider),
                                      summarizer=summarizer,
                                      horizon=horizon, resamples=resamples, seed=seed)
    if chosen.price_source is not None:
        click.echo(f"prices: {chosen.price_source}", err=True)
    name_window(chosen.choice, reason)
    _print_recommendation(chosen.choice, output)


def _print_recommendation(rec: Choice, output) -> None:
    """The account (on stderr when stdout carries the output), the table or object to ``output``; exit 1 when no
    budget meets the rule."""
    ctx = click.get_current_context(silent=True)
    fmt = ctx.meta.get("panto_analytics.output_format") if ctx is not None else None
    to_stdout = (output is not None and str(output) == "-") or (output is None and fmt is not None)
    click.echo(rec.to_text(width=None if to_stdout else terminal_width()), err=to_stdout)
    as_json = (to_stdout and fmt == "json") or (output is not None and str(output) != "-"
                                                 and output.suffix.lower() == ".json")
    if as_json:
        text = json.dumps(rec.to_dict(), indent=2, default=str)
        if to_stdout:
            click.echo(text)
        else:
            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_text(text + "\n", encoding="utf-8")
            click.echo(f"wrote the recommendation to {output}", err=True)
    elif to_stdout or output is not None:
        write_frame(rec.table, output)
    if rec.budget is None:
        sys.exit(1)
