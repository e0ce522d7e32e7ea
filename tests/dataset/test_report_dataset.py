"""``report`` over a dataset, bucket by bucket (dataset/_report.py): every section it draws equals the same section
of the report of the same corpus in memory, here and on Ray, with and without a window."""
from __future__ import annotations

from pathlib import Path
from typing import cast

import polars as pl
import pytest
from click.testing import CliRunner
from conftest import DATA, LANES, REALDATA, open_lane
from polars.testing import assert_frame_equal

from panto_analytics.analysis import plot_data
from panto_analytics.analysis.choose.rule import Rule
from panto_analytics.analysis.compactions import agent_vs_libpanto, compactions_counted, cut_counts, kept_counts, policies_vs_agents
from panto_analytics.analysis.cost_table import compaction_costs
from panto_analytics.analysis.plot_data import cost_per_session
from panto_analytics.analysis.report import model, write_report
from panto_analytics.cli import main
from panto_analytics.dataset import dataset_corpus
from panto_analytics.dataset._decision import decision_dataset
from panto_analytics.dataset._report_plots import plot_counts_dataset
from panto_analytics.dataset._report_recorded import _Kept, recorded_dataset
from panto_analytics.policy import splits as splits_of
from panto_analytics.policy import turns as turns_of
from panto_analytics.policy.compaction.engine import DEFAULT_RESERVE
from panto_analytics.policy.compaction.priced import resolve_prices

PRICES = DATA.parent / "docs" / "synth-prices.json"
BUDGETS = [0, 2_500, 5_000, 10_000, 20_000]
BUDGET_COLUMN = "budget"
BACKENDS = [lane for lane in LANES if lane != "memory"]
#: Every kind of segment the plots are drawn by (``--by``).
SEGMENT_BY = ["model", "source_format", "project", "length"]
#: Without a window (the splits, the plots by segment too), and under one (the decision, billed, with its frontier).
OPTIONS = {"splits": {"rule": Rule(min_kept_turns=2, coverage=0.75), "segment_by": SEGMENT_BY},
           "window": {"rule": Rule(min_kept_turns=1, coverage=0.5), "window": 32_000, "prices": PRICES,
                      "policies": ["pi", "codex"]}}
#: The figures of the sections computed over a dataset from the decision's rows and the recorded compactions
#: (each name, or the start of one).
DATASET_FIGURES = ("replay_", "recorded_compactions", "policies", "timeline_")


def a_report(source, tmp: Path, kind: str):
    return source.report(BUDGETS, splits_to=tmp / f"{kind}.splits.parquet", resamples=40, seed=3, **OPTIONS[kind])


@pytest.fixture(scope="module", params=list(OPTIONS))
def in_memory(request, data_dataset, tmp_path_factory):
    memory = open_lane("memory", data_dataset)  # the same corpus, read whole
    return request.param, a_report(memory, tmp_path_factory.mktemp("memory"), request.param)


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_section_equals_the_report_in_memory(in_memory, data_dataset, backend, tmp_path):
    kind, mem = in_memory
    source = open_lane(backend, data_dataset)  # a task per bucket
    got = a_report(source, tmp_path, kind)
    assert got.title == mem.title and got.budgets == mem.budgets
    assert got.overview.rows == mem.overview.rows
    assert {k: t.rows for k, t in got.breakdowns.items()} == {k: t.rows for k, t in mem.breakdowns.items()}
    assert_frame_equal(got.sweep, mem.sweep, check_exact=True)
    g, m = got.recommendation, mem.recommendation
    assert (g.budget, g.policy, g.interval, g.warnings) == (m.budget, m.policy, m.interval, m.warnings)
    assert [r.replace(", bucket by bucket", "") for r in g.reasons] == m.reasons
    assert_frame_equal(g.table, m.table, check_exact=True)
    assert g.interval is not None and g.interval.resampled
    assert any(c.endswith("_lo") for c in g.table.columns)
    key = ["session_id", "budget"]
    written = pl.read_parquet(got.splits).with_columns(pl.col("session_id").cast(pl.String)).sort(key)
    assert_frame_equal(written, mem.splits.with_columns(pl.col("session_id").cast(pl.String)).sort(key),
                       check_exact=True)
    if kind == "window":  # the frontier: the decision's points, and the agents' recorded ones over the same sessions
        assert got.frontier is not None and got.frontier_table is not None and mem.frontier_table is not None
        assert got.frontier_table.rows == mem.frontier_table.rows
        assert {r[-1] for r in got.frontier_table.rows} >= {"recorded", "replayed, same sessions"}
    if kind == "window":  # what compaction costs, every policy and budget, from the decision's spilled rows
        assert got.costs is not None and mem.costs is not None
        assert got.costs.rows == mem.costs.rows and {r[0] for r in got.costs.rows} == {"libpanto", "pi", "codex"}
        assert "cost_by_budget" in {f.name for f in got.figures}
    else:
        assert got.costs is None and mem.costs is None
    # The plots of the splits and turns (of all sessions, and by each segment), and under a window the cost per
    # session: the same plots, pixel for pixel.
    drawn = [f.name for f in got.figures]
    assert {"kept_tokens", "outcomes", "summarized_share", "kept_turns", "turn_sizes"} <= set(drawn)
    assert (kind != "splits") or {f"turn_sizes_by_{by}" for by in SEGMENT_BY} <= set(drawn)
    mine = {f.name: f for f in mem.figures}
    assert [(f.title, f.caption, f.png) for f in got.figures] == [(mine[n].title, mine[n].caption, mine[n].png)
                                                                 for n in drawn]
    assert got.omitted and not mem.omitted  # what the dataset's report leaves out, it says
    assert not any("--by" in line or "plots of every session" in line for line in got.omitted)
    assert_same_sections(got, mem, window=kind == "window")


