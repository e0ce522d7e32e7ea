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
use linear interpolation, as a box plot usually does.

>>> import polars as pl
>>> s = pl.DataFrame({"session_id": ["a", "b", "c"], "budget": [10] * 3,
...     "kept_turns": [0, 1, 3], "kept_tokens": [0, 4, 10], "n_turns": [2, 1, 3],
...     "summarized_tokens": [20, 0, 0], "active_tokens": [20, 4, 10],
...     "noop": [False, True, True], "capped": [False] * 3})
>>> kept_tokens_stats(s).select("budget", "sessions", "median", "max").rows()
[(10, 3, 4.0, 10.0)]
"""
from __future__ import annotations

from typing import cast

import polars as pl

from ..defaults import SEGMENT_KINDS
from ..frame.schema import BUDGET, SESSION
from ..models import normalized_model, session_model
from ..outcomes.group_tables import grouped
from ..policy import session_turns, sweep

__all__ = [
    "ALL", "LENGTH_BUCKETS", "OUTCOMES", "QUANTILES", "SEGMENT_KINDS", "cost_per_session",
    "distribution", "distribution_aggs", "kept_tokens_stats", "replay_stats", "kept_turns_stats",
    "log_bin", "outcome_shares", "per_segment_sweep", "per_session_stats", "session_segments", "summarized_share_stats",
    "token_source_shares",
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
    sessions, and lump the rest into ``other`` so a legend stays readable.

    >>> import polars as pl
    >>> m = pl.DataFrame({"session_id": ["a", "a", "b"], "model": ["x", "x", None],
    ...     "source_format": ["pi"] * 3})
    >>> session_segments(m, "model").rows()
    [('a', 'x'), ('b', 'unknown')]
    """
    lf = messages.lazy()
    if by == "length":
        n_turns = pl.col("n_turns")
        bucket = pl.lit(LENGTH_BUCKETS[0][1])
        for low, label in LENGTH_BUCKETS[1:]:
            bucket = pl.when(n_turns >= low).then(pl.lit(label)).otherwise(bucket)
        out = session_turns(lf).select(SESSION, segment=bucket).collect()
        order = [label for _, label in LENGTH_BUCKETS if label in set(out["segment"])]
        return out.with_columns(pl.col("segment").cast(pl.Enum(order)))
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
    out = lf.group_by(SESSION, maintain_order=True).agg(segment=value).collect()
    ranked = out.group_by("segment").len().sort(["len", "segment"], descending=[True, False])["segment"].to_list()
    keep = ranked if len(ranked) <= top else ranked[: top - 1]
    lumped = pl.when(pl.col("segment").is_in(keep)).then(pl.col("segment")).otherwise(pl.lit("other"))
    order = keep + (["other"] if len(ranked) > len(keep) else [])
    return out.with_columns(lumped.cast(pl.Enum(order)))


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


def _with_turns(splits: pl.DataFrame, segments: pl.DataFrame | None) -> pl.DataFrame:
    return with_segment(splits.lazy().filter(pl.col("n_turns") > 0).collect(), segments)


def kept_tokens_stats(splits: pl.DataFrame, segments: pl.DataFrame | None = None) -> pl.DataFrame:
    """Size of the kept verbatim suffix (tokens) per budget and segment: box statistics.

    Columns: ``budget``, ``segment``, ``sessions``, ``min``, ``p10``, ``q1``,
    ``median``, ``q3``, ``p90``, ``max``.
    """
    return distribution(_with_turns(splits, segments), "kept_tokens", [BUDGET, "segment"])


def kept_turns_stats(splits: pl.DataFrame, segments: pl.DataFrame | None = None) -> pl.DataFrame:
    """Whole turns kept verbatim per budget and segment: the same statistics as :func:`kept_tokens_stats`."""
    return distribution(_with_turns(splits, segments), "kept_turns", [BUDGET, "segment"])


def summarized_share_stats(splits: pl.DataFrame, segments: pl.DataFrame | None = None) -> pl.DataFrame:
    """Share of each session's active context that a budget summarizes, per budget and segment.

    The per-session share is ``summarized_tokens / active_tokens`` over
    sessions with active tokens; columns as :func:`kept_tokens_stats`, plus
    ``pooled``: all summarized tokens over all active tokens (the sweep
    table's ``summarized_share``), where long sessions weigh more.
    """
    frame = with_segment(splits.lazy().filter(pl.col("active_tokens") > 0).collect(), segments)
    share = pl.col("summarized_tokens") / pl.col("active_tokens")
    stats = distribution(frame, share, [BUDGET, "segment"])
    pooled = per_segment_sweep(frame).select(BUDGET, "segment", pooled="summarized_share")
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


