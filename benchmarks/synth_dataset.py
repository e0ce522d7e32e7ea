"""Large synthetic datasets written straight to Parquet: the message frame built with NumPy, no JSON step.

:mod:`benchmarks.synth` writes realistic session *files* (for ingest); a
million sessions of them would take hours to write and read. This module
builds the *message frame* of synthetic sessions directly, chunk by chunk,
and writes it as a dataset (:mod:`panto_analytics.dataset`) for the
scaling measurements of ``benchmarks.scale``. The shapes follow
:mod:`benchmarks.synth`: a system prompt, then turns of a user prompt and
1 to 4 assistant calls, each call but the last followed by a tool result;
turns per session log-normal around a median; provider usage cumulative,
as providers report it, except in a share of sessions recorded without
usage (:data:`benchmarks.synth_shape.NO_USAGE_SHARE`). A chunk depends only on
``(seed, chunk index)``.

>>> frames = synthetic_frames(0, 3, seed=1)
>>> frames.messages.group_by("session_id").len().height, frames.sessions.height
(3, 3)
>>> frames.messages.equals(synthetic_frames(0, 3, seed=1).messages)
True

Command line::

    python -m benchmarks.synth DIR --sessions 1000000 --dataset
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import numpy as np
import polars as pl
import pyarrow as pa

from benchmarks.synth_shape import MODELS, NO_USAGE_SHARE
from panto_analytics.dataset import DatasetUpdate, DatasetWriter
from panto_analytics.frame.schema import COMPACTIONS_SCHEMA, MESSAGE_SCHEMA, SESSIONS_SCHEMA, RefKind

__all__ = [
    "CHUNK_SESSIONS", "COMPACTED_MIN_TURNS", "COMPACTED_SHARE", "KINDS", "TARGETS", "Frames", "synthetic_frames",
    "write_synthetic_dataset",
]

#: Sessions generated and written per chunk.
CHUNK_SESSIONS = 100_000

_EPOCH_MS = int(datetime(2025, 1, 6, 9, 0, tzinfo=UTC).timestamp() * 1000)


@dataclass
class Frames:
    """One chunk of a synthetic corpus: its three tables."""

    messages: pl.DataFrame
    sessions: pl.DataFrame
    compactions: pl.DataFrame


def _lognormal(rng: np.random.Generator, median: float, sigma: float, lo: int, hi: int, n: int) -> np.ndarray:
    return np.clip(np.round(rng.lognormal(np.log(median), sigma, n)), lo, hi).astype(np.int64)


def synthetic_frames(start: int, n_sessions: int, *, seed: int = 0, median_turns: float = 10,
                     max_turns: int = 300, tools: bool = False) -> Frames:
    """The tables of sessions ``start .. start + n_sessions`` of the corpus of ``seed``.

    ``tools``: every assistant call followed by a tool result also gets the target it touched (the ``refs``
    column: :data:`TARGETS` targets per session, kinds as :data:`KINDS`, the result's tokens), and a share
    of the longer sessions a recorded compaction (:func:`_compactions`), so that the loss measures have
    something to measure. Without it the frames are those of earlier versions, bit for bit.

    >>> f = synthetic_frames(0, 40, seed=2, tools=True)
    >>> f.messages["refs"].drop_nulls().len() > 0, f.compactions.height > 0
    (True, True)
    """
    rng = np.random.default_rng([seed, start, n_sessions])
    turns = _lognormal(rng, median_turns, 1.1, 1, max_turns, n_sessions)
    calls = np.minimum(rng.geometric(0.45, int(turns.sum())), 4)  # assistant calls per turn
    turn_session = np.repeat(np.arange(n_sessions), turns)
    per_turn = 2 * calls  # the prompt, the calls, a tool result after each call but the last
    turn_msgs = int(per_turn.sum())
    turn_start = np.repeat(np.cumsum(per_turn) - per_turn, per_turn)
    pos = np.arange(turn_msgs) - turn_start  # position within the turn
    msg_session = np.repeat(turn_session, per_turn)
    # Each session: its system prompt at seq 0, then its turns' messages in order.
    session_msgs = np.bincount(msg_session, minlength=n_sessions) + 1
    offsets = np.cumsum(session_msgs) - session_msgs
    n = int(session_msgs.sum())
    session = np.repeat(np.arange(n_sessions), session_msgs)
    seq = np.arange(n) - np.repeat(offsets, session_msgs)
    role = np.zeros(n, np.int8)  # system
    body = seq > 0
    role[body] = np.where(pos % 2 == 1, 2, 1)  # odd positions: assistant; even: user (prompt or tool result)
    tool_result = np.zeros(n, bool)
    tool_result[body] = (pos % 2 == 0) & (pos > 0)
    words = np.where(role == 0, _lognormal(rng, 500, 0.6, 40, 4_000, n),
                     np.where(tool_result, _lognormal(rng, 300, 1.2, 1, 40_000, n),
                              np.where(role == 2, _lognormal(rng, 80, 1.0, 1, 8_000, n), _lognormal(rng, 30, 1.0, 1, 2_000, n))))
    tokens = np.ceil(words * 1.3).astype(np.int64)
    before = np.cumsum(tokens) - tokens - np.repeat(np.cumsum(tokens)[offsets] - tokens[offsets], session_msgs)
    with_usage = np.repeat(rng.random(n_sessions) >= NO_USAGE_SHARE, session_msgs) & (role == 2)
    model_idx = rng.choice(len(MODELS), n_sessions, p=[m[2] for m in MODELS])
    ids = pl.select(pl.format("synth-{}-{}", pl.lit(seed), pl.int_range(start, start + n_sessions))).to_series()
    clock = _EPOCH_MS + rng.integers(0, 180 * 86_400_000, n_sessions)
    usage = lambda values: pl.Series(np.where(with_usage, values, 0), dtype=pl.UInt32).set(  # noqa: E731
        pl.Series(~with_usage), None)
    messages = pl.DataFrame({
        "session_id": ids.gather(session),
        "seq": seq,
        "role": pl.Series(np.array(["system", "user", "assistant"])[role]),
        "words": words,
        "serialized_bytes": words * 6 + 24,
        "has_tool_result": tool_result,
        "has_summary": np.zeros(n, bool),
        "bash_execution": np.zeros(n, bool),  # a pi-only mark: canonical sessions have none
        "input": usage(np.minimum(before, 2**32 - 1)),
        "output": usage(tokens),
        "cache_read": usage(np.zeros(n, np.int64)),
        "cache_write": usage(np.zeros(n, np.int64)),
        "cache_write_1h": usage(np.zeros(n, np.int64)),
        "recorded_cost": pl.Series([None] * n, dtype=pl.Float32),
        "source_format": "canonical",
        "model": pl.Series([m[0] for m in MODELS]).gather(model_idx).gather(session),
        "timestamp": pl.Series(np.repeat(clock, session_msgs) + seq * 20_000).cast(pl.Datetime("ms", "UTC")),
        "line": seq + 1,
    })
    files = pl.select(pl.format("synth/{}.jsonl", pl.lit(ids))).to_series()
    refs = _refs(rng, start + session, tool_result, tokens) if tools else pl.lit(None, MESSAGE_SCHEMA["refs"])
    messages = (messages.with_columns(file=files.gather(session), refs=refs)
                .select(list(MESSAGE_SCHEMA))
                .cast(cast("dict[Any, pl.DataType]", MESSAGE_SCHEMA)))
    sessions = messages.group_by("session_id", maintain_order=True).agg(
        file=pl.col("file").first().cast(pl.String), source_format=pl.col("source_format").first(),
        model=pl.col("model").first().cast(pl.String), first_timestamp=pl.col("timestamp").min(),
        last_timestamp=pl.col("timestamp").max(), messages=pl.len(), api_calls=(pl.col("role") == "assistant").sum(),
        final_context=(pl.col("input").cast(pl.UInt64) + pl.col("output")).drop_nulls().last(),
    ).with_columns(context_window=pl.Series([m[1] for m in MODELS]).gather(model_idx), compactions=pl.lit(0),
                   parent_session_id=pl.lit(None, pl.String), model_raw=pl.col("model"), project=pl.lit("synth"),
                   is_subagent=pl.lit(False))
    compactions = pl.DataFrame(schema=COMPACTIONS_SCHEMA)
    if tools:
        compactions = _compactions(rng, ids, turns, turn_session, per_turn, model_idx)
        counts = compactions.group_by("session_id").len()
        sessions = (sessions.join(counts, on="session_id", how="left", maintain_order="left")
                    .with_columns(compactions=pl.col("len").fill_null(0)).drop("len"))
    sessions = sessions.select(list(SESSIONS_SCHEMA)).cast(cast("dict[Any, pl.DataType]", SESSIONS_SCHEMA))
    return Frames(messages, sessions, compactions)


#: Targets per session the synthetic tool calls choose from, and the kinds of call with their weights.
TARGETS = 12
KINDS = (("read", 0.5), ("write", 0.2), ("run", 0.25), ("fetch", 0.05))

#: Share of the sessions of at least :data:`COMPACTED_MIN_TURNS` turns that recorded a compaction.
COMPACTED_SHARE = 0.3
COMPACTED_MIN_TURNS = 6


def _refs(rng: np.random.Generator, session: np.ndarray, tool_result: np.ndarray, tokens: np.ndarray) -> pl.Series:
    """The ``refs`` column: one target per assistant call that a tool result follows, none elsewhere."""
    n = len(tool_result)
    call = np.flatnonzero(tool_result) - 1  # the assistant message before each tool result made the call
    has = np.zeros(n, bool)
    has[call] = True
    kind = rng.choice(len(KINDS), len(call), p=[w for _, w in KINDS])
    target = session[call].astype(np.uint64) * np.uint64(TARGETS) + rng.integers(0, TARGETS, len(call)).astype(np.uint64)
    values = pl.DataFrame({
        "call": np.zeros(len(call), np.uint16),
        "key": target * np.uint64(0x9E3779B97F4A7C15),  # spread like a hash (wrapping): distinct per target
        "kind": pl.Series(np.array([k for k, _ in KINDS])[kind]).cast(RefKind),
        "file": kind < 2,  # read and write touch files
        "file_tool": kind < 2,  # by the agent's file tools
        "tokens": np.minimum(tokens[call + 1], 2**32 - 1).astype(np.uint32),
    }).to_struct("refs").to_arrow()
    offsets = pa.array(np.concatenate([[0], np.cumsum(has)]).astype(np.int32))
    return pl.Series("refs", pa.ListArray.from_arrays(offsets, values, mask=pa.array(~has))).cast(MESSAGE_SCHEMA["refs"])


def _compactions(rng: np.random.Generator, ids: pl.Series, turns: np.ndarray, turn_session: np.ndarray,
                 per_turn: np.ndarray, model_idx: np.ndarray) -> pl.DataFrame:
    """One recorded compaction in :data:`COMPACTED_SHARE` of the sessions of at least
    :data:`COMPACTED_MIN_TURNS` turns: at the start of the middle turn, the turn before it kept, fired at
    the model's window less 16k (so few distinct context sizes, as an agent's fixed trigger gives)."""
    chosen = np.flatnonzero((turns >= COMPACTED_MIN_TURNS) & (rng.random(len(turns)) < COMPACTED_SHARE))
    first_turn = np.cumsum(turns) - turns  # each session's first turn, among all turns
    turn_start = np.cumsum(per_turn) - per_turn  # each turn's first message, among the chunk's turn messages
    in_session = turn_start - turn_start[first_turn][turn_session] + 1  # its seq (after the system prompt)
    middle = first_turn[chosen] + turns[chosen] // 2
    anchor, kept = in_session[middle], in_session[middle - 1]
    return pl.DataFrame({
        "session_id": ids.gather(chosen), "anchor_seq": anchor, "trigger": "auto",
        "tokens_before": np.array([m[1] for m in MODELS])[model_idx[chosen]] - 16_384,
        "first_kept_seq": kept, "trigger_seq": anchor, "kept_end_seq": anchor,
        "restored_keys": pl.Series([None] * len(chosen), dtype=pl.List(pl.UInt64)),   # no restoration recorded
    }).cast(cast("dict[Any, pl.DataType]", COMPACTIONS_SCHEMA))


def write_synthetic_dataset(root: str | Path, n_sessions: int, *, seed: int = 0, buckets: int | None = None,
                            chunk: int = CHUNK_SESSIONS, **shape) -> DatasetUpdate:
    """Write ``n_sessions`` synthetic sessions as a dataset at ``root``, ``chunk`` sessions at a time.

    >>> import tempfile
    >>> write_synthetic_dataset(tempfile.mkdtemp(), 5, buckets=2, chunk=3).sessions
    5
    """
    writer = DatasetWriter(root, buckets=buckets, mode="synthetic")
    for start in range(0, n_sessions, chunk):  # one iteration per chunk of sessions
        frames = synthetic_frames(start, min(chunk, n_sessions - start), seed=seed, **shape)
        paths = frames.sessions["file"]
        files = pl.DataFrame({"abspath": paths, "path": paths, "size": 0, "mtime_ns": 0, "inode": 0})
        writer.add(frames.messages, frames.sessions, frames.compactions, files)
    return writer.commit()
