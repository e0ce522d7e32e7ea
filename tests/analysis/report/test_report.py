"""The report: the files it writes, what they say, and that a real browser shows every plot."""
from __future__ import annotations

import base64
import json
import re
import struct
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from conftest import FIXTURES, REALDATA, REPO, examples, legend_boxes
from hypothesis import given, settings
from hypothesis import strategies as st

import panto_analytics as pa
from panto_analytics.analysis.report import build_report, render_markdown
from panto_analytics.cli import main

#: Each test here writes a report, runs a notebook or a benchmark: seconds each.
pytestmark = pytest.mark.slow

FIXTURE = FIXTURES / "recommend"
DATA = REPO / "data"
BUDGETS = "0,1k,2k,3k,4k,5k"


def run_report(out: Path, *args, paths=(FIXTURE,)):
    result = CliRunner().invoke(main, ["report", *map(str, paths), "-b", BUDGETS, "-o", str(out),
                                       "--no-cache", *args])
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report") / "r"
    run_report(out, "-k", "2", "-p", "75%", "--by", "model")
    return out


class Page(HTMLParser):
    """Every tag's attributes, by tag name."""

    def __init__(self, text: str):
        super().__init__()
        self.tags: dict[str, list[dict]] = {}
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.setdefault(tag, []).append(dict(attrs))


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_report_writes_every_file(report_dir):
    names = {p.name for p in report_dir.iterdir()}
    assert {"index.html", "report.md", "sweep.parquet", "splits.parquet"} <= names
    assert {"kept_tokens.png", "outcomes.png", "summarized_share.png", "kept_turns.png", "turn_sizes.png",
            "kept_tokens_by_model.png", "outcomes_by_model.png", "turn_sizes_by_model.png"} <= names
    for png in report_dir.glob("*.png"):
        width, height = png_size(png.read_bytes())
        assert width > 300 and height > 200, png.name


def test_parquet_files_hold_the_engine_results(report_dir):
    messages = pa.read_sessions(FIXTURE)
    expected = pa.splits(messages, pa.budgets.parse_budgets(BUDGETS))
    splits = pl.read_parquet(report_dir / "splits.parquet")
    assert splits.height == 5 * 6  # sessions a..e at six budgets
    assert splits.with_columns(pl.col("session_id").cast(pl.String)).equals(
        expected.with_columns(pl.col("session_id").cast(pl.String)))
    assert pl.read_parquet(report_dir / "sweep.parquet").equals(pa.sweep(expected))


def test_html_is_one_self_contained_file(report_dir):
    text = (report_dir / "index.html").read_text()
    page = Page(text)
    images = page.tags["img"]
    assert len(images) == len(list(report_dir.glob("*.png")))
    for img in images:
        src = img["src"]
        assert src.startswith("data:image/png;base64,")
        assert png_size(base64.b64decode(src.split(",", 1)[1]))[0] > 0
        assert img.get("alt")
    assert "script" not in page.tags
    assert not re.search(r"""(src|href)=['"]?(https?:|//)""", text)
    # Links point to files written beside it.
    for a in page.tags.get("a", []):
        assert (report_dir / a["href"]).exists(), a["href"]


def test_markdown_links_the_pngs_beside_it(report_dir):
    text = (report_dir / "report.md").read_text()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert len(links) == 8
    assert all((report_dir / link).is_file() for link in links)


def test_report_recommends_what_recommend_recommends(report_dir):
    # By hand (tests/fixtures/recommend/README.md): at 2k, a, c and d keep 2 turns or all of theirs.
    out = CliRunner().invoke(main, ["recommend", str(FIXTURE), "-b", BUDGETS, "-k", "2", "-p", "75%", "--no-cache"])
    headline = out.output.splitlines()[0]
    # The budget, then its bootstrap range (issue 30): seeded, so the report's headline is the same line.
    assert headline.startswith("recommended keep_verbatim: 2k (2,000 tokens) (90% of resamples: ")
    assert f"**{headline}**" in (report_dir / "report.md").read_text()
    html_text = (report_dir / "index.html").read_text()
    assert headline in html_text
    assert "keep nothing verbatim at 2k" in html_text  # b's last turn is 4000 tokens
    assert "<tr class='chosen'><td class='text'>2k</td>" in html_text


