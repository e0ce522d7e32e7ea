"""A report on what budgets do to a corpus: one folder with HTML, Markdown, PNGs and Parquet.

:func:`build_report` computes everything (the corpus at a glance, the sweep,
the recommendation, the figures); :func:`write_report` writes

- ``index.html``: self-contained, the plots embedded as data URIs, so it opens
  offline and can be mailed as one file;
- ``report.md``: the same text, linking the PNGs next to it;
- one PNG per plot, ``sweep.parquet`` (one row per budget) and
  ``splits.parquet`` (one row per session and budget).

>>> import polars as pl, tempfile, pathlib
>>> msgs = pl.DataFrame({"session_id": ["s"] * 2, "seq": [0, 1], "role": ["user", "assistant"],
...     "words": [3, 5], "has_tool_result": [False] * 2, "has_summary": [False] * 2,
...     "input": [None, 100], "output": [None, 20], "cache_read": [None, 0], "cache_write": [None, 0],
...     "source_format": ["canonical"] * 2, "model": [None, "m"]},
...     schema_overrides={c: pl.UInt32 for c in ("input", "output", "cache_read", "cache_write")})
>>> from panto_analytics.analysis.report import write_report
>>> rep = build_report(msgs, [0, 200])
>>> rep.recommendation.budget
200
>>> out = write_report(rep, pathlib.Path(tempfile.mkdtemp()) / "r")
>>> sorted(p.name for p in out.iterdir() if not p.name.startswith("."))[:3]
['index.html', 'kept_tokens.png', 'kept_turns.png']
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

import polars as pl

from ...budgets import Budgets, as_budgets
from ...errors import IngestReport
from ...frame.schema import BUDGET, COMPACTIONS_SCHEMA, SESSION
from ...ingest.corpus import Corpus
from ...outcomes.orphan_loss import DEFAULT_HORIZON
from ...outcomes.recorded_refetch import CalibrationSummary, calibration, calibration_partial, merge_calibration, precision_recall
from ...policy import Replay, budgets_shown, compare_policies, replay, summarize_replay, sweep
from ...policy import splits as compute_splits
from ...policy import turns as compute_turns
from ...policy.compaction.engine import DEFAULT_RESERVE
from ...policy.compaction.recorded_cuts import no_cut_reason
from .. import compactions as recorded_compactions
from .. import plots
from ..choose.bootstrap import RESAMPLES, SEED
from ..choose.budget import choose_budget
from ..choose.choice import Choice
from ..choose.from_replay import pareto_front, recorded_points
from ..choose.rule import Rule
from ..compactions import agent_vs_libpanto, compaction_table, policies_vs_agents, recorded_cut_summary
from ..cost_table import compaction_costs
from ..formatting import format_tokens, has_budget, point_name
from ..plot_data import PlotCounts, finish_plot_counts, replay_stats, report_plot_counts
from ..timeline import session_timeline
from . import model
from .model import SEGMENT_TITLES, Report, ReportFigure, Table, cell, percent, tokens
from .overview import BREAKDOWNS, breakdown, breakdown_table, corpus_overview, overview_parts, overview_table

__all__ = [
    "beside", "breakdown", "build_report", "corpus_overview", "cost_parts", "costs_section", "cut_policies",
    "cut_rows_command", "decision_table", "frontier_figures", "frontier_table", "loss_rows_command", "loss_section", "loss_summary_section",
    "policy_budget", "policy_cuts_section", "policy_section", "policy_table", "recorded_section",
    "recorded_summary_table", "replay_figures", "replay_table", "report_figures", "sweep_table", "timeline_figure",
    "timeline_point", "with_pngs", "worst_sessions",
]

if TYPE_CHECKING:
    from matplotlib.figure import Figure

def sweep_table(rec: Choice) -> Table:
    """The per-budget table, display-formatted, the chosen budget emphasised."""
    t = rec.table
    cols = {
        BUDGET: ("budget", tokens),
        "noop_share": ("noop", percent),
        "zero_kept_share": ("zero kept", percent),
        "capped_share": ("capped", percent),
        "kept_tokens_p10": ("kept p10", tokens),
        "kept_tokens_p50": ("kept p50", tokens),
        "kept_tokens_p90": ("kept p90", tokens),
        "kept_turns_p50": ("kept turns p50", cell),
        "summarized_share": ("summarized", percent),
        "keeps_k_share": (f"keep {rec.rule.min_kept_turns}+ turns", percent),
        "within_limit_share": (f"kept <= {tokens(rec.rule.limit)}", percent),
    }
    present = [c for c in cols if c in t.columns]
    # A figure with the bootstrap's interval is written with it: 'value (lo-hi)', 90% of resamples.
    rows = [[_with_interval(row[c], row.get(f"{c}_lo"), row.get(f"{c}_hi"), cols[c][1]) if row[c] is not None
             else cols[c][1](row[c]) for c in present] for row in t.iter_rows(named=True)]
    chosen = t[BUDGET].to_list().index(rec.budget) if rec.budget is not None else None
    return Table([cols[c][0] for c in present], rows, highlight=chosen)


def decision_table(rec: Choice) -> Table:
    """The decision's table under the window (one row per policy and budget), display-formatted, the chosen row
    emphasised; rows at or above the trigger say so."""
    t = rec.table
    money = lambda v: "-" if v is None else f"${v:,.4f}"  # noqa: E731
    cols = {
        "policy": ("policy", cell), BUDGET: ("budget", tokens), "at_trigger": ("sessions at trigger", cell),
        "compactions_per_session": ("compactions/session", lambda v: "-" if v is None else f"{v:.2f}"),
        "keeps_k_share": (f"keep {rec.rule.min_kept_turns or 2}+ turns", percent),
        "within_limit_share": (f"kept <= {tokens(rec.rule.limit)}", percent),
        "cost_p50": ("cost/session p50", money), "cost_p90": ("p90", money),
        "orphan_rate": ("orphan rate", percent), "orphan_rate_p50": ("orphan p50", percent),
        "refetch_tokens": ("re-fetch tokens", tokens), "summarized_p50": ("summarized p50", tokens),
        "proposable": ("", lambda v: "" if v else "at/above trigger"),
    }
    present = [c for c in cols if c in t.columns]
    # A figure with the bootstrap's interval is written with it: 'value (lo-hi)', 90% of resamples; a policy with
    # no token budget shows none, never 0.
    rows = [[_with_interval(row[c], row.get(f"{c}_lo"), row.get(f"{c}_hi"), cols[c][1]) if row[c] is not None
             else cols[c][1](row[c]) for c in present] for row in budgets_shown(t).iter_rows(named=True)]
    chosen = None
    for i, row in enumerate(t.iter_rows(named=True)):
        if row["policy"] == rec.policy and row[BUDGET] == rec.budget:
            chosen = i
    return Table([cols[c][0] for c in present], rows, highlight=chosen, left=(0,))


def report_figures(counts: dict[str | None, PlotCounts], *, highlight: int | None = None) -> list[ReportFigure]:
    """The report's plots of the splits and turns, in reading order, each with a caption saying how to read it,
    drawn from their exact counts (:func:`~panto_analytics.analysis.plot_data.finish_plot_counts`: key None, all
    sessions; each other key, a kind of segment): the whole corpus's in memory, a dataset's merged."""
    splits = turns = counts[None]
    segments = {kind: c for kind, c in counts.items() if kind is not None}
    figs = [
        ReportFigure("kept_tokens", "Kept verbatim suffix per budget",
               "The suffix libpanto keeps verbatim never exceeds the budget (orange marks). Where the boxes stop "
               "rising, sessions fit whole: a larger budget changes nothing for them.",
               plots.kept_tokens_by_budget(splits, highlight=highlight)),
        ReportFigure("outcomes", "What the split does to each session",
               "Noop: the whole active context fits, nothing is summarized. Zero kept: the newest turn alone is "
               "larger than the budget, so everything is summarized. Capped: over 4096 turns.",
               plots.outcome_shares_by_budget(splits, highlight=highlight)),
        ReportFigure("summarized_share", "Share of the context summarized",
               "Per session, the summarized tokens over the active tokens; the dashed line pools all tokens, "
               "so long sessions weigh more.",
               plots.summarized_share_by_budget(splits, highlight=highlight)),
        ReportFigure("kept_turns", "Whole turns kept verbatim",
               "libpanto never splits a turn: the kept suffix is a number of whole turns.",
               plots.kept_turns_by_budget(splits, highlight=highlight)),
        ReportFigure("turn_sizes", "Turn sizes",
               "Tokens per turn on a log scale, by where libpanto gets the size: the provider's cumulative usage, "
               "or ceil(words x 1.3) where the turn has none.",
               plots.turn_sizes(turns)),
    ]
    for kind, seg in segments.items():
        name = SEGMENT_TITLES.get(kind, kind)
        figs += [
            ReportFigure(f"kept_tokens_by_{kind}", f"Kept suffix by {name}", "Median and quartiles per segment.",
                   plots.kept_tokens_by_budget(seg, highlight=highlight)),
            ReportFigure(f"outcomes_by_{kind}", f"Outcomes by {name}", "Share of each segment's sessions.",
                   plots.outcome_shares_by_budget(seg, highlight=highlight)),
            ReportFigure(f"turn_sizes_by_{kind}", f"Turn sizes by {name}", "One panel per segment.",
                   plots.turn_sizes(seg)),
        ]
    return figs


def replay_table(result: Replay, chosen: int | None, summary: pl.DataFrame | None = None) -> Table:
    """The replay's per-budget table (:func:`~panto_analytics.policy.compaction.summary.summarize_replay`, or
    ``summary``, that table already computed: a dataset's), formatted."""
    t = summarize_replay(result.events, result.sessions) if summary is None else summary
    cols = {
        BUDGET: ("budget", tokens), "sessions": ("sessions", cell), "compacted_share": ("compacted", percent),
        "compactions_mean": ("compactions/session", cell), "events": ("events", cell),
        "zero_kept_event_share": ("events keeping nothing", percent), "kept_turns_p50": ("kept turns p50", cell),
        "kept_tokens_p50": ("kept p50", tokens), "request_bytes_per_session": ("summarizer bytes/session", cell),
        "overflow_share": ("overflow", percent), "ineffective_share": ("ineffective", percent),
    }
    rows = [[fmt(row[c]) for c, (_, fmt) in cols.items()] for row in t.iter_rows(named=True)]
    highlight = t[BUDGET].to_list().index(chosen) if chosen in t[BUDGET].to_list() else None
    return Table([name for name, _ in cols.values()], rows, highlight=highlight)


