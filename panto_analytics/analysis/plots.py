"""Plots of what a budget does, in one style, headless.

Every function takes frames (``splits`` or ``turns``; for those of splits and turns, their exact counts,
:class:`~panto_analytics.analysis.plot_data.PlotCounts`, do too) and returns a
:class:`matplotlib.figure.Figure`; none touches pyplot's global state, so
they work without a display and in a notebook alike (a notebook shows a
returned figure, with no ``%matplotlib`` magic needed). The numbers drawn come from :mod:`panto_analytics.analysis.plot_data`,
where tests check them.

Common keywords:

``segments``
    a frame of ``session_id`` and ``segment`` (from
    :func:`~panto_analytics.analysis.plot_data.session_segments`): draw one curve per
    segment (model, source format, session-length bucket) instead of the
    whole corpus.
``highlight``
    a budget to mark with a vertical line, e.g. the recommended one.

>>> import polars as pl
>>> s = pl.DataFrame({"session_id": ["a", "a"], "budget": [0, 10], "kept_turns": [0, 1],
...     "kept_tokens": [0, 8], "n_turns": [1, 1], "summarized_tokens": [8, 0],
...     "active_tokens": [8, 8], "noop": [False, True], "capped": [False, False]})
>>> kept_tokens_by_budget(s).axes[0].get_ylabel()
'kept verbatim suffix (tokens)'
"""
from __future__ import annotations

import io
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, cast

import matplotlib
import numpy as np
from cycler import cycler
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.text import Annotation
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullLocator, PercentFormatter

from ..frame.schema import BUDGET
from . import plot_data as data
from .formatting import format_tokens, has_budget, point_name

__all__ = [
    "BUDGET_LABEL", "CALIBRATION_LINES", "DPI", "FIGSIZE", "GREY", "OUTCOME_COLORS", "PALETTE", "PlotFigure",
    "SOURCE_COLORS", "SOURCE_LABELS",
    "STYLE", "agent_vs_libpanto_kept", "agent_vs_libpanto_summary", "cost_by_budget",
    "frontier", "kept_tokens_by_budget", "kept_turns_by_budget", "outcome_shares_by_budget",
    "png_bytes", "policy_comparison", "refetch_calibration", "refetch_calibration_summary", "replay_by_budget", "save", "style",
    "summarized_share_by_budget", "timeline", "turn_sizes",
]

if TYPE_CHECKING:
    import polars as pl

    from ..outcomes.recorded_refetch import CalibrationSummary

#: Segment and series colours (colour-blind friendly, after Okabe & Ito).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#7f7f7f")

#: Fixed colours for the split outcomes and the turn-size sources, the same in every plot.
OUTCOME_COLORS = dict(zip((label for label, _ in data.OUTCOMES), ("#009E73", "#D55E00", "#7B61A8")))
SOURCE_COLORS = {"usage": "#0072B2", "words": "#E69F00"}
SOURCE_LABELS = {"usage": "provider usage", "words": "word estimate (words x 1.3)"}

#: Figure size in inches: reads well inline in a notebook and at 120 dpi in a report.
FIGSIZE = (8.0, 4.5)
DPI = 120

STYLE = {
    "font.size": 10,
    "axes.titlesize": 12,
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
    "axes.labelsize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.35,
    "grid.linewidth": 0.6,
    "axes.prop_cycle": cycler(color=PALETTE),
    # An opaque, borderless legend: lines behind it do not cross its text.
    "legend.frameon": True,
    "legend.framealpha": 0.9,
    "legend.edgecolor": "none",
    "legend.fontsize": 9,
    "lines.linewidth": 1.8,
    "savefig.dpi": DPI,
    "savefig.bbox": "tight",
    "savefig.facecolor": "white",
    "figure.facecolor": "white",
}

BUDGET_LABEL = "budget (keep_verbatim, tokens)"
GREY = "#555555"
INK = "#222222"
ACCENT = "#D55E00"


@contextmanager
def style():
    """The package's plot style, for figures drawn by hand in the same look."""
    with matplotlib.rc_context(STYLE):
        yield


class PlotFigure(Figure):
    """A figure that shows itself in a notebook, whatever the matplotlib backend (IPython's ``_repr_png_``)."""

    def _repr_png_(self) -> bytes:
        return png_bytes(self)


def _figure(ncols: int = 1, nrows: int = 1, *, size: tuple[float, float] | None = None, **kw):
    width, height = size or FIGSIZE
    fig = PlotFigure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, **kw)
    return fig, axes.ravel()


def _token_axis(axis) -> None:
    axis.set_major_formatter(FuncFormatter(lambda v, _: format_tokens(v)))


def _note(fig: Figure, text: str) -> None:
    """A grey line under the title saying how to read the plot."""
    fig.get_axes()[0].annotate(text, xy=(0, 1), xycoords="axes fraction", xytext=(0, 4),
                               textcoords="offset points", fontsize=8.5, color=GREY, va="bottom")


def _title(ax, title: str) -> None:
    # Leave a line between the title and the axes for the note.
    ax.set_title(title, pad=18)


def _highlight(ax, budget: int | None, x: float | None = None) -> None:
    """A dotted vertical line at ``budget`` (drawn at ``x`` on a categorical axis), named in the legend."""
    if budget is None:
        return
    ax.axvline(budget if x is None else x, color="black", lw=1.2, ls=":", zorder=1,
               label=f"recommended: {format_tokens(budget)}")


def _legend(ax, *more, **kw) -> None:
    """One legend for ``ax`` and the axes in ``more`` together, when there is something to name (an empty corpus
    draws nothing): below the plot, under every axes (the constrained layout makes room), where it covers no
    line, whatever the data (inside the axes, a legend in a fixed corner covered the lines of some corpora:
    issue 32). ``loc`` is ignored. A figure of several panels names them all in one call: two legends, each
    below the figure, lay on each other.
    """
    handles: list = []
    labels: list[str] = []
    for each in (ax, *more):
        named, names = each.get_legend_handles_labels()
        handles, labels = handles + named, labels + names
    if not (handles or kw.get("handles")):
        return
    kw.pop("loc", None)
    # Two columns while they fit the figure's width; long names (a project's path) one under the other.
    widest = max(map(len, labels or [h.get_label() for h in kw.get("handles", [])]), default=0)
    kw.setdefault("ncols", 2 if widest <= 45 else 1)
    ax.figure.legend(*(() if kw.get("handles") else (handles, labels)), loc="outside lower center", **kw)


def _sessions(n: int) -> str:
    return f"{n} session{'s' if n != 1 else ''}"


