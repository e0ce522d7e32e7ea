"""The re-fetch check: recorded compactions against pseudo-cuts, orphan targets fetched again, re-orientation."""
from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from conftest import FIXTURES, REALDATA, examples
from hypothesis import given, settings
from hypothesis import strategies as st
from test_orphan_loss import CUT_TYPES, REF_TYPES, reference_restored, sessions_and_cuts
from tool_sessions import pi_session

import panto_analytics as pa
from panto_analytics.outcomes.recorded_refetch import pseudo_cuts, refetch, refetch_summary, reorientation, target_loss


def reference_targets(refs: list[dict], cut: dict, horizon: int) -> tuple[int, int, int, int | None, int | None]:
    """Literally: orphan targets, those read again in the window, every target touched before the cut and read
    again in the window, calls to the first write after and from the start."""
    mine = sorted((r for r in refs if r["session_id"] == cut["session_id"]), key=lambda r: (r["call"], r["key"]))
    after = cut["after_seq"]
    last: dict[int, dict] = {}
    for r in mine:
        if r["kind"] != "other" and r["seq"] < after:
            last[r["key"]] = r
    restored = reference_restored(mine, cut)
    start, end = cut["kept_start"], cut["kept_end"]
    orphans = {k for k, r in last.items() if not (start is not None and start <= r["seq"] < end) and k not in restored}
    calls = sorted({r["call"]: r["seq"] for r in mine}.items())
    window = [c for c, s in calls if s >= after][:horizon]
    fetched = {r["key"] for r in mine if r["call"] in window and r["kind"] in ("read", "fetch")}
    after_calls = [c for c, s in calls if s >= after]
    writes = sorted({r["call"] for r in mine if r["kind"] == "write"})
    first_write_after = next((w for w in writes if w in after_calls), None)
    reorient = None if first_write_after is None else after_calls.index(first_write_after)
    return len(orphans), len(orphans & fetched), len(set(last) & fetched), reorient, (writes[0] if writes else None)


@settings(max_examples=examples(100))
@given(sessions_and_cuts())
def test_targets_and_reorientation_equal_the_literal_reference(data):
    refs, cuts = data
    frame = pl.DataFrame(refs, schema=REF_TYPES)
    cut_frame = pl.DataFrame(cuts, schema=CUT_TYPES)
    targets = target_loss(frame, cut_frame, horizon=5)
    reoriented = reorientation(frame, cut_frame)
    for k, cut in enumerate(cuts):
        want = reference_targets(refs, cut, 5)
        got = (*targets.row(k), *reoriented.row(k))
        assert got == want, (cut, refs)


@settings(max_examples=examples(60))
@given(sessions_and_cuts(), st.integers(1, 6))
def test_the_curve_over_the_horizon_ends_at_the_cut_counts(data, horizon):
    from panto_analytics.outcomes.recorded_refetch import refetch_curve

    refs, cuts = data
    frame, cut_frame = pl.DataFrame(refs, schema=REF_TYPES), pl.DataFrame(cuts, schema=CUT_TYPES)
    curve = refetch_curve(frame, cut_frame, horizon=horizon)
    assert curve.height == len(cuts) * horizon
    assert curve.group_by("_cut").agg(up=(pl.col("predicted").diff().fill_null(0) >= 0).all())["up"].all()
    ends = curve.filter(pl.col("calls") == horizon).sort("_cut")
    targets = target_loss(frame, cut_frame, horizon=horizon)
    assert ends["predicted"].to_list() == targets["refetched_targets"].to_list()
    assert (ends["predicted"] + ends["unpredicted"]).to_list() == targets["fetched_again_targets"].to_list()
    assert ends["orphan_targets"].to_list() == targets["orphan_targets"].to_list()