def assert_same_sections(got, mem, *, window: bool) -> None:
    """The sections drawn from every session in memory that a dataset's report computes task by task: the
    replay's table and plots, the recorded compactions and their loss per cut, the policies' comparison and
    the timelines of the worst-served sessions, each equal to the in-memory report's (the plots to the byte)."""
    for name in ("replay_table", "recorded", "loss", "policy_table", "policy_cuts"):
        g, m = getattr(got, name), getattr(mem, name)
        assert (g is None) == (m is None), name
        assert g is None or (g.header, g.rows, g.highlight) == (m.header, m.rows, m.highlight), name
    assert (got.replay is None) == (mem.replay is None) == (not window)
    if got.replay is not None and mem.replay is not None:
        fields = ("window", "reserve", "summary_tokens", "summary_source")
        assert [getattr(got.replay, f) for f in fields] == [getattr(mem.replay, f) for f in fields]
    mine = {f.name: f for f in mem.figures if f.name.startswith(DATASET_FIGURES)}
    assert {f.name: f.title for f in got.figures if f.name.startswith(DATASET_FIGURES)} == {
        n: f.title for n, f in mine.items()}
    assert {f.name: f.png for f in got.figures if f.name in mine} == {n: f.png for n, f in mine.items()}
    assert (got.loss_figure is None) == (mem.loss_figure is None)
    assert got.loss_figure is None or got.loss_figure.png == mem.loss_figure.png
    assert got.recorded is not None and got.loss is not None  # data/ records compactions
    if window:  # each section there, the timelines of the same sessions
        assert got.policy_table is not None and got.policy_cuts is not None
        assert any(n.startswith("timeline_") for n in mine) and {"replay_kept_turns", "policies"} <= set(mine)


def test_a_dataset_report_on_the_command_line(data_dataset, tmp_path):
    """The command picks the dataset's report by its input; its folder holds what it names, splits.parquet moved
    in, and the recommendation is the one the same report in memory prints (a session filter reads in memory)."""
    args = ["--window", "32k", "-b", "0:20k:5", "--prices", str(PRICES), "--resamples", "20", "--by", "length"]
    on_dataset = CliRunner().invoke(main, ["report", str(data_dataset), "-o", str(tmp_path / "ds"), *args])
    in_memory = CliRunner().invoke(main, ["report", str(data_dataset), "--since", "2000-01-01",
                                          "-o", str(tmp_path / "mem"), *args])
    assert on_dataset.exit_code == in_memory.exit_code == 0, on_dataset.output
    assert on_dataset.stdout == in_memory.stdout
    files = {p.name for p in (tmp_path / "ds").iterdir()}
    assert {"index.html", "report.md", "splits.parquet", "sweep.parquet", "decision.parquet", "frontier.png"} <= files
    assert not any(name.endswith(".part") for name in files)
    # The replay's section is there, its rows (growing with the sessions) are not; in memory they are.
    assert "replay_kept_turns.png" in files and "replay_sessions.parquet" not in files
    assert "replay_sessions.parquet" in {p.name for p in (tmp_path / "mem").iterdir()}
    plots = {"kept_tokens.png", "turn_sizes.png", "outcomes_by_length.png", "turn_sizes_by_length.png",
             "cost_by_budget.png"}
    assert plots <= files and all((tmp_path / "ds" / n).read_bytes() == (tmp_path / "mem" / n).read_bytes() for n in plots)
    md = (tmp_path / "ds" / "report.md").read_text()
    assert "## Not in this report" in md and "## Not in this report" not in (tmp_path / "mem" / "report.md").read_text()
    assert_frame_equal(pl.read_parquet(tmp_path / "ds" / "decision.parquet"),
                       pl.read_parquet(tmp_path / "mem" / "decision.parquet"), check_exact=True)
    # Every row of what the agents kept at their recorded compactions, streamed to a file task by task: the same.
    recorded = [pl.read_parquet(tmp_path / d / "recorded_compactions.parquet") for d in ("ds", "mem")]
    assert_frame_equal(*recorded, check_exact=True)
    assert recorded[0].height > 0 and "recorded_compactions.parquet" in md