@pytest.mark.skipif(not any(DATA.glob("*.jsonl")), reason="the bundled corpus in data/ is not there")
def test_corpus_numbers_match_the_raw_files(tmp_path):
    sessions = messages = summaries = 0
    for path in DATA.glob("*.jsonl"):
        sessions += 1
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            if rec.get("type") == "message":
                messages += 1
                summaries += any(b.get("type") == "compaction_summary" for b in rec["content"])
    run_report(tmp_path / "r", paths=(DATA,))
    text = (tmp_path / "r" / "report.md").read_text()
    assert f"| sessions | {sessions:,} |" in text
    assert f"| messages | {messages:,} |" in text
    assert f"| compaction summaries | {summaries:,} |" in text
    assert f"What keep_verbatim does to {sessions} sessions" in text


def test_overview_uses_the_tables_when_given():
    messages = pa.read_sessions(FIXTURE)
    compactions = pl.DataFrame({"session_id": ["a", "a", "b"], "anchor_seq": [1, 3, 2],
                                "trigger": ["auto", "auto", "manual"], "tokens_before": [1000, 3000, 2000],
                                "first_kept_seq": [None, None, None]})
    sessions = pl.DataFrame({"session_id": list("abcdef"), "api_calls": [3, 3, 1, 0, 0, 0],
                             "context_window": [10_000, 10_000, 10_000, None, None, None]})
    rep = build_report(messages, [0, 2000], sessions=sessions, compactions=compactions)
    rows = {r[0]: r for r in rep.overview.rows}
    assert rows["recorded compaction events"][1:] == ["3", "2 auto, 1 manual; median 2k tokens before"]
    assert rows["messages"][2] == "7 API calls"
    assert rows["context windows recorded"][1:] == ["3", "10k: 3"]
    # Session f has no messages: the sessions table still gives it a row in the splits.
    assert rep.splits["session_id"].cast(pl.String).unique().sort().to_list() == list("abcdef")


def test_report_without_the_tables_still_says_what_it_can():
    rep = build_report(pa.read_sessions(FIXTURE), [0, 2000])
    rows = {r[0]: r for r in rep.overview.rows}
    assert rows["sessions"][1] == "5" and rows["turns"][1] == "7"
    assert rows["turns sized from word estimates"][1:] == ["14.3%", "1 turn (no usage on the turn's final assistant message)"]
    assert "recorded compaction events" not in rows


def test_report_cli_errors(tmp_path):
    bad = tmp_path / "in"
    bad.mkdir()
    (bad / "x.jsonl").write_text("{broken\n")
    result = CliRunner().invoke(main, ["report", str(bad), "-o", str(tmp_path / "out"), "--no-cache"])
    assert result.exit_code == 1 and "x.jsonl:1" in result.output
    assert not (tmp_path / "out").exists()
    result = CliRunner().invoke(main, ["report", str(FIXTURE)])
    assert result.exit_code == 2 and "--out" in result.output


# --- a real browser ----------------------------------------------------------------------------------------

def chromium(profile: Path):
    """The headless Chromium that ``python -m benchmarks.doc_images`` shoots docs/img with (one definition of its
    browser, driver and flags), with a fresh profile in ``profile``, or a skip saying what is missing."""
    pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    from benchmarks.doc_images import chromium as headless

    try:
        return headless(profile)
    except RuntimeError as missing:
        pytest.skip(str(missing))


