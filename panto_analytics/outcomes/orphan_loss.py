"""What a compaction loses: orphan references among the tool calls that follow it.

A compaction turns a prefix of the conversation into a summary. The tool
calls the agent makes next show what that cost it: a call that reaches for
a target (a file, a search, a command, a URL; see
:mod:`~panto_analytics.frame.tool_targets`) whose content the context held
only in the summarized part must fetch it again.

Every compaction is described by a *cut* (:data:`CUT_SCHEMA`): ``after_seq``,
the first message after it; ``kept_start``/``kept_end``, the messages kept
verbatim (a half-open range, empty when nothing is kept); ``restore``, how
many recently touched files the agent puts back by itself; messages before
``after_seq`` outside the kept range are summarized. A replay event
(:func:`replay_cuts`) is ``after_seq = trigger_seq + 1``, kept
``[prefix_end, trigger_seq + 1)``; a recorded compaction (:func:`recorded_cuts`)
is what the agent recorded (``first_kept_seq`` .. ``kept_end_seq``).

For each cut, the *window* is the next ``horizon`` tool calls (calls of
messages at or after ``after_seq``, in order; fewer at the session's end).
A reference in the window is an **orphan** when it is the first touch of
its target after the cut (nothing read or wrote it since), its target was
touched before the cut, and that last touch lies in the summarized part (not
in the kept range), and the agent did not restore the target itself. A
clearing edit (a policy that clears old tool results in place) keeps
everything but the results it cleared: there the last touch also counts as
summarized when the edit cleared its call's result and the target's content
was in that result (a read, a search, a command, a page: not a write, whose
content is its input, unless the edit cleared the inputs too). Then:

- ``window_calls``: calls in the window; ``orphan_calls``: calls with at least
  one orphan reference (``kind`` in ``kinds``, default every kind but
  ``other``); ``orphan_rate = orphan_calls / window_calls`` (null for an
  empty window);
- ``refetch_calls``: calls in the window that read or fetch an *orphan
  target* again (a target whose last touch before the cut is summarized and
  not restored), each of them, not only the first: paging through a file in
  ten reads is ten calls; ``refetch_tokens``: their results, in tokens (what
  the agent pays to fetch them again);
- ``repeat_reads``: calls in the window with a read or fetch whose target's
  last touch before it is a read or fetch before the cut (a re-read with no
  write between): the observed re-fetch, whatever was kept;
  ``refetched_orphans``: orphan calls among them.

What agents restore (:data:`RESTORE`): Claude Code re-reads up to five
recently read files after its summary (``services/compact/compact.ts``:
``POST_COMPACT_MAX_FILES_TO_RESTORE = 5``, from ``readFileState``, which Read
and the edit tools update); those files are not orphans under the
``claude-code`` policy or after a recorded Claude Code compaction. The other
agents restore no tool result (``docs/loss.md`` cites each).

>>> import polars as pl
>>> from panto_analytics.frame.tool_targets import key_of
>>> a, b = key_of("file:/a"), key_of("file:/b")
>>> refs = pl.DataFrame({"session_id": ["s"] * 4, "seq": [1, 3, 9, 11], "call": [0, 1, 2, 3], "key": [a, b, a, b],
...                      "kind": ["read"] * 4, "file": [True] * 4, "file_tool": [True] * 4, "tokens": [100, 50, 100, 50]})
>>> cuts = pl.DataFrame({"session_id": ["s"], "after_seq": [8], "kept_start": [3], "kept_end": [8], "restore": [0]})
>>> cut_loss(refs, cuts).select("window_calls", "orphan_calls", "refetch_calls", "refetch_tokens").rows()
[(2, 1, 1, 100)]
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import polars as pl

from ..frame.schema import BUDGET, REF_KINDS, SEQ, SESSION
from ..frame.tool_targets import is_lookup, references
from .group_tables import grouped

__all__ = [
    "CLEARED_CUT_COLUMNS", "CUT_SCHEMA", "DEFAULT_HORIZON", "LOSS_COLUMNS", "ORPHAN_KINDS", "REFETCH_KINDS", "RESTORE",
    "RESTORE_FILE_TOKENS", "Loss", "cut_loss",
    "loss", "Replayed", "orphan_rate", "recorded_cuts", "replay_cuts", "restored_files", "summarize_loss",
    "summarized_touch", "with_loss_columns",
]


#: How many tool calls after a compaction are looked at.
DEFAULT_HORIZON = 20

#: The kinds of reference that can be orphans (``other`` touches nothing).
ORPHAN_KINDS: tuple[str, ...] = tuple(k for k in REF_KINDS if k != "other")

#: Files an agent restores by itself after its compaction, per policy name (and per recording format): Claude
#: Code's ``POST_COMPACT_MAX_FILES_TO_RESTORE``.
RESTORE: dict[str, int] = {"claude-code": 5}

#: Claude Code's ``POST_COMPACT_MAX_TOKENS_PER_FILE``: a file larger than this comes back as its name only
#: (``compact_file_reference``), not restored. Its total, ``POST_COMPACT_TOKEN_BUDGET`` (50,000), cannot bind
#: under this cap: five files of at most 5,000 tokens each.
RESTORE_FILE_TOKENS = 5_000

#: A cut: where a compaction is, what it kept, what the agent restores; other columns are carried through.
CUT_SCHEMA: dict[str, pl.DataType] = {
    "after_seq": pl.Int64(), "kept_start": pl.Int64(), "kept_end": pl.Int64(), "restore": pl.Int64(),
}

#: The loss columns of a cut, and (summed, with the rate pooled) of a (session, budget, policy).
LOSS_COLUMNS = ("window_calls", "orphan_calls", "orphan_rate", "refetch_calls", "refetch_tokens", "repeat_reads",
                "refetched_orphans")

#: The kinds of reference that fetch a target's content again (a re-fetch of an orphan target).
REFETCH_KINDS = ("read", "fetch")


def orphan_rate(orphans: pl.Expr | str = "orphan_calls", calls: pl.Expr | str = "window_calls") -> pl.Expr:
    """``orphans / calls``, null where there is no call.

    >>> pl.DataFrame({"orphan_calls": [1, 0], "window_calls": [4, 0]}).select(orphan_rate()).to_series().to_list()
    [0.25, None]
    """
    o = pl.col(orphans) if isinstance(orphans, str) else orphans
    c = pl.col(calls) if isinstance(calls, str) else calls
    return pl.when(c > 0).then(o.cast(pl.Float64) / c.cast(pl.Float64)).alias("orphan_rate")


def _touches(refs: pl.LazyFrame) -> pl.LazyFrame:
    """Each reference with the previous call that touched its target in the session (``prev_seq``, ``prev_call``;
    null: none) and ``prev_lookup``: whether that call fetched the target's content and wrote none of it.

    A call may touch a target twice (``sed -i`` reads and writes its file): the previous touch is the previous
    *call*, all its references of the target together, so that neither the order of a call's own rows nor a
    row of the same call decides (a re-read with a write in that call is no re-read with no write between).
    """
    calls = (refs.group_by(SESSION, "key", "call")
             .agg(_seq=pl.col(SEQ).first(), _lookup=is_lookup("kind").any() & (pl.col("kind") != "write").all())
             .sort(SESSION, "key", "call")
             .select(SESSION, "key", "call",
                     prev_seq=pl.col("_seq").shift(1).over(SESSION, "key").cast(pl.Int64),
                     prev_call=pl.col("call").shift(1).over(SESSION, "key").cast(pl.Int64),
                     prev_lookup=pl.col("_lookup").shift(1).over(SESSION, "key")))
    return refs.join(calls, on=[SESSION, "key", "call"], how="left", maintain_order="left")


def _first_calls(refs: pl.LazyFrame, cuts: pl.LazyFrame) -> pl.LazyFrame:
    """Each cut with ``first_call``: the session's first call at or after ``after_seq`` (the count of calls before)."""
    # Per message with calls: one past its last call (a message's calls share its seq: one row per seq).
    calls = refs.group_by(SESSION, pl.col(SEQ).cast(pl.Int64)).agg(before=pl.col("call").max().cast(pl.Int64) + 1)
    # The last call before after_seq: its ordinal + 1 is the first call at or after it (0 when none).
    probe = cuts.with_columns(_probe=pl.col("after_seq") - 1).sort("_probe")
    return (probe.join_asof(calls.sort(SEQ), left_on="_probe", right_on=SEQ, by=SESSION, strategy="backward",
                             check_sortedness=False)
            .with_columns(first_call=pl.col("before").fill_null(0)).drop("_probe", SEQ, "before"))


