"""What a canonical compaction kept verbatim, read from the timestamps (``docs/formats.md``).

A canonical compaction is a user message with a ``compaction_summary`` block
at the split (libpanto's layout, and ``benchmarks.synth``'s): the turns it
kept verbatim follow it, but they were written before it, and the summary
carries the time of the compaction, later than theirs. So the messages
right after the anchor whose timestamps are earlier than the summary's are
the kept turns, recorded before the compaction (as pi records them), and the
first message at or after the summary's time is the first one after it:

- ``trigger_seq``: one past that run (the conversation the agent compacted
  is the rows before the anchor and the run); the anchor when the run is
  empty;
- ``first_kept_seq`` = ``anchor_seq + 1`` and ``kept_end_seq`` =
  ``trigger_seq`` when the run is not empty (as pi's reader sets them),
  else null.

A message without a timestamp ends the run, and a summary without one has
none: without timestamps a compaction keeps nothing, ``trigger_seq`` the
anchor. ``tokens_before`` is not recorded (null).

>>> import polars as pl
>>> from datetime import UTC, datetime
>>> t = [datetime(2025, 1, 1, 0, m, tzinfo=UTC) for m in (0, 9, 1, 2, 10)]
>>> messages = pl.DataFrame({"session_id": "s", "seq": [0, 1, 2, 3, 4], "timestamp": t,
...                          "source_format": "canonical"})
>>> recorded = pl.DataFrame({"session_id": ["s"], "anchor_seq": [1], "first_kept_seq": [None],
...                          "trigger_seq": [1], "kept_end_seq": [None]},
...                         schema_overrides={"first_kept_seq": pl.UInt32, "kept_end_seq": pl.UInt32})
>>> kept_before_summary(recorded, messages).select("anchor_seq", "first_kept_seq", "trigger_seq", "kept_end_seq").rows()
[(1, 2, 4, 4)]
"""
from __future__ import annotations

import polars as pl

from ...frame.schema import SEQ, SESSION

__all__ = ["kept_before_summary"]

_FORMAT = "canonical"


def kept_before_summary(compactions: pl.DataFrame, messages: pl.DataFrame) -> pl.DataFrame:
    """``compactions`` with the kept range of each canonical session's compaction read from ``messages``' timestamps.

    ``compactions`` has ``session_id``, ``anchor_seq``, ``first_kept_seq``,
    ``trigger_seq`` and ``kept_end_seq`` (the compactions table); ``messages``
    the message frame's ``session_id``, ``seq``, ``timestamp`` and
    ``source_format``. Rows of other formats are returned as they are; row
    order and columns are kept. See the module docstring for the rule.
    """
    if compactions.height == 0:
        return compactions
    anchors = compactions.select(pl.col(SESSION).cast(pl.String), pl.col("anchor_seq").cast(pl.Int64)).unique()
    rows = (messages.lazy().filter(pl.col("source_format").cast(pl.String) == _FORMAT)
            .select(pl.col(SESSION).cast(pl.String), pl.col(SEQ).cast(pl.Int64), "timestamp")
            .join(anchors.lazy(), on=SESSION, how="semi")
            .join(anchors.lazy().with_columns(_anchor=pl.col("anchor_seq")),
                  left_on=[SESSION, SEQ], right_on=[SESSION, "anchor_seq"], how="left")
            .sort(SESSION, SEQ))
    # Each message's compaction: the last anchor at or before it, and that summary's time.
    rows = (rows.with_columns(_seg=pl.col("_anchor").forward_fill().over(SESSION)).filter(pl.col("_seg").is_not_null())
            .with_columns(_summary_time=pl.col("timestamp").first().over(SESSION, "_seg")))
    # The run ends at the first message after the anchor not known to be earlier than the summary, else at the
    # segment's end (the next anchor, or one past the session's last message).
    ends = pl.col("timestamp").is_null() | pl.col("_summary_time").is_null() | (pl.col("timestamp") >= pl.col("_summary_time"))
    runs = rows.group_by(SESSION, "_seg").agg(
        _end=pl.coalesce(pl.col(SEQ).filter((pl.col(SEQ) > pl.col("_seg")) & ends).min(), pl.col(SEQ).max() + 1))
    kept = pl.col("_end") > pl.col("anchor_seq").cast(pl.Int64) + 1
    out = (compactions.lazy().with_columns(_sid=pl.col(SESSION).cast(pl.String), _seg=pl.col("anchor_seq").cast(pl.Int64))
           .join(runs.rename({SESSION: "_sid"}), on=["_sid", "_seg"], how="left", maintain_order="left")
           .with_columns(
               pl.when(kept).then(pl.col("anchor_seq") + 1).otherwise("first_kept_seq").alias("first_kept_seq"),
               pl.when(kept).then(pl.col("_end")).otherwise("trigger_seq").alias("trigger_seq"),
               pl.when(kept).then(pl.col("_end")).otherwise("kept_end_seq").alias("kept_end_seq")))
    return out.select(compactions.columns).cast(compactions.schema).collect()
