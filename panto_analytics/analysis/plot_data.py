"""The numbers behind every plot: tidy frames, one row per point, box or band.

Each function here takes the frames the policy produces (``splits``,
``turns``, the message frame) and returns a small Polars frame that
:mod:`panto_analytics.analysis.plots` draws as it is. Keeping the data apart from the
drawing lets tests check what a plot shows without reading pixels.

Every result carries a ``segment`` column: ``"all sessions"`` unless a
segment frame (``session_id``, ``segment``; see :func:`session_segments`) is
given, in which case each budget gets one row per segment.

Distributions are over *sessions with at least one turn*: a session without
turns keeps nothing at any budget and would only pile up at zero. Quantiles
use linear interpolation, as a box plot usually does: the ``median`` is then
the tables' median (:func:`~panto_analytics.frame.expressions.median`, of an
even count the mean of the middle two).

The figures of the splits and the turns are drawn from exact value counts,
:class:`PlotCounts` (:func:`plot_counts`): counts of disjoint sets of sessions
add up (:meth:`PlotCounts.merge`), so a dataset's report (bucket by bucket,
``dataset/_report_plots.py``) and the report in memory (the counts of the whole
frame) draw the same numbers from one function, to the last bit; the counts grow
with the distinct values, not with the sessions.

>>> import polars as pl
>>> s = pl.DataFrame({"session_id": ["a", "b", "c"], "budget": [10] * 3,
...     "kept_turns": [0, 1, 3], "kept_tokens": [0, 4, 10], "n_turns": [2, 1, 3],
...     "summarized_tokens": [20, 0, 0], "active_tokens": [20, 4, 10],
...     "noop": [False, True, True], "capped": [False] * 3})
>>> kept_tokens_stats(s).select("budget", "sessions", "median", "max").rows()
[(10, 3, 4.0, 10.0)]
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import cast

import polars as pl

from ..defaults import SEGMENT_KINDS
from ..frame.expressions import counted_quantile, median
from ..frame.schema import BUDGET, SESSION, SPLIT_SCHEMA
from ..models import normalized_model, session_model
from ..outcomes.group_tables import grouped
from ..policy import session_turns, sweep

__all__ = [
    "ALL", "LENGTH_BUCKETS", "calibration_per_cut", "calibration_points",
    "calibration_total", "OUTCOMES", "PlotCounts", "QUANTILES", "SEGMENT_KINDS", "cost_per_session",
    "SPLIT_METRICS", "distribution", "distribution_aggs", "distribution_of_counts", "finish_plot_counts", "is_segmented",
    "kept_tokens_stats", "kept_turns_stats",
    "log_bin", "outcome_shares", "per_segment_sweep", "per_session_stats", "plot_counts", "raw_segments",
    "replay_stats", "report_plot_counts", "segment_order", "session_segments", "summarized_share_stats",
    "summed_counts", "token_source_shares",
    "turn_size_histogram", "with_segment",
]

#: The segment value when the corpus is not split.
ALL = "all sessions"


#: Session-length buckets by number of turns: (lowest turn count, label).
LENGTH_BUCKETS = ((0, "no turns"), (1, "1-4 turns"), (5, "5-19 turns"), (20, "20-99 turns"), (100, "100+ turns"))

#: Quantiles drawn for a distribution: whiskers, box, median.
QUANTILES = {"p10": 0.10, "q1": 0.25, "median": 0.50, "q3": 0.75, "p90": 0.90}

#: Outcomes of a split that a budget should make rare, as (label, sweep column).
OUTCOMES = (
    ("noop (nothing to summarize)", "noop_share"),
    ("zero kept (last turn alone exceeds budget)", "zero_kept_share"),
    ("capped (> 4096 turns)", "capped_share"),
)


def session_segments(messages: pl.DataFrame | pl.LazyFrame, by: str, *, top: int = 6,
                     sessions: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per session: ``session_id`` and its ``segment`` (an ordered Enum).

    ``by`` is ``model`` (the sessions table's ``model`` when ``sessions`` is
    given, else the same from the messages: the last model they name, normalized,
    ``unknown`` when none is recorded), ``source_format``,
    ``project`` (from the ``sessions`` table, which it needs), or ``length`` (a
    bucket of the number of turns libpanto sees, from :data:`LENGTH_BUCKETS`).
    Model, format and project keep the ``top`` most common values, by
    sessions, and lump the rest into ``other`` so a legend stays readable
    (:func:`raw_segments`, then :func:`segment_order`).

    >>> import polars as pl
    >>> m = pl.DataFrame({"session_id": ["a", "a", "b"], "model": ["x", "x", None],
    ...     "source_format": ["pi"] * 3})
    >>> session_segments(m, "model").rows()
    [('a', 'x'), ('b', 'unknown')]
    """
    out = raw_segments(messages, by, sessions=sessions)
    keep = segment_order(out.group_by("segment").agg(count=pl.len()), by, top=top)
    lumped = out["segment"].n_unique() > len(keep)
    order = keep + (["other"] if lumped else [])
    return out.with_columns(_lump(keep).cast(pl.Enum(order)))