def test_pseudo_cuts_sit_where_a_quiet_session_reaches_the_compaction_size():
    messages = pl.DataFrame({
        "session_id": ["quiet"] * 4 + ["other"] * 2,
        "seq": [0, 1, 2, 3, 0, 1],
        "role": ["user", "assistant", "assistant", "assistant", "user", "assistant"],
        "input": [None, 100, 300, 200, None, 1_000], "output": [None, 0, 0, 0, None, 0],
        "cache_read": [None, 0, 0, 0, None, 0], "cache_write": [None, 0, 0, 0, None, 0]})
    sessions = pl.DataFrame({"session_id": ["quiet", "other"], "source_format": ["pi", "codex"], "compactions": [0, 0]})
    recorded = pl.DataFrame({"source_format": ["pi", "pi", "codex"], "context": [250, 400, 10]})
    cuts = pseudo_cuts(messages, recorded, sessions).collect()
    # quiet reaches 250 at seq 2 (never 400); other is Codex, whose size 10 it passes at seq 1
    assert cuts.select("session_id", "context", "after_seq").rows() == [("other", 10, 2), ("quiet", 250, 3)]


def test_refetch_on_a_recorded_compaction(tmp_path):
    corpus = pa.ingest.read_corpus([pi_session(tmp_path)])
    assert corpus.compactions.height == 1
    cuts = refetch(corpus.messages, corpus.compactions, corpus.sessions)
    row = cuts.row(0, named=True)
    assert (row["cut"], row["window_calls"], row["orphan_calls"], row["repeat_reads"]) == ("compaction", 2, 1, 1)
    assert (row["orphan_targets"], row["refetched_targets"], row["reorientation"], row["reorientation_start"]) == \
        (2, 1, 1, 3)
    summary = refetch_summary(cuts)
    assert summary.select("source_format", "cut", "cuts", "precision").rows() == [("canonical", "compaction", 1, 0.5)]
    # One cut: no interval.
    assert summary.select("precision_low", "recall_high").rows() == [(None, None)]


@pytest.mark.skipif(not (REALDATA / "pi-compactions").exists(), reason="../shared/realdata absent")
def test_the_pi_compactions_are_checked_against_a_baseline():
    corpus = pa.ingest.read_corpus([REALDATA / "pi", REALDATA / "pi-compactions" / "before-compaction.jsonl"])
    cuts = refetch(corpus.messages, corpus.compactions, corpus.sessions)
    recorded = cuts.filter(pl.col("cut") == "compaction")
    assert recorded["context"].to_list() == [175_004, 185_014]
    assert recorded["window_calls"].to_list() == [20, 20]
    # pi's own recorded kept block: the targets last touched there are not orphans
    assert (recorded["orphan_targets"] > 0).all() and (recorded["refetched_targets"] <= recorded["orphan_targets"]).all()
    # large-session.jsonl reaches the first size, never the second
    assert cuts.filter(pl.col("cut") == "baseline")["context"].to_list() == [175_004]


def literal_bootstrap(orphans: list[int], refetched: list[int], again: list[int]) -> tuple[float | None, ...]:
    """The intervals of one group, literally: its distinct cuts sorted, each resample's copies of each drawn as one
    multinomial of the group's cuts with the documented seed, each resample pooled."""
    from collections import Counter

    import numpy as np

    from panto_analytics.outcomes.recorded_refetch import (
        BOOTSTRAP_LEVEL,
        BOOTSTRAP_RESAMPLES,
        BOOTSTRAP_SEED,
        ENOUGH_CUTS,
    )

    if len(orphans) < ENOUGH_CUTS:
        return (None,) * 4
    distinct = sorted(Counter(zip(orphans, refetched, again)).items())
    n = len(orphans)
    draws = np.random.default_rng(BOOTSTRAP_SEED).multinomial(n, [c / n for _, c in distinct],
                                                              size=BOOTSTRAP_RESAMPLES)
    out: list[float | None] = []
    for den_at in (0, 2):
        ratios = []
        for copies in draws:
            assert sum(copies) == n
            tp = sum(int(k) * cut[1] for k, (cut, _) in zip(copies, distinct))
            den = sum(int(k) * cut[den_at] for k, (cut, _) in zip(copies, distinct))
            if den:
                ratios.append(tp / den)
        alpha = (1 - BOOTSTRAP_LEVEL) / 2
        out += [float(np.quantile(ratios, alpha)), float(np.quantile(ratios, 1 - alpha))] if ratios else [None] * 2
    return tuple(out)


