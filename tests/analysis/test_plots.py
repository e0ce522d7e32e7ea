"""Plots: the numbers behind them (checked against numpy and by hand) and the figures (headless)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from conftest import FIXTURES, REPO, legend_boxes
from matplotlib.figure import Figure

import panto_analytics as pa
from panto_analytics.analysis import plot_data as data
from panto_analytics.analysis import plots
from panto_analytics.formats import ADAPTERS

FIXTURE = FIXTURES / "recommend"
REALDATA = REPO.parent / "shared" / "realdata"


def split_rows(rows: list[tuple]) -> pl.DataFrame:
    """A splits frame from (session, budget, kept_turns, kept_tokens, n_turns, active_tokens) rows."""
    df = pl.DataFrame(rows, orient="row", schema=["session_id", "budget", "kept_turns", "kept_tokens",
                                                  "n_turns", "active_tokens"])
    return df.with_columns(
        summarized_tokens=pl.col("active_tokens") - pl.col("kept_tokens"),
        noop=pl.col("kept_turns") == pl.col("n_turns"),
        capped=pl.lit(False),
    )


# Four sessions at two budgets; "z" has no turns and must stay out of the distributions.
SPLITS = split_rows([
    ("a", 100, 1, 80, 3, 300), ("b", 100, 0, 0, 2, 500), ("c", 100, 2, 90, 2, 90), ("z", 100, 0, 0, 0, 0),
    ("a", 1000, 3, 300, 3, 300), ("b", 1000, 1, 400, 2, 500), ("c", 1000, 2, 90, 2, 90), ("z", 1000, 0, 0, 0, 0),
])


def test_kept_tokens_stats_match_numpy_over_sessions_with_turns():
    stats = data.kept_tokens_stats(SPLITS)
    assert stats["budget"].to_list() == [100, 1000]
    for budget, values in ((100, [80, 0, 90]), (1000, [300, 400, 90])):
        row = stats.filter(budget=budget).row(0, named=True)
        assert row["sessions"] == 3
        for name, q in data.QUANTILES.items():
            assert row[name] == pytest.approx(np.percentile(values, q * 100))
        assert (row["min"], row["max"]) == (min(values), max(values))


def test_kept_turns_stats_median():
    stats = data.kept_turns_stats(SPLITS)
    assert stats["median"].to_list() == [1.0, 2.0]  # medians of [1, 0, 2] and [3, 1, 2]


def test_summarized_share_per_session_and_pooled():
    stats = data.summarized_share_stats(SPLITS).filter(budget=100).row(0, named=True)
    shares = [220 / 300, 500 / 500, 0 / 90]
    assert stats["median"] == pytest.approx(np.median(shares))
    assert stats["q1"] == pytest.approx(np.percentile(shares, 25))
    assert stats["pooled"] == pytest.approx((220 + 500 + 0) / (300 + 500 + 90))


def test_outcome_shares_by_hand():
    shares = data.outcome_shares(SPLITS)
    got = {(r["budget"], r["outcome"].split(" ")[0]): r["share"] for r in shares.iter_rows(named=True)}
    # Budget 100: noop c and z (2 of 4); zero kept b (1 of the 3 with turns).
    assert got[(100, "noop")] == 0.5 and got[(100, "zero")] == pytest.approx(1 / 3)
    # Budget 1000: noop a, c, z; nobody keeps nothing.
    assert got[(1000, "noop")] == 0.75 and got[(1000, "zero")] == 0.0
    assert got[(100, "capped")] == got[(1000, "capped")] == 0.0


def test_segments_split_every_statistic():
    segments = pl.DataFrame({"session_id": ["a", "b", "c", "z"], "segment": ["x", "x", "y", "y"]})
    stats = data.kept_tokens_stats(SPLITS, segments).filter(budget=1000)
    assert dict(zip(stats["segment"], stats["median"])) == {"x": 350.0, "y": 90.0}
    shares = data.outcome_shares(SPLITS, segments).filter(budget=100, outcome=data.OUTCOMES[0][0])
    assert dict(zip(shares["segment"], shares["share"])) == {"x": 0.0, "y": 1.0}


def test_turn_size_histogram_bins_by_powers_of_ten():
    turns = pl.DataFrame({"session_id": ["s"] * 8, "turn": list(range(8)),
                          "tokens": [1, 9, 10, 99, 100, 1000, 0, 1000],
                          "token_source": ["usage"] * 7 + ["words"]})
    hist = data.turn_size_histogram(turns, bins_per_decade=1)
    usage = hist.filter(token_source="usage")
    # [1, 10): 1 and 9; [10, 100): 10 and 99; [100, 1000): 100; [1000, 10000): 1000. Zero is left out.
    assert list(zip(usage["lo"].round(6), usage["turns"])) == [(1, 2), (10, 2), (100, 1), (1000, 1)]
    assert hist.filter(token_source="words")["lo"].round(6).to_list() == [1000]
    shares = data.token_source_shares(turns)
    assert dict(zip(shares["token_source"], shares["turns"])) == {"usage": 7, "words": 1}
    assert shares.filter(token_source="usage")["zero_token_turns"].item() == 1
    assert shares["share"].sum() == pytest.approx(1.0)


def test_session_segments():
    msgs = pa.read_sessions(FIXTURE)
    model = data.session_segments(msgs, "model")
    assert dict(model.rows()) == {"a": "m1", "b": "m1", "c": "m2", "d": "m2", "e": "m2"}
    assert data.session_segments(msgs, "model", top=1)["segment"].unique().to_list() == ["other"]
    length = dict(data.session_segments(msgs, "length").rows())
    assert length == {"a": "1-4 turns", "b": "1-4 turns", "c": "1-4 turns", "d": "1-4 turns", "e": "no turns"}
    assert set(data.session_segments(msgs, "source_format")["segment"]) == {"canonical"}
    with pytest.raises(ValueError, match="cannot segment"):
        data.session_segments(msgs, "colour")


def test_lumped_segments_keep_the_most_common():
    msgs = pl.DataFrame({"session_id": list("abcdef"), "model": ["p", "p", "p", "q", "q", "r"],
                         "source_format": ["canonical"] * 6})
    seg = data.session_segments(msgs, "model", top=2)
    assert dict(seg.rows()) == {"a": "p", "b": "p", "c": "p", "d": "other", "e": "other", "f": "other"}
    assert list(seg["segment"].dtype.categories) == ["p", "other"]


# --- figures ----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def corpus():
    msgs = pa.read_sessions(FIXTURE)
    return msgs, pa.splits(msgs, [0, 1000, 2000, 3000, 4000, 5000]), pa.turns(msgs)


def test_kept_tokens_plot_draws_the_boxes_and_the_budget(corpus):
    _, splits, _ = corpus
    fig = plots.kept_tokens_by_budget(splits, highlight=2000)
    ax = fig.axes[0]
    stats = data.kept_tokens_stats(splits)
    # One median line per box, at the computed medians.
    medians = [line.get_ydata()[0] for line in ax.lines if line.get_color() == plots.PALETTE[0]
               and len(line.get_ydata()) == 2 and line.get_ydata()[0] == line.get_ydata()[1]
               and line.get_linewidth() == 2]
    assert medians == stats["median"].to_list()
    # The budget marks sit at the budgets.
    budget_marks = [c for c in ax.collections if c.get_label().startswith("budget")][0]
    assert [seg[0][1] for seg in budget_marks.get_segments()] == [0, 1000, 2000, 3000, 4000, 5000]
    labels = [t.get_text() for legend in _legends(fig) for t in legend.get_texts()]
    assert "recommended: 2k" in labels
    assert "tokens" in ax.get_ylabel() and "tokens" in ax.get_xlabel()


def test_sweep_plot_entry_point_takes_only_the_splits(corpus):
    # cli/sweep_command.py calls kept_tokens_by_budget(splits) for `sweep --plot`.
    assert isinstance(plots.kept_tokens_by_budget(corpus[1]), Figure)


@pytest.mark.slow
@pytest.mark.parametrize("segment_by", [None, "model", "length"])
def test_every_plot_renders_headless(corpus, segment_by, tmp_path):
    msgs, splits, turns = corpus
    seg = data.session_segments(msgs, segment_by) if segment_by else None
    figures = {
        "kept": plots.kept_tokens_by_budget(splits, segments=seg, highlight=2000),
        "kept_log": plots.kept_tokens_by_budget(splits, segments=seg, log=True),
        "outcomes": plots.outcome_shares_by_budget(splits, segments=seg, highlight=2000),
        "summarized": plots.summarized_share_by_budget(splits, segments=seg),
        "turns": plots.kept_turns_by_budget(splits, segments=seg, log=True),
        "sizes": plots.turn_sizes(turns, segments=seg),
    }
    for name, fig in figures.items():
        assert isinstance(fig, Figure)
        png = plots.png_bytes(fig)
        assert png.startswith(b"\x89PNG") and len(png) > 10_000, name
        for ax in fig.axes:
            if ax.get_visible() and ax.get_xlabel():
                assert "tokens" in ax.get_xlabel(), name
        path = plots.save(fig, tmp_path / "sub" / f"{name}.png")
        assert path.read_bytes()[:4] == b"\x89PNG"


def test_segment_plots_have_one_line_per_segment(corpus):
    msgs, splits, _ = corpus
    seg = data.session_segments(msgs, "model")
    fig = plots.kept_turns_by_budget(splits, segments=seg)
    labels = [t.get_text() for t in _legends(fig)[0].get_texts()]
    # Most sessions first: m2 has c, d and e, but e has no turns to count.
    assert labels == ["m2: median of 2 sessions", "m1: median of 2 sessions"]


def test_turn_sizes_counts_what_it_draws(corpus):
    _, _, turns = corpus
    fig = plots.turn_sizes(turns)
    drawn = sum(p.get_height() for p in fig.axes[0].patches)
    assert drawn == turns.filter(pl.col("tokens") > 0).height


def test_plots_do_not_touch_pyplot(corpus):
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    plots.kept_tokens_by_budget(corpus[1])
    assert plt.get_fignums() == before


def real_jsonl_files() -> list[Path]:
    """The real recordings that are JSONL; two are pretty-printed JSON on purpose (see SOURCES.md)."""
    def first_line_is_json(path: Path) -> bool:
        with path.open("rb") as f:
            first = f.readline().strip()
        return first.startswith(b"{") and first.endswith(b"}")

    return [p for p in sorted(REALDATA.rglob("*.jsonl")) if first_line_is_json(p)]


@pytest.mark.slow
@pytest.mark.skipif(not REALDATA.is_dir(), reason="../shared/realdata is not present")
def test_plots_on_the_real_recordings(tmp_path):
    missing = {"pi", "claude-code", "codex"} - set(ADAPTERS)
    if missing:
        pytest.skip(f"adapters not available yet: {', '.join(sorted(missing))}")
    msgs = pa.read_sessions(real_jsonl_files(), skip_invalid=True)
    splits = pa.splits(msgs, pa.budgets.parse_budgets("0:200k:21"))
    seg = data.session_segments(msgs, "source_format")
    for fig in (plots.kept_tokens_by_budget(splits, log=True), plots.outcome_shares_by_budget(splits, segments=seg),
                plots.turn_sizes(pa.turns(msgs), segments=seg)):
        assert plots.png_bytes(fig).startswith(b"\x89PNG")


def test_segments_by_project_come_from_the_sessions_table():
    msgs = pl.DataFrame({"session_id": ["a", "b", "c"], "model": ["claude-opus-4-5-20251101", "claude-opus-4-5", None]})
    sessions = pl.DataFrame({"session_id": ["a", "b", "c"], "project": ["/w/app", "/w/app", None]})
    seg = data.session_segments(msgs, "project", sessions=sessions)
    assert dict(seg.iter_rows()) == {"a": "/w/app", "b": "/w/app", "c": "unknown"}
    assert set(data.session_segments(msgs, "model")["segment"]) == {"claude-opus-4-5", "unknown"}
    with pytest.raises(ValueError, match="needs the sessions table"):
        data.session_segments(msgs, "project")


def _legends(fig) -> list:
    return [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None)]


def test_no_legend_stands_on_a_plot(corpus):
    # Every plot, one corpus or segments: its legend is beside the axes, so it covers no line, whatever the data
    # (issue 32: a legend in a fixed corner of the axes covered a line of the report).
    msgs, splits, _ = corpus
    figures = [plots.kept_tokens_by_budget(splits, highlight=2000), plots.outcome_shares_by_budget(splits, highlight=2000),
               plots.summarized_share_by_budget(splits, highlight=2000), plots.kept_turns_by_budget(splits, highlight=2000),
               plots.turn_sizes(pa.turns(msgs))]
    for fig in figures:
        fig.draw_without_rendering()
        for legend in _legends(fig):
            box = legend.get_window_extent()
            assert not any(box.overlaps(ax.get_window_extent()) for ax in fig.axes if ax.get_visible())


def test_legends_of_segments_cover_no_line(corpus):
    # --by project: many segments with long names; each legend stands beside the axes, not on them.
    msgs, splits, _ = corpus
    ids = msgs["session_id"].unique(maintain_order=True).to_list()
    seg = pl.DataFrame({"session_id": ids,
                        "segment": [f"/home/someone/projects/a-rather-long-project-name-{i}" for i in range(len(ids))]})
    seg = seg.with_columns(pl.col("segment").cast(pl.Enum(seg["segment"].to_list())))
    for draw in (plots.kept_tokens_by_budget, plots.outcome_shares_by_budget, plots.summarized_share_by_budget,
                 plots.kept_turns_by_budget):
        fig = draw(splits, segments=seg, highlight=2000)
        fig.draw_without_rendering()  # lays the figure out, as saving it does
        legends = _legends(fig)
        assert legends, draw.__name__
        for legend in legends:
            box = legend.get_window_extent()
            for ax in fig.axes:
                if ax.get_visible():
                    assert not box.overlaps(ax.get_window_extent()), draw.__name__


def test_dir_of_plots_lists_its_own_names_not_matplotlibs():
    names = dir(pa.plots)
    assert names == sorted(pa.plots.__all__) and "kept_tokens_by_budget" in names
    assert not {"Figure", "Patch", "matplotlib", "np", "FuncFormatter", "cycler"} & set(names)


# --- the counts behind the plots ----------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(4))
def test_a_distribution_from_value_counts_is_polars_linear_quantile_bit_for_bit(seed):
    """Random integer and float values, in groups of 1 to 40 with repeats: the box statistics from their value
    counts equal Polars' own (linear interpolation) to the last bit."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 40, 30)
    group = np.repeat(np.arange(len(sizes)), sizes)
    ints = rng.integers(0, 12, len(group)).astype(float)
    floats = rng.random(len(group)) * 1_000
    for values in (ints, floats):
        frame = pl.DataFrame({"g": group, "v": values})
        counts = frame.group_by("g", value="v").agg(count=pl.len())
        assert data.distribution_of_counts(counts, ["g"]).equals(data.distribution(frame, "v", ["g"]))