def cut_loss(refs: pl.DataFrame | pl.LazyFrame, cuts: pl.DataFrame | pl.LazyFrame, *,
             horizon: int = DEFAULT_HORIZON, kinds: Sequence[str] = ORPHAN_KINDS) -> pl.DataFrame:
    """The loss of each cut (:data:`LOSS_COLUMNS` added to ``cuts``' columns, in ``cuts``' order).

    ``refs`` is a references table (:data:`~panto_analytics.frame.schema.REFERENCE_SCHEMA`);
    ``cuts`` has ``session_id`` and :data:`CUT_SCHEMA`'s columns (any other
    column is carried through). The rules are in the module docstring.
    """
    if horizon < 0:
        raise ValueError(f"horizon must be >= 0, got {horizon}")
    refs_lf = refs.lazy().with_columns(pl.col(SESSION).cast(pl.String))
    base = (cuts.lazy().with_row_index("_cut").with_columns(pl.col(SESSION).cast(pl.String).alias("_sid"))
            .with_columns(pl.col(c).cast(t) for c, t in CUT_SCHEMA.items()))
    extra = [c for c in CLEARED_CUT_COLUMNS if c in base.collect_schema().names()]
    recorded = ["restored_keys"] if "restored_keys" in base.collect_schema().names() else []
    keyed = base.select("_cut", pl.col("_sid").alias(SESSION), *CUT_SCHEMA, *extra, *recorded)
    located = _first_calls(refs_lf, keyed.drop(recorded))
    window = (located.with_columns(call=pl.int_ranges(pl.col("first_call"), pl.col("first_call") + horizon))
              .explode("call").drop_nulls("call").with_columns(pl.col("call").cast(pl.UInt32)))
    touches = _touches(refs_lf.with_columns(pl.col("call").cast(pl.UInt32)))
    hits = _last_touch_before(window.join(touches, on=[SESSION, "call"], how="inner"), touches)
    before = pl.col("prev_seq").is_not_null() & (pl.col("prev_seq") < pl.col("after_seq"))
    summarized = summarized_touch("last_seq") | _cleared_touch(extra)
    hits = hits.with_columns(
        _orphan=before & summarized & pl.col("kind").cast(pl.String).is_in(list(kinds)),
        _refetch=summarized & pl.col("kind").cast(pl.String).is_in([k for k in kinds if k in REFETCH_KINDS]),
        _repeat=is_lookup("kind") & before & pl.col("prev_lookup").fill_null(False) & (pl.col("kind") != "run"))
    restored = restored_files(touches, keyed)
    hits = (hits.join(restored, on=["_cut", "key"], how="left")
            .with_columns(pl.col("_orphan", "_refetch") & pl.col("restored").is_null()).drop("restored"))
    per_call = (hits.group_by("_cut", "call")
                .agg(orphan=pl.col("_orphan").any(), refetch=pl.col("_refetch").any(), repeat=pl.col("_repeat").any(),
                     tokens=pl.col("tokens").max().fill_null(0).cast(pl.UInt64)))
    per_cut = per_call.group_by("_cut").agg(
        window_calls=pl.len().cast(pl.UInt32),
        orphan_calls=pl.col("orphan").sum().cast(pl.UInt32),
        refetch_calls=pl.col("refetch").sum().cast(pl.UInt32),
        refetch_tokens=pl.col("tokens").filter("refetch").sum().cast(pl.UInt64),
        repeat_reads=pl.col("repeat").sum().cast(pl.UInt32),
        refetched_orphans=(pl.col("orphan") & pl.col("repeat")).sum().cast(pl.UInt32))
    out = (base.join(per_cut, on="_cut", how="left", maintain_order="left")
           .with_columns(pl.col(c).fill_null(0) for c in LOSS_COLUMNS if c != "orphan_rate")
           .with_columns(orphan_rate())
           .drop("_cut", "_sid"))
    cols = [c for c in out.collect_schema().names() if c not in LOSS_COLUMNS] + list(LOSS_COLUMNS)
    return out.select(cols).collect()