def _symlog(ax, linthresh: float, top: float, steps: tuple[int, ...] = (1,)) -> None:
    """A log scale that still shows zero: linear below ``linthresh``; ticks at 0 and ``steps`` x powers of ten."""
    ax.set_yscale("symlog", linthresh=linthresh, linscale=0.5)
    ticks, decade = [0.0], float(linthresh)
    while decade <= top:
        ticks += [decade * s for s in steps if decade * s <= top * 1.05]
        decade *= 10
    limits = ax.get_ylim()
    ax.set_yticks(ticks)
    ax.set_ylim(limits)
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_tokens(v)))


def _segment_colors(frame) -> dict:
    return {seg: PALETTE[i % len(PALETTE)] for i, seg in enumerate(frame["segment"].dtype.categories)}


def _bands(ax, stats, *, inner=("q1", "q3"), outer=None, value="median", marker="o") -> None:
    """Median line and shaded bands per segment, budgets on a numeric x axis.

    With several segments only the inner band is drawn, lighter, so that
    overlapping bands stay readable.
    """
    colors = _segment_colors(stats)
    several = stats["segment"].n_unique() > 1
    if several:
        outer = None
    for seg, part in stats.partition_by("segment", as_dict=True, maintain_order=True).items():
        seg = seg[0]
        x = part[BUDGET].to_numpy()
        color = colors[seg]
        if outer:
            ax.fill_between(x, part[outer[0]], part[outer[1]], color=color, alpha=0.10, lw=0)
        ax.fill_between(x, part[inner[0]], part[inner[1]], color=color, alpha=0.15 if several else 0.25, lw=0)
        label = f"{seg}: median of {_sessions(part['sessions'].max())}" if several else "median"
        ax.plot(x, part[value], color=color, marker=marker, ms=3.5, label=label)
    _token_axis(ax.xaxis)
    ax.set_xlabel(BUDGET_LABEL)
    ax.set_xlim(left=0)


def kept_tokens_by_budget(splits, *, log: bool = False, segments=None, highlight: int | None = None) -> Figure:
    """Distribution of the kept verbatim suffix (tokens) per budget.

    One box per budget (quartiles, whiskers at the 10th and 90th
    percentiles, dots at the extremes) with the budget itself drawn as its
    upper limit; with ``segments``, one median line and interquartile band
    per segment. ``log`` uses a symmetric log scale (zero stays visible).
    """
    stats = data.kept_tokens_stats(splits, segments)
    segmented = data.is_segmented(splits, segments)
    with style():
        fig, (ax,) = _figure()
        budgets = stats[BUDGET].unique(maintain_order=True).to_list()
        if not segmented:
            positions = list(range(len(budgets)))
            boxes = [
                {"med": r["median"], "q1": r["q1"], "q3": r["q3"], "whislo": r["p10"], "whishi": r["p90"],
                 "fliers": [v for v in (r["min"], r["max"]) if v < r["p10"] or v > r["p90"]]}
                for r in stats.iter_rows(named=True)
            ]
            width = 0.6
            ax.bxp(boxes, positions=positions, widths=width, patch_artist=True, manage_ticks=False,
                   boxprops={"facecolor": PALETTE[0] + "55", "edgecolor": PALETTE[0]},
                   medianprops={"color": PALETTE[0], "lw": 2}, whiskerprops={"color": PALETTE[0]},
                   capprops={"color": PALETTE[0]}, flierprops={"marker": ".", "markeredgecolor": PALETTE[0]})
            ax.hlines(budgets, [p - width / 2 - 0.1 for p in positions], [p + width / 2 + 0.1 for p in positions],
                      colors=PALETTE[5], lw=1.6, label="budget (upper limit of the kept suffix)")
            step = max(1, round(len(budgets) / 12))
            ax.set_xticks(positions[::step], [format_tokens(b) for b in budgets[::step]])
            ax.set_xlim(-0.7, len(budgets) - 0.3)
            ax.set_xlabel(BUDGET_LABEL)
            ax.grid(axis="x", visible=False)
            if highlight in budgets:
                _highlight(ax, highlight, budgets.index(highlight))
            n = cast(int, stats["sessions"].max()) if len(stats) else 0
            note = f"{n} sessions with turns · box: quartiles · whiskers: 10th-90th percentile · dots: min / max"
        else:
            _bands(ax, stats, outer=("p10", "p90"))
            ax.plot(budgets, budgets, color=GREY, ls="--", lw=1, label="budget (upper limit)")
            _highlight(ax, highlight)
            note = "line: median · band: quartiles"
        if log:
            _symlog(ax, 1000, max(budgets, default=1))
        ax.set_ylim(bottom=0)
        _token_axis(ax.yaxis)
        ax.set_ylabel("kept verbatim suffix (tokens)")
        _title(ax, "How much each budget keeps verbatim")
        _note(fig, note)
        _legend(ax)
    return fig


#: At most this many recorded compactions get lines of their own in the calibration plot's right panel (each in
#: the legend) and in :func:`agent_vs_libpanto_kept`; past it the calibration panel draws their sum and the kept
#: plot a band (a corpus's thousands of compactions drew thousands of lines and legend entries: 1.6 GB and
#: minutes for an unreadable plot, at 8,542 compactions).
CALIBRATION_LINES = 12


def agent_vs_libpanto_kept(rows, *, log: bool = False) -> Figure:
    """libpanto's kept verbatim suffix per budget at the agents' recorded compactions, against what the agents kept.

    ``rows``: :func:`panto_analytics.analysis.compactions.agent_vs_libpanto`. One box per budget
    (quartiles, whiskers at the extremes) with every compaction as a dot; the agents' kept tokens,
    which no budget changes, as dotted horizontal lines (one per compaction; past :data:`CALIBRATION_LINES` of
    them, a band from their first to their third quartile and dotted lines at their extremes) and their median
    as a solid one.
    """
    budgets = rows[BUDGET].unique().sort().to_list()
    kept = rows.unique("cut", keep="first")["agent_kept_tokens"]  # what the agents kept, a value per compaction
    agent = kept.to_list()
    with style():
        fig, (ax,) = _figure()
        positions = list(range(len(budgets)))
        values = [rows.filter(rows[BUDGET] == b)["kept_tokens"].to_list() for b in budgets]
        if budgets:
            ax.boxplot(values, positions=positions, widths=0.5, whis=(0, 100), patch_artist=True, manage_ticks=False,
                       boxprops={"facecolor": PALETTE[0] + "55", "edgecolor": PALETTE[0]},
                       medianprops={"color": PALETTE[0], "lw": 2}, whiskerprops={"color": PALETTE[0]},
                       capprops={"color": PALETTE[0]}, showfliers=False)
            for x, vs in zip(positions, values):
                ax.plot([x] * len(vs), vs, ".", color=PALETTE[0], alpha=0.6)
            ax.plot([], [], "s", color=PALETTE[0] + "55", label="libpanto's kept suffix at that moment")
        if len(agent) > CALIBRATION_LINES:  # one band for them all: thousands of lines drew gigabytes, unreadable
            ax.axhspan(kept.quantile(0.25, "linear"), kept.quantile(0.75, "linear"), color=PALETTE[1], alpha=0.2,
                       label=f"what the agents kept: quartiles of {len(agent):,} compactions")
            for v in (kept.min(), kept.max()):
                ax.axhline(v, color=PALETTE[1], ls=":", lw=1)
        for i, v in enumerate(agent if len(agent) <= CALIBRATION_LINES else []):
            ax.axhline(v, color=PALETTE[1], ls=":", lw=1, label="each compaction: what the agent kept" if i == 0 else None)
        if agent:
            ax.axhline(kept.median(), color=PALETTE[5], lw=2, label="median of what the agents kept")
        if log:
            _symlog(ax, 1000, max([*budgets, *agent], default=1))
        _kept_at_compactions_axes(ax, budgets)
        _note(fig, f"{len(agent)} recorded compactions · box: quartiles · whiskers: min / max · dots: compactions")
        _legend(ax)
    return fig


