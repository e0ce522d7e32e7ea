"""The report: one folder (HTML, Markdown, PNGs, Parquet) that answers "what does each budget do?".

- :mod:`.model`: what a report holds (:class:`Report`), its figures and tables;
- :mod:`.build`: :func:`build_report` computes everything, once;
- :mod:`.render`: :func:`render_markdown`, :func:`render_html` and :func:`write_report`, the folder.
"""
from .build import (
    breakdown,
    build_report,
    corpus_overview,
    costs_section,
    decision_table,
    policy_table,
    replay_figures,
    replay_table,
    report_figures,
    sweep_table,
)
from .model import SEGMENT_TITLES, Report, ReportFigure, Table
from .render import MAX_INPUTS, WRITTEN_LIST, render_html, render_markdown, write_report

__all__ = [
    "MAX_INPUTS", "SEGMENT_TITLES", "WRITTEN_LIST", "Report", "ReportFigure", "Table", "breakdown", "build_report",
    "corpus_overview", "costs_section", "decision_table", "policy_table", "render_html", "render_markdown",
    "replay_figures", "replay_table", "report_figures", "sweep_table", "write_report",
]