#: Optional cut columns of a clearing edit (a clearing policy's events, :func:`replay_cuts`): ``cleared_calls``
#: (the session's tool calls before it had their results cleared; null: none), ``cleared_excluded`` (the kinds it
#: never clears, as ``/read/write/``) and ``cleared_inputs`` (their inputs were cleared too).
CLEARED_CUT_COLUMNS = ("cleared_calls", "cleared_excluded", "cleared_inputs")

#: The kinds whose target's content is in the call's result (a write's is in its input).
_RESULT_KINDS = ("read", "run", "fetch")


def _cleared_touch(columns: Sequence[str]) -> pl.Expr:
    """Whether a clearing edit took the last touch's content out of the context: its call (``last_call``) is
    before ``cleared_calls``, touched the target as no kind the edit leaves alone, and the content was in its
    result (it read, searched, ran or fetched the target, even if it also wrote it), or in its input too when the
    edit clears inputs. False for a compaction's cut (no such columns)."""
    if "cleared_calls" not in columns:
        return pl.lit(False)

    def touched(kind: str) -> pl.Expr:  # the last call touched the target as ``kind`` (one of ``/read/write/``)
        return pl.col("last_kinds").str.contains(f"/{kind}/", literal=True)

    excluded = pl.any_horizontal(touched(k) & pl.col("cleared_excluded").str.contains(f"/{k}/", literal=True)
                                 for k in REF_KINDS)
    content = pl.any_horizontal(touched(k) for k in _RESULT_KINDS) | pl.col("cleared_inputs")
    return ((pl.col("last_call") < pl.col("cleared_calls")) & ~excluded & content).fill_null(False)