def replay_figures(result: Replay, *, highlight: int | None = None,
                   stats: dict[str, pl.DataFrame] | None = None) -> list[ReportFigure]:
    """The plots of compaction over the sessions' life: kept turns at events, compactions, summarizer input
    (``stats``: :func:`~panto_analytics.analysis.plot_data.replay_stats` already computed, a dataset's; else of
    ``result``)."""
    stats = replay_stats(result.events, result.sessions) if stats is None else stats
    return [
        ReportFigure("replay_kept_turns", "Whole turns kept at each compaction",
                     "Over the compaction events of the replay, not the sessions' ends: what survives verbatim each "
                     "time the context passes the trigger.",
                     plots.kept_turns_by_budget(None, stats=stats["kept_turns"], highlight=highlight)),
        ReportFigure("replay_compactions", "Compactions per session",
                     "How often each session would compact over its life under the window.",
                     plots.replay_by_budget(None, "n_compactions", ylabel="compactions per session",
                                            title="How often sessions compact", highlight=highlight,
                                            stats=stats["n_compactions"])),
        ReportFigure("replay_summarizer_input", "What the summarizer reads",
                     "UTF-8 bytes of all summarizer requests of a session over its life (transcripts and framing; "
                     "a simulated previous summary counts 4 bytes per token).",
                     plots.replay_by_budget(None, "request_bytes", ylabel="request bytes per session",
                                            title="Summarizer input per session", highlight=highlight,
                                            stats=stats["request_bytes"])),
    ]


