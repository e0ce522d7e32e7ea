"""``report`` and ``recommend``: from a corpus to a budget, with the reasons and the pictures."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..defaults import DEFAULT_COVERAGE, DEFAULT_MIN_KEPT_TURNS, SEGMENT_KINDS
from .app import main
from .options import (
    Tokens,
    budgets_option,
    check_engine,
    check_output_path,
    check_replay,
    cost_options,
    engine_options,
    friendly_errors,
    horizon_option,
    input_options,
    output_option,
    policy_option,
    read_input_corpus,
    replay_options,
    replay_prices,
    terminal_width,
    unpriced_notes,
    versioned_corpus,
    write_frame,
)

if TYPE_CHECKING:
    from ..analysis.choose import Choice, Rule

__all__ = ["Share", "criteria_options", "recommend_cmd", "report"]



class Share(click.ParamType):
    """A share written as 0.9 or 90%."""

    name = "SHARE"

    def __init__(self, allow_zero: bool = False):
        self.allow_zero = allow_zero

    def convert(self, value, param, ctx):
        if isinstance(value, float):
            return value
        text = str(value).strip()
        try:
            share = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            self.fail(f"not a share: {value!r} (examples: 0.9, 90%)", param, ctx)
        if not (0 <= share <= 1 if self.allow_zero else 0 < share <= 1):
            self.fail(f"a share must be in {'[0' if self.allow_zero else '(0'}, 1], got {value!r}", param, ctx)
        return share


def criteria_options(fn):
    """The rules a recommended budget must meet (see :mod:`panto_analytics.analysis.choose.rule`)."""
    options = [
        click.option("--min-kept-turns", "-k", type=click.IntRange(min=1), default=None,
                     help="Rule: the smallest budget at which COVERAGE of sessions keep at least K whole turns "
                          f"(or all of theirs). The default rule is -k {DEFAULT_MIN_KEPT_TURNS}."),
        click.option("--coverage", "-p", type=Share(), default=DEFAULT_COVERAGE, show_default=True,
                     help="Share of sessions (with turns) a rule must hold for, as 0.9 or 90%."),
        click.option("--max-kept-share", "-s", type=Share(), default=None,
                     help="Rule: the largest budget at which the kept suffix stays within S x CONTEXT_WINDOW "
                          "tokens for COVERAGE of sessions. Needs --context-window."),
        click.option("--context-window", type=Tokens(), default=None,
                     help="The model's context window in tokens (e.g. 200k), for --max-kept-share."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _rule(min_kept_turns, coverage, max_kept_share, context_window, window=None, max_orphan_rate=None) -> Rule:
    """The one :class:`~panto_analytics.analysis.choose.rule.Rule` of the options, or a usage error."""
    from ..analysis.choose import Rule

    if window is not None and context_window is None:
        context_window = window if max_kept_share is not None else None
    if max_kept_share is not None and context_window is None:
        raise click.UsageError("--max-kept-share needs --context-window (e.g. --context-window 200k)")
    if context_window is not None and max_kept_share is None:
        raise click.UsageError("--context-window is used by --max-kept-share; give both")
    if window is None and max_orphan_rate is not None:
        raise click.UsageError("--max-orphan-rate judges a replay: give --window (e.g. 200k)")
    return Rule(min_kept_turns=min_kept_turns, coverage=coverage, max_kept_share=max_kept_share,
                context_window=context_window, max_orphan_rate=max_orphan_rate)


def bootstrap_options(fn):
    """--resamples and --seed: the bootstrap over sessions behind every interval (analysis/choose/bootstrap.py)."""
    from ..defaults import DEFAULT_RESAMPLES, DEFAULT_SEED

    fn = click.option("--seed", type=click.IntRange(min=0), default=DEFAULT_SEED, show_default=True,
                      help="The bootstrap's seed: the same seed and sessions give the same intervals.")(fn)
    return click.option("--resamples", type=click.IntRange(min=0), default=DEFAULT_RESAMPLES, show_default=True,
                        metavar="N", help="Resamples of the sessions behind each interval (0: no intervals).")(fn)


@main.command("recommend")
@input_options
@budgets_option()
@criteria_options
@click.option("--max-orphan-rate", type=Share(allow_zero=True), default=None,
              help="Rule (with --window): the cheapest point of the frontier (median cost per session against "
                   "orphan rate, over every policy and budget) whose orphan rate is at most this, as 0.05 or 5%.")
@replay_options(required=False)
@policy_option
@cost_options
@horizon_option
@bootstrap_options
@output_option
@engine_options
@friendly_errors
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
    from ..analysis.choose import choose_budget

    check_replay(window, reserve, summary_tokens, tuple(policies))   # before any reading where a window is given
    ds = check_engine(paths, engine, ray_address)
    corpus = reason = hint = None
    if window is None and ds is None and engine != "ray":
        corpus = read_input_corpus(paths, format_, skip_invalid)
        window, reason, hint = _implied_window(corpus.sessions)
        check_replay(window, reserve, summary_tokens, tuple(policies))
    elif window is None and ds is not None:  # the same window from the dataset's sessions table
        from ..dataset.store import collect, scan_dataset

        sessions = collect(scan_dataset(ds, "sessions").select("session_id", "model", "context_window"), ds)
        window, reason, hint = _implied_window(sessions)
        check_replay(window, reserve, summary_tokens, tuple(policies))
    if window is None and (policies or max_orphan_rate is not None):
        raise click.UsageError("--policy and --max-orphan-rate judge a replay: give --window (e.g. 200k)")
    rule = _rule(min_kept_turns, coverage, max_kept_share, context_window, window, max_orphan_rate)
    if ds is not None and window is None:
        from ..dataset.streaming import recommend_dataset

        rec = recommend_dataset(ds, budgets, rule, engine=engine, address=ray_address, resamples=resamples, seed=seed)
        _name_window(rec, reason, hint)
        _print_recommendation(rec, output)
        return
    given = [p if isinstance(p, str) else p.spec() for p in policies]
    if ds is not None:
        from ..dataset.decision import decision_dataset
        from ..policy.compaction.priced import resolve_prices

        prices = resolve_prices(replay_prices(True, prices_file, summarizer, provider))
        with unpriced_notes():
            dec = decision_dataset(ds, budgets, rule, window=window, reserve=reserve, summary_tokens=summary_tokens,
                                   policy=given or None, prices=prices, summarizer=summarizer, horizon=horizon,
                                   engine=engine, address=ray_address, resamples=resamples, seed=seed)
        click.echo(f"prices: {prices.source}", err=True)
        _name_window(dec, reason, hint)
        _print_recommendation(dec, output)
        return
    if engine == "ray":
        raise click.UsageError("--engine ray runs on a dataset (ingest --dataset DIR)")
    if corpus is None:
        corpus = read_input_corpus(paths, format_, skip_invalid)
    corpus = versioned_corpus(corpus, given or ["libpanto"])
    with unpriced_notes():
        rec, result = choose_budget(corpus.messages, budgets, rule, window=window,
                                    windows=corpus.sessions["context_window"].to_list(), reserve=reserve,
                                    summary_tokens=summary_tokens, policy=given or None,
                                    prices=replay_prices(True, prices_file, summarizer, provider) if window is not None else None,
                                    summarizer=summarizer, horizon=horizon, resamples=resamples, seed=seed)
    if result is not None and result.price_source is not None:
        click.echo(f"prices: {result.price_source}", err=True)
    _name_window(rec, reason, hint)
    _print_recommendation(rec, output)


def _implied_window(sessions) -> tuple[int | None, str | None, str | None]:
    """Without --window: ``(window, reason, hint)``. Where the sessions name models the table knows, the window
    the recordings imply (``outcomes.context_windows.corpus_window``) and the sentence that names it (the replay
    runs under it; a note on stderr says so too); else nothing: the splits, as a dataset folder gives them."""
    from ..outcomes.context_windows import corpus_window

    implied = corpus_window(sessions)
    if implied.window is not None and implied.from_models:
        click.echo(f"note: no --window given: {implied.source} (give --window to choose another)", err=True)
        return implied.window, implied.source, None
    return None, None, None


def _name_window(rec: Choice, reason: str | None, hint: str | None) -> None:
    """The implied window's sentence as the choice's first reason, or the hint among its warnings."""
    if reason is not None:
        rec.reasons.insert(0, reason)
    if hint is not None:
        rec.warnings.append(hint)


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


@main.command()
@input_options
@budgets_option()
@criteria_options
@click.option("--output", "--out", "-o", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              callback=lambda ctx, param, value: value and check_output_path(value, None, "-o", folder=True),
              help="Folder to write index.html, report.md, the PNGs, sweep.parquet and splits.parquet into.")
@click.option("--by", "segment_by", type=click.Choice(SEGMENT_KINDS), multiple=True,
              help="Also plot by segment: model, source_format, project or length (session-length bucket). Repeatable.")
@click.option("--title", default=None, help="The report's title.")
@replay_options(required=False)
@policy_option
@click.option("--max-orphan-rate", type=Share(allow_zero=True), default=None,
              help="Rule (with --window): the cheapest point of the frontier whose orphan rate is at most this.")
@cost_options
@horizon_option
@bootstrap_options
@friendly_errors
def report(paths, format_, skip_invalid, budgets, min_kept_turns, coverage, max_kept_share, context_window,
           out_dir, segment_by, title, window, reserve, summary_tokens, policies, max_orphan_rate, cost, prices_file,
           summarizer, provider, horizon, resamples, seed):
    """A report on what each budget does to the sessions in PATHS: HTML, Markdown, PNGs, Parquet.

    DIR/index.html opens offline (plots embedded); DIR/report.md links the
    PNGs beside it; sweep.parquet and splits.parquet hold the numbers. The
    report shows the corpus, the budget table, the plots and a recommended
    budget by the same rules as `recommend`. With --window it leads with the
    decision under that window: the frontier (median cost per session against
    orphan rate, one point per policy and budget, the agents' recorded points
    marked) and the chosen point, every call billed (genai-prices' offline
    table, or --prices FILE); with --policy (repeatable), a section compares
    the policies under that window too.

    \b
    Examples:
      panto-analytics report data/ -o report/
      panto-analytics report data/ -o report/ --window 32k --prices docs/synth-prices.json
      panto-analytics report data/ -o report/ --window 48k --policy libpanto --policy pi --policy codex
      panto-analytics report ~/.pi/agent/sessions ~/.claude/projects -o report/ --by model --by length
    """
    from ..analysis.report import build_report, write_report  # matplotlib: loaded only when a report is asked for

    check_replay(window, reserve, summary_tokens, tuple(policies))   # before any reading where a window is given
    corpus = read_input_corpus(paths, format_, skip_invalid)
    reason = hint = None
    if window is None:
        window, reason, hint = _implied_window(corpus.sessions)
        check_replay(window, reserve, summary_tokens, tuple(policies))
    if policies and window is None:
        raise click.UsageError("--policy compares policies under a context window: give --window (e.g. 200k)")
    corpus = versioned_corpus(corpus, list(policies) or ["libpanto"])
    rule = _rule(min_kept_turns, coverage, max_kept_share, context_window, window, max_orphan_rate)
    with unpriced_notes():
        rep = build_report(corpus, budgets, rule=rule, segment_by=list(dict.fromkeys(segment_by)), title=title,
                           inputs=[str(p) for p in paths], window=window, reserve=reserve,
                           summary_tokens=summary_tokens,
                           policies=[p if isinstance(p, str) else p.spec() for p in policies],
                           prices=replay_prices(True, prices_file, summarizer, provider), horizon=horizon,
                           resamples=resamples, seed=seed)
    _name_window(rep.recommendation, reason, hint)
    out = write_report(rep, out_dir)
    click.echo(rep.recommendation.headline())
    click.echo(f"wrote {out / 'index.html'} and {out / 'report.md'} ({len(rep.figures)} plots)", err=True)