def test_counts_of_disjoint_sessions_merge_into_the_whole_frames_counts(corpus):
    """Each session's counts (raw segments, lumped after the merge by the whole ranking) add up to the counts of
    the whole frame by the lumped segments: the same plot numbers either way."""
    msgs, splits, turns = corpus
    lumped = data.session_segments(msgs, "model", top=1)  # m2 (3 sessions) and m1 (2): both lumped into other
    whole = data.plot_counts(splits, turns, lumped).finished(list(lumped["segment"].dtype.categories))
    parts = [data.report_plot_counts(msgs.filter(pl.col("session_id") == sid), splits.filter(pl.col("session_id") == sid),
                                     turns.filter(pl.col("session_id") == sid), segment_by=["model"])
             for sid in msgs["session_id"].unique().to_list()]
    merged = data.finish_plot_counts({k: data.PlotCounts.merge(p[k] for p in parts) for k in (None, "model")}, top=1)
    for table in ("splits", "turns"):
        assert getattr(merged["model"], table).equals(getattr(whole, table))
    assert merged["model"].segmented and not merged[None].segmented
    assert list(merged["model"].splits["segment"].dtype.categories) == ["other"]
    two = data.finish_plot_counts({"model": data.PlotCounts.merge(p["model"] for p in parts)}, top=2)["model"]
    assert list(two.splits["segment"].dtype.categories) == ["m2", "m1", "other"]  # most sessions first
    for name, frame in (("kept_tokens_stats", splits), ("outcome_shares", splits), ("summarized_share_stats", splits),
                        ("token_source_shares", turns), ("turn_size_histogram", turns)):
        assert getattr(data, name)(merged[None]).equals(getattr(data, name)(frame))