def agent_vs_libpanto_summary(stats) -> Figure:
    """:func:`agent_vs_libpanto_kept` past a few hundred compactions, from their summary
    (:func:`~panto_analytics.analysis.compactions.kept_summary` by budget, every agent pooled): per budget, a bar
    from the 10th to the 90th percentile of libpanto's kept suffix and a line through their medians; what the
    agents kept, which no budget changes, as a band of the same percentiles and a line at its median.

    >>> import polars as pl
    >>> from panto_analytics.analysis.compactions import kept_counts, kept_summary
    >>> rows = pl.DataFrame({"source_format": ["pi"] * 2, "budget": [20_000] * 2, "kept_turns": [2, 3],
    ...     "kept_tokens": [12_345, 15_000], "agent_kept_tokens": [9_000, 20_000], "tokens_before": [None, 10]})
    >>> len(agent_vs_libpanto_summary(kept_summary(kept_counts(rows), by=["budget"])).axes)
    1
    """
    budgets = stats[BUDGET].to_list()
    positions = list(range(len(budgets)))
    first = stats.row(0, named=True) if stats.height else None
    n = int(first["compactions"]) if first else 0
    with style():
        fig, (ax,) = _figure()
        if budgets:
            low, high = stats["kept_tokens_p10"].to_list(), stats["kept_tokens_p90"].to_list()
            ax.bar(positions, [h - lo for lo, h in zip(low, high)], bottom=low, width=0.5, color=PALETTE[0] + "55",
                   edgecolor=PALETTE[0], label="libpanto's kept suffix at that moment: 10th-90th percentile")
            ax.plot(positions, stats["kept_tokens_p50"].to_list(), "o-", color=PALETTE[0], lw=2,
                    label="libpanto's kept suffix: median")
        if first is not None and first["agent_kept_tokens_p50"] is not None:
            ax.axhspan(first["agent_kept_tokens_p10"], first["agent_kept_tokens_p90"], color=PALETTE[1], alpha=0.2,
                       label=f"what the agents kept: 10th-90th percentile of {n:,} compactions")
            ax.axhline(first["agent_kept_tokens_p50"], color=PALETTE[5], lw=2, label="median of what the agents kept")
        _kept_at_compactions_axes(ax, budgets)
        _note(fig, f"{n:,} recorded compactions · bar: 10th-90th percentile · line: median · tokens to 3 "
                   "significant digits")
        _legend(ax)
    return fig


def _kept_at_compactions_axes(ax, budgets: list[int]) -> None:
    """The axes both kept plots at the recorded compactions share: a budget a position (about 12 of them
    labelled), the kept tokens from 0 up, the title."""
    step = max(1, round(len(budgets) / 12))
    positions = list(range(len(budgets)))
    ax.set_xticks(positions[::step], [format_tokens(b) for b in budgets[::step]])
    ax.set_xlim(-0.7, max(len(budgets), 1) - 0.3)
    ax.set_xlabel(BUDGET_LABEL)
    ax.grid(axis="x", visible=False)
    ax.set_ylim(bottom=0)
    _token_axis(ax.yaxis)
    ax.set_ylabel("kept verbatim (tokens)")
    _title(ax, "What libpanto would keep where the agents compacted")


def refetch_calibration(cuts, curve) -> Figure:
    """The orphan targets as a prediction of a re-fetch, at every recorded compaction (and pseudo-cut).

    ``cuts`` and ``curve`` are :func:`~panto_analytics.outcomes.recorded_refetch.calibration`'s pair (``curve``'s
    ``_cut`` is the row of ``cuts``). Left: per cut, the orphan targets (predicted re-fetches) against the
    targets the agent really read or fetched again within the horizon (hollow: all of them; filled: those it
    predicted); on the dashed line every predicted target was fetched again. Right: over the horizon, after
    each tool call, the predicted targets fetched again so far (solid) and the re-fetches it did not predict
    (dotted), one colour per recorded compaction (past :data:`CALIBRATION_LINES` of them, their sum).
    """
    rows = cuts.with_row_index("_cut").to_dicts()
    compactions = [r for r in rows if r["cut"] == "compaction"]
    with style():
        fig, (left, right) = _figure(2, size=(FIGSIZE[0] * 1.35, FIGSIZE[1]))
        for kind, face, label in (("compaction", None, "recorded compaction"), ("baseline", "none", "pseudo-cut")):
            mine = [r for r in rows if r["cut"] == kind]
            if not mine:
                continue
            x = [r["orphan_targets"] for r in mine]
            left.scatter(x, [r["fetched_again_targets"] for r in mine], s=40, facecolors="none",
                         edgecolors=PALETTE[0] if kind == "compaction" else GREY,
                         label=f"{label}: every target fetched again")
            left.scatter(x, [r["refetched_targets"] for r in mine], s=22, marker="o" if face is None else "s",
                         color=PALETTE[0] if kind == "compaction" else GREY, label=f"{label}: of them predicted")
        _calibration_left(left, max([1, *(max(r["orphan_targets"], r["fetched_again_targets"]) for r in rows)]))
        horizon = int(curve["calls"].max()) if curve.height else 0
        if len(compactions) > CALIBRATION_LINES:  # one pair of lines for them all: a legend a reader can follow
            total = data.calibration_total(curve, [r["_cut"] for r in compactions])
            name = f"all {len(compactions):,} recorded compactions, summed"
            right.step(total["calls"].to_list(), total["predicted"].to_list(), where="post", color=PALETTE[0],
                       label=f"{name}: predicted, fetched again")
            right.step(total["calls"].to_list(), total["unpredicted"].to_list(), where="post", color=PALETTE[0],
                       ls=":", label=f"{name}: not predicted")
        for i, r in enumerate(compactions if len(compactions) <= CALIBRATION_LINES else []):
            color = PALETTE[i % len(PALETTE)]
            mine = curve.filter(curve["_cut"] == r["_cut"]).sort("calls")
            name = f"#{i + 1} ({format_tokens(r['context'])})" if r.get("context") is not None else f"#{i + 1}"
            right.step(mine["calls"].to_list(), mine["predicted"].to_list(), where="post", color=color,
                       label=f"{name}: predicted, fetched again")
            right.step(mine["calls"].to_list(), mine["unpredicted"].to_list(), where="post", color=color, ls=":",
                       label=f"{name}: not predicted")
        _calibration_right(right, horizon, "targets fetched again (cumulative)", integer=True)
        _note(fig, f"{len(compactions)} recorded compactions, {len(rows) - len(compactions)} pseudo-cuts · "
                   f"horizon {horizon} tool calls")
        _legend(left, right, fontsize=7.5, ncols=3)  # up to 2 + 2 x CALIBRATION_LINES entries: rows, not a column
    return fig