def outcome_shares(splits: pl.DataFrame, segments: pl.DataFrame | None = None) -> pl.DataFrame:
    """Share of sessions per outcome, budget and segment (long format).

    Columns: ``budget``, ``segment``, ``outcome`` (a label from
    :data:`OUTCOMES`), ``share`` in [0, 1]. The shares are the sweep table's
    ``noop_share``, ``zero_kept_share`` and ``capped_share``.
    """
    wide = per_segment_sweep(with_segment(splits, segments))
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


def turn_size_histogram(turns: pl.DataFrame, segments: pl.DataFrame | None = None, *,
                        bins_per_decade: int = 4) -> pl.DataFrame:
    """Turns per log-spaced size bin, split by ``token_source`` (and segment).

    Columns: ``segment``, ``token_source`` (``usage``: the provider's
    cumulative usage; ``words``: libpanto's word estimate), ``bin``, ``lo``,
    ``hi`` (tokens, ``lo <= tokens < hi``) and ``turns``. Turns of zero
    tokens have no place on a log axis; :func:`token_source_shares` counts
    them.
    """
    k = bins_per_decade
    return (
        with_segment(turns.lazy().filter(pl.col("tokens") > 0).collect(), segments)
        .group_by("segment", "token_source", bin=log_bin(pl.col("tokens"), k))
        .agg(turns=pl.len())
        .with_columns(lo=10 ** (pl.col("bin") / k), hi=10 ** ((pl.col("bin") + 1) / k))
        .select("segment", "token_source", "bin", "lo", "hi", "turns")
        .sort("segment", "token_source", "bin")
    )


def token_source_shares(turns: pl.DataFrame, segments: pl.DataFrame | None = None) -> pl.DataFrame:
    """Where turn sizes came from, per segment: turns, share and zero-token turns per ``token_source``."""
    return (
        with_segment(turns, segments)
        .group_by("segment", "token_source")
        .agg(turns=pl.len(), zero_token_turns=(pl.col("tokens") == 0).sum(),
             median_tokens=pl.col("tokens").median())
        .with_columns(share=pl.col("turns") / pl.col("turns").sum().over("segment"))
        .sort("segment", "token_source")
    )


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


def cost_per_session(replay_sessions: pl.DataFrame, value: str = "total_cost_usd") -> tuple[pl.DataFrame, float | None]:
    """Per (policy, budget): the distribution of a billed replay's cost per session, and the recorded cost's median.

    ``replay_sessions``: the session rows of ``pa.replay(..., prices=...)`` (with a ``policy`` column when
    several policies were replayed); ``value``: ``total_cost_usd`` (the simulated calls and the summarizer's)
    or ``simulated_cost_usd``. Sessions with a null cost (an unpriced model) are left out. The policy is
    the ``segment`` (``libpanto`` without a ``policy`` column); the second value is the median over the
    sessions of ``recorded_cost_usd`` (None without one), the reference line.

    >>> s = pl.DataFrame({"session_id": ["a", "b", "a", "b"], "budget": [0, 0, 8_000, 8_000],
    ...     "total_cost_usd": [1.0, 3.0, 1.5, 2.5], "recorded_cost_usd": [2.0, 4.0, 2.0, 4.0]})
    >>> stats, recorded = cost_per_session(s)
    >>> stats.select("budget", "segment", "median").rows(), recorded
    ([(0, 'libpanto', 2.0), (8000, 'libpanto', 2.0)], 3.0)
    """
    policy = (pl.col("policy").cast(pl.String) if "policy" in replay_sessions.columns else pl.lit("libpanto"))
    frame = replay_sessions.with_columns(policy.alias("segment")).filter(pl.col(value).is_not_null())
    order = frame["segment"].unique(maintain_order=True).to_list()
    stats = distribution(frame.with_columns(pl.col("segment").cast(pl.Enum(order))), value, [BUDGET, "segment"])
    recorded = None
    if "recorded_cost_usd" in frame.columns:
        per_session = frame.group_by(SESSION).agg(pl.col("recorded_cost_usd").first())["recorded_cost_usd"]
        recorded = cast("float | None", per_session.median())
    return stats, recorded