def test_write_report_moves_the_written_splits_in(data_dataset, tmp_path):
    rep = a_report(open_lane("dataset", data_dataset, None), tmp_path, "splits")
    part = Path(rep.splits)
    out = write_report(rep, tmp_path / "r")
    assert not part.exists() and (out / "splits.parquet").is_file()
    assert repr(rep).startswith(f"<Report {rep.title!r}: 40 sessions")


@pytest.fixture(scope="module")
def real_dataset(tmp_path_factory) -> Path:
    """The real recordings (skipped where absent) as an 8-bucket dataset."""
    from panto_analytics.dataset import write_dataset

    if not REALDATA.is_dir():
        pytest.skip(f"no real recordings at {REALDATA}")
    root = tmp_path_factory.mktemp("real") / "ds"
    write_dataset([REALDATA], root, buckets=8, skip_invalid=True, cache=False)  # xcsh-session.jsonl:440
    return root


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_each_section_equals_the_report_in_memory_on_real_recordings(real_dataset, backend, tmp_path):
    options = {**OPTIONS["window"], "resamples": 0}
    mem = open_lane("memory", real_dataset).report(BUDGETS, splits_to=tmp_path / "m.parquet", **options)
    got = open_lane(backend, real_dataset).report(BUDGETS, splits_to=tmp_path / "g.parquet", **options)
    assert_frame_equal(got.recommendation.table, mem.recommendation.table, check_exact=True)
    assert_same_sections(got, mem, window=True)


@pytest.fixture(scope="module", params=["data", "realdata"])
def plotted(request, data_dataset):
    """A dataset (data/, or the real recordings where present) and the finished plot counts of the same corpus in
    memory, of all sessions and by every kind of segment."""
    root = data_dataset if request.param == "data" else request.getfixturevalue("real_dataset")
    corpus = dataset_corpus(root)
    m, sessions = corpus.messages, corpus.sessions
    counts = plot_data.report_plot_counts(m, splits_of(m, BUDGETS, sessions=sessions), turns_of(m),
                                          segment_by=SEGMENT_BY, sessions=sessions)
    return root, plot_data.finish_plot_counts(counts)


#: The numbers behind each plot of the splits and turns, from counts.
STATS = ("kept_tokens_stats", "kept_turns_stats", "summarized_share_stats", "outcome_shares", "turn_size_histogram",
         "token_source_shares")


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_numbers_behind_each_plot_equal_the_report_in_memory(plotted, backend):
    """Each task's value counts, merged, are the whole corpus's counts, row for row, so every figure drawn from
    them (the box statistics, the outcomes' shares, the turn-size histogram) equals the in-memory one, to the last
    bit; by each segment too (the rare ones lumped into ``other`` by the whole corpus's ranking)."""
    root, mem = plotted
    source = open_lane(backend, root)  # a task per bucket
    got = plot_counts_dataset(root, BUDGETS, segment_by=SEGMENT_BY, engine=source.engine, task_rows=1)
    assert list(got) == list(mem) == [None, *SEGMENT_BY]
    for kind, counts in got.items():
        for table in ("splits", "turns", "sessions"):
            assert_frame_equal(getattr(counts, table), getattr(mem[kind], table), check_exact=True)
        for name in STATS:
            assert_frame_equal(getattr(plot_data, name)(counts), getattr(plot_data, name)(mem[kind]), check_exact=True)
        assert counts.segmented == (kind is not None)
    stats = plot_data.kept_tokens_stats(got[None])
    assert stats["sessions"].max() > 1 and (stats["median"] <= stats[BUDGET_COLUMN].cast(float)).all()