def _calibration_left(ax, top: float) -> None:
    """The left panel's diagonal (up to ``top``), scales, labels and title."""
    ax.plot([0, top], [0, top], ls="--", color=GREY, lw=1, label="every predicted target fetched again")
    ax.set_xscale("symlog", linthresh=1)
    ax.set_yscale("symlog", linthresh=1)
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("orphan targets at the cut (predicted re-fetches)")
    ax.set_ylabel("targets fetched again within the horizon")
    _title(ax, "Predicted against observed re-fetches")


def _calibration_right(ax, horizon: int, ylabel: str, *, integer: bool) -> None:
    """The right panel's axes over the ``horizon``, labels and title."""
    ax.set_xlim(0.5, max(horizon, 1) + 0.5)
    ax.set_ylim(bottom=0)
    if integer:
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("tool calls after the compaction")
    ax.set_ylabel(ylabel)
    _title(ax, "Over the horizon")


def _count_size(count: int) -> float:
    """A marker's area (points squared) for a point that stands for ``count`` cuts: 14 for one, 26 more for each
    tenfold."""
    return 14.0 + 26.0 * float(np.log10(max(count, 1)))


#: The kinds of cut, their names in a legend and their colour when one colour is not the agent's.
_CUT_KINDS = (("compaction", "recorded compaction", "recorded compactions"), ("baseline", "pseudo-cut", "pseudo-cuts"))


def refetch_calibration_summary(summary: CalibrationSummary) -> Figure:
    """:func:`refetch_calibration` of many cuts, from their
    :class:`~panto_analytics.outcomes.recorded_refetch.CalibrationSummary` (counts and sums, whatever the number
    of cuts). Left: the cuts counted at each point (orphan targets, targets fetched again: hollow, all of them;
    filled, those predicted), a marker's area growing with the count (the legend names a few). Right: per agent
    and kind of cut, the targets fetched again after each tool call, predicted (solid) and not (dotted), per cut
    (the summed curve over the cuts behind it; pseudo-cuts thinner).

    >>> import polars as pl
    >>> from panto_analytics.outcomes.recorded_refetch import calibration_partial
    >>> cuts = pl.DataFrame({"source_format": ["pi"] * 2, "cut": ["compaction", "baseline"], "orphan_targets": [4, 9],
    ...                      "refetched_targets": [1, 0], "fetched_again_targets": [2, 1], "window_calls": [3, 3],
    ...                      "repeat_reads": [0, 0], "orphan_calls": [1, 0], "refetched_orphans": [1, 0],
    ...                      "refetch_calls": [1, 0], "refetch_tokens": [50, 0]})
    >>> curve = pl.DataFrame({"_cut": [0, 0, 1, 1], "calls": [1, 2, 1, 2], "predicted": [0, 1, 0, 0],
    ...                       "unpredicted": [1, 1, 0, 1]})
    >>> len(refetch_calibration_summary(calibration_partial(cuts, curve)).axes[1].get_lines())
    4
    """
    import polars as pl

    points = data.calibration_points(summary.points)
    per_cut = data.calibration_per_cut(summary.sums, summary.curve)
    agents = summary.sums["source_format"].unique(maintain_order=True).to_list()
    counted = dict(summary.sums.group_by("cut").agg(pl.col("cuts").sum()).iter_rows())
    with style():
        fig, (left, right) = _figure(2, size=(FIGSIZE[0] * 1.35, FIGSIZE[1]))
        for kind, one, _ in _CUT_KINDS:
            color = PALETTE[0] if kind == "compaction" else GREY
            for series, label in (("all", "every target fetched again"), ("predicted", "of them predicted")):
                mine = points.filter((pl.col("cut") == kind) & (pl.col("series") == series))
                if mine.is_empty():
                    continue
                sizes = [_count_size(c) for c in mine["count"].to_list()]
                if series == "all":
                    left.scatter(mine["x"].to_list(), mine["y"].to_list(), s=[s * 2 for s in sizes],
                                 facecolors="none", edgecolors=color, label=f"{one}s: {label}")
                else:
                    left.scatter(mine["x"].to_list(), mine["y"].to_list(), s=sizes,
                                 marker="o" if kind == "compaction" else "s", color=color, label=f"{one}s: {label}")
        most = max(points["count"].to_list(), default=1)
        for c in [10 ** k for k in range(len(str(most)))]:  # the legend's sizes: 1, 10, 100, ... cuts
            left.scatter([], [], s=_count_size(c), color=GREY, alpha=0.6,
                         label=f"{c:,} cut{'' if c == 1 else 's'} at a point (filled marker's area)")
        _calibration_left(left, max([1, *points["x"].to_list(), *points["y"].to_list()]))
        for (agent, kind), mine in per_cut.partition_by("source_format", "cut", as_dict=True,
                                                        maintain_order=True).items():
            color = PALETTE[agents.index(agent) % len(PALETTE)]
            many = next(m for k, _, m in _CUT_KINDS if k == kind)
            name = f"{agent}, {int(mine['cuts'][0]):,} {many}, per cut"
            lw = 1.8 if kind == "compaction" else 1.0
            right.step(mine["calls"].to_list(), mine["predicted"].to_list(), where="post", color=color, lw=lw,
                       label=f"{name}: predicted")
            right.step(mine["calls"].to_list(), mine["unpredicted"].to_list(), where="post", color=color, lw=lw,
                       ls=":", label=f"{name}: not predicted")
        horizon = max(summary.curve["calls"].to_list(), default=0)
        _calibration_right(right, horizon, "targets fetched again per cut (cumulative)", integer=False)
        _note(fig, f"{counted.get('compaction', 0):,} recorded compactions, {counted.get('baseline', 0):,} "
                   f"pseudo-cuts · horizon {horizon} tool calls")
        # One legend for both panels (two, each below the figure, would lie on each other).
        _legend(left, right, fontsize=7.5)
    return fig