@pytest.mark.parametrize("n", [3, plots.CALIBRATION_LINES + 1, 500])
def test_the_calibration_plot_draws_a_few_compactions_each_and_many_summed(n):
    """Up to CALIBRATION_LINES recorded compactions each get their two lines over the horizon; past it, one pair
    for all of them, their sum (thousands of lines and legend entries cost gigabytes for an unreadable plot)."""
    cuts = pl.DataFrame({"cut": ["compaction"] * n + ["baseline"], "context": [1_000] * (n + 1),
                         "orphan_targets": [2] * (n + 1), "fetched_again_targets": [1] * (n + 1),
                         "refetched_targets": [1] * (n + 1)})
    curve = pl.DataFrame({"_cut": [i for i in range(n + 1) for _ in range(3)], "calls": [1, 2, 3] * (n + 1),
                          "predicted": [0, 1, 1] * (n + 1), "unpredicted": [1, 1, 2] * (n + 1)})
    fig = plots.refetch_calibration(cuts, curve)
    assert len(legend_boxes(fig)) == 1  # both panels named in one legend: two, below the figure, lay on each other
    right = fig.axes[1]
    lines = right.get_lines()
    assert len(lines) == (2 * n if n <= plots.CALIBRATION_LINES else 2)
    if n > plots.CALIBRATION_LINES:  # the sum over the recorded compactions only, not the pseudo-cut
        assert list(lines[0].get_ydata()) == [0, n, n] and list(lines[1].get_ydata()) == [n, n, 2 * n]