@pytest.fixture(scope="module", params=["data", "realdata"])
def billed(request, data_dataset):
    """A dataset (data/, or the real recordings where present) and the session rows of the same corpus's billed
    replay in memory (libpanto and pi under a window), what the report's costs section reads."""
    from panto_analytics.analysis.choose.from_replay import replay_outcomes
    root = data_dataset if request.param == "data" else request.getfixturevalue("real_dataset")
    window = 32_000 if request.param == "data" else 200_000
    budgets = BUDGETS if request.param == "data" else [10_000, 40_000]
    prices = PRICES if request.param == "data" else True  # the real recordings: genai-prices' offline table
    out = replay_outcomes(dataset_corpus(root).messages, budgets, window=window, reserve=DEFAULT_RESERVE,
                          policy=["libpanto", "pi"], prices=resolve_prices(prices))
    return root, budgets, window, prices, out.sessions


@pytest.mark.parametrize("backend", BACKENDS)
def test_what_compaction_costs_equals_the_replay_in_memory_to_the_last_bit(billed, backend):
    """"What compaction costs" over a dataset reads the decision's rows its tasks spilled (lazily, a few columns at
    a time): its table (totals in whole picodollars) and the numbers of its plot (quantiles per policy and budget,
    the recorded median) equal those of the billed replay's session rows in memory, whatever the tasks' order."""
    root, budgets, window, prices, sessions = billed
    got: dict[str, object] = {}

    def read(choice, out):
        rows = out.sessions.lazy()
        got["table"], got["plot"] = compaction_costs(rows), cost_per_session(rows)

    decision_dataset(root, budgets, Rule(min_kept_turns=1, coverage=0.5), window=window, reserve=DEFAULT_RESERVE,
                     policy=["libpanto", "pi"], prices=resolve_prices(prices), resamples=2,
                     engine=open_lane(backend, root).engine, task_rows=1, on_outcomes=read)
    table = got["table"]
    assert isinstance(table, pl.DataFrame)
    assert_frame_equal(table, compaction_costs(sessions), check_exact=True)
    assert table["policy"].unique(maintain_order=True).to_list() == ["libpanto", "pi"]
    assert table["sessions"].min() > 0
    if prices == PRICES:  # every model priced: every total is a sum (one unpriced session makes a total null)
        assert table["recorded_usd"].null_count() == 0
    stats, recorded = cast("tuple[pl.DataFrame, float | None]", got["plot"])
    want_stats, want_recorded = cost_per_session(sessions)
    assert_frame_equal(stats, want_stats, check_exact=True)
    assert recorded == want_recorded and recorded is not None and stats["sessions"].min() > 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_past_recorded_rows_each_section_equals_the_report_in_memory(data_dataset, backend, tmp_path, monkeypatch):
    """Past RECORDED_ROWS recorded compactions (here 2: data/ records 7) the sections on them are summaries per
    agent, from counts the tasks merge: the same tables, words and plots as in memory, to the byte."""
    monkeypatch.setattr(model, "RECORDED_ROWS", 2)
    mem = a_report(open_lane("memory", data_dataset), tmp_path / "m", "window")
    got = a_report(open_lane(backend, data_dataset), tmp_path / "g", "window")
    assert_same_sections(got, mem, window=True)
    assert (got.recorded_text, got.policy_cuts_text) == (mem.recorded_text, mem.policy_cuts_text)
    assert mem.recorded is not None and mem.recorded.header[:3] == ["agent", "budget", "compactions"]
    assert mem.recorded_text is not None and mem.policy_cuts_text is not None
    assert isinstance(got.recorded_rows, Path) and isinstance(mem.recorded_rows, pl.DataFrame)
    assert_frame_equal(pl.read_parquet(got.recorded_rows), mem.recorded_rows, check_exact=True)