def summarized_touch(seq: str = "last_seq") -> pl.Expr:
    """Whether a target's last touch before a cut (its ``seq``, null: none) lies in the summarized part: before
    ``after_seq`` (it is the last touch before the cut) and outside the kept range ``[kept_start, kept_end)``.

    >>> pl.DataFrame({"last_seq": [None, 2, 5], "kept_start": [4, 4, 4], "kept_end": [8, 8, 8]}).select(
    ...     summarized_touch()).to_series().to_list()
    [False, True, False]
    """
    s = pl.col(seq)
    kept = pl.col("kept_start").is_not_null() & (s >= pl.col("kept_start")) & (s < pl.col("kept_end"))
    return (s.is_not_null() & ~kept).fill_null(False)


def _last_touch_before(hits: pl.LazyFrame, touches: pl.LazyFrame) -> pl.LazyFrame:
    """``hits`` (window references, with their cut's ``after_seq``) with ``last_seq``: the seq of the last touch of
    the same target before the cut (null: none), found by an as-of join on seq per (session, key), and that
    touch's ``last_call`` (the latest call of that message touching it) and ``last_kinds``: every kind that call
    touched the target as, ``/read/write/`` (a call may read and write one file: no row's order decides)."""
    probe = hits.with_columns(_probe=pl.col("after_seq") - 1).sort("_probe")
    right = (touches.group_by(SESSION, "key", _at=pl.col(SEQ).cast(pl.Int64))
             .agg(last_call=pl.col("call").max().cast(pl.Int64),
                  last_kinds=pl.lit("/") + pl.col("kind").filter(pl.col("call") == pl.col("call").max())
                  .cast(pl.String).unique().sort().str.join("/") + pl.lit("/")).sort("_at"))
    return (probe.join_asof(right, left_on="_probe", right_on="_at", by=[SESSION, "key"], strategy="backward",
                            check_sortedness=False)
            .rename({"_at": "last_seq"}).drop("_probe"))


