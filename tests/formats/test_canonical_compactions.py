"""A canonical compaction's kept turns, read from the timestamps (formats/canonical/compactions.py)."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

import panto_analytics as pa
from panto_analytics.dataset import scan_dataset, write_dataset
from panto_analytics.formats.canonical.compactions import kept_before_summary
from panto_analytics.frame.schema import COMPACTIONS_SCHEMA

FIXTURES = Path(__file__).parent.parent / "fixtures" / "canonical"
KEPT = ["anchor_seq", "first_kept_seq", "trigger_seq", "kept_end_seq", "tokens_before"]


def test_the_turns_after_the_summary_written_before_it_are_the_kept_ones():
    # The summary (seq 2, 10:05) is followed by two turns written at 10:01 (seqs 3, 4): kept verbatim, recorded
    # before the compaction; seq 5 (10:05:05) is the first message after it.
    corpus = pa.ingest.read_corpus(FIXTURES / "kept_turns.jsonl")
    assert corpus.compactions.select(KEPT).rows() == [(2, 3, 5, 5, None)]


def test_without_timestamps_the_compaction_is_at_its_anchor_and_keeps_nothing():
    corpus = pa.ingest.read_corpus(FIXTURES / "untimed.jsonl")
    assert corpus.compactions.select(KEPT).rows() == [(2, None, 2, None, None)]


def _frames(times: list[int | None], anchors: list[int]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A canonical session's messages at ``times`` (minutes; None: no timestamp) and its compactions."""
    start = datetime(2025, 1, 1, tzinfo=UTC)
    messages = pl.DataFrame({"session_id": "s", "seq": range(len(times)), "source_format": "canonical",
                             "timestamp": [None if t is None else start + timedelta(minutes=t) for t in times]},
                            schema_overrides={"seq": pl.UInt32, "timestamp": pl.Datetime("ms", "UTC")})
    recorded = pl.DataFrame({"session_id": ["s"] * len(anchors), "anchor_seq": anchors, "trigger_seq": anchors},
                            schema_overrides={"anchor_seq": pl.UInt32, "trigger_seq": pl.UInt32})
    return messages, recorded.with_columns(pl.lit(None).alias(c) for c in COMPACTIONS_SCHEMA
                                           if c not in recorded.columns).cast(dict(COMPACTIONS_SCHEMA)).select(list(COMPACTIONS_SCHEMA))


@pytest.mark.parametrize(("times", "anchors", "expected"), [
    # Nothing written before the summary follows it: the compaction is at the anchor, nothing kept.
    ([0, 1, 5, 6], [2], [(2, None, 2, None)]),
    # The summary is the session's last event: everything after it was kept.
    ([0, 9, 1, 2], [1], [(1, 2, 4, 4)]),
    # A message without a timestamp ends the run; a summary without one keeps nothing.
    ([0, 9, 1, None, 2, 10], [1], [(1, 2, 3, 3)]),
    ([0, None, 1, 2, 10], [1], [(1, None, 1, None)]),
    # Two compactions: each one's run stops at the next summary at the latest.
    ([0, 9, 1, 2, 10, 20, 11, 21], [1, 5], [(1, 2, 4, 4), (5, 6, 7, 7)]),
    ([0, 9, 1, 10, 20], [1, 3], [(1, 2, 3, 3), (3, None, 3, None)]),
    ([0, 9, 1, None, 2, 3], [1, 3], [(1, 2, 3, 3), (3, None, 3, None)]),
])
def test_the_kept_run_by_timestamps(times, anchors, expected):
    messages, recorded = _frames(times, anchors)
    out = kept_before_summary(recorded, messages)
    assert out.schema == recorded.schema
    assert out.select(KEPT[:4]).rows() == expected


def test_other_formats_are_left_as_read():
    messages, recorded = _frames([0, 9, 1, 2], [1])
    other = messages.with_columns(pl.lit("pi").alias("source_format"))
    assert kept_before_summary(recorded, other).equals(recorded)


def test_the_dataset_holds_the_same_compactions(tmp_path):
    write_dataset([FIXTURES], tmp_path / "ds", buckets=2)
    stored = scan_dataset(tmp_path / "ds", "compactions").collect().sort("session_id", "anchor_seq")
    read = pa.ingest.read_corpus(FIXTURES).compactions.sort("session_id", "anchor_seq")
    assert stored.select(pl.col("session_id").cast(pl.String), *KEPT).rows() == \
        read.select(pl.col("session_id").cast(pl.String), *KEPT).rows() == \
        [("kept", 2, 3, 5, 5, None), ("untimed", 2, None, 2, None, None)]