def test_the_report_holds_no_row_of_the_compactions_past_recorded_rows(data_dataset, monkeypatch):
    """What the command's process keeps of the tasks' rows: all of them up to RECORDED_ROWS compactions, none past
    it; the counts it merges are the in-memory corpus's either way."""
    corpus = dataset_corpus(data_dataset)
    rows, cuts = agent_vs_libpanto(corpus, BUDGETS), policies_vs_agents(corpus, ["pi", "codex"])
    options = {"horizon": 10, "policies": ["pi", "codex"], "task_rows": 1}  # a task per bucket
    few = recorded_dataset(data_dataset, BUDGETS, **options)
    assert few.agent_rows is not None and few.agent_rows.height == rows.height
    assert few.policy_rows is not None and few.policy_rows.height == cuts.height
    monkeypatch.setattr(model, "RECORDED_ROWS", 2)
    many = recorded_dataset(data_dataset, BUDGETS, **options)
    assert many.agent_rows is None and many.policy_rows is None
    for got in (few, many):
        assert got.agent_counts is not None and got.policy_counts is not None
        assert_frame_equal(got.agent_counts, kept_counts(rows), check_exact=True)
        assert_frame_equal(got.policy_counts, cut_counts(cuts), check_exact=True)


def test_the_rows_kept_stop_at_the_limit_and_do_not_come_back():
    rows = pl.DataFrame({"source_format": ["pi"], "budget": [20_000], "kept_turns": [1], "kept_tokens": [500],
                         "agent_kept_tokens": [400], "tokens_before": [9_000]})
    kept = _Kept(limit=2)
    for i in range(4):
        kept.add(f"bucket={i:03d}", rows, kept_counts(rows))
        assert (kept.rows is None) == (i >= 2)
    kept.add("bucket=009", None, None)  # a task without compactions
    assert kept.in_order() is None and kept.counts is not None and compactions_counted(kept.counts) == 4


#: data/'s cuts: 7 recorded compactions (the first pass), then 26 pseudo-cuts (the second).
DATA_CUTS = 33


@pytest.mark.parametrize("threshold", [2, 10])  # passed in the first pass, or only in the second
@pytest.mark.parametrize("backend", BACKENDS)
def test_past_recorded_rows_the_loss_section_is_a_summary_equal_to_the_report_in_memory(
        data_dataset, backend, threshold, monkeypatch, tmp_path):
    """Past RECORDED_ROWS cuts the loss section is one row per agent and kind of cut, its plot the cuts counted
    at each point and the curve per cut: over a dataset, from the tasks' summaries merged, equal to the
    report of the same corpus in memory (the table, the text, the plot to the byte); every other section too."""
    monkeypatch.setattr(model, "RECORDED_ROWS", threshold)
    options = {**OPTIONS["splits"], "segment_by": []}
    mem = open_lane("memory", data_dataset).report(BUDGETS, splits_to=tmp_path / "m.parquet", resamples=0,
                                                   inputs=[str(data_dataset)], **options)
    got = open_lane(backend, data_dataset).report(BUDGETS, splits_to=tmp_path / "g.parquet", resamples=0,
                                                  inputs=[str(data_dataset)], **options)
    assert_same_sections(got, mem, window=False)
    assert got.loss is not None and got.loss_text is not None and got.loss_text == mem.loss_text
    assert got.loss.header[2] == "cuts" and [r[:2] for r in got.loss.rows] == [["canonical", "compaction"],
                                                                               ["canonical", "baseline"]]
    assert [r[2] for r in got.loss.rows] == ["7", "26"]
    assert f"{DATA_CUTS} cuts, more than {threshold}" in got.loss_text
    assert f"`panto-analytics loss {data_dataset} --horizon 20 --cuts FILE`" in got.loss_text
    assert got.loss_figure is not None and got.loss_figure.caption == mem.loss_figure.caption


def test_the_loss_section_is_a_row_per_cut_up_to_recorded_rows(data_dataset, monkeypatch, tmp_path):
    """At RECORDED_ROWS cuts exactly, the loss section is still a row per cut, the text the one of rows."""
    monkeypatch.setattr(model, "RECORDED_ROWS", DATA_CUTS)
    got = open_lane("dataset", data_dataset).report(BUDGETS, splits_to=tmp_path / "g.parquet", resamples=0,
                                                    **{**OPTIONS["splits"], "segment_by": []})
    assert got.loss is not None and len(got.loss.rows) == DATA_CUTS and got.loss_text is None