def restored_files(touches: pl.LazyFrame, cuts: pl.LazyFrame) -> pl.LazyFrame:
    """The files the agent restores at each cut, with their content (``_cut``, ``key``, ``restored``).

    Where the cut has a recorded list (``restored_keys``, not null: what the recording shows attached after the
    compaction), those files. Elsewhere Claude Code's rule (``createPostCompactFileAttachments``): of the files
    its file tools read or wrote before the cut (``file_tool``; not what a shell command printed), leaving out
    those a file tool read in the kept range, the ``restore`` touched last (the latest call first; within a
    call, the larger key); a file whose largest read before the cut exceeds :data:`RESTORE_FILE_TOKENS` takes its
    slot but comes back as its name only, not restored (a file never read: assumed to fit).

    ``touches`` is a references table (one without ``file_tool``, built by hand: every file reference counts as
    a file tool's), ``cuts`` has ``_cut``, ``session_id`` and :data:`CUT_SCHEMA`'s columns.
    """
    if "file_tool" not in touches.collect_schema().names():
        touches = touches.with_columns(file_tool=pl.lit(True))
    names = cuts.collect_schema().names()
    recorded = pl.col("restored_keys").is_not_null() if "restored_keys" in names else pl.lit(False)
    cuts = cuts.with_columns(_recorded=recorded)
    from_recording = (cuts.filter("_recorded").select("_cut", key=pl.col("restored_keys")).explode("key")
                      .drop_nulls("key").select("_cut", pl.col("key").cast(pl.UInt64), restored=pl.lit(True))
                      if "restored_keys" in names else None)
    wanted = (cuts.filter(~pl.col("_recorded") & (pl.col("restore") > 0))
              .select("_cut", SESSION, *CUT_SCHEMA).unique())
    before = (wanted.join(touches.filter(pl.col("file")).select(SESSION, "key", "call", SEQ, "kind", "file_tool",
                                                                "tokens"), on=SESSION)
              .filter(pl.col(SEQ).cast(pl.Int64) < pl.col("after_seq")))
    in_kept = (pl.col("kept_start").is_not_null() & (pl.col(SEQ).cast(pl.Int64) >= pl.col("kept_start"))
               & (pl.col(SEQ).cast(pl.Int64) < pl.col("kept_end")))
    ranked = (before.group_by("_cut", "key")
              .agg(last=pl.col("call").filter(pl.col("file_tool") & pl.col("kind").is_in(["read", "write"])).max(),
                   size=pl.col("tokens").filter(pl.col("kind") == "read").max(),
                   shown=(pl.col("file_tool") & (pl.col("kind") == "read") & in_kept).any(),
                   restore=pl.col("restore").first())
              .filter(pl.col("last").is_not_null() & ~pl.col("shown"))
              .sort("_cut", "last", "key", descending=[False, True, True])
              .filter(pl.int_range(pl.len()).over("_cut") < pl.col("restore"))
              .filter(pl.col("size").is_null() | (pl.col("size") <= RESTORE_FILE_TOKENS))
              .select("_cut", "key", restored=pl.lit(True)))
    return ranked if from_recording is None else pl.concat([ranked, from_recording], how="vertical_relaxed")


# -- cuts ---------------------------------------------------------------------------------------------