def outcome_shares_by_budget(splits, *, segments=None, highlight: int | None = None) -> Figure:
    """Share of sessions where the split does nothing (noop), keeps nothing, or is capped, per budget.

    With ``segments``, one panel per outcome and one line per segment.
    """
    shares = data.outcome_shares(splits, segments)
    segmented = data.is_segmented(splits, segments)
    outcomes = list(cast("pl.Enum", shares["outcome"].dtype).categories)
    with style():
        if not segmented:
            fig, (ax,) = _figure()
            for outcome in outcomes:
                part = shares.filter(outcome=outcome)
                ax.plot(part[BUDGET], part["share"], marker="o", ms=3.5, color=OUTCOME_COLORS[outcome],
                        label=outcome)
            axes = [ax]
            _title(ax, "What the split does to each session")
        else:
            fig, axes = _figure(len(outcomes), size=(12.0, 4.2), sharey=True)
            colors = _segment_colors(shares)
            for ax, outcome in zip(axes, outcomes):
                for (seg,), part in shares.filter(outcome=outcome).partition_by(
                        "segment", as_dict=True, maintain_order=True).items():
                    ax.plot(part[BUDGET], part["share"], marker="o", ms=3, color=colors[seg], label=seg)
                ax.set_title(outcome.replace(" (", "\n("), fontsize=10, loc="left")
            fig.suptitle("What the split does to each session, by segment", fontweight="bold", x=0.01, ha="left")
        for ax in axes:
            ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
            ax.set_ylim(-0.03, 1.03)
            _token_axis(ax.xaxis)
            ax.set_xlabel(BUDGET_LABEL)
            ax.set_xlim(left=0)
            _highlight(ax, highlight)
        _legend(axes[-1])
        axes[0].set_ylabel("share of sessions")
        if not segmented:
            _note(fig, "noop: the whole active context fits · zero kept: the newest turn alone exceeds the budget"
                       " · capped: over 4096 turns")
    return fig


def summarized_share_by_budget(splits, *, segments=None, highlight: int | None = None) -> Figure:
    """Share of each session's active context that gets summarized, per budget: median and quartiles.

    A dashed line gives the pooled share (all summarized tokens over all
    active tokens), where long sessions weigh more; with ``segments`` it is
    left out to keep the plot readable.
    """
    stats = data.summarized_share_stats(splits, segments)
    segmented = data.is_segmented(splits, segments)
    with style():
        fig, (ax,) = _figure()
        _bands(ax, stats)
        if not segmented:  # per segment, the pooled lines would crowd the plot
            ax.plot(stats[BUDGET], stats["pooled"], color=PALETTE[0], ls="--", lw=1.2, label="pooled over all tokens")
        ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        ax.set_ylim(-0.03, 1.03)
        ax.set_ylabel("summarized share of the active context")
        _highlight(ax, highlight)
        _legend(ax)
        _title(ax, "How much of the context each budget summarizes")
        _note(fig, "per session: summarized / active tokens · line: median · band: quartiles")
    return fig


def kept_turns_by_budget(splits, *, segments=None, highlight: int | None = None, log: bool = False,
                         stats=None) -> Figure:
    """Whole turns kept verbatim per budget: median, quartiles and 10th-90th percentile band (``stats``: those of
    :func:`~panto_analytics.analysis.plot_data.kept_turns_stats`, already computed, in place of ``splits``)."""
    stats = data.kept_turns_stats(splits, segments) if stats is None else stats
    segmented = data.is_segmented(splits, segments)
    with style():
        fig, (ax,) = _figure()
        _bands(ax, stats, outer=("p10", "p90"))
        if log:
            _symlog(ax, 1, cast(float, stats["max"].max()) or 1, steps=(1, 2, 5))
        ax.set_ylim(bottom=0)
        ax.set_ylabel("kept turns (whole turns)")
        _highlight(ax, highlight)
        _legend(ax)
        _title(ax, "How many turns each budget keeps verbatim")
        _note(fig, "sessions with turns · line: median · dark band: quartiles · light band: 10th-90th percentile"
              if not segmented else "sessions with turns · line: median · band: quartiles")
    return fig


def replay_by_budget(replay_sessions, value: str, *, ylabel: str, title: str, tokens: bool = False,
                     highlight: int | None = None, stats=None) -> Figure:
    """A per-session figure of a replay (``n_compactions``, ``request_bytes``, ...) per budget:
    median, quartiles and 10th-90th percentile band over sessions (``stats``: those of
    :func:`~panto_analytics.analysis.plot_data.per_session_stats`, already computed, in place of the rows)."""
    stats = data.per_session_stats(replay_sessions, value) if stats is None else stats
    with style():
        fig, (ax,) = _figure()
        _bands(ax, stats, outer=("p10", "p90"))
        if tokens:
            _token_axis(ax.yaxis)
        ax.set_ylim(bottom=0)
        ax.set_ylabel(ylabel)
        _highlight(ax, highlight)
        _legend(ax)
        _title(ax, title)
        _note(fig, "sessions · line: median · dark band: quartiles · light band: 10th-90th percentile")
    return fig