def costs_section(report: Report, result: Replay, chosen: int | None = None) -> None:
    """"What compaction costs" from a billed replay (its sessions have ``total_cost_usd``): the table, the plot
    (:func:`cost_parts`)."""
    report.costs, figure = cost_parts(result.sessions, chosen)
    report.figures.append(figure)


def cost_parts(sessions: pl.DataFrame | pl.LazyFrame, chosen: int | None = None) -> tuple[Table, ReportFigure]:
    """"What compaction costs": the table (:func:`~panto_analytics.analysis.cost_table.compaction_costs`) and the
    plot of a billed replay's session rows; a dataset's report gives the rows its tasks spilled (a lazy frame,
    read a few columns at a time), with the same figures."""
    money = lambda v: "-" if v is None else f"${v:,.2f}"  # noqa: E731
    cols = {"policy": ("policy", cell), BUDGET: ("budget", tokens), "sessions": ("sessions", cell),
            "compactions": ("compactions", cell), "recorded_usd": ("recorded", money),
            "replayed_usd": ("replayed", money), "change_usd": ("change", money),
            "summarizer_usd": ("summarizer", money), "summarizer_share": ("summarizer share", percent),
            "cache_write_change_usd": ("cache writes change", money),
            "cache_read_change_usd": ("cache reads change", money),
            "cache_miss_usd": ("cache misses", money),
            "cache_miss_per_compaction_usd": ("cache miss per compaction", money)}
    t = budgets_shown(compaction_costs(sessions))  # no budget of 0 for a policy with none
    table = Table([name for name, _ in cols.values()],
                  [[fmt(row[c]) for c, (_, fmt) in cols.items()] for row in t.iter_rows(named=True)])
    return table, ReportFigure(
        "cost_by_budget", "What each budget costs per session",
        "Each session's replayed calls and summarizer call, billed (docs/cost.md, docs/replay.md): the median per "
        "budget, one line per policy (a policy with a budget of its own: one point), the 10th-90th percentile band, "
        "and the recorded sessions' median as the dashed line.",
        plots.cost_by_budget(sessions, highlight=chosen))


def policy_table(result: Replay, compared: pl.DataFrame | None = None) -> Table:
    """The comparison of policies (:func:`~panto_analytics.policy.compare_policies`, or ``compared``, that table
    already computed: a dataset's), formatted."""
    compared = compare_policies(result.events, result.sessions) if compared is None else compared
    t = budgets_shown(compared)  # no budget of 0 for a policy with none
    cols = {
        "policy": ("policy", cell), BUDGET: ("budget", tokens), "compacted_share": ("compacted", percent),
        "compactions_mean": ("compactions/session", cell), "events": ("events", cell),
        "kept_tokens_p10": ("kept p10", tokens), "kept_tokens_p50": ("kept p50", tokens),
        "kept_tokens_p90": ("kept p90", tokens), "summarized_tokens_p50": ("summarized p50", tokens),
        "request_bytes_per_session": ("summarizer bytes/session", cell), "overflow_share": ("overflow", percent),
    }
    return Table([name for name, _ in cols.values()], [[fmt(row[c]) for c, (_, fmt) in cols.items()]
                                                       for row in t.iter_rows(named=True)])


def _policy_section(report: Report, messages: pl.DataFrame, corpus: Corpus | None, policies: Sequence[str],
                    *, window: int, reserve: int, summary_tokens: int | None) -> None:
    """Replay under each policy (libpanto at the recommended budget), the table, the plot, the recorded cuts."""
    result = replay(messages, [policy_budget(report)], window=window, reserve=reserve, summary_tokens=summary_tokens,
                    policy=list(policies))
    policy_section(report, result, compare_policies(result.events, result.sessions))
    others = cut_policies(policies)
    if corpus is not None and others and not corpus.compactions.is_empty():
        rows = policies_vs_agents(corpus, others)
        policy_cuts_section(report, rows, recorded_compactions.cut_counts(rows))


def policy_budget(report: Report) -> int:
    """The budget libpanto is replayed at beside the other policies: the recommended one, else 20k."""
    return report.recommendation.budget if report.recommendation.budget is not None else 20_000


def cut_policies(policies: Sequence[str]) -> list[str]:
    """The policies with a cut to set beside the agents' (not libpanto's per-budget split, not a clearing one)."""
    return [p for p in policies if no_cut_reason(p) is None]


def policy_section(report: Report, result: Replay, compared: pl.DataFrame) -> None:
    """"Policies under the same window": the replay under each policy (``result``), its comparison
    (:func:`~panto_analytics.policy.compare_policies`'s ``compared``) as a table and a plot."""
    report.policies, report.policy_table = result, policy_table(result, compared)
    report.figures.append(ReportFigure(
        "policies", "Policies under the same window",
        f"Each policy replayed over the sessions' life under a {format_tokens(result.window)} window at its own "
        "trigger and defaults (libpanto at the recommended budget).",
        plots.policy_comparison(compared)))


