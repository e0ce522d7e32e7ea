"""The report: one folder (HTML, Markdown, PNGs, Parquet) that answers "what does each budget do?".

- :mod:`.build`: :func:`build_report` computes everything; :func:`write_report` writes the folder.
"""
from .build import (
    MAX_INPUTS,
    SEGMENT_TITLES,
    Report,
    ReportFigure,
    Table,
    breakdown,
    build_report,
    corpus_overview,
    policy_table,
    render_html,
    render_markdown,
    replay_figures,
    replay_table,
    report_figures,
    sweep_table,
    write_report,
)

__all__ = [
    "MAX_INPUTS", "Report", "ReportFigure", "SEGMENT_TITLES", "Table", "breakdown", "build_report", "corpus_overview",
    "policy_table", "render_html", "render_markdown", "replay_figures", "replay_table", "report_figures", "sweep_table", "write_report",
]