def cost_by_budget(replay_sessions, *, value: str = "total_cost_usd", highlight: int | None = None) -> Figure:
    """Cost per session against budget, one line per policy (median, 10th-90th percentile band), and the
    recorded cost as a reference line.

    ``replay_sessions``: the session rows of a billed replay (``pa.replay(..., prices=...)``); ``value``:
    ``total_cost_usd`` (the replayed calls and the summarizer's) or ``simulated_cost_usd``
    (:func:`~panto_analytics.analysis.plot_data.cost_per_session`).

    >>> import polars as pl
    >>> s = pl.DataFrame({"policy": ["pi"] * 4, "session_id": ["a", "b"] * 2, "budget": [0, 0, 8_000, 8_000],
    ...     "total_cost_usd": [1.0, 3.0, 1.5, 2.5], "recorded_cost_usd": [2.0, 4.0, 2.0, 4.0]})
    >>> cost_by_budget(s).axes[0].get_ylabel()
    'cost per session (USD)'
    """
    stats, recorded = data.cost_per_session(replay_sessions, value)
    with style():
        fig, (ax,) = _figure()
        colors = _segment_colors(stats)
        for seg, part in stats.partition_by("segment", as_dict=True, maintain_order=True).items():
            x, median = part[BUDGET].to_numpy(), part["median"].to_numpy()
            label = f"{seg[0]}: median of {_sessions(max(part['sessions'].to_list()))}"
            if part.height > 1:
                ax.fill_between(x, part["p10"], part["p90"], color=colors[seg[0]], alpha=0.15, lw=0)
                ax.plot(x, median, color=colors[seg[0]], marker="o", ms=3.5, label=label)
            else:  # a policy with a budget of its own: one point, its band as a bar
                ax.errorbar(x, median, yerr=[median - part["p10"].to_numpy(), part["p90"].to_numpy() - median],
                            fmt="o", color=colors[seg[0]], capsize=3, label=label)
        if recorded is not None:
            ax.axhline(recorded, color=GREY, lw=1.2, ls="--", zorder=1,
                       label=f"recorded, median: ${recorded:,.2f}")
        low, high = stats["p10"].min(), stats["p90"].max()
        if isinstance(low, float) and isinstance(high, float) and low > 0 and high / low > 100:
            ax.set_yscale("log")   # sessions' costs span orders of magnitude
        else:
            ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"${v:,.2f}"))
        _token_axis(ax.xaxis)
        ax.set_xlabel(BUDGET_LABEL)
        ax.set_xlim(left=0)
        ax.set_ylabel("cost per session (USD)")
        _highlight(ax, highlight)
        _legend(ax)
        _title(ax, "What each budget costs per session")
        what = "replayed calls and summarizer" if value == "total_cost_usd" else "replayed calls"
        _note(fig, f"sessions · {what} · line: median · band: 10th-90th percentile · dashed: as recorded")
    return fig


def policy_comparison(table) -> Figure:
    """Policies side by side under one window, from :func:`~panto_analytics.policy.compare_policies`'s table.

    Left: tokens kept verbatim at each compaction (dot: median, bar: 10th-90th
    percentile). Right: compactions per session (mean) and, as labels, the
    median tokens each compaction summarizes.

    >>> import polars as pl
    >>> t = pl.DataFrame({"policy": ["pi"], "budget": [20_000], "kept_tokens_p10": [5_000], "kept_tokens_p50": [21_000],
    ...     "kept_tokens_p90": [30_000], "compactions_mean": [1.5], "summarized_tokens_p50": [150_000]})
    >>> policy_comparison(t).axes[1].get_xlabel()
    'compactions per session (mean)'
    """
    labels = [f"{p} {format_tokens(b)}" if p.split(":")[0] == "libpanto" or (b and has_budget(p)) else p
              for p, b in zip(table["policy"], table[BUDGET])]
    y = list(range(len(labels)))[::-1]
    with style():
        fig, (left, right) = _figure(2, 1, size=(FIGSIZE[0] * 1.4, 0.45 * len(labels) + 1.8), sharey=True)
        p50 = table["kept_tokens_p50"].fill_null(0).to_list()
        lo = [m - (a or 0) for m, a in zip(p50, table["kept_tokens_p10"].to_list())]
        hi = [(b or 0) - m for m, b in zip(p50, table["kept_tokens_p90"].to_list())]
        colors = [PALETTE[i % len(PALETTE)] for i in range(len(labels))]
        for yy, m, l_, h_, c in zip(y, p50, lo, hi, colors):
            left.errorbar([m], [yy], xerr=[[l_], [h_]], fmt="o", color=c, capsize=3)
        left.set_yticks(y, labels)
        _token_axis(left.xaxis)
        left.set_xlim(left=0)
        left.set_xlabel("kept verbatim at a compaction (tokens)")
        right.barh(y, table["compactions_mean"].fill_null(0).to_list(), color=colors)
        for yy, v, s in zip(y, table["compactions_mean"].fill_null(0).to_list(), table["summarized_tokens_p50"].to_list()):
            right.annotate(f" summarizes {format_tokens(s)}" if s is not None else "", (v, yy), va="center",
                           fontsize=8.5, color=GREY)
        right.set_xlabel("compactions per session (mean)")
        _title(left, "Policies under one window")
        _note(fig, "compaction events · dot: median · bar: 10th-90th percentile · label: median tokens summarized")
    return fig


def frontier(table, *, recorded=None, chosen: tuple[str, int] | None = None) -> Figure:
    """Cost per session against orphan rate, one point per (policy, budget), the Pareto front drawn.

    ``table``: :func:`~panto_analytics.analysis.choose.from_replay.outcomes_table` (``cost_p50``, ``orphan_rate``,
    ``proposable``); rows at or above the trigger are hollow (never proposed); where the table has the
    bootstrap's intervals (``cost_p50_lo``/``_hi``, ``orphan_rate_lo``/``_hi``), each point has its bars.
    ``recorded``: the agents' own points
    (:func:`~panto_analytics.analysis.choose.from_replay.recorded_points`), drawn as stars, each joined by a
    thin line to the replayed points over the same sessions (diamonds). ``chosen``: the (policy, budget) to
    ring.

    >>> import polars as pl
    >>> t = pl.DataFrame({"policy": ["libpanto"] * 3, "budget": [0, 8_000, 90_000], "cost_p50": [1.0, 1.2, 0.9],
    ...     "orphan_rate": [0.2, 0.05, 0.0], "proposable": [True, True, False]})
    >>> frontier(t, chosen=("libpanto", 8_000)).axes[0].get_xlabel()
    'orphan rate (orphan calls / calls after a compaction)'
    """
    from .choose.from_replay import pareto_front as front_of

    pts = table.filter(table["cost_p50"].is_not_null() & table["orphan_rate"].is_not_null())
    with style():
        fig, (ax,) = _figure(size=(FIGSIZE[0], FIGSIZE[1] * 1.1))
        for i, policy in enumerate(pts["policy"].unique(maintain_order=True).to_list()):
            mine = pts.filter(pts["policy"] == policy)
            color = PALETTE[i % len(PALETTE)]
            ok, above = mine.filter(mine["proposable"]), mine.filter(~mine["proposable"])
            _error_bars(ax, ok, color)
            ax.scatter(ok["orphan_rate"].to_list(), ok["cost_p50"].to_list(), color=color, s=28, label=policy,
                       zorder=3)
            if above.height:
                ax.scatter(above["orphan_rate"].to_list(), above["cost_p50"].to_list(), facecolors="none",
                           edgecolors=color, s=28, zorder=3)
        front = front_of(pts).sort("orphan_rate")
        for row in front.iter_rows(named=True):
            # A policy with no token budget is named alone, never with a budget of 0.
            label = (format_tokens(row[BUDGET]) if row["policy"] == "libpanto" else
                     f"{row['policy']} {format_tokens(row[BUDGET])}" if has_budget(row["policy"]) else row["policy"])
            ax.annotate(label, (row["orphan_rate"], row["cost_p50"]),
                        textcoords="offset points", xytext=(4, 4), fontsize=7.5, color=GREY)
        if front.height:
            ax.step(front["orphan_rate"].to_list(), front["cost_p50"].to_list(), where="post", color=INK,
                    linewidth=1.2, linestyle="--", label="Pareto front", zorder=2)
        if recorded is not None and recorded.height:
            _recorded(ax, recorded)
        if chosen is not None:
            hit = pts.filter((pts["policy"] == chosen[0]) & (pts[BUDGET] == chosen[1]))
            if hit.height:
                ax.scatter(hit["orphan_rate"].to_list(), hit["cost_p50"].to_list(), s=220, facecolors="none",
                           edgecolors=ACCENT, linewidths=2, zorder=5, label="chosen")
        ax.xaxis.set_major_formatter(PercentFormatter(1.0))
        ax.set_xlabel("orphan rate (orphan calls / calls after a compaction)")
        ax.set_ylabel("cost per session, median (USD)")
        _title(ax, "What each budget costs and loses")
        _legend(ax)
        _note(fig, "hollow: never proposed · dashed: Pareto front · bars: 90% of resamples · "
                   "star: recorded, diamonds: replays of its sessions")
        _apart(ax)
    return fig


