"""The report laid out: Markdown (:func:`render_markdown`), self-contained HTML (:func:`render_html`) and
the folder beside them (:func:`write_report`: the PNGs, the Parquet tables, ``report.md``, ``index.html``).
"""
from __future__ import annotations

import base64
import html
import shutil
from pathlib import Path

import polars as pl

from ...policy import Replay
from ..formatting import format_tokens
from .build import (
    decision_table,
    sweep_table,
)
from .model import Report, Table

__all__ = [
    "MAX_INPUTS", "RECORDED_FILE", "WRITTEN_LIST", "render_html", "render_markdown", "timeline_html", "write_report",
]

#: The list of files a report wrote, kept in its folder, so that the next report there removes the ones
#: it does not write again (and nothing else).
WRITTEN_LIST = ".panto-report-files"

#: Every row of what the agents kept at their recorded compactions (:attr:`Report.recorded_rows`).
RECORDED_FILE = "recorded_compactions.parquet"

_RECORDED_FILE_TEXT = ("at every compaction an agent recorded and every budget, what the agent kept beside libpanto's "
                       "split of the conversation as it stood (one row each)")

#: What every report before :data:`WRITTEN_LIST` existed wrote under these fixed names.
_FIXED_NAMES = ("index.html", "report.md", "sweep.parquet", "splits.parquet", "policy_events.parquet",
                "policy_sessions.parquet", "replay_events.parquet", "replay_sessions.parquet")


