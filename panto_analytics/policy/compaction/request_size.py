"""What each replayed compaction sends to its summarizer: the transcript's size, exactly, and the request's.

An event summarizes ``messages[active_start:prefix_end]`` of the recorded
session. Its transcript is summed from the message frame's
``serialized_bytes`` (see :mod:`panto_analytics.transcript`), as a split's
is. The request adds ``buildRequestBody``'s framing and the previous
summary: a recorded summary's text is known to the byte; a simulated one
has no text, so it counts :data:`SUMMARY_BYTES_PER_TOKEN` bytes per token of
``summary_tokens`` (an estimate, the only one here).
"""
from __future__ import annotations

import polars as pl

from ...frame import expressions as ex
from ...frame.schema import SEQ, SESSION

__all__ = ["SUMMARY_BYTES_PER_TOKEN", "with_request_bytes"]


#: Bytes per token assumed for a simulated summary (English prose runs about 4).
SUMMARY_BYTES_PER_TOKEN = 4


def with_request_bytes(events: pl.DataFrame, messages: pl.DataFrame, summary_tokens: int) -> pl.DataFrame:
    """``events`` plus ``transcript_bytes`` (exact) and ``request_bytes`` (with the previous summary).

    ``messages`` is the frame the events were replayed on; without its
    ``serialized_bytes`` column both are null.
    """
    if "serialized_bytes" not in messages.columns or events.is_empty():
        return events.with_columns(transcript_bytes=pl.lit(None, pl.UInt64), request_bytes=pl.lit(None, pl.UInt64))
    sid = pl.col(SESSION).cast(pl.String)
    rows = _rows(messages).with_columns(sid).rename({SESSION: "_sid"})
    out = (
        events.with_columns(_sid=sid)
        .join(rows.select("_sid", active_start=SEQ, _at_start="bytes_before"), on=["_sid", "active_start"],
              how="left", maintain_order="left")
        .join(rows.select("_sid", prefix_end=SEQ, _at_end="bytes_before"), on=["_sid", "prefix_end"],
              how="left", maintain_order="left")
        .join(rows.select("_sid", "anchor_seq", "summary_bytes", trigger_seq=SEQ), on=["_sid", "trigger_seq"],
              how="left", maintain_order="left")
    )
    summed = pl.col("_at_end") - pl.col("_at_start")
    recorded = pl.col("anchor_seq").is_not_null() & (pl.col("active_start") == pl.col("anchor_seq") + 1)
    # A window that starts past 0 and not right after a recorded summary starts after a simulated one.
    simulated = ~recorded & (pl.col("active_start") > 0)
    previous = (pl.when(recorded).then(pl.col("summary_bytes"))
                .when(simulated).then(pl.lit(summary_tokens * SUMMARY_BYTES_PER_TOKEN, pl.UInt64)))
    return out.with_columns(ex.transcript_bytes(summed), ex.request_bytes(summed, previous)).select(
        *events.columns, "transcript_bytes", "request_bytes")


def _rows(messages: pl.DataFrame) -> pl.DataFrame:
    """Per session and ``seq`` (0 to the message count): ``bytes_before``, ``serialized_bytes`` summed over
    the rows before it; ``anchor_seq`` and ``summary_bytes``, the latest recorded summary at or before it."""
    sized = pl.col("serialized_bytes").cast(pl.UInt64)
    anchor = pl.when("has_summary").then(pl.col(SEQ).cast(pl.Int64)).when(ex.session_start()).then(-1).forward_fill()
    rows = messages.select(
        SESSION, SEQ, sized.alias("_own"), _through=ex.sum_in_session(sized),
        anchor_seq=pl.when(anchor >= 0).then(anchor), summary_bytes=ex.latest_summary_bytes(),
    ).with_columns(bytes_before=pl.col("_through") - pl.col("_own")).drop("_own")
    ends = rows.filter(ex.session_end()).with_columns(seq=pl.col(SEQ) + 1, bytes_before="_through")
    return pl.concat([rows, ends]).drop("_through").cast({SEQ: pl.UInt32})