def raw_segments(messages: pl.DataFrame | pl.LazyFrame, by: str, *,
                 sessions: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per session: ``session_id`` and its ``segment`` (a String) before the rare ones are lumped into
    ``other`` (:func:`session_segments`): a session's segment needs its own rows only.

    >>> import polars as pl
    >>> m = pl.DataFrame({"session_id": ["a", "b"], "model": ["x", None], "source_format": ["pi"] * 2})
    >>> raw_segments(m, "model", sessions=None).rows()
    [('a', 'x'), ('b', 'unknown')]
    """
    lf = messages.lazy()
    if by == "length":
        n_turns = pl.col("n_turns")
        bucket = pl.lit(LENGTH_BUCKETS[0][1])
        for low, label in LENGTH_BUCKETS[1:]:
            bucket = pl.when(n_turns >= low).then(pl.lit(label)).otherwise(bucket)
        return session_turns(lf).select(SESSION, segment=bucket).collect()
    if by == "model" and sessions is not None and "model" in sessions.columns:
        value = pl.col("model").first().fill_null("unknown")
        lf = sessions.lazy().select(SESSION, pl.col("model").cast(pl.String))
    elif by == "model":
        value = normalized_model(session_model("model")).fill_null("unknown")
    elif by == "source_format":
        value = pl.col("source_format").cast(pl.String).first()
    elif by == "project" and sessions is not None:
        value = pl.col("project").first().fill_null("unknown")
        lf = sessions.lazy().select(SESSION, "project")
    elif by == "project":
        raise ValueError("segmenting by project needs the sessions table (sessions=corpus.sessions)")
    else:
        raise ValueError(f"cannot segment by {by!r}: choose one of {', '.join(SEGMENT_KINDS)}")
    return lf.group_by(SESSION, maintain_order=True).agg(segment=value.cast(pl.String)).collect()


def segment_order(counts: pl.DataFrame, by: str | None, *, top: int = 6) -> list[str]:
    """The segments kept apart, in order, from ``counts`` (``segment``, ``count``: sessions per raw segment):
    the ``top`` most common (by sessions, then by name; all of them when at most ``top``), the rest to be lumped
    into ``other``; for ``length``, the buckets present in :data:`LENGTH_BUCKETS`' order; without ``by``,
    :data:`ALL`.

    >>> import polars as pl
    >>> segment_order(pl.DataFrame({"segment": ["q", "p", "r"], "count": [2, 3, 1]}), "model", top=2)
    ['p']
    """
    if by is None:
        return [ALL]
    present = counts.filter(pl.col("count") > 0)
    if by == "length":
        seen = set(present["segment"].to_list())
        return [label for _, label in LENGTH_BUCKETS if label in seen]
    ranked = present.sort(["count", "segment"], descending=[True, False])["segment"].to_list()
    return ranked if len(ranked) <= top else ranked[: top - 1]


def _lump(keep: Sequence[str]) -> pl.Expr:
    """``segment`` where it is one of ``keep``, else ``other`` (a session no segment names, too)."""
    return pl.when(pl.col("segment").is_in(list(keep))).then(pl.col("segment")).otherwise(pl.lit("other"))


def with_segment(frame: pl.DataFrame, segments: pl.DataFrame | None) -> pl.DataFrame:
    """``frame`` plus a ``segment`` column (``ALL`` without ``segments``).

    Sessions missing from ``segments`` get ``other``. A LazyFrame is collected.
    """
    if isinstance(frame, pl.LazyFrame):
        frame = frame.collect()
    if segments is None:
        return frame.with_columns(segment=pl.lit(ALL).cast(pl.Enum([ALL])))
    dtype = segments.schema["segment"]
    order = list(dtype.categories) if isinstance(dtype, pl.Enum) else sorted(segments["segment"].unique())
    if "other" not in order:
        order.append("other")
    seg = segments.select(pl.col(SESSION).cast(pl.String), pl.col("segment").cast(pl.String))
    return (
        frame.with_columns(pl.col(SESSION).cast(pl.String).alias("_sid"))
        .join(seg.rename({SESSION: "_sid"}), on="_sid", how="left")
        .drop("_sid")
        .with_columns(pl.col("segment").fill_null("other").cast(pl.Enum(order)))
    )


def distribution_aggs(value: pl.Expr | str) -> dict[str, pl.Expr]:
    """The figures of :func:`distribution`, by name: ``sessions``, ``min``, :data:`QUANTILES` and ``max`` of
    ``value`` (each order-free, so a dataset's rows give them one column at a time:
    :func:`~panto_analytics.outcomes.group_tables.grouped`).

    >>> list(distribution_aggs("x"))
    ['sessions', 'min', 'p10', 'q1', 'median', 'q3', 'p90', 'max']
    """
    v = (pl.col(value) if isinstance(value, str) else value).cast(pl.Float64)
    return {"sessions": pl.len(), "min": v.min(), **{name: v.quantile(q, "linear") for name, q in QUANTILES.items()},
            "max": v.max()}


def distribution(frame: pl.DataFrame, value: pl.Expr | str, by: list[str]) -> pl.DataFrame:
    """Per group of ``by``: ``sessions``, ``min``, :data:`QUANTILES` and ``max`` of ``value``."""
    return frame.group_by(by).agg(**distribution_aggs(value)).sort(by)


#: The metrics of :attr:`PlotCounts.splits`: the value counts behind the distributions (``kept_tokens`` and
#: ``kept_turns`` over the sessions with turns, ``summarized_share`` over those with active tokens), the sums
#: behind the pooled share (``summarized_tokens``, ``active_tokens``: one row of value 0 whose count is the sum,
#: over the sessions with active tokens) and the 0/1 counts behind the outcomes' shares (over every session).
SPLIT_METRICS = ("kept_tokens", "kept_turns", "summarized_share", "summarized_tokens", "active_tokens", "noop",
                 "capped", "zero_kept", "with_turns")
_METRIC = pl.Enum(list(SPLIT_METRICS))
_COUNT = pl.UInt64()
_LEN = pl.UInt32()  # what pl.len() gives: the in-memory figures' type of a count


@dataclass(frozen=True)
class PlotCounts:
    """Exact value counts behind the plots of splits and turns, by segment: they add up over disjoint sets of
    sessions (:meth:`merge`), so merged counts draw what the whole frame's counts draw.

    ``splits``: ``segment``, ``budget``, ``metric`` (:data:`SPLIT_METRICS`), ``value`` (Float64), ``count``;
    ``turns``: ``segment``, ``token_source``, ``value`` (tokens of a turn), ``count``; ``sessions``:
    ``segment``, ``count``, the sessions the segments name, per segment (which ones :func:`segment_order` keeps
    apart). ``segment`` is a String as counted (:func:`plot_counts`; None: a session the segments do not name),
    an Enum once :meth:`finished`.

    >>> import polars as pl
    >>> s = pl.DataFrame({"session_id": ["a", "b"], "budget": [10, 10], "kept_turns": [1, 2], "kept_tokens": [4, 9],
    ...     "n_turns": [2, 2], "summarized_tokens": [3, 0], "active_tokens": [7, 9], "noop": [False, True],
    ...     "capped": [False, False]})
    >>> both = PlotCounts.merge([plot_counts(s.head(1)), plot_counts(s.tail(1))]).finished([ALL])
    >>> kept_tokens_stats(both).equals(kept_tokens_stats(s))
    True
    """

    splits: pl.DataFrame
    turns: pl.DataFrame
    sessions: pl.DataFrame

    @classmethod
    def merge(cls, parts: Iterable[PlotCounts]) -> PlotCounts:
        """The counts of the union of disjoint sets of sessions: each table's counts added up."""
        parts = list(parts)
        return cls(*(summed_counts(pl.concat([getattr(p, name) for p in parts], how="vertical_relaxed"))
                     for name in ("splits", "turns", "sessions")))

    def finished(self, order: Sequence[str]) -> PlotCounts:
        """The counts with ``segment`` an Enum of ``order`` then ``other`` (as :func:`with_segment` gives), every
        segment not in ``order`` lumped into ``other`` (just ``order`` when it is ``[ALL]``)."""
        order = list(order)
        full = order if order == [ALL] or "other" in order else [*order, "other"]
        seg = _lump(order).cast(pl.Enum(full)).alias("segment")
        return PlotCounts(*(summed_counts(getattr(self, name).with_columns(seg))
                            for name in ("splits", "turns", "sessions")))

    @property
    def segmented(self) -> bool:
        """Whether the counts are by segment (not :data:`ALL` alone)."""
        dtype = self.splits.schema["segment"]
        return not (isinstance(dtype, pl.Enum) and list(dtype.categories) == [ALL])


def summed_counts(frame: pl.DataFrame) -> pl.DataFrame:
    """One row per key (every column but ``count``), the counts added, in key order: how counts of disjoint sets
    merge (:class:`PlotCounts`, the summaries of the recorded compactions).

    >>> summed_counts(pl.DataFrame({"k": ["b", "a", "b"], "count": [1, 2, 3]})).rows()
    [('a', 2), ('b', 4)]
    """
    key = [c for c in frame.columns if c != "count"]
    return frame.group_by(key).agg(pl.col("count").sum().cast(_COUNT)).sort(key).select(*key, "count")


def _segmented(frame: pl.DataFrame | pl.LazyFrame, segments: pl.DataFrame | None) -> pl.LazyFrame:
    """``frame`` with a String ``segment``: :data:`ALL` without ``segments``, else the session's (None where
    ``segments`` does not name it)."""
    if segments is None:
        return frame.lazy().with_columns(segment=pl.lit(ALL))
    seg = segments.lazy().select(pl.col(SESSION).cast(pl.String).alias("_sid"), pl.col("segment").cast(pl.String))
    return (frame.lazy().with_columns(pl.col(SESSION).cast(pl.String).alias("_sid"))
            .join(seg, on="_sid", how="left").drop("_sid"))


def plot_counts(splits: pl.DataFrame | pl.LazyFrame | None, turns: pl.DataFrame | pl.LazyFrame | None = None,
                segments: pl.DataFrame | None = None) -> PlotCounts:
    """The :class:`PlotCounts` of a splits frame (None: none) and a turns frame (None: none), by the sessions' ``segments`` (a frame of
    ``session_id`` and ``segment``, raw or lumped; None: all sessions).

    >>> import polars as pl
    >>> s = pl.DataFrame({"session_id": ["a", "b"], "budget": [10, 10], "kept_turns": [1, 1], "kept_tokens": [4, 4],
    ...     "n_turns": [2, 0], "summarized_tokens": [3, 0], "active_tokens": [7, 0], "noop": [False, True],
    ...     "capped": [False, False]})
    >>> plot_counts(s).splits.filter(pl.col("metric") == "kept_tokens").select("value", "count").rows()
    [(4.0, 1)]
    """
    lf = _segmented(pl.DataFrame(schema=SPLIT_SCHEMA) if splits is None else splits, segments)
    has_turns, active = pl.col("n_turns") > 0, pl.col("active_tokens") > 0

    def counted(metric: str, value: pl.Expr, rows: pl.LazyFrame = lf) -> pl.LazyFrame:
        return (rows.group_by("segment", BUDGET, value.cast(pl.Float64).alias("value"))
                .agg(count=pl.len()).with_columns(metric=pl.lit(metric)))

    def summed(metric: str) -> pl.LazyFrame:
        return (lf.filter(active).group_by("segment", BUDGET)
                .agg(value=pl.lit(0.0), count=pl.col(metric).sum()).with_columns(metric=pl.lit(metric)))

    parts = [
        counted("kept_tokens", pl.col("kept_tokens"), lf.filter(has_turns)),
        counted("kept_turns", pl.col("kept_turns"), lf.filter(has_turns)),
        counted("summarized_share", pl.col("summarized_tokens") / pl.col("active_tokens"), lf.filter(active)),
        summed("summarized_tokens"), summed("active_tokens"),
        counted("noop", pl.col("noop")), counted("capped", pl.col("capped")),
        counted("zero_kept", (pl.col("kept_turns") == 0) & has_turns), counted("with_turns", has_turns),
    ]
    cols = {"segment": pl.String(), BUDGET: pl.UInt64(), "metric": _METRIC, "value": pl.Float64(), "count": _COUNT}
    split_counts = pl.concat([p.select(pl.col(c).cast(t) for c, t in cols.items()) for p in parts]).collect()
    turn_cols = {"segment": pl.String(), "token_source": pl.Enum(["usage", "words"]), "value": pl.UInt64(),
                 "count": _COUNT}
    turn_counts = (pl.DataFrame(schema=turn_cols) if turns is None else
                   _segmented(turns, segments).group_by("segment", "token_source", value="tokens")
                   .agg(count=pl.len()).select(pl.col(c).cast(t) for c, t in turn_cols.items()).collect())
    named = (pl.DataFrame(schema={"segment": pl.String(), "count": _COUNT}) if segments is None else
             segments.lazy().group_by(pl.col("segment").cast(pl.String)).agg(count=pl.len().cast(_COUNT)).collect())
    return PlotCounts(summed_counts(split_counts), summed_counts(turn_counts), summed_counts(named))


def report_plot_counts(messages: pl.DataFrame, splits: pl.DataFrame, turns: pl.DataFrame, *,
                       segment_by: Sequence[str] = (), sessions: pl.DataFrame | None = None
                       ) -> dict[str | None, PlotCounts]:
    """The counts a report draws its plots of splits and turns from: of all sessions (key None) and by each kind
    of ``segment_by`` (raw segments, :func:`raw_segments`), not yet :meth:`~PlotCounts.finished`. The report in
    memory counts the whole corpus; a dataset's report, each task's whole sessions, merged.

    >>> from panto_analytics import examples, splits as splits_of, turns as turns_of
    >>> m = examples.messages()
    >>> list(report_plot_counts(m, splits_of(m, [100]), turns_of(m), segment_by=["length"]))
    [None, 'length']
    """
    out: dict[str | None, PlotCounts] = {None: plot_counts(splits, turns)}
    for kind in segment_by:
        out[kind] = plot_counts(splits, turns, raw_segments(messages, kind, sessions=sessions))
    return out


def finish_plot_counts(counts: dict[str | None, PlotCounts], *, top: int = 6) -> dict[str | None, PlotCounts]:
    """Each kind's counts :meth:`~PlotCounts.finished` in the order :func:`session_segments` gives its segments
    (the ``top`` most common, the rest ``other``)."""
    return {kind: c.finished(segment_order(c.sessions, kind, top=top)) for kind, c in counts.items()}


def _order_of(segments: pl.DataFrame | None) -> list[str]:
    """The segments' order as :func:`with_segment` reads it (without ``other``)."""
    if segments is None:
        return [ALL]
    dtype = segments.schema["segment"]
    order = list(dtype.categories) if isinstance(dtype, pl.Enum) else sorted(segments["segment"].unique())
    return [s for s in order if s != "other"]


def _counts_of(splits: pl.DataFrame | PlotCounts, segments: pl.DataFrame | None,
               turns: pl.DataFrame | None = None) -> PlotCounts:
    """``splits`` itself when it is (finished) counts, else the counts of the frames, finished."""
    if isinstance(splits, PlotCounts):
        return splits
    return plot_counts(splits, turns, segments).finished(_order_of(segments))


def is_segmented(splits: pl.DataFrame | PlotCounts, segments: pl.DataFrame | None = None) -> bool:
    """Whether a plot of ``splits`` (a frame, or counts) is drawn by segment."""
    return segments is not None or (isinstance(splits, PlotCounts) and splits.segmented)


def distribution_of_counts(counts: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """:func:`distribution` of the values that ``counts`` (``by``, ``value``, ``count``) counts, bit for bit:
    Polars' linear quantile, ``q * (n - 1)`` between the values at its floor and its ceiling
    (:func:`~panto_analytics.frame.expressions.counted_quantile`).

    >>> import polars as pl
    >>> c = pl.DataFrame({"g": [1, 1], "value": [2.0, 5.0], "count": [3, 1]})
    >>> distribution_of_counts(c, ["g"]).equals(distribution(pl.DataFrame({"g": [1] * 4, "v": [2, 2, 2, 5]}), "v", ["g"]))
    True
    """
    v = pl.col("value")
    return (counts.lazy().filter(pl.col("count") > 0).sort([*by, "value"]).group_by(by)
            .agg(sessions=pl.col("count").sum().cast(_LEN), min=v.first(),
                 **{name: counted_quantile(q) for name, q in QUANTILES.items()}, max=v.last())
            .sort(by).collect())


def _metric(counts: PlotCounts, metric: str) -> pl.DataFrame:
    return counts.splits.filter(pl.col("metric") == metric).drop("metric")


def kept_tokens_stats(splits: pl.DataFrame | PlotCounts, segments: pl.DataFrame | None = None) -> pl.DataFrame:
    """Size of the kept verbatim suffix (tokens) per budget and segment: box statistics.

    ``splits``: a splits frame (with ``segments``, or not), or :class:`PlotCounts`. Columns: ``budget``,
    ``segment``, ``sessions``, ``min``, ``p10``, ``q1``, ``median``, ``q3``, ``p90``, ``max``.
    """
    return distribution_of_counts(_metric(_counts_of(splits, segments), "kept_tokens"), [BUDGET, "segment"])


def kept_turns_stats(splits: pl.DataFrame | PlotCounts, segments: pl.DataFrame | None = None) -> pl.DataFrame:
    """Whole turns kept verbatim per budget and segment: the same statistics as :func:`kept_tokens_stats`."""
    return distribution_of_counts(_metric(_counts_of(splits, segments), "kept_turns"), [BUDGET, "segment"])


def summarized_share_stats(splits: pl.DataFrame | PlotCounts, segments: pl.DataFrame | None = None) -> pl.DataFrame:
    """Share of each session's active context that a budget summarizes, per budget and segment.

    The per-session share is ``summarized_tokens / active_tokens`` over
    sessions with active tokens; columns as :func:`kept_tokens_stats`, plus
    ``pooled``: all summarized tokens over all active tokens (the sweep
    table's ``summarized_share``), where long sessions weigh more.
    """
    counts = _counts_of(splits, segments)
    stats = distribution_of_counts(_metric(counts, "summarized_share"), [BUDGET, "segment"])
    sums = counts.splits.filter(pl.col("metric").is_in(["summarized_tokens", "active_tokens"]))
    pooled = (sums.group_by(BUDGET, "segment")
              .agg(pooled=pl.col("count").filter(pl.col("metric") == "summarized_tokens").sum()
                   / pl.col("count").filter(pl.col("metric") == "active_tokens").sum().clip(1)))
    return stats.join(pooled, on=[BUDGET, "segment"], how="left")


def per_segment_sweep(frame: pl.DataFrame) -> pl.DataFrame:
    """:func:`~panto_analytics.policy.budget_sweep.sweep` for each segment of ``frame``.

    One summary per segment (a handful), so the sweep's definitions of its
    shares stay in one place.
    """
    parts = [
        sweep(part.drop("segment")).with_columns(segment=pl.lit(part["segment"][0]))
        for part in frame.partition_by("segment", maintain_order=True)
    ] or [sweep(frame.drop("segment")).with_columns(segment=pl.lit(None, pl.String))]
    return pl.concat(parts, how="vertical_relaxed").with_columns(
        pl.col("segment").cast(frame.schema["segment"])).sort(BUDGET, "segment")


def outcome_shares(splits: pl.DataFrame | PlotCounts, segments: pl.DataFrame | None = None) -> pl.DataFrame:
    """Share of sessions per outcome, budget and segment (long format).

    Columns: ``budget``, ``segment``, ``outcome`` (a label from
    :data:`OUTCOMES`), ``share`` in [0, 1]. The shares are the sweep table's
    ``noop_share``, ``zero_kept_share`` and ``capped_share``, from the same integers.
    """
    rows = _counts_of(splits, segments).splits
    ones = lambda metric: pl.col("count").filter((pl.col("metric") == metric) & (pl.col("value") == 1)).sum()  # noqa: E731
    sessions = pl.col("count").filter(pl.col("metric") == "noop").sum()
    share = lambda num, den: num.cast(pl.Float64) / den.cast(pl.Float64)  # noqa: E731
    wide = (rows.group_by(BUDGET, "segment")
            .agg(noop_share=share(ones("noop"), sessions), zero_kept_share=share(ones("zero_kept"), ones("with_turns").clip(1)),
                 capped_share=share(ones("capped"), sessions)))
    labels = pl.Enum([label for label, _ in OUTCOMES])
    return (
        wide.unpivot(index=[BUDGET, "segment"], on=[col for _, col in OUTCOMES],
                     variable_name="outcome", value_name="share")
        .with_columns(pl.col("outcome").replace_strict({col: label for label, col in OUTCOMES}).cast(labels))
        .sort("outcome", "segment", BUDGET)
    )


def log_bin(tokens: pl.Expr, bins_per_decade: int) -> pl.Expr:
    """Index of the log-spaced bin ``[10^(i/k), 10^((i+1)/k))`` holding each positive value."""
    # A tiny epsilon keeps exact powers of ten (1000 -> 3.0) in their own bin despite float error.
    return (tokens.cast(pl.Float64).log10() * bins_per_decade + 1e-9).floor().cast(pl.Int32)


def turn_size_histogram(turns: pl.DataFrame | PlotCounts, segments: pl.DataFrame | None = None, *,
                        bins_per_decade: int = 4) -> pl.DataFrame:
    """Turns per log-spaced size bin, split by ``token_source`` (and segment).

    ``turns``: a turns frame, or :class:`PlotCounts`. Columns: ``segment``, ``token_source`` (``usage``: the
    provider's cumulative usage; ``words``: libpanto's word estimate), ``bin``, ``lo``,
    ``hi`` (tokens, ``lo <= tokens < hi``) and ``turns``. Turns of zero
    tokens have no place on a log axis; :func:`token_source_shares` counts
    them.
    """
    k = bins_per_decade
    return (
        _turn_counts(turns, segments).filter(pl.col("value") > 0)
        .group_by("segment", "token_source", bin=log_bin(pl.col("value"), k))
        .agg(turns=pl.col("count").sum().cast(_LEN))
        .with_columns(lo=10 ** (pl.col("bin") / k), hi=10 ** ((pl.col("bin") + 1) / k))
        .select("segment", "token_source", "bin", "lo", "hi", "turns")
        .sort("segment", "token_source", "bin")
    )


def token_source_shares(turns: pl.DataFrame | PlotCounts, segments: pl.DataFrame | None = None) -> pl.DataFrame:
    """Where turn sizes came from, per segment: turns, share and zero-token turns per ``token_source``."""
    counts = _turn_counts(turns, segments).with_columns(pl.col("value").cast(pl.Float64))
    median = distribution_of_counts(counts, ["segment", "token_source"]).select(
        "segment", "token_source", median_tokens="median")
    return (
        counts.group_by("segment", "token_source")
        .agg(turns=pl.col("count").sum().cast(_LEN),
             zero_token_turns=pl.col("count").filter(pl.col("value") == 0).sum().cast(_LEN))
        .join(median, on=["segment", "token_source"], how="left")
        .with_columns(share=pl.col("turns") / pl.col("turns").sum().over("segment"))
        .sort("segment", "token_source")
    )


def _turn_counts(turns: pl.DataFrame | PlotCounts, segments: pl.DataFrame | None) -> pl.DataFrame:
    if isinstance(turns, PlotCounts):
        return turns.turns
    return plot_counts(None, turns, segments).finished(_order_of(segments)).turns


def per_session_stats(frame: pl.DataFrame, value: str) -> pl.DataFrame:
    """Per budget: the distribution of ``value`` over the rows of a per-(session, budget) frame (e.g. a replay's)."""
    return distribution(with_segment(frame, None), value, [BUDGET, "segment"])


def replay_stats(events: pl.DataFrame | pl.LazyFrame, sessions: pl.DataFrame | pl.LazyFrame, *,
                 column_at_a_time: bool = False) -> dict[str, pl.DataFrame]:
    """What the replay's plots draw (:func:`~panto_analytics.analysis.report.build.replay_figures`): per budget, the
    :func:`distribution` of the whole turns kept at each event (``kept_turns``) and of each session's
    ``n_compactions`` and ``request_bytes``, by name. Every figure is order-free, so the rows of disjoint sets
    of sessions in any order give the same; ``column_at_a_time``: read lazy frames one column at a time
    (:func:`~panto_analytics.outcomes.group_tables.grouped`: a dataset's spilled rows).

    >>> e = pl.DataFrame({"budget": [10, 10, 20], "kept_turns": [0, 4, 2]})
    >>> s = pl.DataFrame({"budget": [10, 20], "n_compactions": [2, 1], "request_bytes": [900, 400]})
    >>> replay_stats(e, s)["kept_turns"].select("budget", "sessions", "median").rows()
    [(10, 2, 2.0), (20, 1, 2.0)]
    """
    def stats(frame: pl.DataFrame | pl.LazyFrame, value: str) -> pl.DataFrame:
        aggs = distribution_aggs(value)
        table = grouped(frame, [BUDGET], aggs, column_at_a_time=column_at_a_time)
        return table.with_columns(segment=pl.lit(ALL, pl.Enum([ALL]))).select(BUDGET, "segment", *aggs).sort(BUDGET)

    return {"kept_turns": stats(events, "kept_turns"), "n_compactions": stats(sessions, "n_compactions"),
            "request_bytes": stats(sessions, "request_bytes")}


def calibration_total(curve: pl.DataFrame, cuts: Sequence[int]) -> pl.DataFrame:
    """The calibration curve (:func:`~panto_analytics.outcomes.recorded_refetch.refetch_curve`'s rows) of the cuts
    ``cuts`` (their ``_cut``) summed after each tool call: ``calls``, ``predicted``, ``unpredicted``.

    >>> c = pl.DataFrame({"_cut": [0, 0, 1, 1], "calls": [1, 2, 1, 2], "predicted": [0, 1, 1, 1],
    ...                   "unpredicted": [1, 1, 0, 2]})
    >>> calibration_total(c, [0, 1]).rows()
    [(1, 1, 1), (2, 2, 3)]
    """
    return (curve.filter(pl.col("_cut").is_in(list(cuts)))
            .group_by("calls").agg(pl.col("predicted").sum(), pl.col("unpredicted").sum()).sort("calls"))


def calibration_points(points: pl.DataFrame) -> pl.DataFrame:
    """The left panel of the calibration plot of many cuts, from a
    :class:`~panto_analytics.outcomes.recorded_refetch.CalibrationSummary`'s ``points``: per kind of cut (``cut``)
    and point (``x``: the orphan targets at the cut; ``y``: the targets fetched again, ``series`` ``all``, or of
    them those predicted, ``predicted``), the ``count`` of cuts there, every agent's together; sorted.

    >>> p = pl.DataFrame({"source_format": ["a", "b"], "cut": ["compaction"] * 2, "orphan_targets": [4, 4],
    ...                   "refetched_targets": [1, 0], "fetched_again_targets": [2, 2], "count": [3, 5]})
    >>> calibration_points(p).select("series", "x", "y", "count").rows()
    [('all', 4, 2, 8), ('predicted', 4, 0, 5), ('predicted', 4, 1, 3)]
    """
    def at(y: str, series: str) -> pl.LazyFrame:
        return (points.lazy().group_by("cut", x=pl.col("orphan_targets"), y=pl.col(y))
                .agg(pl.col("count").sum()).with_columns(series=pl.lit(series)))

    both = pl.concat([at("fetched_again_targets", "all"), at("refetched_targets", "predicted")])
    return both.select("cut", "series", "x", "y", "count").sort("cut", "series", "x", "y").collect()


def calibration_per_cut(sums: pl.DataFrame, curve: pl.DataFrame) -> pl.DataFrame:
    """The right panel of the calibration plot of many cuts, from a
    :class:`~panto_analytics.outcomes.recorded_refetch.CalibrationSummary`'s ``sums`` and ``curve``: per agent,
    kind of cut and ``calls``, the targets fetched again so far per cut (``predicted``, ``unpredicted``: the
    summed curve over the cuts behind it), in ``curve``'s order.

    >>> s = pl.DataFrame({"source_format": ["a"], "cut": ["compaction"], "cuts": [4]})
    >>> c = pl.DataFrame({"source_format": ["a"] * 2, "cut": ["compaction"] * 2, "calls": [1, 2], "predicted": [2, 6],
    ...                   "unpredicted": [0, 1]})
    >>> calibration_per_cut(s, c).select("calls", "predicted", "unpredicted").rows()
    [(1, 0.5, 0.0), (2, 1.5, 0.25)]
    """
    keys = ["source_format", "cut"]
    return (curve.join(sums.select(*keys, "cuts"), on=keys, how="left", maintain_order="left")
            .with_columns((pl.col(c).cast(pl.Float64) / pl.col("cuts")).alias(c) for c in ("predicted", "unpredicted")))


def cost_per_session(replay_sessions: pl.DataFrame | pl.LazyFrame, value: str = "total_cost_usd") -> tuple[pl.DataFrame, float | None]:
    """Per (policy, budget): the distribution of a billed replay's cost per session, and the recorded cost's median.

    ``replay_sessions``: the session rows of ``pa.replay(..., prices=...)`` (with a ``policy`` column when
    several policies were replayed); ``value``: ``total_cost_usd`` (the simulated calls and the summarizer's)
    or ``simulated_cost_usd``. Sessions with a null cost (an unpriced model) are left out. The policy is
    the ``segment`` (``libpanto`` without a ``policy`` column); the second value is the median over the
    sessions of ``recorded_cost_usd`` (None without one), the reference line. A lazy frame (a scan of a dataset's
    spilled rows) is read a few columns at a time, its quantiles group by group: the same figures.

    >>> s = pl.DataFrame({"session_id": ["a", "b", "a", "b"], "budget": [0, 0, 8_000, 8_000],
    ...     "total_cost_usd": [1.0, 3.0, 1.5, 2.5], "recorded_cost_usd": [2.0, 4.0, 2.0, 4.0]})
    >>> stats, recorded = cost_per_session(s)
    >>> stats.select("budget", "segment", "median").rows(), recorded
    ([(0, 'libpanto', 2.0), (8000, 'libpanto', 2.0)], 3.0)
    """
    lf = replay_sessions.lazy()
    names = lf.collect_schema().names()
    policy = pl.col("policy").cast(pl.String) if "policy" in names else pl.lit("libpanto")
    frame = lf.with_columns(policy.alias("segment")).filter(pl.col(value).is_not_null())
    stats = grouped(frame, [BUDGET, "segment"], distribution_aggs(value),
                    column_at_a_time=isinstance(replay_sessions, pl.LazyFrame))
    order = pl.Enum(stats["segment"].unique(maintain_order=True).to_list())
    stats = stats.with_columns(pl.col("segment").cast(order)).sort(BUDGET, "segment")
    recorded = None
    if "recorded_cost_usd" in names:
        per_session = frame.group_by(SESSION).agg(pl.col("recorded_cost_usd").first())
        recorded = cast("float | None", per_session.select(median("recorded_cost_usd")).collect().item())
    return stats, recorded