def literal_summary(cuts: pl.DataFrame) -> pl.DataFrame:
    """The summary as one group_by over every cut (what refetch_summary computed before it merged partials)."""
    from panto_analytics.outcomes.orphan_loss import orphan_rate
    from panto_analytics.outcomes.recorded_refetch import SUMMED

    table = (cuts.lazy().group_by("source_format", "cut")
             .agg(cuts=pl.len().cast(pl.UInt32), **{c: pl.col(c).sum() for c in SUMMED},
                  reoriented=pl.col("reorientation").is_not_null().sum().cast(pl.UInt32),
                  reorientation_median=pl.col("reorientation").median(),
                  reorientation_start_median=pl.col("reorientation_start").median(),
                  _o=pl.col("orphan_targets"), _r=pl.col("refetched_targets"), _a=pl.col("fetched_again_targets"))
             .with_columns(precision=orphan_rate("refetched_targets", "orphan_targets"),
                           recall=orphan_rate("refetched_targets", "fetched_again_targets"),
                           repeat_rate=orphan_rate("repeat_reads", "window_calls"), orphan_rate=orphan_rate())
             .sort("source_format", "cut", descending=[False, True]).collect())
    bounds = pl.DataFrame([literal_bootstrap(*row) for row in table.select("_o", "_r", "_a").iter_rows()],
                          schema={b: pl.Float64 for b in ("precision_low", "precision_high", "recall_low", "recall_high")},
                          orient="row")
    return pl.concat([table.drop("_o", "_r", "_a"), bounds], how="horizontal")


@st.composite
def cut_rows_and_split(draw):
    from panto_analytics.outcomes.recorded_refetch import MEDIANS, SUMMED

    n = draw(st.integers(0, 80))
    small = st.integers(0, 6)
    maybe = st.one_of(st.none(), st.integers(0, 9))
    frame = pl.DataFrame({
        "source_format": pl.Series(draw(st.lists(st.sampled_from(["pi", "codex"]), min_size=n, max_size=n)),
                                   dtype=pl.String),
        "cut": pl.Series(draw(st.lists(st.sampled_from(["compaction", "baseline"]), min_size=n, max_size=n)),
                         dtype=pl.String),
        **{c: pl.Series(draw(st.lists(small, min_size=n, max_size=n)), dtype=pl.UInt32) for c in SUMMED},
        **{m: pl.Series(draw(st.lists(maybe, min_size=n, max_size=n)), dtype=pl.UInt32) for m in MEDIANS},
    })
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=4))) if n >= 2 else []
    return frame, [0, *cuts, n]


@settings(max_examples=examples(100))
@given(cut_rows_and_split())
def test_partials_of_any_split_merge_to_the_literal_summary(drawn):
    from polars.testing import assert_frame_equal

    from panto_analytics.outcomes.recorded_refetch import merge_refetch_partials, refetch_partials

    frame, bounds = drawn
    parts = [refetch_partials(frame.slice(a, b - a)) for a, b in zip(bounds, bounds[1:])]
    assert_frame_equal(merge_refetch_partials(parts), literal_summary(frame), check_exact=True)
    assert_frame_equal(refetch_summary(frame), literal_summary(frame), check_exact=True)


# -- what Claude Code restores: read from the recording, and the model checked against it ---------------------------

RESTORED = FIXTURES / "claude_code" / "restored.jsonl"


def test_a_recorded_restoration_is_read_from_the_recording():
    """restored.jsonl, shaped like Claude Code's records: Read a.py, Read big.py (2,000 lines), `cat c.py` in Bash,
    Edit d.py; compaction; attached: d.py and a.py whole, big.py as a name only (compact_file_reference); then
    a.py, big.py and c.py read again."""
    from panto_analytics.frame.tool_targets import file_key

    c = pa.ingest.read_corpus([RESTORED])
    assert c.compactions["restored_keys"].to_list() == [[file_key("/r/d.py"), file_key("/r/a.py")]]
    row = refetch(c.messages, c.compactions, c.sessions).row(0, named=True)
    assert row["restore_recorded"] is True
    # big.py and c.py are orphan targets, both read again; a.py was restored but read again all the same.
    assert (row["orphan_targets"], row["refetched_targets"], row["fetched_again_targets"]) == (2, 2, 3)
    assert (row["orphan_calls"], row["refetch_calls"], row["precision"], row["recall"]) == (2, 2, 1.0, 2 / 3)