def replay_cuts(events: pl.DataFrame | pl.LazyFrame, *, restore: dict[str, int] | None = None) -> pl.LazyFrame:
    """The cuts of a replay's events: after the trigger call, kept ``[prefix_end, trigger_seq + 1)``; a clearing
    edit's (events with ``cleared_calls``, :data:`CLEARED_CUT_COLUMNS`) from its call on, everything kept but what
    it cleared.

    ``restore`` maps a policy name to the files its agent restores (default :data:`RESTORE`);
    events without a ``policy`` column are libpanto's.
    """
    lf = events.lazy()
    if "policy" not in lf.collect_schema().names():
        lf = lf.with_columns(policy=pl.lit("libpanto"))
    table = RESTORE if restore is None else restore
    # A staged policy's agent is its last stage's.
    name = pl.col("policy").cast(pl.String).str.split("+").list.last().str.split(":").list.first()
    # A clearing edit applies to its call's own prompt: the call's tool calls are the first it governs.
    after = pl.col("trigger_seq").cast(pl.Int64) + 1
    if "cleared_calls" in lf.collect_schema().names():
        after = after - pl.col("cleared_calls").is_not_null().cast(pl.Int64)
    return lf.with_columns(
        after_seq=after,
        kept_start=pl.col("prefix_end").cast(pl.Int64),
        kept_end=pl.col("trigger_seq").cast(pl.Int64) + 1,
        restore=name.replace_strict(list(table), list(table.values()), default=0, return_dtype=pl.Int64))


def recorded_cuts(compactions: pl.DataFrame | pl.LazyFrame, sessions: pl.DataFrame | pl.LazyFrame, *,
                  restore: dict[str, int] | None = None) -> pl.LazyFrame:
    """The cuts of the compactions agents recorded (:data:`~panto_analytics.frame.schema.COMPACTIONS_SCHEMA`).

    After the compaction: the first message past both the summary and what
    the agent compacted (``max(anchor_seq + 1, trigger_seq)``); kept: the
    recorded ``first_kept_seq`` .. ``kept_end_seq``. ``sessions`` gives each
    session's ``source_format``, whose agent restores as :data:`RESTORE` says.
    """
    table = RESTORE if restore is None else restore
    formats = sessions.lazy().select(pl.col(SESSION).cast(pl.String), pl.col("source_format").cast(pl.String))
    return (compactions.lazy().with_columns(pl.col(SESSION).cast(pl.String))
            .join(formats, on=SESSION, how="left", maintain_order="left")
            .with_columns(after_seq=pl.max_horizontal(pl.col("anchor_seq").cast(pl.Int64) + 1,
                                                      pl.col("trigger_seq").cast(pl.Int64)),
                          kept_start=pl.col("first_kept_seq").cast(pl.Int64),
                          kept_end=pl.col("kept_end_seq").cast(pl.Int64),
                          restore=pl.col("source_format").replace_strict(list(table), list(table.values()),
                                                                         default=0, return_dtype=pl.Int64)))


# -- per (session, budget, policy) ------------------------------------------------------------------


class Replayed(Protocol):
    """What :func:`loss` reads of a replay (:class:`~panto_analytics.policy.Replay`): its events and sessions."""

    @property
    def events(self) -> pl.DataFrame: ...

    @property
    def sessions(self) -> pl.DataFrame: ...


@dataclass(frozen=True)
class Loss:
    """What :func:`loss` returns: ``events`` (one row per compaction event) and ``sessions`` (one row per
    (policy, session, budget) of the replay, zeros where nothing compacted)."""

    events: pl.DataFrame
    sessions: pl.DataFrame
    horizon: int


def summarize_loss(events: pl.DataFrame | pl.LazyFrame, keys: Iterable[str], *,
                   column_at_a_time: bool = False) -> pl.DataFrame:
    """The events' loss summed per ``keys`` (in the order the groups first appear); the rate pooled (orphan
    calls over window calls). Sums of integers, so ``column_at_a_time``
    (:func:`~panto_analytics.outcomes.group_tables.grouped`) gives the same table."""
    sums = {c: pl.col(c).sum() for c in LOSS_COLUMNS if c != "orphan_rate"}
    return grouped(events, list(keys), sums, column_at_a_time=column_at_a_time).with_columns(orphan_rate())