def test_every_image_renders_in_a_real_browser(report_dir, tmp_path):
    browser = chromium(tmp_path / "profile")
    try:
        browser.get((report_dir / "index.html").resolve().as_uri())
        assert browser.execute_script("return document.readyState") == "complete"
        images = browser.execute_script(
            "return Array.from(document.images).map(i => [i.alt, i.complete, i.naturalWidth, i.naturalHeight])")
        assert len(images) == 8
        for alt, complete, width, height in images:
            assert complete and width > 0 and height > 0, alt
        assert browser.title.startswith("What keep_verbatim does to 5 sessions")
        height = browser.execute_script("return document.body.scrollHeight")
        browser.set_window_size(1200, min(height + 50, 8000))
        shot = tmp_path / "report.png"
        assert browser.save_screenshot(str(shot))
        width, shot_height = png_size(shot.read_bytes())
        assert width >= 1000 and shot_height > 2000
    finally:
        browser.quit()


def test_no_table_runs_off_the_page_in_a_real_browser(tmp_path):
    # data/'s recorded compactions: a table of 19 columns with whole session ids (issue 32: it ran off the page).
    out = tmp_path / "r"
    result = CliRunner().invoke(main, ["report", str(DATA), "-o", str(out), "--no-cache"])
    assert result.exit_code == 0, result.output
    assert "What the agents did at their recorded compactions" in (out / "index.html").read_text()
    browser = chromium(tmp_path / "profile")
    try:
        browser.get((out / "index.html").resolve().as_uri())
        assert browser.execute_script("return document.readyState") == "complete"
        page = browser.execute_script("return document.body.getBoundingClientRect().right")
        rights = browser.execute_script(
            "return Array.from(document.querySelectorAll('table')).map(t => t.getBoundingClientRect().right)")
        assert len(rights) > 3 and max(rights) <= page + 1, (rights, page)
        assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    finally:
        browser.quit()


def test_a_corpus_without_turns_still_gets_a_report(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "h.jsonl").write_text('{"type":"session","id":"only-a-header"}\n')
    result = run_report(tmp_path / "r", "--by", "length", paths=(tmp_path / "in",))
    assert "no budget tried meets the rule" in result.output
    text = (tmp_path / "r" / "report.md").read_text()
    assert "| sessions | 1 | 0 with at least one turn |" in text
    assert "no session has a turn" in text
    assert len(list((tmp_path / "r").glob("*.png"))) == 8


def test_recorded_compactions_get_their_section(tmp_path):
    real = REALDATA / "pi-compactions"
    if not real.is_dir():
        pytest.skip(f"the real pi compactions are absent ({real})")
    corpus = pa.ingest.read_corpus(real, skip_invalid=True)  # xcsh-session.jsonl:440 holds two objects
    rep = build_report(corpus.messages, [0, 20_000, 50_000], sessions=corpus.sessions, compactions=corpus.compactions)
    assert rep.recorded is not None and len(rep.recorded.rows) == corpus.compactions.height == 3
    assert any(f.name == "recorded_compactions" for f in rep.figures)
    assert "What the agents did at their recorded compactions" in render_markdown(rep)
    no_compactions = build_report(pa.read_sessions(FIXTURE), [0, 20_000])
    assert no_compactions.recorded is None
    # The loss section: one row per cut (the three compactions; pseudo-cuts only where a quiet pi session is read
    # too), and the calibration plot beside it.
    assert rep.loss is not None and [r[1] for r in rep.loss.rows] == ["compaction"] * 3
    assert rep.loss_figure is not None and rep.loss_figure.png.startswith(b"\x89PNG")
    text = render_markdown(rep)
    assert "What compaction loses at the recorded compactions" in text and "(refetch_calibration.png)" in text
    assert no_compactions.loss is None and no_compactions.loss_figure is None