def _apart(ax, gap: float = 1.0) -> None:
    """Move the point labels of ``ax`` (annotations offset in points) down, one after another in the order they
    were drawn, until none overlaps an earlier one: two points close together (an agent's recorded star and a
    replay of its sessions) drew their names on each other. A few labels a figure: the loop is over them."""
    labels = [t for t in ax.texts if isinstance(t, Annotation) and t.anncoords == "offset points"]
    if len(labels) < 2:
        return
    fig = ax.figure
    fig.draw_without_rendering()
    placed: list = []
    for label in labels:  # one iteration per label of the plot, not per row of data
        box = label.get_window_extent()
        for _ in range(len(placed)):  # at most one move per label already placed
            hit = next((b for b in placed if box.overlaps(b)), None)
            if hit is None:
                break
            down = (box.y1 - hit.y0) * 72 / fig.dpi + gap  # pixels to points, below the label it hit
            x, y = label.xyann
            label.xyann = (x, y - down)
            box = label.get_window_extent()
        placed.append(box)


def _error_bars(ax, rows, color) -> None:
    """The bootstrap's interval of each point (cost and orphan rate), where the table has them."""
    need = ("cost_p50_lo", "cost_p50_hi", "orphan_rate_lo", "orphan_rate_hi")
    if not rows.height or not all(c in rows.columns for c in need):
        return
    rows = rows.drop_nulls(list(need))
    x, y = rows["orphan_rate"].to_numpy(), rows["cost_p50"].to_numpy()
    xerr = [np.clip(x - rows["orphan_rate_lo"].to_numpy(), 0, None), np.clip(rows["orphan_rate_hi"].to_numpy() - x, 0, None)]
    yerr = [np.clip(y - rows["cost_p50_lo"].to_numpy(), 0, None), np.clip(rows["cost_p50_hi"].to_numpy() - y, 0, None)]
    ax.errorbar(x, y, xerr=xerr, yerr=yerr, fmt="none", ecolor=color, alpha=0.35, linewidth=0.9, zorder=2)


def _recorded(ax, recorded) -> None:
    """Each agent's recorded point (a star) and, joined to it, the replayed points over the same sessions."""
    for agent in recorded["agent"].unique(maintain_order=True).to_list():
        mine = recorded.filter((recorded["agent"] == agent) & recorded["cost_p50"].is_not_null()
                               & recorded["orphan_rate"].is_not_null())
        own = mine.filter(mine["point"] == "recorded")
        if not own.height:
            continue
        x0, y0, n = own["orphan_rate"][0], own["cost_p50"][0], own["sessions"][0]
        ax.scatter([x0], [y0], marker="*", s=160, color=ACCENT, zorder=4, edgecolors=INK, linewidths=0.6)
        ax.annotate(f"{agent} (recorded, {n} sessions)", (x0, y0), textcoords="offset points", xytext=(6, -10),
                    fontsize=8, color=INK)
        for row in mine.filter(mine["point"] != "recorded").iter_rows(named=True):
            ax.plot([x0, row["orphan_rate"]], [y0, row["cost_p50"]], color=ACCENT, linewidth=0.7, alpha=0.6, zorder=3)
            ax.scatter([row["orphan_rate"]], [row["cost_p50"]], marker="D", s=22, color=ACCENT, zorder=4)
            name = f"{row['point']} {format_tokens(row[BUDGET])}" if has_budget(row["point"]) else row["point"]
            ax.annotate(f"{name}, same sessions", (row["orphan_rate"], row["cost_p50"]),
                        textcoords="offset points", xytext=(5, 3), fontsize=7, color=ACCENT)


