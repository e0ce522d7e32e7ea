"""Synthetic datasets straight to Parquet, and the scaling benchmark over them."""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import panto_analytics as pa
from benchmarks import scale
from benchmarks.synth_dataset import synthetic_frames, write_synthetic_dataset
from panto_analytics.frame.schema import empty_messages


def test_frames_are_a_valid_message_frame():
    f = synthetic_frames(0, 200, seed=3)
    m = f.messages
    assert m.schema == empty_messages().schema
    # Sessions contiguous, seq 0..n-1, a system prompt first.
    per = m.group_by("session_id", maintain_order=True).agg("seq", "role")
    assert per.height == f.sessions.height == 200
    assert all(seq == list(range(len(seq))) for seq in per["seq"].to_list())
    assert set(per["role"].list.first()) == {"system"}
    assert f.sessions["messages"].to_list() == per["seq"].list.len().to_list()
    pa.splits(m, [0, 20_000])  # refused if sessions were not contiguous and in seq order


def test_usage_is_cumulative_like_a_provider_reports_it():
    m = synthetic_frames(0, 50, seed=1).messages
    tokens = (m["words"].cast(pl.Int64) * 13 + 9) // 10  # ceil(words * 1.3)
    # Recompute the context before each message per session, the literal way.
    before = np.zeros(m.height, np.int64)
    sids = m["session_id"].cast(pl.String).to_list()
    t = tokens.to_list()
    for i in range(1, m.height):
        before[i] = 0 if sids[i] != sids[i - 1] else before[i - 1] + t[i - 1]
    assistants = m.with_columns(before=pl.Series(before), tok=tokens).filter(
        (pl.col("role") == "assistant") & pl.col("input").is_not_null())
    assert assistants.height > 0
    assert (assistants["input"].cast(pl.Int64) == assistants["before"]).all()
    assert (assistants["output"].cast(pl.Int64) == assistants["tok"]).all()
    no_usage = m.group_by("session_id").agg(pl.col("input").is_null().all())
    assert 0 < no_usage["input"].sum() < no_usage.height  # some sessions recorded without usage


def test_chunks_make_the_same_dataset(tmp_path):
    write_synthetic_dataset(tmp_path / "a", 30, buckets=4, chunk=7, seed=2)
    one = synthetic_frames(0, 7, seed=2).messages
    got = pa.dataset.scan_dataset(tmp_path / "a").collect()
    assert got.height == sum(synthetic_frames(s, min(7, 30 - s), seed=2).messages.height for s in range(0, 30, 7))
    first = got.filter(pl.col("session_id").cast(pl.String).is_in(one["session_id"].cast(pl.String).unique().implode()))
    key = lambda f: f.with_columns(pl.col("session_id").cast(pl.String)).sort("session_id", "seq")  # noqa: E731
    assert key(first).equals(key(one.cast({"session_id": pl.String})))


@pytest.mark.slow
def test_scale_measures_each_engine_in_its_own_process(tmp_path):
    rows = scale.run_scale([60], ["memory", "local"], tmp_path, repeat=1, budgets="0:100k:3")
    assert [r["engine"] for r in rows] == ["local", "memory"]
    assert rows[1]["same_table_as_local"] is True
    assert all(r["peak_rss_mib"] > 50 and r["messages"] > 60 for r in rows)
    assert "| 60 |" in scale.format_table(rows)


def test_tools_add_references_and_recorded_compactions_where_a_reader_would():
    from benchmarks.synth_dataset import COMPACTED_MIN_TURNS

    f = synthetic_frames(0, 300, seed=4, tools=True)
    m = f.messages.with_columns(next_is_result=pl.col("has_tool_result").shift(-1).over("session_id").fill_null(False))
    with_refs = m.filter(pl.col("refs").is_not_null())
    # Exactly the assistant calls a tool result follows carry a target; the result's tokens are its size.
    assert with_refs.height == m.filter((pl.col("role") == "assistant") & pl.col("next_is_result")).height > 0
    assert (with_refs["role"] == "assistant").all() and (with_refs["refs"].list.len() == 1).all()
    refs = pa.outcomes.references(f.messages).collect()
    assert refs.height == with_refs.height and refs["kind"].n_unique() == 4
    # Each compaction sits at the start of a turn (a prompt, not a tool result), after the turn it keeps.
    c = f.compactions.join(m.select("session_id", "seq", "role", "has_tool_result"), left_on=["session_id", "anchor_seq"],
                           right_on=["session_id", "seq"])
    assert c.height == f.compactions.height > 0
    assert (c["role"] == "user").all() and not c["has_tool_result"].any()
    assert (c["first_kept_seq"] < c["anchor_seq"]).all()
    counts = f.sessions.filter(pl.col("compactions") > 0)
    assert counts["compactions"].sum() == f.compactions.height
    turns = pa.turns(f.messages).group_by("session_id").len()
    long_enough = counts.join(turns, on="session_id")["len"]
    assert (long_enough >= COMPACTED_MIN_TURNS).all()
    # Without tools, the frames are those of before.
    plain = synthetic_frames(0, 300, seed=4)
    assert plain.messages.drop("refs").equals(f.messages.drop("refs")) and plain.compactions.height == 0