def test_every_figure_of_a_full_report_has_its_legends_inside_and_apart():
    """Every plot a report over data/ draws under a window, with policies, the frontier, the loss section and the
    worst sessions' timelines: each legend inside the figure, none on another (the calibration plot's two legends
    and the timeline's used to lie on each other or off the panels)."""
    corpus = pa.ingest.read_corpus(REPO / "data")
    from panto_analytics.analysis.choose.rule import Rule

    rep = build_report(corpus, "0:20k:5", window=32_000, policies=["libpanto", "gemini-cli"], resamples=20,
                       rule=Rule(max_orphan_rate=0.05), prices=str(REPO / "docs" / "synth-prices.json"))
    figures = [*rep.figures, *(f for f in (rep.frontier, rep.loss_figure) if f is not None)]
    names = {f.name for f in figures}
    assert {"refetch_calibration", "recorded_compactions", "policies", "frontier"} <= names
    assert any(n.startswith("timeline") for n in names), names
    for fig in figures:
        legend_boxes(fig.figure)


def test_policies_get_a_section_a_plot_and_the_recorded_cuts(tmp_path):
    corpus = pa.ingest.read_corpus(REPO / "data")
    policies = ["libpanto", "pi", "codex", "claude-code"]
    rep = build_report(corpus.messages, [0, 20_000, 50_000], sessions=corpus.sessions, compactions=corpus.compactions,
                       window=64_000, policies=policies)
    assert rep.policies is not None and rep.policy_table is not None and rep.policy_cuts is not None
    # One row per policy (libpanto at the recommended budget), in the order given.
    assert [r[0] for r in rep.policy_table.rows] == policies
    chosen = rep.recommendation.budget if rep.recommendation.budget is not None else 20_000  # none met: 20k
    assert set(rep.policies.sessions["budget"].filter(rep.policies.sessions["policy"] == "libpanto")) == {chosen}
    # The recorded cuts: every policy but libpanto, each at data/'s 7 recorded compactions.
    assert [(r[0], r[3]) for r in rep.policy_cuts.rows] == [(p, "7") for p in policies[1:]]
    assert "policies" in [f.name for f in rep.figures]
    md = render_markdown(rep)
    assert "## Policies under the same window" in md and "![Policies under the same window](policies.png)" in md
    out = CliRunner().invoke(main, ["report", str(REPO / "data"), "--no-cache", "-o", str(tmp_path / "r"),
                                    "--policy", "pi"])
    assert out.exit_code == 2 and "--window" in out.output


def _mixed_models() -> pl.DataFrame:
    """Three sessions: one names its model with and without the date and has a <synthetic> message, one has no
    model, one another model."""
    m = pa.examples.messages()
    ids = m["session_id"].cast(str).unique(maintain_order=True).to_list()
    assert len(ids) >= 2
    names = {ids[0]: ["claude-opus-4-5-20251101", "<synthetic>", "claude-opus-4-5"], ids[1]: [None]}
    rows = []
    for sid in m["session_id"].cast(str):
        options = names.get(sid, ["gpt-5"])
        rows.append(options[len([r for r in rows if r[0] == sid]) % len(options)])
        rows[-1] = (sid, rows[-1])
    return m.with_columns(pl.Series("model", [model for _, model in rows], dtype=pl.String))


def test_by_model_names_each_session_once_by_its_normalized_model():
    from panto_analytics.analysis.report import breakdown

    m = _mixed_models()
    table = breakdown(m, "model")
    models = [row[0] for row in table.rows]
    assert "<synthetic>" not in models and "claude-opus-4-5-20251101" not in models
    assert "claude-opus-4-5" in models
    n_sessions = m["session_id"].n_unique()
    assert sum(int(str(row[1]).replace(",", "")) for row in table.rows) == n_sessions


def test_by_model_agrees_with_the_sessions_table_and_the_segments(tmp_path):
    from panto_analytics.analysis.plot_data import session_segments
    from panto_analytics.analysis.report import breakdown

    corpus = pa.ingest.read_corpus(FIXTURES / "claude_code" / "resume", cache=None)
    by_table = corpus.sessions.group_by("model").len().sort("model")
    table = breakdown(corpus.messages, "model", sessions=corpus.sessions)
    assert sorted((r[0], int(str(r[1]))) for r in table.rows) == sorted(
        (m or "unknown", n) for m, n in by_table.iter_rows())
    segments = session_segments(_mixed_models(), "model")
    assert "<synthetic>" not in segments["segment"].cast(str).to_list()