def write_report(report: Report, out_dir: str | Path) -> Path:
    """Write the report's files into ``out_dir`` (created if needed); returns the folder.

    Into the folder of an earlier report, the files that report wrote and this one does not (a replay's
    tables, the PNGs of other segments) are removed, so nothing of another run is left beside the new
    files; files the reports did not write are never touched. The names written are listed in
    :data:`WRITTEN_LIST`.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, bytes | pl.DataFrame | Path | str] = {f"{fig.name}.png": fig.png for fig in report.figures}
    if report.frontier is not None:
        files[f"{report.frontier.name}.png"] = report.frontier.png
    if report.loss_figure is not None:
        files[f"{report.loss_figure.name}.png"] = report.loss_figure.png
    if report.recommendation.replayed:
        files["decision.parquet"] = report.recommendation.table
    files.update({"sweep.parquet": report.sweep, "splits.parquet": report.splits})  # a Path: moved here
    if report.recorded_rows is not None:
        files[RECORDED_FILE] = report.recorded_rows  # a Path: moved here
    # A replay without rows (a dataset's report: they grow with the sessions) writes no files of them.
    if report.policies is not None and report.policies.sessions.width:
        files.update({"policy_events.parquet": report.policies.events,
                      "policy_sessions.parquet": report.policies.sessions})
    if report.replay is not None and report.replay.sessions.width:
        files.update({"replay_events.parquet": report.replay.events, "replay_sessions.parquet": report.replay.sessions})
    files.update({"report.md": render_markdown(report), "index.html": render_html(report)})
    for name in _written_before(out) - set(files):
        (out / name).unlink(missing_ok=True)
    for name, content in files.items():
        if isinstance(content, Path):  # rows written as they came: moved in, and read there from now on
            if content.resolve() != (out / name).resolve():
                shutil.move(content, out / name)
            if name == RECORDED_FILE:
                report.recorded_rows = out / name
            else:
                report.splits = out / name
        elif isinstance(content, pl.DataFrame):
            content.write_parquet(out / name)
        elif isinstance(content, str):
            (out / name).write_text(content, encoding="utf-8")
        else:
            (out / name).write_bytes(content)
    (out / WRITTEN_LIST).write_text("".join(f"{name}\n" for name in files), encoding="utf-8")
    return out


def _written_before(out: Path) -> set[str]:
    """The files an earlier report wrote into ``out``: its list, or (a report from before the list) its
    fixed names, when an ``index.html`` and a ``report.md`` say a report was there."""
    listed = out / WRITTEN_LIST
    if listed.is_file():
        names = {n for n in listed.read_text(encoding="utf-8").splitlines() if n and "/" not in n and n[0] != "."}
    elif (out / "index.html").is_file() and (out / "report.md").is_file():
        names = set(_FIXED_NAMES)
    else:
        return set()
    return {n for n in names if (out / n).is_file() and not (out / n).is_symlink()}


#: Inputs named at the top of a report; the rest are counted.
MAX_INPUTS = 6


def _more(inputs: list[str]) -> str:
    return f" and {len(inputs) - MAX_INPUTS} more" if len(inputs) > MAX_INPUTS else ""


_RECORDED_TEXT = ("One row per compaction an agent recorded: what the agent kept verbatim (its first kept message, "
                  "messages and tokens, in libpanto's turn costs), then the whole turns and tokens libpanto would "
                  "keep at a few budgets for the conversation as it stood at that moment.")


def _replay_text(result: Replay) -> str:
    return (f"Each session replayed call by call under a {format_tokens(result.window)}-token window: a compaction "
            f"fires when the context passes {format_tokens(result.window - result.reserve)} (window minus a "
            f"{format_tokens(result.reserve)} reserve), libpanto splits the transcript as it stands, and a "
            f"{format_tokens(result.summary_tokens)}-token summary ({result.summary_source}) replaces the summarized "
            "prefix. One row per budget; "
            "the rules of the recommendation ran on these events (docs/replay.md).")


_COSTS_TEXT = ("Every call of the replay billed (docs/cost.md; the rules in docs/replay.md): what the sessions cost "
               "as recorded, as replayed (the calls after each compaction, with their shorter prompts and cache "
               "misses, plus the summarizer's calls), the change, the summarizer's share of the replayed cost, and "
               "how cache writes and reads changed: the writes after each compaction (a cache miss on the summary "
               "and the kept suffix) against the shorter prompts read and rewritten, and the cache misses alone: "
               "what the first call after each compaction writes to the cache beyond what the recorded call wrote, "
               "in all and per compaction. Totals over the sessions; a total with an unpriced session is '-'.")

_DECISION_TEXT = ("One row per (policy, budget) of the replay under the window, the chosen one emphasised. Figures "
                  "per session are over the sessions that reach the trigger; a rule counts sessions (keep k+ turns: "
                  "at every compaction the session has). A budget at or above the trigger (window - reserve) is "
                  "never proposed. Cost: the replayed calls and the summarizer's; orphan rate: pooled over the "
                  "tool calls after each compaction; re-fetch tokens: the results those orphan calls fetch again. In "
                  "parentheses: the range of 90% of the resamples of the sessions that reach the trigger (a seeded "
                  "bootstrap: the same corpus gives the same ranges).")

_POLICY_TEXT = ("Each policy replayed over the sessions' life under the same window, at its own trigger and "
                "defaults: how often it compacts, what it keeps verbatim (in recorded-usage tokens; Codex: its "
                "estimate of the user messages it keeps) and what its summarizer reads. docs/replay.md states "
                "each policy's rules and sources.")
_LOSS_TEXT = ("One row per compaction an agent recorded, and per pseudo-cut (a session of the same agent that never "
              "compacted, cut where its context reaches the same size, nothing kept): the orphan targets (targets "
              "last touched in the summarized part and not restored: the measure's prediction of what the agent "
              "will fetch again), how many of them it read or fetched again within the horizon (precision), how "
              "many of the targets it fetched again were predicted (recall), and every call that fetched an "
              "orphan target again with its tokens. docs/loss.md states the rules; `panto-analytics loss` pools "
              "them per agent with bootstrap intervals.")
_POLICY_CUTS_TEXT = ("Each policy's cut of the conversation as it stood at every compaction an agent recorded, "
                     "beside the agent's own cut: exact matches, and how far the others are (messages, tokens).")


def render_markdown(report: Report) -> str:
    """``report.md``: headings, tables and links to the PNGs beside it."""
    rec = report.recommendation
    headline, rules, reasons, warnings = rec.headline(), rec.rules(), rec.reasons, rec.warnings
    out = [f"# {report.title}", ""]
    if report.inputs:
        out += ["Inputs: " + ", ".join(f"`{p}`" for p in report.inputs[:MAX_INPUTS]) + _more(report.inputs), ""]
    out += ["## Recommendation", "", f"**{headline}**", ""]
    out += [f"- Rule: {r}" for r in rules] + [f"- Why: {r}" for r in reasons]
    out += [f"- **Warning:** {w}" for w in warnings] + [""]
    if report.frontier is not None:
        out += ["### The frontier", "", report.frontier.caption, "", f"![{report.frontier.title}](frontier.png)", ""]
    if report.frontier_table is not None:
        out += [report.frontier_table.markdown(), ""]
    out += ["## Corpus", "", report.overview.markdown(), ""]
    for name, table in report.breakdowns.items():
        out += [f"### By {name}", "", table.markdown(), ""]
    if rec.replayed:
        out += ["## Budgets under the window", "", _DECISION_TEXT, "", decision_table(rec).markdown(), ""]
    else:
        out += ["## Budgets", "", "One row per budget tried; the chosen one in bold. Kept sizes in tokens; shares "
                "of sessions except *summarized* (all summarized tokens over all active tokens). In parentheses: the "
                "range of 90% of the resamples of the sessions (a seeded bootstrap).", "",
                sweep_table(rec).markdown(), ""]
    if report.replay is not None and report.replay_table is not None:
        out += ["## Compaction over the sessions' life", "", _replay_text(report.replay), "",
                report.replay_table.markdown(), ""]
    if report.recorded is not None:
        out += ["## What the agents did at their recorded compactions", "", report.recorded_text or _RECORDED_TEXT, "",
                report.recorded.markdown(), ""]
    if report.loss is not None:
        out += ["## What compaction loses at the recorded compactions", "", report.loss_text or _LOSS_TEXT, "",
                report.loss.markdown(), ""]
        if report.loss_figure is not None:
            fig = report.loss_figure
            out += [f"### {fig.title}", "", fig.caption, "", f"![{fig.title}]({fig.name}.png)", ""]
    if report.costs is not None:
        out += ["## What compaction costs", "", _COSTS_TEXT, "", report.costs.markdown(), ""]
    if report.policy_table is not None:
        out += ["## Policies under the same window", "", _POLICY_TEXT, "", report.policy_table.markdown(), ""]
    if report.policy_cuts is not None:
        out += ["### Each policy at the recorded compactions", "", report.policy_cuts_text or _POLICY_CUTS_TEXT, "",
                report.policy_cuts.markdown(), ""]
    if report.omitted:
        out += ["## Not in this report", ""] + [f"- {o}" for o in report.omitted] + [""]
    out += ["## Plots", ""]
    for fig in report.figures:
        out += [f"### {fig.title}", "", fig.caption, "", f"![{fig.title}]({fig.name}.png)", ""]
    out += ["## Files", "", "- `sweep.parquet`: the table above, unformatted",
            "- `splits.parquet`: libpanto's split for every session and budget"]
    if report.recorded_rows is not None:
        out += [f"- `{RECORDED_FILE}`: {_RECORDED_FILE_TEXT}"]
    out += [""]
    return "\n".join(out)


_CSS = """
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222; max-width: 1040px;
       margin: 2em auto; padding: 0 1em; }