@pytest.mark.parametrize("n", [3, plots.CALIBRATION_LINES + 1, 500])
def test_the_kept_plot_draws_a_few_compactions_each_and_many_as_a_band(n):
    """Up to CALIBRATION_LINES recorded compactions each get a dotted line at what the agent kept; past it, a band
    of their quartiles and lines at their extremes: the artists do not grow with the compactions."""
    kept = [1_000 * (i + 1) for i in range(n)]
    rows = pl.DataFrame({"cut": [i for i in range(n) for _ in (0, 1)], "budget": [10_000, 20_000] * n,
                         "kept_tokens": [5_000, 9_000] * n, "agent_kept_tokens": [k for k in kept for _ in (0, 1)]})
    ax = plots.agent_vs_libpanto_kept(rows).axes[0]
    flat = [ln for ln in ax.get_lines() if len(set(ln.get_ydata())) == 1 and list(ln.get_xdata()) == [0, 1]]
    # the lines across the axes (axhline): one per compaction, or the two extremes; then the median
    assert len(flat) == (n + 1 if n <= plots.CALIBRATION_LINES else 3)
    assert flat[-1].get_ydata()[0] == pl.Series(kept).median()
    if n > plots.CALIBRATION_LINES:
        band = ax.patches[-1]   # axhspan: a rectangle from the first to the third quartile
        low, high = band.get_y(), band.get_y() + band.get_height()
        assert (low, high) == (pl.Series(kept).quantile(0.25, "linear"), pl.Series(kept).quantile(0.75, "linear"))