def with_loss_columns(table: pl.DataFrame, events: pl.DataFrame | pl.LazyFrame, *,
                      column_at_a_time: bool = False) -> pl.DataFrame:
    """A replay's summary table (one row per budget, or per policy and budget) with the loss of its events:
    ``window_calls``, ``orphan_calls``, ``orphan_rate`` (pooled), ``refetch_calls``, ``refetch_tokens`` (0 where
    nothing compacted).
    ``events`` may be lazy (a dataset's, read back from Parquet; ``column_at_a_time``: as in
    :func:`summarize_loss`).

    >>> t = pl.DataFrame({"budget": [8, 20]})
    >>> e = pl.DataFrame({"budget": [8, 8], "window_calls": [10, 10], "orphan_calls": [1, 3], "refetch_calls": [1, 4],
    ...                   "refetch_tokens": [5, 7], "repeat_reads": [0, 0], "refetched_orphans": [0, 0],
    ...                   "orphan_rate": [0.1, 0.3]})
    >>> with_loss_columns(t, e).rows()
    [(8, 20, 4, 0.2, 5, 12), (20, 0, 0, None, 0, 0)]
    """
    keys = [k for k in ("policy", BUDGET) if k in table.columns]
    summed = summarize_loss(events, keys, column_at_a_time=column_at_a_time).select(
        *keys, "window_calls", "orphan_calls", "orphan_rate", "refetch_calls", "refetch_tokens")
    summed = summed.cast({k: table.schema[k] for k in keys})
    return (table.join(summed, on=keys, how="left", maintain_order="left")
            .with_columns(pl.col(c).fill_null(0) for c in ("window_calls", "orphan_calls", "refetch_calls",
                                                           "refetch_tokens")))


def loss(messages: pl.DataFrame | pl.LazyFrame, replay: Replayed, *, horizon: int = DEFAULT_HORIZON,
         kinds: Sequence[str] = ORPHAN_KINDS) -> Loss:
    """What every compaction of a replay loses: orphan references among the next ``horizon`` tool calls.

    Parameters
    ----------
    messages
        The message frame the replay ran on (its ``refs`` column).
    replay
        A :class:`~panto_analytics.policy.Replay` (``pa.replay`` or ``replay_policies``): its ``events`` and ``sessions``.
    horizon
        Tool calls looked at after each compaction.
    kinds
        Reference kinds that can be orphans (default: all but ``other``).

    Returns
    -------
    Loss
        ``events``: the replay's events with :data:`LOSS_COLUMNS` (``orphan_calls``,
        ``orphan_rate``, ``refetch_tokens``, ...); ``sessions``: one row per
        replayed (policy, session, budget), the events' figures summed and
        ``orphan_rate`` pooled (zeros where nothing compacted).

    Examples
    --------
    >>> import panto_analytics as pa
    >>> m = pa.examples.messages()
    >>> pa.loss(m, pa.replay(m, [1_000], window=20_000, summary_tokens=500)).sessions.columns[-3:]
    ['repeat_reads', 'refetched_orphans', 'orphan_rate']
    """
    events, sessions = replay.events, replay.sessions
    refs = references(messages)
    per_event = cut_loss(refs, replay_cuts(events), horizon=horizon, kinds=kinds).drop(list(CUT_SCHEMA))
    keys = [k for k in ("policy", SESSION, BUDGET) if k in sessions.columns]
    summed = summarize_loss(per_event, keys)
    cast = {k: sessions.schema[k] for k in keys}
    out = (sessions.join(summed.cast(cast), on=keys, how="left", maintain_order="left")  # type: ignore[arg-type]
           .with_columns(pl.col(c).fill_null(0) for c in LOSS_COLUMNS if c != "orphan_rate"))
    return Loss(events=per_event, sessions=out, horizon=horizon)
