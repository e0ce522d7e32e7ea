"""Does the orphan measure mean something? What agents really did after the compactions they recorded.

After each compaction an agent recorded (:func:`~panto_analytics.outcomes.orphan_loss.recorded_cuts`),
and at *pseudo-cuts* in sessions of the same agent that never compacted
(:func:`pseudo_cuts`: the first call whose recorded context reaches the
context at which one of the agent's compactions fired; nothing kept, nothing
restored), :func:`refetch` measures, over the next ``horizon`` tool calls:

- the :mod:`~panto_analytics.outcomes.orphan_loss` columns (``repeat_reads``: a
  read or fetch of a target whose last touch was a read or fetch before the
  cut, no write between; ``orphan_calls``; ...);
- ``orphan_targets``: targets whose last touch before the cut is in the
  summarized part (for a pseudo-cut: everything before it) and that the agent
  did not restore; ``refetched_targets``: those of them the agent read or
  fetched again within the window: how many of the orphan targets did the
  agent really fetch again;
- ``reorientation``: tool calls from the cut to the first write (null when
  no write follows: censored); ``reorientation_start``: the same count from
  the session's start.

:func:`refetch_summary` pools them per agent (``source_format``) and kind of
cut (``compaction`` or ``baseline``): if agents re-read more after a
compaction than at the same context size without one, the orphans are a loss
they feel.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from ..frame.expressions import counted_quantile
from ..frame.schema import ROLE, SEQ, SESSION
from ..frame.tool_targets import references
from .orphan_loss import (
    CUT_SCHEMA,
    DEFAULT_HORIZON,
    ORPHAN_KINDS,
    REFETCH_KINDS,
    cut_loss,
    orphan_rate,
    recorded_cuts,
    restored_files,
    summarized_touch,
)

__all__ = [
    "BOOTSTRAP_LEVEL", "BOOTSTRAP_RESAMPLES", "BOOTSTRAP_SEED", "ENOUGH_CUTS", "MEDIANS", "REFETCH_COLUMNS", "SUMMED",
    "TARGET_COLUMNS", "CalibrationSummary", "all_cuts", "bootstrap_intervals", "calibration", "calibration_partial",
    "call_context", "cut_rows", "measure_cuts", "merge_calibration", "merge_refetch_partials",
    "precision_recall", "pseudo_cuts", "recorded_cut_rows", "refetch", "refetch_curve",
    "refetch_partials", "refetch_summary", "reorientation", "restore_check", "target_loss",
]


#: Per cut, of the targets touched before it: the orphan targets (the measure's prediction of a re-fetch), those
#: of them the agent read or fetched again within the window (predicted and observed), and every target it read
#: or fetched again within the window (observed, predicted or not).
TARGET_COLUMNS = ("orphan_targets", "refetched_targets", "fetched_again_targets")

#: The columns :func:`refetch` adds to the loss columns.
REFETCH_COLUMNS = (*TARGET_COLUMNS, "reorientation", "reorientation_start")


def call_context() -> pl.Expr:
    """The recorded context of an API call (an assistant message with usage), libpanto's ``cumulativeAt``:
    ``input + cache_read + cache_write + output``; null on other messages.

    >>> pl.DataFrame({"role": ["user", "assistant"], "input": [None, 5], "output": [None, 1], "cache_read": [None, 2],
    ...               "cache_write": [None, 0]}).select(call_context()).to_series().to_list()
    [None, 8]
    """
    total = sum((pl.col(c).cast(pl.Int64) for c in ("input", "output", "cache_read", "cache_write")), pl.lit(0, pl.Int64))
    return pl.when(pl.col(ROLE) == "assistant").then(total).alias("context")


def pseudo_cuts(messages: pl.DataFrame | pl.LazyFrame, cuts: pl.DataFrame | pl.LazyFrame,
                sessions: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    """Cuts at the same context sizes as ``cuts`` (recorded, with ``context``), in sessions of the same agent
    (``source_format``) that recorded no compaction: after the first call whose recorded context reaches it.

    Nothing is kept and nothing restored. A session that never reaches a size has no cut at it.
    """
    sizes = cuts.lazy().select(pl.col("source_format").cast(pl.String), size=pl.col("context").cast(pl.Int64)) \
        .drop_nulls().unique()
    quiet = (sessions.lazy().filter(pl.col("compactions") == 0)
             .select(pl.col(SESSION).cast(pl.String), pl.col("source_format").cast(pl.String)))
    calls = (messages.lazy().with_columns(context=call_context())
             .filter(pl.col("context").is_not_null())
             .select(pl.col(SESSION).cast(pl.String), pl.col(SEQ).cast(pl.Int64),
                     reached=pl.col("context").cum_max().over(SESSION)))
    wanted = quiet.join(sizes, on="source_format").sort("size")
    found = wanted.join_asof(calls.sort("reached", SEQ), left_on="size", right_on="reached", by=SESSION, strategy="forward",
                             check_sortedness=False)
    return (found.filter(pl.col(SEQ).is_not_null())
            .select(SESSION, "source_format", context=pl.col("size"), after_seq=pl.col(SEQ) + 1,
                    kept_start=pl.lit(None, pl.Int64), kept_end=pl.lit(None, pl.Int64), restore=pl.lit(0, pl.Int64))
            .sort(SESSION, "after_seq", "context"))


def _target_sets(refs: pl.DataFrame | pl.LazyFrame, cuts: pl.DataFrame | pl.LazyFrame,
                 horizon: int) -> tuple[pl.LazyFrame, pl.LazyFrame, pl.LazyFrame, pl.LazyFrame]:
    """Per cut (``_cut``, its row number): the cuts, each target's last touch before the cut (``last``), the
    orphan targets, and the targets read or fetched in the window with the position of the first such call
    (``at``: 1 for the window's first call)."""
    r = refs.lazy().with_columns(pl.col(SESSION).cast(pl.String), pl.col("call").cast(pl.Int64), pl.col(SEQ).cast(pl.Int64))
    lf = cuts.lazy()
    recorded = ["restored_keys"] if "restored_keys" in lf.collect_schema().names() else []
    base = lf.with_row_index("_cut").select("_cut", pl.col(SESSION).cast(pl.String),
                                            *(pl.col(c).cast(t) for c, t in CUT_SCHEMA.items()), *recorded)
    # Each target's last touch before each cut.
    last = (base.join(r.filter(pl.col("kind") != "other"), on=SESSION)
            .filter(pl.col(SEQ) < pl.col("after_seq"))
            .group_by("_cut", "key")
            .agg(last_seq=pl.col(SEQ).max(), kept_start=pl.col("kept_start").first(), kept_end=pl.col("kept_end").first()))
    orphans = (last.join(restored_files(r, base), on=["_cut", "key"], how="left")
               .filter(summarized_touch("last_seq") & pl.col("restored").is_null()).select("_cut", "key"))
    # The window: the first ``horizon`` calls at or after the cut; its reads and fetches.
    calls = r.group_by(SESSION, "call").agg(pl.col(SEQ).first())
    base = base.drop(recorded)
    first = (base.join(calls, on=SESSION).filter(pl.col(SEQ) >= pl.col("after_seq"))
             .group_by("_cut").agg(first_call=pl.col("call").min()))
    fetched = (base.join(first, on="_cut").join(r.filter(pl.col("kind").is_in(list(REFETCH_KINDS))), on=SESSION)
               .filter((pl.col("call") >= pl.col("first_call")) & (pl.col("call") < pl.col("first_call") + horizon))
               .group_by("_cut", "key").agg(at=(pl.col("call") - pl.col("first_call")).min() + 1))
    return base, last.select("_cut", "key"), orphans, fetched


def target_loss(refs: pl.DataFrame | pl.LazyFrame, cuts: pl.DataFrame | pl.LazyFrame, *,
                horizon: int = DEFAULT_HORIZON) -> pl.DataFrame:
    """Per cut (in order): :data:`TARGET_COLUMNS` (see the module docstring).

    Restored targets (:func:`~panto_analytics.outcomes.orphan_loss.restored_files`) are not orphan targets.
    """
    base, last, orphans, fetched = _target_sets(refs, cuts, horizon)

    def count(frame: pl.LazyFrame, name: str) -> pl.LazyFrame:
        return frame.group_by("_cut").agg(pl.len().cast(pl.UInt32).alias(name))

    out = base.select("_cut")
    for part in (count(orphans, "orphan_targets"),
                 count(orphans.join(fetched, on=["_cut", "key"]), "refetched_targets"),
                 count(last.join(fetched, on=["_cut", "key"]), "fetched_again_targets")):
        out = out.join(part, on="_cut", how="left", maintain_order="left")
    return out.select(pl.col(c).fill_null(0) for c in TARGET_COLUMNS).collect()


def refetch_curve(refs: pl.DataFrame | pl.LazyFrame, cuts: pl.DataFrame | pl.LazyFrame, *,
                  horizon: int = DEFAULT_HORIZON) -> pl.DataFrame:
    """Over the horizon, per cut: after each of the next ``horizon`` tool calls (``calls``, 1 to ``horizon``),
    how many orphan targets the agent has read or fetched again (``predicted``, the measure's prediction come
    true) and how many other targets touched before the cut (``unpredicted``), cumulative; with ``_cut``, the
    cut's row in ``cuts``, and its ``orphan_targets``. The last row of a cut equals its
    :func:`target_loss` (``predicted`` = ``refetched_targets``; the sum = ``fetched_again_targets``).

    >>> from panto_analytics.frame.tool_targets import key_of
    >>> a, b = key_of("file:/a"), key_of("file:/b")
    >>> refs = pl.DataFrame({"session_id": ["s"] * 4, "seq": [1, 3, 9, 11], "call": [0, 1, 2, 3], "key": [a, b, b, a],
    ...                      "kind": ["read"] * 4, "file": [True] * 4, "file_tool": [True] * 4, "tokens": [9] * 4})
    >>> cuts = pl.DataFrame({"session_id": ["s"], "after_seq": [8], "kept_start": [3], "kept_end": [8], "restore": [0]})
    >>> refetch_curve(refs, cuts, horizon=3).select("calls", "predicted", "unpredicted").rows()
    [(1, 0, 1), (2, 1, 1), (3, 1, 1)]
    """
    if horizon < 1:
        raise ValueError(f"horizon must be >= 1, got {horizon}")
    base, last, orphans, fetched = _target_sets(refs, cuts, horizon)
    seen = (last.join(fetched, on=["_cut", "key"])
            .join(orphans.with_columns(_orphan=pl.lit(True)), on=["_cut", "key"], how="left")
            .group_by("_cut", "at").agg(p=pl.col("_orphan").is_not_null().sum(), u=pl.col("_orphan").is_null().sum()))
    n_orphans = orphans.group_by("_cut").agg(orphan_targets=pl.len().cast(pl.UInt32))
    grid = base.select("_cut", at=pl.int_ranges(1, horizon + 1)).explode("at")
    return (grid.join(seen, on=["_cut", "at"], how="left").join(n_orphans, on="_cut", how="left")
            .sort("_cut", "at")
            .select("_cut", calls=pl.col("at").cast(pl.UInt32),
                    predicted=pl.col("p").fill_null(0).cum_sum().over("_cut").cast(pl.UInt32),
                    unpredicted=pl.col("u").fill_null(0).cum_sum().over("_cut").cast(pl.UInt32),
                    orphan_targets=pl.col("orphan_targets").fill_null(0))
            .collect())


def reorientation(refs: pl.DataFrame | pl.LazyFrame, cuts: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """Per cut (in order): tool calls from the cut to the first write (``reorientation``, null when none
    follows) and from the session's start to its first write (``reorientation_start``)."""
    r = refs.lazy().with_columns(pl.col(SESSION).cast(pl.String), pl.col("call").cast(pl.Int64), pl.col(SEQ).cast(pl.Int64))
    base = cuts.lazy().with_row_index("_cut").select("_cut", pl.col(SESSION).cast(pl.String), pl.col("after_seq").cast(pl.Int64))
    calls = r.group_by(SESSION, "call").agg(pl.col(SEQ).first())
    writes = r.filter(pl.col("kind") == "write").group_by(SESSION, "call").agg(pl.col(SEQ).first())
    first = (base.join(calls, on=SESSION).filter(pl.col(SEQ) >= pl.col("after_seq"))
             .group_by("_cut").agg(first_call=pl.col("call").min()))
    first_write = (base.join(writes, on=SESSION).filter(pl.col(SEQ) >= pl.col("after_seq"))
                   .group_by("_cut").agg(write_call=pl.col("call").min()))
    start = writes.group_by(SESSION).agg(reorientation_start=pl.col("call").min().cast(pl.UInt32))
    return (base.join(first, on="_cut", how="left", maintain_order="left")
            .join(first_write, on="_cut", how="left", maintain_order="left")
            .join(start, on=SESSION, how="left", maintain_order="left")
            .select(reorientation=(pl.col("write_call") - pl.col("first_call")).cast(pl.UInt32),
                    reorientation_start=pl.col("reorientation_start")).collect())


def refetch(messages: pl.DataFrame | pl.LazyFrame, compactions: pl.DataFrame | pl.LazyFrame,
            sessions: pl.DataFrame | pl.LazyFrame, *, horizon: int = DEFAULT_HORIZON,
            kinds: Sequence[str] = ORPHAN_KINDS) -> pl.DataFrame:
    """What agents did after the compactions they recorded, and at pseudo-cuts in sessions that never compacted.

    Parameters
    ----------
    messages, compactions, sessions
        A corpus' three tables (:func:`~panto_analytics.ingest.read_corpus`).
    horizon, kinds
        As :func:`~panto_analytics.outcomes.orphan_loss.loss` takes them, at each cut.

    Returns
    -------
    pl.DataFrame
        One row per recorded compaction and per pseudo-cut: ``cut`` (``compaction`` or ``baseline``),
        ``session_id``, ``source_format``, ``context``, the cut's columns, the loss columns and
        :data:`REFETCH_COLUMNS`; :func:`refetch_summary` pools them per agent.

    Examples
    --------
    >>> import panto_analytics as pa
    >>> c = pa.ingest.read_corpus(["data/"])
    >>> pa.outcomes.refetch(c.messages, c.compactions, c.sessions)["cut"].unique().sort().to_list()
    ['baseline', 'compaction']
    """
    return measure_cuts(references(messages).collect(), all_cuts(messages, compactions, sessions), horizon=horizon,
                        kinds=kinds)


def all_cuts(messages: pl.DataFrame | pl.LazyFrame, compactions: pl.DataFrame | pl.LazyFrame,
             sessions: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """The cuts :func:`refetch` measures (:func:`cut_rows`): the recorded compactions, then the pseudo-cuts."""
    recorded = recorded_cut_rows(messages, compactions, sessions)
    baseline = cut_rows(pseudo_cuts(messages, recorded, sessions), "baseline")
    return pl.concat([recorded, baseline], how="vertical_relaxed").collect()


def calibration(messages: pl.DataFrame | pl.LazyFrame, compactions: pl.DataFrame | pl.LazyFrame,
                sessions: pl.DataFrame | pl.LazyFrame, *,
                horizon: int = DEFAULT_HORIZON) -> tuple[pl.DataFrame, pl.DataFrame]:
    """What a calibration plot of the orphan targets needs: :func:`refetch`'s rows and, on the same cuts,
    :func:`refetch_curve`'s (its ``_cut`` is the row of the first).

    >>> import panto_analytics as pa
    >>> c = pa.ingest.read_corpus(["tests/fixtures/claude_code/restored.jsonl"])
    >>> cuts, curve = calibration(c.messages, c.compactions, c.sessions, horizon=3)
    >>> curve.filter(pl.col("calls") == 3).select("predicted", "unpredicted").row(0) == (
    ...     cuts.item(0, "refetched_targets"), cuts.item(0, "fetched_again_targets") - cuts.item(0, "refetched_targets"))
    True
    """
    refs = references(messages).collect()
    cuts = all_cuts(messages, compactions, sessions)
    return measure_cuts(refs, cuts, horizon=horizon), refetch_curve(refs, cuts, horizon=horizon)


def restore_check(messages: pl.DataFrame | pl.LazyFrame, compactions: pl.DataFrame | pl.LazyFrame,
                  sessions: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """The model of what an agent restores against what its recordings show, per recorded compaction whose
    recording shows it (``restored_keys`` not null): ``recorded_files`` (re-attached whole), ``model_files``
    (what :func:`~panto_analytics.outcomes.orphan_loss.restored_files`' rule restores there) and ``agreed_files``
    (both). Where the recording shows the restoration, the measure reads it instead of the model.

    >>> import panto_analytics as pa
    >>> c = pa.ingest.read_corpus(["tests/fixtures/claude_code/restored.jsonl"])
    >>> restore_check(c.messages, c.compactions, c.sessions).select("recorded_files", "model_files", "agreed_files").rows()
    [(2, 2, 2)]
    """
    refs = references(messages).with_columns(pl.col(SESSION).cast(pl.String), pl.col("call").cast(pl.Int64),
                                             pl.col(SEQ).cast(pl.Int64))
    cuts = (recorded_cut_rows(messages, compactions, sessions).filter(pl.col("restored_keys").is_not_null())
            .with_row_index("_cut"))
    model = restored_files(refs, cuts.drop("restored_keys")).group_by("_cut").agg(model=pl.col("key"))
    return (cuts.join(model, on="_cut", how="left")
            .select(SESSION, "source_format", "after_seq",
                    recorded_files=pl.col("restored_keys").list.len().cast(pl.UInt32),
                    model_files=pl.col("model").list.len().fill_null(0).cast(pl.UInt32),
                    agreed_files=pl.col("restored_keys").list.set_intersection(pl.col("model").fill_null([]))
                    .list.len().cast(pl.UInt32))
            .collect())


def cut_rows(cuts: pl.LazyFrame, kind: str) -> pl.LazyFrame:
    """``cuts`` as :func:`refetch`'s cut columns, in order: ``cut`` (``kind``), ``session_id``, ``source_format``,
    ``context``, :data:`~panto_analytics.outcomes.orphan_loss.CUT_SCHEMA`'s and ``restored_keys`` (the files
    the recording shows restored; null: not recorded, the model decides)."""
    if "restored_keys" not in cuts.collect_schema().names():
        cuts = cuts.with_columns(restored_keys=pl.lit(None, pl.List(pl.UInt64)))
    return cuts.with_columns(cut=pl.lit(kind)).select("cut", SESSION, "source_format", "context", *CUT_SCHEMA,
                                                      pl.col("restored_keys").cast(pl.List(pl.UInt64)))


def recorded_cut_rows(messages: pl.DataFrame | pl.LazyFrame, compactions: pl.DataFrame | pl.LazyFrame,
                      sessions: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    """The cuts of the compactions agents recorded (:func:`cut_rows`, ``cut`` = ``compaction``), with the
    ``context`` at which each fired (the recorded ``tokens_before``, else the last call's recorded context
    before the anchor), sorted by session, ``after_seq`` and ``context``. Per session: the cuts of a set of
    whole sessions are those sessions' rows of the whole corpus's cuts."""
    context = (messages.lazy().with_columns(ctx=call_context())
               .filter(pl.col("ctx").is_not_null()).select(pl.col(SESSION).cast(pl.String), pl.col(SEQ).cast(pl.Int64), "ctx"))
    recorded = (recorded_cuts(compactions, sessions).with_columns(_probe=pl.col("anchor_seq").cast(pl.Int64) - 1)
                .sort("_probe")
                .join_asof(context.sort(SEQ), left_on="_probe", right_on=SEQ, by=SESSION, strategy="backward",
                           check_sortedness=False)
                .with_columns(context=pl.coalesce(pl.col("tokens_before").cast(pl.Int64), pl.col("ctx")))
                .select(SESSION, "source_format", "context", *CUT_SCHEMA,
                        *(["restored_keys"] if "restored_keys" in compactions.lazy().collect_schema().names() else []))
                .sort(SESSION, "after_seq", "context", maintain_order=True))
    return cut_rows(recorded, "compaction")


def measure_cuts(refs: pl.DataFrame, cuts: pl.DataFrame, *, horizon: int = DEFAULT_HORIZON,
                 kinds: Sequence[str] = ORPHAN_KINDS) -> pl.DataFrame:
    """:func:`refetch`'s row of each cut (in order): the cut's columns, the loss columns,
    :data:`REFETCH_COLUMNS` and the cut's ``precision`` and ``recall`` (:func:`precision_recall`).
    Each cut is measured on its own session's references alone."""
    lost = cut_loss(refs, cuts, horizon=horizon, kinds=kinds)
    if "restored_keys" in lost.columns:   # a list: the row says whether the recording or the model decided
        lost = lost.with_columns(pl.col("restored_keys").is_not_null().alias("restored_keys")).rename(
            {"restored_keys": "restore_recorded"})
    return (pl.concat([lost, target_loss(refs, cuts, horizon=horizon), reorientation(refs, cuts)], how="horizontal")
            .with_columns(*precision_recall()))


def precision_recall() -> tuple[pl.Expr, pl.Expr]:
    """``precision``: of the orphan targets (the measure's prediction of a re-fetch), the share the agent read or
    fetched again within the window; ``recall``: of the targets it read or fetched again within the window
    (touched before the cut), the share predicted; null where there is nothing to divide.

    >>> pl.DataFrame({"orphan_targets": [4, 0], "refetched_targets": [1, 0], "fetched_again_targets": [2, 3]}).select(
    ...     *precision_recall()).rows()
    [(0.25, 0.5), (None, 0.0)]
    """
    return (orphan_rate("refetched_targets", "orphan_targets").alias("precision"),
            orphan_rate("refetched_targets", "fetched_again_targets").alias("recall"))


#: The columns :func:`refetch_summary` sums per agent and kind of cut.
SUMMED = ("window_calls", "repeat_reads", "orphan_calls", "refetched_orphans", *TARGET_COLUMNS, "refetch_calls",
          "refetch_tokens")

#: The columns whose median :func:`refetch_summary` gives (``<column>_median``).
MEDIANS = ("reorientation", "reorientation_start")

#: Fewer cuts than this behind a row of :func:`refetch_summary`: no bootstrap interval (and ``loss`` warns).
ENOUGH_CUTS = 30

#: The bootstrap of :func:`refetch_summary`'s intervals: resamples, seed, and the interval's coverage.
BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, BOOTSTRAP_LEVEL = 2_000, 28, 0.95

_KEYS = ["source_format", "cut"]

#: The per-cut counts the bootstrap resamples (kept in the partials as value counts of the triple).
_TRIPLE = "orphan_targets", "refetched_targets", "fetched_again_targets"


def refetch_summary(cuts: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """:func:`refetch`'s rows pooled per agent and kind of cut: counts summed, rates pooled, medians of the
    re-orientation counts (``reoriented``: cuts with a write after them), and the pooled ``precision`` and
    ``recall`` of the orphan targets as a prediction of a re-fetch with a seeded bootstrap interval over the
    cuts (``precision_low``/``_high``, ``recall_low``/``_high``: :data:`BOOTSTRAP_LEVEL`, resampling cuts;
    null where fewer than :data:`ENOUGH_CUTS` cuts stand behind the row).

    It is :func:`merge_refetch_partials` of one :func:`refetch_partials`: the rows of disjoint sets of cuts
    (a dataset's buckets) give the same table, bit for bit.

    >>> cuts = pl.DataFrame({"source_format": ["pi"] * 3, "cut": ["compaction"] * 3, "reorientation": [1, None, 4],
    ...                      "reorientation_start": [2, 2, 3], **{c: [1, 0, 2] for c in SUMMED}})
    >>> refetch_summary(cuts).select("cuts", "orphan_calls", "reoriented", "reorientation_median", "precision").rows()
    [(3, 3, 2, 2.5, 1.0)]
    """
    return merge_refetch_partials([refetch_partials(cuts)])


def refetch_partials(cuts: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """What :func:`refetch_summary` needs of some cuts, in a form that merges exactly by adding: per agent and
    kind of cut, one row of sums (``metric`` null: ``cuts``, :data:`SUMMED`, ``reoriented``), for each of
    :data:`MEDIANS` one row per distinct value with its ``count`` (``metric`` the column), and one row per
    distinct triple of a cut's target counts with its ``count`` (``metric`` ``targets``), which the bootstrap
    resamples."""
    lf = cuts.lazy().with_columns(pl.col("source_format").cast(pl.String), pl.col("cut").cast(pl.String))
    sums = lf.group_by(_KEYS).agg(cuts=pl.len().cast(pl.UInt32), **{c: pl.col(c).sum() for c in SUMMED},
                                  reoriented=pl.col("reorientation").is_not_null().sum().cast(pl.UInt32))
    counts = [lf.filter(pl.col(m).is_not_null()).group_by(*_KEYS, pl.col(m).cast(pl.Int64).alias("value"))
              .agg(count=pl.len().cast(pl.UInt64)).with_columns(metric=pl.lit(m)) for m in MEDIANS]
    triples = (lf.group_by(*_KEYS, *(pl.col(c).cast(pl.Int64).alias(f"t_{c}") for c in _TRIPLE))
               .agg(count=pl.len().cast(pl.UInt64)).with_columns(metric=pl.lit("targets")))
    return pl.concat(pl.collect_all([sums.with_columns(metric=pl.lit(None, pl.String)), *counts, triples]),
                     how="diagonal")


def merge_refetch_partials(partials: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """:func:`refetch_summary` from the :func:`refetch_partials` of disjoint sets of cuts: sums added, each
    median that of the merged value counts (:func:`~panto_analytics.frame.expressions.counted_quantile`: the
    mean of the two middle values for an even count, as Polars' ``median``), the bootstrap run on the merged
    triples (sorted: the same draws however the cuts were split)."""
    both = pl.concat([p for p in partials if p.width] or [refetch_partials(_no_cuts())], how="diagonal_relaxed").lazy()
    sums = (both.filter(pl.col("metric").is_null()).group_by(_KEYS)
            .agg(pl.col("cuts").sum(), *(pl.col(c).sum() for c in SUMMED), pl.col("reoriented").sum()))
    middle = (both.filter(pl.col("metric").is_in(list(MEDIANS))).group_by(*_KEYS, "metric", "value")
              .agg(pl.col("count").sum()).sort(*_KEYS, "metric", "value")
              .group_by(*_KEYS, "metric").agg(median=counted_quantile(0.5)))
    table = sums
    for m in MEDIANS:
        table = table.join(middle.filter(pl.col("metric") == m).select(*_KEYS, pl.col("median").alias(f"{m}_median")),
                           on=_KEYS, how="left")
    triples = (both.filter(pl.col("metric") == "targets").group_by(*_KEYS, *(f"t_{c}" for c in _TRIPLE))
               .agg(pl.col("count").sum()).collect())
    return (table.with_columns(*precision_recall(), repeat_rate=orphan_rate("repeat_reads", "window_calls"),
                               orphan_rate=orphan_rate())
            .join(bootstrap_intervals(triples).lazy(), on=_KEYS, how="left")
            .sort("source_format", "cut", descending=[False, True]).collect())


def bootstrap_intervals(triples: pl.DataFrame, *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED,
                        level: float = BOOTSTRAP_LEVEL, enough: int = ENOUGH_CUTS) -> pl.DataFrame:
    """Percentile bootstrap intervals of the pooled precision and recall, per agent and kind of cut.

    ``triples`` holds, per (``source_format``, ``cut``), each distinct triple of a cut's counts
    (``t_orphan_targets``, ``t_refetched_targets``, ``t_fetched_again_targets``) with its ``count``. Cuts are
    drawn with replacement, ``resamples`` times: a resample is how many copies of each distinct triple it holds,
    drawn at once as a multinomial of the group's cuts (each triple's share of them; the triples sorted, NumPy's
    generator seeded with ``seed`` per group), so that the draws are the same however the cuts were split and
    what it holds is resamples x distinct triples, not x cuts. Each resample's pooled ratios give the interval's
    quantiles; a group of fewer than ``enough`` cuts gets nulls.

    >>> t = pl.DataFrame({"source_format": ["pi"] * 2, "cut": ["compaction"] * 2, "t_orphan_targets": [4, 2],
    ...                   "t_refetched_targets": [1, 2], "t_fetched_again_targets": [1, 3], "count": [20, 20]})
    >>> row = bootstrap_intervals(t).row(0, named=True)
    >>> row["precision_low"] < 3 / 6 < row["precision_high"], row["recall_low"] < 3 / 4 < row["recall_high"]
    (True, True)
    >>> bootstrap_intervals(t.with_columns(count=pl.lit(5))).row(0, named=True)["precision_low"] is None
    True
    """
    bounds = ("precision_low", "precision_high", "recall_low", "recall_high")
    groups = (triples.group_by(*_KEYS, *(f"t_{c}" for c in _TRIPLE)).agg(pl.col("count").sum())
              .sort(*_KEYS, *(f"t_{c}" for c in _TRIPLE))
              .group_by(_KEYS, maintain_order=True)
              .agg(*(pl.col(f"t_{c}").alias(c) for c in _TRIPLE), pl.col("count")))
    rows: list[tuple[float | None, ...]] = []
    alpha = (1 - level) / 2
    for orphans, refetched, again, count in groups.select(*_TRIPLE, "count").iter_rows():  # per agent and kind
        n = sum(count)
        if n < enough:
            rows.append((None,) * 4)
            continue
        copies = np.random.default_rng(seed).multinomial(n, np.asarray(count, dtype=np.float64) / n, size=resamples)
        tp = copies @ np.asarray(refetched, dtype=np.int64)
        out: list[float | None] = []
        for den in (copies @ np.asarray(orphans, dtype=np.int64), copies @ np.asarray(again, dtype=np.int64)):
            ratio = tp[den > 0] / den[den > 0]
            out += [float(np.quantile(ratio, alpha)), float(np.quantile(ratio, 1 - alpha))] if len(ratio) else [None] * 2
        rows.append(tuple(out))
    return pl.concat([groups.select(_KEYS), pl.DataFrame(rows, schema={b: pl.Float64 for b in bounds}, orient="row")],
                     how="horizontal")


def _no_cuts() -> pl.DataFrame:
    """No cut, with the columns :func:`refetch_partials` reads."""
    return pl.DataFrame(schema={"source_format": pl.String, "cut": pl.String, **{c: pl.UInt32 for c in SUMMED},
                                **{m: pl.UInt32 for m in MEDIANS}})


# -- the calibration of many cuts: sums and counts that merge ----------------------------------------------------------

_SUMS_SCHEMA = {"source_format": pl.String, "cut": pl.String, "cuts": pl.Int64, **{c: pl.Int64 for c in SUMMED}}
_POINTS_SCHEMA = {"source_format": pl.String, "cut": pl.String, **{c: pl.Int64 for c in TARGET_COLUMNS},
                  "count": pl.Int64}
_CURVE_SCHEMA = {"source_format": pl.String, "cut": pl.String, "calls": pl.Int64, "predicted": pl.Int64,
                 "unpredicted": pl.Int64}


@dataclass(frozen=True)
class CalibrationSummary:
    """What :func:`calibration`'s rows show of many cuts, in integer counts and sums that merge exactly by adding
    (:func:`merge_calibration`), however many cuts stand behind them; each frame sorted by its keys (agents in
    order, recorded compactions before pseudo-cuts):

    - ``sums``: per agent (``source_format``) and kind of cut (``cut``): ``cuts`` and :data:`SUMMED` summed;
    - ``points``: per agent, kind and triple of a cut's :data:`TARGET_COLUMNS`: ``count``, the cuts at it;
    - ``curve``: per agent, kind and ``calls`` (1 to the horizon): ``predicted`` and ``unpredicted``
      (:func:`refetch_curve`'s), summed over the cuts.
    """

    sums: pl.DataFrame
    points: pl.DataFrame
    curve: pl.DataFrame

    @property
    def cuts(self) -> int:
        """How many cuts stand behind the summary."""
        return int(self.sums["cuts"].sum())


def _sorted(sums: pl.LazyFrame, points: pl.LazyFrame, curve: pl.LazyFrame) -> CalibrationSummary:
    """The three frames in their declared columns and dtypes, each sorted by its keys."""
    def keyed(frame: pl.LazyFrame, schema: dict, *more: str) -> pl.LazyFrame:
        return (frame.select(pl.col(c).cast(t) for c, t in schema.items())
                .sort(*_KEYS, *more, descending=[False, True, *(False for _ in more)]))

    got = pl.collect_all([keyed(sums, _SUMS_SCHEMA), keyed(points, _POINTS_SCHEMA, *TARGET_COLUMNS),
                          keyed(curve, _CURVE_SCHEMA, "calls")])
    return CalibrationSummary(*got)


def calibration_partial(cuts: pl.DataFrame | pl.LazyFrame, curve: pl.DataFrame | pl.LazyFrame) -> CalibrationSummary:
    """:func:`calibration`'s ``cuts`` and ``curve`` (its ``_cut``: the row of ``cuts``) as a
    :class:`CalibrationSummary`; the summaries of disjoint sets of cuts merge (:func:`merge_calibration`) to the
    summary of them all.

    >>> cuts = pl.DataFrame({"source_format": ["pi"] * 2, "cut": ["compaction"] * 2, "orphan_targets": [4, 4],
    ...                      "refetched_targets": [1, 1], "fetched_again_targets": [2, 2],
    ...                      **{c: [1, 2] for c in SUMMED if c not in TARGET_COLUMNS}})
    >>> curve = pl.DataFrame({"_cut": [0, 0, 1, 1], "calls": [1, 2, 1, 2], "predicted": [0, 1, 1, 1],
    ...                       "unpredicted": [1, 1, 0, 1]})
    >>> got = calibration_partial(cuts, curve)
    >>> got.sums.select("cuts", "refetch_tokens").row(0), got.points["count"].to_list(), got.curve["predicted"].to_list()
    ((2, 3), [2], [1, 2])
    """
    lf = cuts.lazy().with_columns(pl.col("source_format").cast(pl.String), pl.col("cut").cast(pl.String))
    sums = lf.group_by(_KEYS).agg(cuts=pl.len(), **{c: pl.col(c).cast(pl.Int64).sum() for c in SUMMED})
    points = lf.group_by(*_KEYS, *(pl.col(c).cast(pl.Int64) for c in TARGET_COLUMNS)).agg(count=pl.len())
    kinds = lf.with_row_index("_cut").select(pl.col("_cut").cast(pl.Int64), *_KEYS)
    summed = (curve.lazy().with_columns(pl.col("_cut").cast(pl.Int64)).join(kinds, on="_cut")
              .group_by(*_KEYS, pl.col("calls").cast(pl.Int64))
              .agg(pl.col("predicted").cast(pl.Int64).sum(), pl.col("unpredicted").cast(pl.Int64).sum()))
    return _sorted(sums, points, summed)


def merge_calibration(parts: Sequence[CalibrationSummary | None]) -> CalibrationSummary:
    """The :class:`CalibrationSummary` of the cuts of ``parts`` (summaries of disjoint sets of cuts; None: no
    cut), every count and sum added: the same frames, to the last bit, however the cuts were split."""
    def added(name: str, schema: dict, keys: Sequence[str]) -> pl.LazyFrame:
        frames = [getattr(p, name) for p in parts if p is not None]
        whole = pl.concat([pl.DataFrame(schema=schema), *frames], how="vertical").lazy()
        return whole.group_by(*keys).agg(pl.exclude(*keys).sum())

    return _sorted(added("sums", _SUMS_SCHEMA, _KEYS), added("points", _POINTS_SCHEMA, [*_KEYS, *TARGET_COLUMNS]),
                   added("curve", _CURVE_SCHEMA, [*_KEYS, "calls"]))