def policy_cuts_section(report: Report, rows: pl.DataFrame | None, counts: pl.DataFrame) -> None:
    """Each policy's cut at the recorded compactions beside the agents' (:func:`~panto_analytics.analysis.
    compactions.policies_vs_agents`'s ``rows`` and their counts, :func:`~panto_analytics.analysis.compactions.
    cut_counts`; a dataset's: its tasks' merged, the rows None past :data:`~.model.RECORDED_ROWS` compactions),
    summed up per policy and agent: from the rows up to that many, from the counts past it (the same figures, a
    distance in tokens to 3 significant digits)."""
    n = recorded_compactions.compactions_counted(counts)
    if rows is not None and n <= model.RECORDED_ROWS:
        summary = recorded_cut_summary(rows)
    else:
        summary = recorded_compactions.cut_summary(counts)
        report.policy_cuts_text = (
            f"Each policy's cut of the conversation as it stood at each of the {n:,} compactions the agents "
            "recorded, beside the agent's own cut: exact matches, and how far the others are (messages, tokens: "
            f"counted to 3 significant digits past {model.RECORDED_ROWS} compactions). Every cut's row: "
            f"{cut_rows_command(report.inputs, counts['policy'].unique().sort().to_list())}.")
    report.policy_cuts = Table.from_frame(summary.rename({
        "source_format": "format", "own": "agent's policy", "distance_messages_p50": "off by (messages) p50",
        "distance_messages_max": "max", "distance_tokens_p50": "off by (tokens) p50", "distance_tokens_max": "max "}))