@pytest.mark.parametrize("threshold", [0, 2, 10, DATA_CUTS])
def test_the_command_holds_no_row_of_a_cut_past_recorded_rows(data_dataset, threshold, monkeypatch):
    """The tasks' parts as the command takes them, one at a time (a task per bucket): past RECORDED_ROWS cuts,
    no part it holds keeps a row of a cut, of their curve or its own summary (only the merged one), whatever
    came before; under it, at most RECORDED_ROWS cuts' rows. What it returns: the rows, or the summary of them
    all, the one the whole corpus gives in memory."""
    from panto_analytics.dataset import _report_recorded as recorded
    from panto_analytics.outcomes.recorded_refetch import calibration, calibration_partial

    monkeypatch.setattr(model, "RECORDED_ROWS", threshold)
    seen: list[int] = []
    take = recorded._Cuts.take

    def watched(self, found):
        def each():
            for part in found:
                yield part
                held = [p for p in self.kept if p.cuts is not None or p.curve is not None or p.loss is not None]
                rows = sum(p.cuts.height for p in held if p.cuts is not None)
                seen.append(rows)
                assert not any(p.loss is not None for p in held)
                assert rows <= threshold and (self.total <= threshold or not held)
        return take(self, each())

    monkeypatch.setattr(recorded._Cuts, "take", watched)
    got = recorded.recorded_dataset(data_dataset, BUDGETS, horizon=20, task_rows=1)
    corpus = dataset_corpus(data_dataset)
    cuts, curve = calibration(corpus.messages, corpus.compactions, corpus.sessions, horizon=20)
    assert len(seen) > 2 and cuts.height == DATA_CUTS
    assert got.loss is not None and got.loss.cuts == DATA_CUTS
    whole = calibration_partial(cuts, curve)
    for name in ("sums", "points", "curve"):
        assert_frame_equal(getattr(got.loss, name), getattr(whole, name), check_exact=True)
    if threshold < DATA_CUTS:
        assert got.cuts is None and got.curve is None and max(seen) <= threshold
    else:
        assert got.cuts is not None and got.cuts.height == DATA_CUTS and max(seen) > 10


def test_the_command_the_summary_names_writes_every_cut_it_sums(data_dataset, monkeypatch, tmp_path):
    """The loss section past RECORDED_ROWS names the command that writes every cut's row: run as written (FILE a
    path), over the dataset, it writes the cuts the table sums, per agent and kind of cut."""
    import re
    import shlex

    monkeypatch.setattr(model, "RECORDED_ROWS", 2)
    got = open_lane("dataset", data_dataset).report(BUDGETS, splits_to=tmp_path / "g.parquet", resamples=0,
                                                    inputs=[str(data_dataset)], **{**OPTIONS["splits"], "segment_by": []})
    assert got.loss is not None and got.loss_text is not None
    found = re.search(r"`(panto-analytics loss [^`]*)`", got.loss_text)
    assert found is not None
    written = tmp_path / "cuts.csv"
    args = shlex.split(found.group(1).replace("FILE", str(written)))[1:]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    cuts = pl.read_csv(written)
    summed = (cuts.group_by("source_format", "cut", maintain_order=True)
              .agg(pl.len(), pl.col("orphan_targets").sum(), pl.col("refetch_calls").sum()))
    header = got.loss.header
    table = {(r[0], r[1]): (int(r[2]), int(r[header.index("orphan targets")].replace(",", "")),
                            int(r[header.index("re-fetch calls")].replace(",", ""))) for r in got.loss.rows}
    assert {(a, c): (n, o, f) for a, c, n, o, f in summed.rows()} == table
    assert cuts.height == DATA_CUTS


def test_the_command_the_policy_cuts_summary_names_writes_every_cut_it_sums(data_dataset, monkeypatch, tmp_path):
    """Past RECORDED_ROWS the policies' cuts section names the command that writes every cut's row: run as
    written (FILE a path) over the dataset, it writes the rows the table sums, per policy and agent."""
    import re
    import shlex

    monkeypatch.setattr(model, "RECORDED_ROWS", 2)
    got = open_lane("dataset", data_dataset).report(BUDGETS, splits_to=tmp_path / "g.parquet", resamples=0,
                                                    inputs=[str(data_dataset)], **OPTIONS["window"])
    assert got.policy_cuts is not None and got.policy_cuts_text is not None
    found = re.search(r"`(panto-analytics policy-cuts [^`]*)`", got.policy_cuts_text)
    assert found is not None
    written = tmp_path / "cuts.parquet"
    result = CliRunner().invoke(main, shlex.split(found.group(1).replace("FILE", str(written)))[1:],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows = pl.read_parquet(written)
    summed = rows.group_by("policy", "source_format").agg(pl.len(), pl.col("exact").sum()).sort("policy", "source_format")
    assert [[p, f, str(n), str(e)] for p, f, n, e in summed.rows()] == [
        [r[0], r[1], r[3], r[4]] for r in got.policy_cuts.rows]
    assert rows.height == 14  # data/'s 7 compactions, pi and codex