h1 { font-size: 1.7em; margin-bottom: .2em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; }
.inputs { color: #666; } code { background: #f3f3f3; padding: 0 .3em; border-radius: 3px; }
.headline { font-size: 1.35em; font-weight: 600; background: #eef5fb; border-left: 4px solid #0072B2;
            padding: .5em .8em; }
.warning { background: #fdf1e6; border-left: 4px solid #D55E00; padding: .3em .8em; margin: .4em 0; }
table { border-collapse: collapse; margin: .8em 0; font-size: .9em; display: block; max-width: 100%; overflow-x: auto; }
th, td { padding: .25em .7em; border-bottom: 1px solid #e5e5e5; text-align: right; }
th.text, td.text { text-align: left; } th { background: #f6f6f6; }
tr.chosen td { font-weight: 700; background: #eef5fb; }
figure { margin: 1.5em 0; } figure img { width: 100%; max-width: 1000px; height: auto; }
figcaption { color: #555; font-size: .9em; }
"""


def render_html(report: Report) -> str:
    """``index.html``: one self-contained page; images embedded as data URIs."""
    rec = report.recommendation
    headline, rules, reasons, warnings = rec.headline(), rec.rules(), rec.reasons, rec.warnings
    e = html.escape
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{e(report.title)}</title>"
             f"<meta name='viewport' content='width=device-width, initial-scale=1'><style>{_CSS}</style></head><body>",
             f"<h1>{e(report.title)}</h1>"]
    if report.inputs:
        parts.append("<p class='inputs'>Inputs: " + ", ".join(f"<code>{e(p)}</code>" for p in report.inputs[:MAX_INPUTS])
                     + _more(report.inputs) + "</p>")
    parts += ["<h2>Recommendation</h2>", f"<p class='headline'>{e(headline)}</p><ul>"]
    parts += [f"<li>Rule: {e(r)}</li>" for r in rules] + [f"<li>Why: {e(r)}</li>" for r in reasons] + ["</ul>"]
    parts += [f"<p class='warning'>Warning: {e(w)}</p>" for w in warnings]
    if report.frontier is not None:
        data = base64.b64encode(report.frontier.png).decode("ascii")
        parts += ["<h3>The frontier</h3>", f"<figure id='frontier'><img alt='{e(report.frontier.title)}' "
                  f"src='data:image/png;base64,{data}'><figcaption>{e(report.frontier.caption)} "
                  "<a href='frontier.png'>PNG</a></figcaption></figure>"]
    if report.frontier_table is not None:
        parts.append(report.frontier_table.html())
    parts += ["<h2>Corpus</h2>", report.overview.html()]
    for name, table in report.breakdowns.items():
        parts += [f"<h3>By {e(name)}</h3>", table.html()]
    if rec.replayed:
        parts += ["<h2>Budgets under the window</h2>", f"<p>{e(_DECISION_TEXT)}</p>", decision_table(rec).html()]
    else:
        parts += ["<h2>Budgets</h2>", "<p>One row per budget tried; the chosen one highlighted. Kept sizes in "
                  "tokens; shares of sessions except <em>summarized</em> (all summarized tokens over all active "
                  "tokens). In parentheses: the range of 90% of the resamples of the sessions (a seeded bootstrap).</p>",
                  sweep_table(rec).html()]
    if report.replay is not None and report.replay_table is not None:
        parts += ["<h2>Compaction over the sessions' life</h2>", f"<p>{e(_replay_text(report.replay))}</p>",
                  report.replay_table.html()]
    if report.recorded is not None:
        parts += ["<h2>What the agents did at their recorded compactions</h2>", f"<p>{e(report.recorded_text or _RECORDED_TEXT)}</p>",
                  report.recorded.html()]
    if report.loss is not None:
        parts += ["<h2>What compaction loses at the recorded compactions</h2>",
                  f"<p>{e(report.loss_text or _LOSS_TEXT)}</p>",
                  report.loss.html()]
        if report.loss_figure is not None:
            fig = report.loss_figure
            data = base64.b64encode(fig.png).decode("ascii")
            parts += [f"<h3>{e(fig.title)}</h3>", f"<figure id='{fig.name}'><img alt='{e(fig.title)}' "
                      f"src='data:image/png;base64,{data}'><figcaption>{e(fig.caption)} "
                      f"<a href='{fig.name}.png'>PNG</a></figcaption></figure>"]
    if report.costs is not None:
        parts += ["<h2>What compaction costs</h2>", f"<p>{e(_COSTS_TEXT)}</p>", report.costs.html()]
    if report.policy_table is not None:
        parts += ["<h2>Policies under the same window</h2>", f"<p>{e(_POLICY_TEXT)}</p>", report.policy_table.html()]
    if report.policy_cuts is not None:
        parts += ["<h3>Each policy at the recorded compactions</h3>", f"<p>{e(report.policy_cuts_text or _POLICY_CUTS_TEXT)}</p>",
                  report.policy_cuts.html()]
    if report.omitted:
        parts += ["<h2>Not in this report</h2><ul>", *[f"<li>{e(o)}</li>" for o in report.omitted], "</ul>"]
    parts += ["<h2>Plots</h2>"]
    for fig in report.figures:
        data = base64.b64encode(fig.png).decode("ascii")
        parts.append(f"<figure id='{e(fig.name)}'>"
                     f"<img alt='{e(fig.title)}' src='data:image/png;base64,{data}'>"
                     f"<figcaption>{e(fig.caption)} <a href='{e(fig.name)}.png'>PNG</a></figcaption></figure>")
    recorded = (f"<li><a href='{RECORDED_FILE}'>{RECORDED_FILE}</a>: {e(_RECORDED_FILE_TEXT)}</li>"
                if report.recorded_rows is not None else "")
    parts += ["<h2>Files</h2><ul><li><a href='sweep.parquet'>sweep.parquet</a>: the table above, unformatted</li>"
              "<li><a href='splits.parquet'>splits.parquet</a>: libpanto's split for every session and budget</li>"
              f"{recorded}<li><a href='report.md'>report.md</a>: this report in Markdown</li></ul></body></html>"]
    return "\n".join(parts)


def timeline_html(tl, png: bytes) -> str:
    """One self-contained page for a session's timeline (:func:`~panto_analytics.analysis.timeline.session_timeline`):
    its account, the plot (``png``, embedded), the compactions and the cache breaks."""
    e = html.escape
    breaks = tl.calls.filter(pl.col("break_cause").is_not_null()).select(
        "call", "seq", "timestamp", "model", "context", "cache_read", "cache_write", "break_cause", "break_cost_usd")
    data = base64.b64encode(png).decode("ascii")
    title = f"Session {tl.session_id}"
    return "\n".join([
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{e(title)}</title>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'><style>{_CSS}</style></head><body>",
        f"<h1>{e(title)}</h1>", f"<p>{e(str(tl))}</p>",
        f"<figure id='timeline'><img alt='{e(title)}: context per API call' src='data:image/png;base64,{data}'></figure>",
        "<h2>Compactions</h2>", Table.from_frame(tl.compactions).html(),
        "<h2>Cache breaks</h2>", Table.from_frame(breaks.with_columns(pl.col("timestamp").cast(pl.String))).html(),
        "</body></html>"])