def recordings_with_a_restoration() -> list[Path]:
    """Every recording here whose compactions show what was re-attached: ../shared/realdata's Claude Code files
    with a compact boundary and a file attachment (none so far: no real recording here compacted), and the
    fixture shaped like them."""
    def shows(raw: bytes) -> bool:
        return b"compact_boundary" in raw and (b'"compact_file_reference"' in raw or b'"type":"file"' in raw)

    real = [p for p in sorted((REALDATA / "claude-code").rglob("*.jsonl")) if shows(p.read_bytes())] \
        if REALDATA.exists() else []
    return [*real, RESTORED]


def test_the_restoration_model_matches_every_recorded_restoration():
    from panto_analytics.outcomes.recorded_refetch import restore_check

    c = pa.ingest.read_corpus(recordings_with_a_restoration(), skip_invalid=True)
    check = restore_check(c.messages, c.compactions, c.sessions)
    assert check.height >= 1
    assert (check["agreed_files"] == check["recorded_files"]).all() and \
        (check["agreed_files"] == check["model_files"]).all(), check


# -- the calibration of many cuts: a summary that merges ---------------------------------------------------------------

@st.composite
def cuts_with_curves(draw):
    """Cut rows (as cut_rows_and_split draws them, with a split), and a curve of ``horizon`` rows per cut."""
    frame, bounds = draw(cut_rows_and_split())
    horizon = draw(st.integers(1, 4))
    n = frame.height * horizon
    curve = pl.DataFrame({
        "_cut": pl.Series([i for i in range(frame.height) for _ in range(horizon)], dtype=pl.UInt32),
        "calls": pl.Series(list(range(1, horizon + 1)) * frame.height, dtype=pl.UInt32),
        "predicted": pl.Series(draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)), dtype=pl.UInt32),
        "unpredicted": pl.Series(draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)), dtype=pl.UInt32),
    })
    return frame, curve, bounds


def _slice(frame: pl.DataFrame, curve: pl.DataFrame, a: int, b: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Cuts ``a`` to ``b`` and their curve, ``_cut`` counted from ``a`` (each part's own rows, as a task's)."""
    mine = curve.filter(pl.col("_cut").is_between(a, b - 1)).with_columns(pl.col("_cut") - a)
    return frame.slice(a, b - a), mine


@settings(max_examples=examples(100))
@given(cuts_with_curves())
def test_the_calibration_summaries_of_any_split_merge_to_the_summary_of_all(drawn):
    """merge(partial(a), partial(b), ...) == partial(a ++ b ++ ...): the counts and sums a dataset's tasks give
    merge, to the last bit, into what the report in memory computes of every cut at once; the sums are those of a
    plain loop, and the curve's last call sums the cuts' predicted re-fetches."""
    from polars.testing import assert_frame_equal

    from panto_analytics.outcomes.recorded_refetch import SUMMED, calibration_partial, merge_calibration

    frame, curve, bounds = drawn
    whole = calibration_partial(frame, curve)
    merged = merge_calibration([calibration_partial(*_slice(frame, curve, a, b)) for a, b in zip(bounds, bounds[1:])])
    for name in ("sums", "points", "curve"):
        assert_frame_equal(getattr(merged, name), getattr(whole, name), check_exact=True)
    assert_frame_equal(merge_calibration([whole]).sums, whole.sums, check_exact=True)
    assert whole.cuts == frame.height == int(whole.points["count"].sum())
    loop: dict[tuple, list[int]] = {}
    for r in frame.iter_rows(named=True):
        row = loop.setdefault((r["source_format"], r["cut"]), [0] * (1 + len(SUMMED)))
        row[0] += 1
        for i, c in enumerate(SUMMED):
            row[1 + i] += r[c]
    assert {(r[0], r[1]): list(r[2:]) for r in whole.sums.rows()} == loop
    assert [r[:2] for r in whole.sums.rows()] == sorted(loop, key=lambda k: (k[0], k[1] != "compaction"))
    if frame.height:
        last = curve.filter(pl.col("calls") == curve["calls"].max())["predicted"].sum()
        assert whole.curve.filter(pl.col("calls") == pl.col("calls").max())["predicted"].sum() == last
