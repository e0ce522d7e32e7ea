"""The report's model: what a report holds (:class:`Report`), its figures and its tables of display strings.

:mod:`.build` fills it; :mod:`.render` lays it out as Markdown, HTML and a folder.
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from ...frame.schema import SESSION
from ...policy import Replay
from ..choose.choice import Choice
from ..formatting import format_column, format_tokens, is_money

__all__ = [
    "RECORDED_ROWS", "SEGMENT_TITLES", "Report", "ReportFigure", "Table", "cell", "percent", "tokens",
]

if TYPE_CHECKING:
    pass

#: Past this many recorded compactions (or cuts, pseudo-cuts included), a section of the report on them shows
#: a summary per agent, not a row (or a dot) each: what it holds then does not grow with the corpus (issue 30).
RECORDED_ROWS = 200

#: Segment kinds the report can split plots by, with their headings.
SEGMENT_TITLES = {"model": "model", "source_format": "source format", "length": "session length"}


@dataclass
class ReportFigure:
    """One plot of the report: file name (without extension), heading, how to read it, the figure."""

    name: str
    title: str
    caption: str
    figure: object
    png: bytes = b""


@dataclass
class Table:
    """A small table of display strings, rendered to Markdown or HTML alike."""

    header: list[str]
    rows: list[list[str]]
    highlight: int | None = None  # index of a row to emphasise
    left: tuple[int, ...] = (0,)  # columns of text, aligned left; the others are numbers

    @classmethod
    def from_frame(cls, frame: pl.DataFrame, formats: dict | None = None) -> Table:
        formats = formats or {}
        # A column of plain numbers is written in one notation (format_column); the others value by value.
        columns = [[formats[c](v) for v in frame[c].to_list()] if formats.get(c, cell) is not cell
                   else format_column(frame[c].to_list(), money=is_money(c)) for c in frame.columns]
        return cls(list(frame.columns), [list(row) for row in zip(*columns)] if columns else [])

    def markdown(self) -> str:
        def line(cells):
            return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

        rows = [[f"**{c}**" if i == self.highlight and c else c for c in r] for i, r in enumerate(self.rows)]
        aligns = ["---" if i in self.left else "---:" for i in range(len(self.header))]
        return "\n".join([line(self.header), line(aligns), *map(line, rows)])

    def html(self) -> str:
        def cls(j):
            return " class='text'" if j in self.left else ""

        head = "".join(f"<th{cls(j)}>{html.escape(h)}</th>" for j, h in enumerate(self.header))
        body = "".join(
            ("<tr class='chosen'>" if i == self.highlight else "<tr>")
            + "".join(f"<td{cls(j)}>{html.escape(c)}</td>" for j, c in enumerate(r)) + "</tr>"
            for i, r in enumerate(self.rows)
        )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def cell(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:,.0f}" if v.is_integer() else f"{v:,.3g}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def percent(v) -> str:
    return "-" if v is None else f"{v:.1%}"


def tokens(v) -> str:
    return "-" if v is None else format_tokens(v)


@dataclass
class Report:
    """Everything a report shows, computed once; :func:`write_report` lays it out."""

    title: str
    inputs: list[str]
    budgets: list[int]
    #: One row per session and budget; or the Parquet file they were written to as they came (a dataset's
    #: report, bucket by bucket), which :func:`write_report` moves into the report's folder.
    splits: pl.DataFrame | Path
    sweep: pl.DataFrame
    recommendation: Choice
    overview: Table
    breakdowns: dict[str, Table]
    figures: list[ReportFigure] = field(default_factory=list)
    #: With a window: the replay the recommendation was judged on, and its per-budget table (a dataset's report:
    #: the replay's parameters without its rows, which grow with the sessions; :attr:`policies` too).
    replay: Replay | None = None
    replay_table: Table | None = None
    #: With a billed replay: "What compaction costs" (analysis.cost_table), one row per policy and budget.
    costs: Table | None = None
    #: With recorded compactions: what the agents kept beside libpanto's split at the same moment (a row per
    #: compaction, or past :data:`RECORDED_ROWS` a row per agent and budget, and then what the table is:
    #: :attr:`recorded_text`, None for the rows' own words).
    recorded: Table | None = None
    recorded_text: str | None = None
    #: Every row of what the agents kept at each recorded compaction and budget
    #: (:func:`~panto_analytics.analysis.compactions.agent_vs_libpanto`), the report's
    #: ``recorded_compactions.parquet``; or the Parquet file they were written to as the tasks gave them (a
    #: dataset's report), which :func:`write_report` moves into the report's folder.
    recorded_rows: pl.DataFrame | Path | None = None
    #: With a window and policies: the replay under each policy and its comparison table; with recorded
    #: compactions too, each policy's cut at them beside the agents'.
    policies: Replay | None = None
    policy_table: Table | None = None
    policy_cuts: Table | None = None
    policy_cuts_text: str | None = None
    #: With a window: the decision's frontier (cost per session against orphan rate), which leads the report,
    #: its points as a table, and the replay (every policy, billed, with loss) the decision was made on.
    frontier: ReportFigure | None = None
    frontier_table: Table | None = None
    outcomes: Replay | None = None
    #: With recorded compactions: what each lost, the orphan targets checked against what the agent fetched
    #: again (one row per compaction and pseudo-cut), and the calibration plot.
    loss: Table | None = None
    loss_figure: ReportFigure | None = None
    #: The loss section's text where it is not the one of a row per cut (past :data:`RECORDED_ROWS` cuts).
    loss_text: str | None = None
    #: What this report leaves out and why (a dataset's report: the sections that need every session in memory).
    omitted: list[str] = field(default_factory=list)

    def sessions(self) -> int:
        """The sessions the report is on (those of :attr:`splits`)."""
        rows = pl.scan_parquet(self.splits) if isinstance(self.splits, Path) else self.splits.lazy()
        if SESSION not in rows.collect_schema().names():
            return 0
        return int(rows.select(pl.col(SESSION).n_unique()).collect().item())

    def __repr__(self) -> str:
        """One line: the title, the budgets, the recommendation and what the report holds."""
        n = self.sessions()
        return (f"<Report {self.title!r}: {n:,} session{'' if n == 1 else 's'}, {len(self.budgets)} budgets, "
                f"{self.recommendation.headline()}, {len(self.figures)} plots>")

    def __str__(self) -> str:
        """``print(report)``: the title, the corpus, the recommendation and the plots, as plain text."""
        lines = [self.title, "=" * len(self.title), ""]
        lines += [f"{row[0]}: {row[1]}" + "".join(f" ({note})" for note in row[2:] if note)
                  for row in self.overview.rows]
        for name, table in self.breakdowns.items():
            lines += ["", f"By {name}: " + ", ".join(f"{row[0]} ({row[1]})" for row in table.rows)]
        lines += ["", self.recommendation.to_text(), ""]
        lines += [f"plot: {figure.title}" for figure in self.figures]
        return "\n".join(lines)