def turn_sizes(turns, *, segments=None, bins_per_decade: int = 4) -> Figure:
    """Distribution of turn sizes (tokens per turn, log scale), stacked by where the size came from.

    ``provider usage``: the cumulative-usage delta between final assistant
    messages; ``word estimate``: libpanto's fallback. With ``segments``, one
    panel per segment.
    """
    hist = data.turn_size_histogram(turns, segments, bins_per_decade=bins_per_decade)
    shares = data.token_source_shares(turns, segments)
    seg_names = [s for s in cast("pl.Enum", shares["segment"].dtype).categories if s in set(shares["segment"])]
    several = len(seg_names) > 1
    with style():
        ncols = min(len(seg_names), 3) or 1
        nrows = -(-len(seg_names) // ncols) or 1
        size = (4.0 * ncols + 0.5, 3.2 * nrows + 0.8) if several else FIGSIZE
        fig, axes = _figure(ncols, nrows, size=size, sharex=True)
        for ax, seg in zip(axes, seg_names):
            h = hist.filter(segment=seg)
            s = shares.filter(segment=seg)
            bottom: dict[int, int] = {}
            lines = []
            for source in ("usage", "words"):
                part = h.filter(token_source=source)
                n = s.filter(token_source=source)["turns"].sum()
                share = s.filter(token_source=source)["share"].sum()
                if n:
                    lines.append(f"{SOURCE_LABELS[source].split(' (')[0]}: {n} turns ({share:.0%})")
                base = [bottom.get(b, 0) for b in part["bin"]]
                ax.bar(part["lo"], part["turns"], width=part["hi"] - part["lo"], bottom=base, align="edge",
                       color=SOURCE_COLORS[source], edgecolor="white", lw=0.5, label=SOURCE_LABELS[source])
                for b, t in zip(part["bin"], part["turns"]):
                    bottom[b] = bottom.get(b, 0) + t
            zero = s["zero_token_turns"].sum()
            if zero:
                lines.append(f"{zero} turns of 0 tokens not shown")
            ax.text(0.01, 0.98, "\n".join(lines), transform=ax.transAxes, va="top", ha="left",
                    fontsize=8.5 if several else 9, color=GREY, linespacing=1.4)
            # Headroom for the text above the tallest bar.
            ax.set_ylim(0, max(bottom.values(), default=1) * (1.45 if several else 1.3))
            ax.set_xscale("log")
            _token_axis(ax.xaxis)
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
            if several:
                ax.set_title(seg, fontsize=10.5, loc="left")
        for ax in axes[len(seg_names):]:
            ax.set_visible(False)
        for ax in axes[-ncols:]:
            ax.set_xlabel("tokens per turn (log scale)")
        for ax in axes[::ncols]:
            ax.set_ylabel("turns")
        if several:
            fig.suptitle("Turn sizes, and where they came from", fontweight="bold", x=0.01, ha="left")
            fig.legend(handles=_source_handles(), loc="outside upper right", ncols=2)
        else:
            _title(axes[0], "Turn sizes, and where they came from")
            _legend(axes[0], handles=_source_handles())
            _note(fig, f"a turn is a user prompt and everything it elicited · {bins_per_decade} bins per"
                       " factor of ten")
    return fig


#: The colour of each cause of a cache break (:data:`~panto_analytics.analysis.timeline.BREAK_CAUSES`).
BREAK_COLORS = {"first call": "#7f7f7f", "compaction": "#D55E00", "model switch": "#CC79A7", "idle": "#E69F00"}


def timeline(tl) -> Figure:
    """One session call by call (:func:`~panto_analytics.analysis.timeline.session_timeline`): the context as
    recorded and as replayed, each compaction marked with its before/after size and what was fetched again
    after it; below, what each call read from the cache, wrote to it and sent uncached, each cache break
    marked with its cause."""
    calls, found = tl.calls, tl.compactions
    fig, (top, bottom) = _figure(nrows=2, size=(FIGSIZE[0], FIGSIZE[1] * 1.6), sharex=True)
    x = calls["call"].to_numpy()
    top.plot(x, calls["context"].to_numpy(), color=PALETTE[0], label="context as recorded")
    if "replayed_context" in calls.columns:
        top.plot(x, calls["replayed_context"].to_numpy(), color=PALETTE[2], linestyle="--",
                 label=f"replayed: {point_name(tl.policy, tl.budget)}")
    if tl.window is not None:
        top.axhline(tl.window, color=GREY, linewidth=0.8, linestyle=":", label=f"window {format_tokens(tl.window)}")
    for row in found.iter_rows(named=True):  # one marker per compaction: a handful per session
        recorded = row["kind"] == "recorded"
        color = ACCENT if recorded else PALETTE[2]
        at = row["call"] if row["call"] is not None else -0.5
        top.axvline(at + 0.5, color=color, linewidth=1.0, linestyle="-" if recorded else "--", alpha=0.8)
        after = "end" if row["after"] is None else format_tokens(row["after"])
        label = f"{format_tokens(row['before'] or 0)} -> {after}"
        if row["refetch_calls"]:
            label += f"\nre-fetched: {row['refetch_calls']} calls, {format_tokens(row['refetch_tokens'])}"
        top.annotate(label, xy=(at + 0.5, row["before"] or 0), xytext=(3, -2), textcoords="offset points",
                     fontsize=7.5, color=color, va="top")
    top.plot([], [], color=ACCENT, label="recorded compaction")
    if "replayed_context" in calls.columns:
        top.plot([], [], color=PALETTE[2], linestyle="--", label="simulated compaction")
    top.set_ylabel("context (tokens)")
    _token_axis(top.yaxis)
    _title(top, f"Session {tl.session_id[:13]}: context per API call")
    parts = [("cache_read", "cache read", "#56B4E9"), ("cache_write", "cache write", "#E69F00"),
             ("input", "uncached input", "#D55E00")]
    base = np.zeros(len(x))
    for column, label, color in parts:
        values = calls[column].fill_null(0).to_numpy().astype(float)
        bottom.bar(x, values, bottom=base, width=1.0, color=color, label=label, linewidth=0)
        base += values
    breaks = calls.filter(calls["break_cause"].is_not_null())
    for cause, color in BREAK_COLORS.items():
        mine = breaks.filter(breaks["break_cause"] == cause)
        if mine.height:
            bottom.scatter(mine["call"].to_numpy(), (mine["context"].to_numpy() * 1.04), marker="v", s=18,
                           color=color, zorder=3, label=f"cache break: {cause}")
    bottom.set_xlabel("API call")
    bottom.set_ylabel("prompt tokens")
    _token_axis(bottom.yaxis)
    _legend(top, bottom)
    cost = tl.cost_usd
    broke = breaks["break_cost_usd"].drop_nulls().sum() if "break_cost_usd" in breaks.columns else 0
    # An escaped dollar sign: a bare one starts matplotlib's math text.
    _note(fig, f"{calls.height} calls; recorded cost " + ("unpriced" if cost is None else f"\\${cost:,.2f}")
          + (f", of which cache breaks \\${broke:,.2f}" if cost is not None else ""))
    return fig


def _source_handles() -> list[Patch]:
    """Legend entries for both turn-size sources, drawn or not, in their fixed colours."""
    return [Patch(facecolor=SOURCE_COLORS[s], label=label) for s, label in SOURCE_LABELS.items()]


def save(fig: Figure, path: str | Path, *, dpi: int = DPI) -> Path:
    """Write ``fig`` to ``path`` (format by extension), making folders as needed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, bbox_inches="tight", facecolor="white")
    return path


def png_bytes(fig: Figure, *, dpi: int = DPI) -> bytes:
    """``fig`` as PNG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", facecolor="white")
    return buf.getvalue()


def __dir__() -> list[str]:
    """``dir(pa.plots)``: the plots and what they share (``__all__``), not the matplotlib names used here.

    >>> "Figure" in dir(__import__("panto_analytics").plots), "kept_tokens_by_budget" in dir(__import__("panto_analytics").plots)
    (False, True)
    """
    return sorted(__all__)