def test_a_report_prints_as_a_person_reads_it():
    rep = build_report(pa.read_sessions([FIXTURE], cache=None), "0:4k:5")
    line = repr(rep)
    assert "\n" not in line and line.startswith(f"<Report {rep.title!r}: ") and "5 budgets" in line
    text = str(rep)
    assert text.startswith(rep.title) and rep.recommendation.headline() in text
    assert "shape:" not in text.split("rule:")[0]  # the overview is prose, not a DataFrame dump


def test_a_report_into_an_old_report_folder_leaves_nothing_of_the_old_run(tmp_path):
    from panto_analytics.analysis.report import WRITTEN_LIST

    out = tmp_path / "r"
    run_report(out, "--window", "24k", "--by", "model")
    first = {p.name for p in out.iterdir()}
    assert {"replay_events.parquet", "kept_tokens_by_model.png"} <= first
    (out / "notes.txt").write_text("mine")  # not the report's: never touched
    run_report(out)
    second = {p.name for p in out.iterdir()}
    written = set((out / WRITTEN_LIST).read_text().split())
    assert second == written | {"notes.txt", WRITTEN_LIST}
    assert "replay_events.parquet" not in second and not any("_by_model" in n for n in second)
    # A folder of a report from before the list: its fixed names are known, and removed when not written.
    (out / WRITTEN_LIST).unlink()
    (out / "replay_sessions.parquet").write_bytes(b"old")
    run_report(out)
    assert not (out / "replay_sessions.parquet").exists() and (out / "notes.txt").read_text() == "mine"


def test_a_table_column_is_written_in_one_notation():
    from panto_analytics.analysis.report import Table

    t = Table.from_frame(pl.DataFrame({"what": ["a", "b", "c"], "mean": [33_712.25, 17_459.0, 2.5],
                                       "share": [0.5, None, 0.125]}))
    assert [row[1] for row in t.rows] == ["33,712", "17,459", "2"]
    assert [row[2] for row in t.rows] == ["0.500", "-", "0.125"]
    assert not any("e+" in cell or cell == "None" for row in t.rows for cell in row)


def test_the_overview_names_triggers_and_skipped_files_as_people_read_them(tmp_path):
    from panto_analytics.analysis.report import corpus_overview
    from panto_analytics.errors import IngestReport

    m = pa.examples.messages()
    compactions = pl.DataFrame({"trigger": [None] * 7 + ["auto"], "tokens_before": [1_000] * 8})
    report = IngestReport(files=2)
    report.skip(str(tmp_path / "deep" / "x.jsonl"), "malformed JSON")
    table = corpus_overview(m, pa.turns(m), pa.splits(m, [0]), ingest=report, compactions=compactions)
    text = table.markdown()
    assert "None" not in text and "7 without a recorded trigger" in text
    assert str(tmp_path / "deep" / "x.jsonl") in text


@settings(max_examples=examples(30), deadline=None)
@given(st.data())
def test_the_sessions_given_a_timeline_do_not_depend_on_the_order_of_the_rows(data):
    """Sessions the chosen point serves equally badly (often: none orphaned) are told apart by id, so that the
    report's timelines are the same sessions in any order of its session rows (before: the first listed)."""
    from panto_analytics.analysis.report.build import worst_sessions

    n = data.draw(st.integers(1, 8))
    rows = pl.DataFrame({"session_id": [f"s{i}" for i in range(n)], "policy": ["libpanto"] * n, "budget": [8] * n,
                         "n_compactions": data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)),
                         "orphan_calls": data.draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)),
                         "refetch_tokens": data.draw(st.lists(st.sampled_from([0, 5]), min_size=n, max_size=n)),
                         "zero_kept_events": [0] * n})
    shuffled = rows[data.draw(st.permutations(range(n)))]
    assert worst_sessions(rows, "libpanto", 8) == worst_sessions(shuffled, "libpanto", 8)