def test_the_calibration_plot_of_a_summary_draws_a_point_per_count_and_a_curve_per_agent_and_kind():
    """Past RECORDED_ROWS cuts the plot is drawn from counts: one marker per distinct point, whatever the cuts
    behind it (500 cuts at two points: two markers a series, the busier one larger), and one pair of lines per
    agent and kind of cut, each the summed curve divided by its cuts."""
    from panto_analytics.outcomes.recorded_refetch import SUMMED, calibration_partial

    n = 500
    cuts = pl.DataFrame({"source_format": ["pi"] * n + ["codex"] * 2, "cut": ["compaction"] * n + ["baseline"] * 2,
                         **{c: [0] * (n + 2) for c in SUMMED},
                         "orphan_targets": [3] * (n - 1) + [7] + [5, 5], "fetched_again_targets": [2] * (n + 2),
                         "refetched_targets": [1] * (n + 2)})
    curve = pl.DataFrame({"_cut": [i for i in range(n + 2) for _ in range(3)], "calls": [1, 2, 3] * (n + 2),
                          "predicted": [0, 1, 1] * (n + 2), "unpredicted": [1, 1, 2] * (n + 2)})
    fig = plots.refetch_calibration_summary(calibration_partial(cuts, curve))
    assert len(legend_boxes(fig)) == 1
    left, right = fig.axes
    series = [c for c in left.collections if len(c.get_offsets())]
    assert [len(c.get_offsets()) for c in series] == [2, 2, 1, 1]   # compactions: all, predicted; pseudo-cuts
    sizes = list(series[1].get_sizes())
    assert sizes[0] > sizes[1]  # 499 cuts at (3, 1), one at (7, 1)
    lines = [ln for ln in right.get_lines()]
    assert len(lines) == 4 and list(lines[0].get_ydata()) == [0, 1, 1] and list(lines[1].get_ydata()) == [1, 1, 2]
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "pi, 500 recorded compactions, per cut: predicted" in labels
    assert any(t.startswith("100 cuts at a point") for t in labels)
