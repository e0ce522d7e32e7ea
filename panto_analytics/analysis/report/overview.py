"""The corpus at a glance and its breakdowns, from parts that add up: the same tables in memory and bucket by bucket.

Each figure of the overview (:func:`corpus_overview`) and of a breakdown
(:func:`breakdown`) is a count, a sum, a median of integers or a ranking of
counts, so a corpus, or each bucket of a dataset (whole sessions), reduces to
:class:`OverviewParts`: one row of counts and a few value-count tables
(turn sizes, context windows, triggers, compaction sizes, sessions and
messages per source format and per model), bounded by the distinct values,
not by the sessions. Parts of disjoint sets of sessions merge
(:meth:`OverviewParts.merge`) and the tables come from the merged parts
(:func:`overview_table`, :func:`breakdown_table`), so a dataset's report
(:mod:`panto_analytics.dataset`) shows the same overview as the same corpus in
memory, to the last digit. Ties in a ranking go by value, so the order does
not depend on the order the parts come in.

>>> import polars as pl
>>> import panto_analytics as pa
>>> m = pl.DataFrame({"session_id": ["a", "a", "b"], "seq": [0, 1, 0], "role": ["user", "assistant", "user"],
...     "words": [3, 5, 2], "has_tool_result": [False] * 3, "has_summary": [False] * 3,
...     "input": [None, 100, None], "output": [None, 20, None], "cache_read": [None, 0, None],
...     "cache_write": [None, 0, None], "source_format": ["canonical"] * 3, "model": [None, "m", None]},
...     schema_overrides={c: pl.UInt32 for c in ("input", "output", "cache_read", "cache_write")})
>>> whole = overview_parts(m, pa.turns(m), pa.splits(m, [0]))
>>> halves = [overview_parts(h, pa.turns(h), pa.splits(h, [0])) for h in m.partition_by("session_id")]
>>> overview_table(OverviewParts.merge(halves)).rows == overview_table(whole).rows
True
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

import polars as pl

from ...errors import IngestReport
from ...frame.expressions import counted_quantile
from ...frame.schema import BUDGET, ROLE, SESSION
from ...models import normalized_model, session_model
from ..formatting import format_tokens
from .model import Table

__all__ = ["BREAKDOWNS", "OverviewParts", "breakdown", "breakdown_counts", "breakdown_table", "corpus_overview",
           "median_of_counts", "overview_parts", "overview_table"]

#: The breakdowns a report shows: heading and column.
BREAKDOWNS = {"source format": "source_format", "model": "model"}

#: The counts of :class:`OverviewParts`, summed when parts merge.
_COUNTS = ("messages", "files", "api_calls", "summaries", "sessions_with_summary", "turns", "usage", "words",
           "split_sessions", "with_turns", "capped", "recorded_api_calls", "compactions")


@dataclass
class OverviewParts:
    """What the overview and the breakdowns are made of, for a set of whole sessions (see the module docstring).

    ``counts``: one value per name of ``_COUNTS`` (``recorded_api_calls`` None without a sessions table that
    records them); the others: ``(value, count)`` tables (``breakdowns``: per column of :data:`BREAKDOWNS`,
    ``(value, sessions, messages)``); ``with_compactions``: whether a compactions table was given."""

    counts: dict[str, int | None]
    turn_tokens: pl.DataFrame
    windows: pl.DataFrame | None
    triggers: pl.DataFrame | None
    tokens_before: pl.DataFrame | None
    breakdowns: dict[str, pl.DataFrame] = field(default_factory=dict)

    @classmethod
    def merge(cls, parts: Sequence[OverviewParts]) -> OverviewParts:
        """The parts of the union of disjoint sets of sessions."""
        def add(frames: list[pl.DataFrame | None], keys: list[str]) -> pl.DataFrame | None:
            given = [f for f in frames if f is not None]
            if not given:
                return None
            values = [c for c in given[0].columns if c not in keys]
            return pl.concat(given).group_by(keys).agg(pl.col(values).sum()).sort(keys, nulls_last=True)

        counts: dict[str, int | None] = {}
        for name in _COUNTS:
            values = [p.counts[name] for p in parts if p.counts.get(name) is not None]
            counts[name] = sum(cast("list[int]", values)) if values else None
        first = parts[0]
        return cls(counts, cast(pl.DataFrame, add([p.turn_tokens for p in parts], ["tokens"])),
                   add([p.windows for p in parts], ["context_window"]), add([p.triggers for p in parts], ["trigger"]),
                   add([p.tokens_before for p in parts], ["tokens_before"]),
                   {c: cast(pl.DataFrame, add([p.breakdowns[c] for p in parts], [c])) for c in first.breakdowns})


def _value_counts(frame: pl.DataFrame, column: str) -> pl.DataFrame:
    return frame.lazy().group_by(column).agg(count=pl.len().cast(pl.UInt64)).sort(column, nulls_last=True).collect()


def overview_parts(messages: pl.DataFrame, turns: pl.DataFrame, splits: pl.DataFrame, *,
                   sessions: pl.DataFrame | None = None, compactions: pl.DataFrame | None = None) -> OverviewParts:
    """The :class:`OverviewParts` of a corpus (``splits``: at least its smallest budget's rows)."""
    m = messages.lazy().select(
        messages=pl.len(),
        files=pl.col("file").n_unique() if "file" in messages.columns else pl.lit(0),
        api_calls=((pl.col(ROLE) == "assistant") & pl.col("input").is_not_null()).sum(),
        summaries=pl.col("has_summary").sum(),
        sessions_with_summary=pl.col(SESSION).filter(pl.col("has_summary")).n_unique(),
    ).collect().row(0, named=True)
    t = turns.lazy().select(turns=pl.len(), usage=(pl.col("token_source") == "usage").sum(),
                            words=(pl.col("token_source") == "words").sum()).collect().row(0, named=True)
    first_budget = splits.lazy().filter(pl.col(BUDGET) == pl.col(BUDGET).min())
    s = first_budget.select(split_sessions=pl.len(), with_turns=(pl.col("n_turns") > 0).sum(),
                            capped=pl.col("capped").sum()).collect().row(0, named=True)
    recorded = (int(sessions["api_calls"].sum()) if sessions is not None and "api_calls" in sessions.columns
                else None)
    counts: dict[str, int | None] = {**m, **t, **s, "recorded_api_calls": recorded,
                                     "compactions": None if compactions is None else len(compactions)}
    windows = (_value_counts(sessions.select(pl.col("context_window").drop_nulls()), "context_window")
               if sessions is not None and "context_window" in sessions.columns else None)
    triggers = (_value_counts(compactions, "trigger") if compactions is not None and "trigger" in compactions.columns
                else None)
    before = (_value_counts(compactions.select(pl.col("tokens_before").drop_nulls()), "tokens_before")
              if compactions is not None and "tokens_before" in compactions.columns else None)
    return OverviewParts({k: (None if v is None else int(v)) for k, v in counts.items()},
                         _value_counts(turns.select("tokens"), "tokens"), windows, triggers, before,
                         {c: breakdown_counts(messages, c, sessions=sessions) for c in BREAKDOWNS.values()})


def median_of_counts(counts: pl.DataFrame, value: str) -> float | None:
    """The median (:func:`~panto_analytics.frame.expressions.median`'s, from the counts:
    :func:`~panto_analytics.frame.expressions.counted_quantile`) of the values of a ``(value, count)`` table;
    None when it counts nothing.

    >>> median_of_counts(pl.DataFrame({"v": [1, 4, 9], "count": [1, 1, 2]}), "v")
    6.5
    """
    c = counts.lazy().filter(pl.col(value).is_not_null()).sort(value)
    return cast("float | None", c.select(counted_quantile(0.5, value)).collect().item())


def overview_table(parts: OverviewParts, *, ingest: IngestReport | None = None) -> Table:
    """The corpus at a glance (:func:`corpus_overview`) from its :class:`OverviewParts`."""
    c = parts.counts
    n_turns = max(c["turns"] or 0, 1)
    calls = (f"{c['recorded_api_calls']:,} API calls" if c["recorded_api_calls"] is not None
             else f"{c['api_calls']:,} assistant messages with provider usage")
    median = median_of_counts(parts.turn_tokens, "tokens")
    usage, words = c["usage"] or 0, c["words"] or 0
    rows = [
        ["sessions", f"{c['split_sessions']:,}", f"{c['with_turns']:,} with at least one turn"],
        ["messages", f"{c['messages']:,}", calls],
        ["turns", f"{c['turns']:,}", f"median {format_tokens(median)} tokens per turn" if c["turns"] else ""],
        ["turns sized from provider usage", f"{usage / n_turns:.1%}", _count(usage, "turn")],
        ["turns sized from word estimates", f"{words / n_turns:.1%}",
         f"{_count(words, 'turn')} (no usage on the turn's final assistant message)"],
        ["compaction summaries", f"{c['summaries']:,}",
         f"in {c['sessions_with_summary']:,} sessions; only the turns after a session's latest one are active"
         if c["summaries"] else "none: every session is active from its start"],
    ]
    if c["compactions"]:
        rows.append(["recorded compaction events", f"{c['compactions']:,}", _compaction_detail(parts)])
    if parts.windows is not None and parts.windows.height:
        top = parts.windows.sort(["count", "context_window"], descending=[True, False]).head(5)
        rows.append(["context windows recorded", f"{int(parts.windows['count'].sum()):,}",
                     ", ".join(f"{format_tokens(w)}: {n}" for w, n in top.iter_rows())])
    if c["capped"]:
        rows.append(["sessions over 4096 turns", f"{c['capped']:,}", "libpanto records only the first 4096 turn starts"])
    if ingest is not None:
        files = ingest.files or c["files"] or 0
        rows.insert(0, ["files", f"{files:,}", ""])
        rows.append(["invalid lines skipped", f"{ingest.n_skipped:,}",
                     "; ".join(f"{r['lines']} x {r['reason']} in {r['file']}"
                               for r in ingest.skipped_frame().head(5).iter_rows(named=True))])
        ignored = sum(ingest.ignored.values())
        if ignored:
            rows.append(["non-conversation records ignored", f"{ignored:,}",
                         ", ".join(f"{r['records']} {r['record_type']}" for r in
                                   ingest.ignored_frame().sort("records", descending=True).head(6).iter_rows(named=True))])
    return Table(["", "count", "detail"], rows, left=(0, 2))


def corpus_overview(messages: pl.DataFrame, turns: pl.DataFrame, splits: pl.DataFrame, *,
                    ingest: IngestReport | None = None, sessions: pl.DataFrame | None = None,
                    compactions: pl.DataFrame | None = None) -> Table:
    """The corpus at a glance: files, sessions, messages, turns and where their sizes came from, compactions.

    ``sessions`` and ``compactions`` (the tables of :mod:`panto_analytics.ingest.corpus`)
    add API calls as the formats record them, context windows and recorded
    compaction events; without them the message frame says what it can.
    """
    return overview_table(overview_parts(messages, turns, splits, sessions=sessions, compactions=compactions),
                          ingest=ingest)


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _compaction_detail(parts: OverviewParts) -> str:
    out = []
    if parts.triggers is not None:
        by = parts.triggers.sort(["count", "trigger"], descending=[True, False], nulls_last=True)
        out.append(", ".join(f"{n:,} {t if t is not None else 'without a recorded trigger'}"
                             for t, n in by.iter_rows()))
    if parts.tokens_before is not None:
        median = median_of_counts(parts.tokens_before, "tokens_before")
        if median is not None:
            out.append(f"median {format_tokens(median)} tokens before")
    return "; ".join(out)


def breakdown_counts(messages: pl.DataFrame, column: str, *, sessions: pl.DataFrame | None = None) -> pl.DataFrame:
    """Sessions and messages per value of ``column`` (null: ``"unknown"``), each session once, every value: what
    :func:`breakdown_table` ranks. A session's value is its first message's, except ``model``: the sessions
    table's (normalized, the session's own), or without ``sessions`` the same from the messages
    (:func:`~panto_analytics.models.session_model`), so that one model is one row and ``<synthetic>`` none."""
    if column == "model" and sessions is not None and "model" in sessions.columns:
        per_session = sessions.lazy().select(SESSION, pl.col("model").cast(pl.String))
    elif column == "model":
        per_session = messages.lazy().group_by(SESSION).agg(normalized_model(session_model("model")))
    else:
        per_session = messages.lazy().group_by(SESSION).agg(pl.col(column).first().cast(pl.String))
    sizes = messages.lazy().group_by(SESSION).agg(messages=pl.len())
    return (per_session.join(sizes, on=SESSION, how="left")
            .group_by(pl.col(column).fill_null("unknown"))
            .agg(sessions=pl.len().cast(pl.UInt32), messages=pl.col("messages").fill_null(0).sum().cast(pl.UInt32))
            .sort(column).collect())


def breakdown_table(counts: pl.DataFrame, column: str, *, top: int = 10) -> Table:
    """The ``top`` values of :func:`breakdown_counts` by sessions (ties by value), the rest as ``other``."""
    frame = counts.sort(["sessions", column], descending=[True, False])
    if len(frame) > top:
        rest = frame.slice(top - 1).select(pl.lit("other").alias(column), pl.col("sessions").sum(),
                                           pl.col("messages").sum())
        frame = pl.concat([frame.head(top - 1), rest.cast(frame.schema)])
    return Table.from_frame(frame)


def breakdown(messages: pl.DataFrame, column: str, *, top: int = 10, sessions: pl.DataFrame | None = None) -> Table:
    """Sessions and messages per value of ``column`` (e.g. ``source_format``, ``model``), each session once
    (:func:`breakdown_counts`), the ``top`` values (:func:`breakdown_table`)."""
    return breakdown_table(breakdown_counts(messages, column, sessions=sessions), column, top=top)