def _a_few(budgets: list[int], chosen: int | None, n: int = 5) -> list[int]:
    """About ``n`` of ``budgets``, evenly spread with the largest, plus the chosen one: for a table that must stay narrow.

    >>> _a_few(list(range(0, 100, 10)), 35)
    [0, 20, 35, 40, 60, 90]
    """
    step = max(1, len(budgets) // (n - 1)) if n > 1 else len(budgets)
    picked = set(budgets[::step][: n - 1] + [budgets[-1]])
    return sorted(picked | ({chosen} if chosen is not None else set()))


def build_report(messages: pl.DataFrame | Corpus, budgets: Budgets, *, rule: Rule | None = None,
                 segment_by: Sequence[str] = (), ingest: IngestReport | None = None,
                 sessions: pl.DataFrame | None = None, compactions: pl.DataFrame | None = None,
                 title: str | None = None, inputs: Sequence[str] = (), window: int | None = None,
                 reserve: int = DEFAULT_RESERVE, summary_tokens: int | None = None,
                 policies: Sequence[str] = (), prices: object = True, horizon: int | None = None,
                 resamples: int = RESAMPLES, seed: int = SEED) -> Report:
    """Compute everything a report shows.

    ``messages`` is a :class:`~panto_analytics.ingest.corpus.Corpus` (what
    :func:`~panto_analytics.ingest.open_corpus` returns: its tables and its
    ingest report are used, and ``ingest``, ``sessions`` and ``compactions``
    are not given) or a message frame. ``sessions`` (the sessions table, when
    available) adds sessions without
    messages; ``compactions`` (the recorded compactions table) adds a line on
    them to the overview. Both are optional. With a ``window``, compaction is
    replayed over each session's life (:func:`panto_analytics.replay`), under
    libpanto at every budget and each of ``policies``, every call billed
    (``prices``: genai-prices' offline table by default, a LiteLLM file, or
    None) and the loss of every compaction measured (``horizon`` tool calls);
    the choice is :func:`~panto_analytics.analysis.choose.from_replay.choose_from_replay`'s on
    those per-session outcomes (``rule.max_orphan_rate``: the frontier rule), and
    the report leads with the frontier (cost per session against orphan rate)
    and the chosen point, then a section and three plots on libpanto's replay. With a ``window`` and ``policies``
    (``NAME[:k=v]``), the report compares them: each replayed under the same
    window (libpanto at the recommended budget), a table, a plot and, with
    recorded compactions, each policy's cut at them beside the agents'.
    """
    corpus: Corpus | None
    if isinstance(messages, Corpus):
        given: Corpus = messages
        corpus = given
        messages, sessions, compactions, ingest = given.messages, given.sessions, given.compactions, given.report
    else:
        corpus = Corpus(messages, sessions, compactions, ingest or IngestReport()) if (
            sessions is not None and compactions is not None) else None
    # The sections on recorded compactions need the tables as read_corpus gives them (hand-built ones may hold a
    # few columns only).
    if corpus is not None and not (set(COMPACTIONS_SCHEMA) <= set(corpus.compactions.columns)
                                   and "source_format" in corpus.sessions.columns):
        corpus = None
    budgets = as_budgets(budgets)
    turns = compute_turns(messages)
    per_session = compute_splits(messages, budgets, sessions=sessions)
    replayed = outcomes = None
    named = ["libpanto", *[p for p in policies if str(p).split(":")[0] != "libpanto"]] if policies else None
    windows = (sessions["context_window"].to_list() if sessions is not None and "context_window" in sessions.columns
               else None)
    rec, outcomes = choose_budget(messages, budgets, rule, window=window, splits=per_session, turns=turns,
                                  windows=windows, reserve=reserve, summary_tokens=summary_tokens, policy=named,
                                  prices=prices, horizon=horizon, resamples=resamples, seed=seed)
    if outcomes is not None:
        replayed = _libpanto_only(outcomes)
    n = per_session[SESSION].n_unique()
    parts = overview_parts(messages, turns, per_session, sessions=sessions, compactions=compactions)
    report = Report(
        title=title or f"What keep_verbatim does to {n:,} session{'s' if n != 1 else ''}",
        inputs=[str(p) for p in inputs],
        budgets=budgets,
        splits=per_session,
        sweep=sweep(per_session),
        recommendation=rec,
        overview=overview_table(parts, ingest=ingest),
        breakdowns={name: breakdown_table(parts.breakdowns[c], c) for name, c in BREAKDOWNS.items()},
    )
    counts = report_plot_counts(messages, per_session, turns, segment_by=segment_by, sessions=sessions)
    report.figures = report_figures(finish_plot_counts(counts), highlight=rec.budget)
    if replayed is not None:
        report.replay, report.replay_table = replayed, replay_table(replayed, rec.budget)
        report.figures += replay_figures(replayed, highlight=rec.budget)
    if rec.replayed and outcomes is not None:
        report.outcomes = outcomes
        _frontier_section(report, rec, messages, sessions, compactions, horizon=horizon, resamples=resamples,
                          seed=seed)
    billed = report.outcomes or report.replay   # every policy's, where the report has it
    if billed is not None and "total_cost_usd" in billed.sessions.columns:
        costs_section(report, billed, rec.budget)
    if corpus is not None and not corpus.compactions.is_empty():
        rows = agent_vs_libpanto(corpus, budgets)
        recorded_section(report, rows, recorded_compactions.kept_counts(rows))
        report.recorded_rows = rows
    if corpus is not None and not corpus.compactions.is_empty():
        _loss_section(report, corpus, horizon=DEFAULT_HORIZON if horizon is None else horizon)
    if policies and window is not None:
        _policy_section(report, messages, corpus, policies, window=window, reserve=reserve,
                        summary_tokens=summary_tokens)
    if rec.replayed and outcomes is not None and window is not None:
        _timeline_figures(report, rec, messages, sessions, compactions, window=window, reserve=reserve,
                          prices=prices, horizon=horizon)
    return with_pngs(report)


def recorded_section(report: Report, rows: pl.DataFrame | None, counts: pl.DataFrame) -> None:
    """"What the agents did at their recorded compactions" from
    :func:`~panto_analytics.analysis.compactions.agent_vs_libpanto`'s ``rows`` and their counts
    (:func:`~panto_analytics.analysis.compactions.kept_counts`; a dataset's: its tasks' merged, the rows None
    past :data:`~.model.RECORDED_ROWS` compactions): up to that many, the table at a few budgets (the chosen one
    among them) with a row per compaction, and the plot with a dot each; past it, a row per agent and budget and
    the plot of their percentiles (:func:`recorded_summary_table`)."""
    n = recorded_compactions.compactions_counted(counts)
    if rows is not None and n <= model.RECORDED_ROWS:
        shown = rows.filter(pl.col(BUDGET).is_in(_a_few(report.budgets, report.recommendation.budget)))
        report.recorded = Table.from_frame(compaction_table(shown))
        report.figures.append(ReportFigure(
            "recorded_compactions", "What the agents kept at their recorded compactions",
            "Each dot: libpanto's kept suffix for the conversation as it stood when the agent compacted; the "
            "dotted lines: what the agent itself kept, which no budget changes.",
            plots.agent_vs_libpanto_kept(rows)))
        return
    few = _a_few(report.budgets, report.recommendation.budget)
    report.recorded = recorded_summary_table(counts.filter(pl.col(BUDGET).is_in(few)))
    report.recorded_text = (
        f"{n:,} compactions the agents recorded, past {model.RECORDED_ROWS} summed up per agent and budget: the "
        "context the agent compacted, what it kept verbatim (in libpanto's turn costs) and what libpanto would keep "
        "for the conversation as it stood at that moment (tokens and whole turns), each as its 10th, 50th and 90th "
        "percentile (an observed value, tokens to 3 significant digits), and how often libpanto keeps more tokens "
        "than the agent. Every compaction's row at every budget: recorded_compactions.parquet, in the report's folder.")
    report.figures.append(ReportFigure(
        "recorded_compactions", "What the agents kept at their recorded compactions",
        "Per budget, the 10th-90th percentile of libpanto's kept suffix for the conversation as it stood when the "
        "agent compacted (bar) and its median (line); the band: the same percentiles of what the agents themselves "
        "kept, which no budget changes, with their median.",
        plots.agent_vs_libpanto_summary(recorded_compactions.kept_summary(counts, by=[BUDGET]))))


def cut_rows_command(inputs: Sequence[str], policies: Sequence[str]) -> str:
    """The command that writes every row a summary of the policies' cuts sums up (``FILE``: where to).

    >>> cut_rows_command(["corpus.ds"], ["codex", "pi"])
    '`panto-analytics policy-cuts corpus.ds --policy codex --policy pi --rows FILE`'
    """
    given = "".join(f" --policy {p}" for p in policies)
    return f"`panto-analytics policy-cuts {' '.join(inputs) or 'PATHS'}{given} --rows FILE`"


def loss_rows_command(inputs: Sequence[str], horizon: int) -> str:
    """The command that writes every cut's row a summary of the loss at recorded compactions sums up.

    >>> loss_rows_command(["corpus.ds"], 20)
    '`panto-analytics loss corpus.ds --horizon 20 --cuts FILE`'
    """
    return f"`panto-analytics loss {' '.join(inputs) or 'PATHS'} --horizon {horizon} --cuts FILE`"


def recorded_summary_table(counts: pl.DataFrame) -> Table:
    """The recorded compactions summed up per agent and budget
    (:func:`~panto_analytics.analysis.compactions.kept_summary` of ``counts``), display-formatted: each
    percentile triple in one cell, ``p10 / p50 / p90``."""
    t = recorded_compactions.kept_summary(counts)

    def triple(r: dict, name: str, fmt=tokens) -> str:
        return " / ".join(fmt(r[f"{name}_p{q}"]) for q in (10, 50, 90))

    rows = [[r["source_format"], tokens(r[BUDGET]), cell(r["compactions"]), tokens(r["tokens_before_p50"]),
             triple(r, "agent_kept_tokens"), triple(r, "kept_tokens"), triple(r, "kept_turns", cell),
             percent(r["libpanto_more_share"])] for r in t.iter_rows(named=True)]
    return Table(["agent", "budget", "compactions", "context p50", "agent kept (p10 / p50 / p90)",
                  "libpanto kept (p10 / p50 / p90)", "libpanto turns (p10 / p50 / p90)", "libpanto keeps more"], rows)


def with_pngs(report: Report) -> Report:
    """``report`` with each of its figures drawn as PNG."""
    extra = [f for f in (report.frontier, report.loss_figure) if f is not None]
    for fig in [*report.figures, *extra]:
        fig.png = plots.png_bytes(cast("Figure", fig.figure))
    return report


def _loss_section(report: Report, corpus: Corpus, *, horizon: int) -> None:
    """What compaction loses at the recorded compactions: one row per cut, and the calibration plot."""
    loss_section(report, *calibration(corpus.messages, corpus.compactions, corpus.sessions, horizon=horizon),
                 horizon=horizon)


def loss_section(report: Report, cuts: pl.DataFrame, curve: pl.DataFrame, *, horizon: int) -> None:
    """The loss section from :func:`~panto_analytics.outcomes.recorded_refetch.calibration`'s ``cuts`` and
    ``curve``: one row per cut, and the calibration plot; past :data:`~.model.RECORDED_ROWS` cuts, the summary of
    them all (:func:`loss_summary_section`)."""
    if cuts.height > model.RECORDED_ROWS:
        loss_summary_section(report, merge_calibration([calibration_partial(cuts, curve)]), horizon=horizon)
        return
    report.loss = Table(
        ["agent", "cut", "context", "window calls", "orphan targets", "fetched again: predicted", "not predicted",
         "precision", "recall", "re-fetch calls", "re-fetch tokens"],
        [[r["source_format"], r["cut"], tokens(r["context"]), cell(r["window_calls"]), cell(r["orphan_targets"]),
          cell(r["refetched_targets"]), cell(r["fetched_again_targets"] - r["refetched_targets"]),
          percent(r["precision"]), percent(r["recall"]), cell(r["refetch_calls"]), tokens(r["refetch_tokens"])]
         for r in cuts.iter_rows(named=True)])
    report.loss_figure = ReportFigure(
        "refetch_calibration", "The orphan targets against what the agents fetched again",
        f"Left: each recorded compaction (and pseudo-cut): the orphan targets it predicts against the targets the "
        f"agent read or fetched again within {horizon} tool calls (filled: of them predicted; on the dashed line "
        "every predicted target was fetched again). Right: after each tool call, the predicted targets fetched "
        "again so far (solid) and the re-fetches not predicted (dotted).",
        plots.refetch_calibration(cuts, curve))


def loss_summary_section(report: Report, summary: CalibrationSummary, *, horizon: int) -> None:
    """The loss section of more than :data:`~.model.RECORDED_ROWS` cuts, from their
    :class:`~panto_analytics.outcomes.recorded_refetch.CalibrationSummary`: one row per agent and kind of cut
    (sums, and precision and recall as ratios of the sums), the calibration plot of the cuts counted at each point
    and the curve per cut (:func:`~panto_analytics.analysis.plots.refetch_calibration_summary`), and where every
    cut's own row is (``panto-analytics loss ... --cuts FILE``)."""
    sums = summary.sums.with_columns(*precision_recall())
    report.loss = Table(
        ["agent", "cut", "cuts", "window calls", "orphan targets", "fetched again: predicted", "not predicted",
         "precision", "recall", "re-fetch calls", "re-fetch tokens", "re-fetch tokens per cut"],
        [[r["source_format"], r["cut"], cell(r["cuts"]), cell(r["window_calls"]), cell(r["orphan_targets"]),
          cell(r["refetched_targets"]), cell(r["fetched_again_targets"] - r["refetched_targets"]),
          percent(r["precision"]), percent(r["recall"]), cell(r["refetch_calls"]), tokens(r["refetch_tokens"]),
          tokens(r["refetch_tokens"] / r["cuts"])]
         for r in sums.iter_rows(named=True)])
    rows_command = loss_rows_command(report.inputs, horizon)
    report.loss_text = (
        f"{summary.cuts:,} cuts, more than {model.RECORDED_ROWS:,}: one row per agent and kind of cut (a compaction "
        "the agent recorded, or a pseudo-cut: a session of the same agent that never compacted, cut where its "
        "context reaches the same size, nothing kept), each count summed over its cuts: the orphan targets (targets "
        "last touched in the summarized part and not restored: the measure's prediction of what the agent will "
        "fetch again), how many of them it read or fetched again within the horizon, and every call that fetched "
        "an orphan target again with its tokens. Precision and recall are ratios of the sums (the targets "
        "predicted and fetched again over all predicted, and over all fetched again). Every cut's own row: "
        f"{rows_command}, which also pools them per agent with "
        "bootstrap intervals; docs/loss.md states the rules.")
    report.loss_figure = ReportFigure(
        "refetch_calibration", "The orphan targets against what the agents fetched again",
        f"Left: the cuts counted at each point, the orphan targets a cut predicts against the targets the agent "
        f"read or fetched again within {horizon} tool calls (hollow: all of them; filled: of them predicted; a "
        "marker's area grows with the cuts there; on the dashed line every predicted target was fetched again). "
        "Right: per agent and kind of cut, after each tool call, the predicted targets fetched again so far "
        "(solid) and the re-fetches not predicted (dotted), per cut: the sum over its cuts divided by their "
        f"number. Every cut's own row: {rows_command}.",
        plots.refetch_calibration_summary(summary))


#: How many of the sessions the chosen budget serves worst get a timeline in the report.
WORST_TIMELINES = 2


def worst_sessions(outcomes: pl.DataFrame | pl.LazyFrame, policy: str, budget: int,
                   n: int = WORST_TIMELINES) -> list[str]:
    """The ``n`` sessions ``policy`` at ``budget`` serves worst among those it compacts (``outcomes``: a replay's
    session rows with their loss; a dataset's spilled rows, lazy: only those ``n`` are collected): the most
    orphan calls, then re-fetch tokens, then events that kept nothing; equal ones by session id (not by the
    rows' order: the same sessions whatever order the corpus was read in).

    >>> rows = pl.DataFrame({"session_id": ["c", "b", "a"], "budget": [8] * 3, "n_compactions": [1, 1, 0],
    ...                      "orphan_calls": [2, 2, 9], "refetch_tokens": [0] * 3, "zero_kept_events": [0] * 3})
    >>> worst_sessions(rows, "libpanto", 8, n=1)
    ['b']
    """
    rows = outcomes.lazy()
    if "policy" in rows.collect_schema().names():
        rows = rows.filter(pl.col("policy").cast(pl.String) == policy)
    return (rows.filter((pl.col(BUDGET) == budget) & (pl.col("n_compactions") > 0))
            .select(pl.col(SESSION).cast(pl.String), "orphan_calls", "refetch_tokens", "zero_kept_events")
            .sort(["orphan_calls", "refetch_tokens", "zero_kept_events", SESSION], descending=[True, True, True, False],
                  nulls_last=True)
            .head(n).collect()[SESSION].to_list())


def timeline_point(rec: Choice) -> tuple[str, int] | None:
    """The policy and budget the timelines are drawn at: the chosen ones (where no budget was chosen, the one the
    recorded points are compared at, :func:`beside`); None without a budget."""
    budget = rec.budget if rec.budget is not None else beside(rec)
    return None if budget is None else (rec.policy or "libpanto", budget)


def _timeline_figures(report: Report, rec: Choice, messages: pl.DataFrame, sessions: pl.DataFrame | None,
                      compactions: pl.DataFrame | None, *, window: int, reserve: int, prices: object,
                      horizon: int | None) -> None:
    """A timeline (:func:`~panto_analytics.analysis.timeline.session_timeline`) of each of the sessions the chosen
    policy and budget serve worst (:func:`worst_sessions`)."""
    point = timeline_point(rec)
    if point is None or report.outcomes is None:
        return
    policy, budget = point
    for sid in worst_sessions(report.outcomes.sessions, policy, budget):   # a couple of figures, not the engine
        timeline_figure(report, messages, sid, compactions=compactions, sessions=sessions, window=window,
                        policy=policy, budget=budget, reserve=reserve, summary_tokens=report.outcomes.summary_tokens,
                        prices=prices, horizon=horizon)


def timeline_figure(report: Report, messages: pl.DataFrame, sid: str, *, compactions: pl.DataFrame | None,
                    sessions: pl.DataFrame | None, window: int, policy: str, budget: int, reserve: int,
                    summary_tokens: int, prices: object, horizon: int | None) -> None:
    """Add the timeline of session ``sid`` under ``policy`` at ``budget`` to the report (``messages``: those of
    the session at least)."""
    extra = {} if horizon is None else {"horizon": horizon}
    tl = session_timeline(messages, sid, compactions=compactions, sessions=sessions, window=window,
                          policy=policy, budget=budget, reserve=reserve, summary_tokens=summary_tokens,
                          prices=cast("str | bool | None", prices), **extra)
    n = 1 + sum(f.name.startswith("timeline_") for f in report.figures)  # ids may share their first characters
    report.figures.append(ReportFigure(
        f"timeline_{n}_{sid[:8]}", f"Session {sid[:13]}, call by call ({point_name(policy, budget)})",
        "One of the sessions the chosen budget serves worst (the most tool calls after a compaction that "
        "reach for what only the summary held). Top: the context per API call as recorded (solid) and "
        "replayed (dashed), each compaction marked with the context before and after it and what was fetched "
        "again; below: what each call read from the prompt cache, wrote and sent uncached, and each cache break "
        "with its cause. `panto-analytics timeline` draws any session.",
        plots.timeline(tl)))


def _libpanto_only(result: Replay) -> Replay:
    """libpanto's rows of a replay that may hold several policies, without the ``policy`` column."""
    if "policy" not in result.events.columns:
        return result
    mine = pl.col("policy").cast(pl.String).str.split(":").list.first() == "libpanto"
    return Replay(events=result.events.filter(mine).drop("policy"), sessions=result.sessions.filter(mine).drop("policy"),
                  window=result.window, reserve=result.reserve, summary_tokens=result.summary_tokens,
                  summary_source=result.summary_source)


def _frontier_section(report: Report, rec: Choice, messages: pl.DataFrame, sessions: pl.DataFrame | None,
                      compactions: pl.DataFrame | None, *, horizon: int | None, resamples: int, seed: int) -> None:
    """The figure and table that lead a report under a window: every (policy, budget) by cost and loss."""
    if not _has_frontier(rec.table):
        frontier_figures(report, rec)
        return
    recorded = None
    if (compactions is not None and sessions is not None and not compactions.is_empty()
            and set(COMPACTIONS_SCHEMA) <= set(compactions.columns) and "source_format" in sessions.columns):
        recorded = recorded_points(messages, compactions, sessions, report.outcomes.sessions if report.outcomes
                                   else None, horizon=horizon, budget=beside(rec), resamples=resamples, seed=seed)
    frontier_figures(report, rec, recorded)


def frontier_figures(report: Report, rec: Choice, recorded: pl.DataFrame | None = None) -> None:
    """The frontier's figure and table of a decision under a window (``recorded``: the agents' own points, None
    where they are not drawn)."""
    t = rec.table
    if not _has_frontier(t):
        report.frontier_table = Table(["note"], [["no frontier: no session's model has a price (give --prices FILE); "
                                                  "the table below has the loss figures"]])
        return
    chosen = (rec.policy, rec.budget) if rec.budget is not None and rec.policy is not None else None
    named = (f"the ring is the chosen point, {point_name(rec.policy, rec.budget)}, the budget of the "
             "recommendation above" if chosen is not None else "no point is chosen")
    report.frontier = ReportFigure(
        "frontier", "What each budget costs and loses",
        "One point per (policy, budget) under the window: the median cost per session (over the sessions that "
        "reach the trigger) against the orphan rate (tool calls after a compaction that reach for something only "
        "the summary held), each with its bars: 90% of resamples of the sessions. The dashed line joins the "
        "Pareto front; hollow points are at or above the trigger and never proposed; stars are what the agents "
        "recorded, each joined to the replays over the same sessions (the agent's sessions with a recorded "
        f"compaction); {named}.",
        plots.frontier(t, recorded=recorded, chosen=chosen))
    report.frontier_table = frontier_table(rec, recorded)


def _has_frontier(t: pl.DataFrame) -> bool:
    return "cost_p50" in t.columns and "orphan_rate" in t.columns and not t["cost_p50"].is_null().all()


def beside(rec: Choice) -> int | None:
    """The budget the recorded points are compared at (each policy with a budget of its own at its own): the
    chosen one where libpanto was chosen, else libpanto's cheapest on the front."""
    if rec.budget is not None and (rec.policy is None or rec.policy.split(":")[0] == "libpanto"):
        return rec.budget
    front = pareto_front(rec.table).filter(pl.col("policy").str.starts_with("libpanto"))
    return int(front[BUDGET][0]) if front.height else rec.budget


def _with_interval(value, lo, hi, fmt) -> str:
    """``value (lo-hi)``, or the value alone where there is no interval or every resample gives the same.

    >>> _with_interval(0.5, 0.25, 0.75, lambda v: f"{v:.0%}"), _with_interval(0, 0, 0, str)
    ('50% (25%-75%)', '0')
    """
    if value is None:
        return "-"
    if lo is None or hi is None or fmt(lo) == fmt(hi) == fmt(value):
        return fmt(value)
    return f"{fmt(value)} ({fmt(lo)}-{fmt(hi)})"


def frontier_table(rec: Choice, recorded: pl.DataFrame | None = None) -> Table:
    """The points of the frontier and the chosen one (which the rule may pick off the front: it says so), each
    figure with its interval; then each agent's recorded point beside the replays over the same sessions."""
    t = rec.table
    chosen = (pl.col("policy") == (rec.policy or "")) & (pl.col(BUDGET) == (rec.budget if rec.budget is not None else -1))
    front = pareto_front(t).with_columns(_front=pl.lit(True))
    off = t.filter(chosen).join(front.select("policy", BUDGET), on=["policy", BUDGET], how="anti")
    points = pl.concat([front, off.with_columns(_front=pl.lit(False))], how="diagonal_relaxed").sort("cost_p50")
    money = lambda v: f"${v:,.4f}"  # noqa: E731
    rate = lambda v: f"{v:.1%}"  # noqa: E731

    def figures(r: dict) -> list[str]:
        return [_with_interval(r.get("cost_p50"), r.get("cost_p50_lo"), r.get("cost_p50_hi"), money),
                _with_interval(r.get("orphan_rate"), r.get("orphan_rate_lo"), r.get("orphan_rate_hi"), rate)]

    rows, hit = [], None
    for i, r in enumerate(points.iter_rows(named=True)):
        is_chosen = (r["policy"], r[BUDGET]) == (rec.policy, rec.budget)
        hit = i if is_chosen else hit
        note = ("chosen" if r["_front"] else "chosen by the rule, off the front") if is_chosen else "front"
        budget = tokens(r[BUDGET]) if has_budget(r["policy"]) else "-"  # no budget of 0 for a policy with none
        rows.append([r["policy"], budget, cell(r.get("at_trigger")), *figures(r),
                     tokens(r.get("refetch_tokens")), note])
    if recorded is not None:
        for r in recorded.iter_rows(named=True):
            mine = r["point"] == "recorded"
            rows.append([f"{r['agent']} (recorded)" if mine else f"{r['point']} over {r['agent']}'s sessions",
                         "-" if mine or not has_budget(r["point"]) else tokens(r[BUDGET]), cell(r["sessions"]),
                         *figures(r), "-",
                         "recorded" if mine else "replayed, same sessions"])
    return Table(["point", "budget", "sessions", "cost/session p50 (90% of resamples)",
                  "orphan rate (90% of resamples)", "re-fetch tokens", ""], rows, highlight=hit, left=(0, 6))
