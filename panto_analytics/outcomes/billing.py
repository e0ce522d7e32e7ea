"""The tokens of every API call a replay simulates, under one cache rule: frames in, frames out.

A replay (:func:`panto_analytics.policy.compaction.engine.replay_libpanto`) says where compactions fire;
this module says what each API call would then have sent, split the way a
provider bills it: ``input`` (uncached), ``cache_read``, ``cache_write_5m``,
``cache_write_1h`` and ``output``. Pricing those columns is
:mod:`panto_analytics.outcomes.cost`'s job; nothing here knows a price.

**The cache rule** (:func:`cache_split`), per call ``j`` of a session, with
``P`` its prompt (``input + cache_read + cache_write``). Each model has its
own cache: "the previous call" is the previous call of the session to the
same model, and "the first call" the first to it.

- The session *writes* its cache (Anthropic: some recorded call has
  ``cache_write > 0``) or caches automatically (OpenAI: it never writes). A
  writing call leaves its cache breakpoint before its uncached ``input``
  tail, so what it leaves cached is ``P - tail`` with ``tail = min(input, P)``;
  an automatic cache keeps the whole prompt (``tail = 0``).
- ``cache_read = min(candidate, P - tail)``, where the candidate is

  * the *stable head* on the first call after a compaction (simulated, or
    recorded: the first call after a recorded summary at which the prompt
    shrank): the system prompt and tools, which every session of the agent
    shares. It is estimated as the first call's recorded ``cache_read``:
    what the session found cached before it had written anything (0 when it
    found nothing: then nothing is read back);
  * what the previous call left cached, when the gap since that call is
    within the cache lifetime: 1 hour when the latest write recorded at or
    before the previous call was a 1-hour write (``cache_write_1h > 0``),
    else 5 minutes. Every call reads or writes the prefix, so every call
    refreshes its lifetime: the gap is measured from the previous call;
  * past the lifetime, nothing where the session writes its cache (the
    whole prompt is written again), the stable head where it caches
    automatically (OpenAI keeps the shared head).
- A writing session writes the rest, ``P - tail - cache_read``, at the kind of
  the latest recorded write (1 hour or 5 minutes); an automatic one sends it
  as uncached ``input``. ``output`` is the recorded output.

**A replay's calls** (:func:`simulated_calls`): before a session's first
simulated compaction, and after a recorded summary restarts the state, every
call is billed exactly as recorded. After a compaction that summarized ``S``
tokens so far (since the latest restart), a call's prompt is its recorded
prompt minus ``S`` (never below 0) plus the summary (``summary_tokens``), and
the rule above splits it, with the first call after each compaction reading
only the stable head.

**The summarizer call** (:func:`summarizer_calls`): one per event, on the
trigger call's model. Its input is the request the replay computes
(``request_bytes``) at :data:`BYTES_PER_TOKEN` bytes per token (the replay's
own estimate for summary text, and pi's and Codex's chars/4), its output the
summary (``summary_tokens``). ``"separate"``: an uncached request (pi, Gemini
CLI, libpanto). ``"cached"``: the agent asks for the summary on its cached
conversation (Codex's local compaction): it reads what the trigger call left
cached and sends the rest of the conversation (the trigger's prompt and
output) uncached; the instruction's own few tokens are not counted.

>>> import polars as pl
>>> calls = pl.DataFrame({"prompt": [1000, 1200], "input": [10, 10], "writes": [True, True],
...                       "candidate": [400, 990]})
>>> calls.select(cache_split(pl.col("prompt"), pl.col("input"), pl.col("writes"), pl.col("candidate"))).rows()
[(10, 400, 590), (10, 990, 200)]
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import NamedTuple

import polars as pl

from ..frame.schema import BUDGET, ROLE, SEQ, SESSION, USAGE_COLUMNS
from .cost import COST_COLUMNS

__all__ = [
    "BYTES_PER_TOKEN", "CACHE_WRITE_1H", "FIVE_MINUTES_MS", "ONE_HOUR_MS", "SUMMARIZER_MODES", "TOKEN_COLUMNS",
    "PARTS", "Price", "bill_edited", "bill_replay", "cache_split", "call_rows", "check_cache_rule", "lifetime_ms", "simulated_calls",
    "summarizer_calls",
]

#: The per-call token columns a price applies to.
TOKEN_COLUMNS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")

#: The message frame's column of 1-hour cache writes (part of ``cache_write``); absent: every write is 5-minute.
CACHE_WRITE_1H = "cache_write_1h"

#: Anthropic's cache lifetimes (and OpenAI's usual one), in milliseconds.
FIVE_MINUTES_MS = 5 * 60 * 1000
ONE_HOUR_MS = 60 * 60 * 1000

#: Bytes per token of the summarizer request (the replay's estimate for summary text; chars/4 in pi and Codex).
BYTES_PER_TOKEN = 4

#: How the summarizer call is billed: a separate uncached request, or on the cached conversation.
SUMMARIZER_MODES = ("separate", "cached")

_I = pl.Int64


def _session_start() -> pl.Expr:
    """True on the first row of each session (the frame is ordered by session)."""
    return (pl.col(SESSION) != pl.col(SESSION).shift(1)).fill_null(True)


def _is_call() -> pl.Expr:
    """An assistant message with usage: one API call (the replay's definition: its four counters are recorded)."""
    recorded = pl.all_horizontal(*(pl.col(c).is_not_null() for c in USAGE_COLUMNS))
    return (pl.col(ROLE) == "assistant") & recorded


def lifetime_ms(one_hour: pl.Expr) -> pl.Expr:
    """The cache lifetime in ms: 1 hour where ``one_hour``, else 5 minutes.

    >>> pl.DataFrame({"h": [True, False]}).select(lifetime_ms(pl.col("h"))).to_series().to_list()
    [3600000, 300000]
    """
    return pl.when(one_hour).then(pl.lit(ONE_HOUR_MS, _I)).otherwise(pl.lit(FIVE_MINUTES_MS, _I))


def cache_split(prompt: pl.Expr, tail_input: pl.Expr, writes: pl.Expr, candidate: pl.Expr) -> list[pl.Expr]:
    """``input``, ``cache_read`` and ``cache_write`` of a call whose prompt is ``prompt`` tokens.

    ``tail_input``: the call's recorded uncached tail (kept uncached where the
    session writes its cache); ``candidate``: what the cache holds for it (the
    module docstring says which). The three add up to ``prompt``.
    """
    p = prompt.cast(_I)
    tail = _kept_uncached(p, tail_input, writes)
    read = _cache_read(p, tail, candidate)
    write = _cache_write(p, tail, read, writes)
    return [(p - read - write).alias("input"), read.alias("cache_read"), write.alias("cache_write")]


def _kept_uncached(prompt: pl.Expr, tail_input: pl.Expr, writes: pl.Expr) -> pl.Expr:
    """:func:`cache_split`'s uncached tail: the recorded one, within the prompt, where the session writes."""
    return pl.when(writes).then(pl.min_horizontal(tail_input.cast(_I), prompt)).otherwise(0)


def _cache_read(prompt: pl.Expr, tail: pl.Expr, candidate: pl.Expr) -> pl.Expr:
    """:func:`cache_split`'s read: what the cache holds, within the prompt less its uncached tail."""
    return pl.min_horizontal(candidate.cast(_I).clip(0), prompt - tail)


def _cache_write(prompt: pl.Expr, tail: pl.Expr, read: pl.Expr, writes: pl.Expr) -> pl.Expr:
    """:func:`cache_split`'s write: the rest, where the session writes its cache."""
    return pl.when(writes).then(prompt - tail - read).otherwise(0)


def _prev_row(value: pl.Expr) -> pl.Expr:
    """``value`` on the previous call of the same session and model (null on the first): each model has its
    own cache, so a call reads what the previous call to its model left. Over calls sorted by ``_gm`` (one
    integer per session and model), with ``_same`` (the previous row is of the same session and model)."""
    return pl.when("_same").then(value.shift(1))


def _recorded_calls(lf: pl.LazyFrame, names: Sequence[str] | None = None) -> pl.LazyFrame:
    """One row per recorded API call, in session order: ``session_id``, ``seq``, ``model``, ``timestamp``, the
    recorded :data:`TOKEN_COLUMNS`, ``prompt`` and ``anchor`` (:func:`call_rows` says what each is)."""
    names = lf.collect_schema().names() if names is None else names
    w1h = pl.col(CACHE_WRITE_1H).fill_null(0).cast(_I) if CACHE_WRITE_1H in names else pl.lit(0, _I)
    seq = pl.col(SEQ).cast(_I)
    write = pl.col("cache_write").cast(_I)
    anchored = lf.with_columns(
        _anchor=pl.when(pl.col("has_summary")).then(seq).when(_session_start()).then(-1).forward_fill(),
        _w1h=w1h,
    )
    return anchored.filter(_is_call()).select(
        SESSION, SEQ, pl.col("model") if "model" in names else pl.lit(None, pl.String).alias("model"),
        pl.col("timestamp") if "timestamp" in names else pl.lit(None, pl.Datetime("ms", "UTC")).alias("timestamp"),
        input=pl.col("input").cast(_I), output=pl.col("output").cast(_I), cache_read=pl.col("cache_read").cast(_I),
        cache_write_5m=write - pl.min_horizontal("_w1h", write), cache_write_1h=pl.min_horizontal("_w1h", write),
        prompt=pl.col("input").cast(_I) + pl.col("cache_read") + write,
        anchor="_anchor",
    )


def _session_model() -> pl.Expr:
    """One integer per session and model (``_gm``)."""
    return (pl.col(SESSION).cast(pl.Categorical).to_physical().cast(pl.UInt64) * 2**32
            + pl.col("model").cast(pl.Categorical).to_physical().cast(pl.UInt64).fill_null(2**32 - 1))


def _models_contiguous(calls: pl.LazyFrame) -> pl.LazyFrame:
    """One row, one column: whether each session's calls to each model are one run of rows, so that the previous
    call to the model is the previous row. Checked as: no session calls two models (no hashing)."""
    switches = (pl.col(SESSION) == pl.col(SESSION).shift(1)) & pl.col("model").ne_missing(pl.col("model").shift(1))
    return calls.select(~switches.fill_null(False).any())


def _rule_columns(calls: pl.LazyFrame, *, restart: bool = False, contiguous: bool = False,
                  names: Sequence[str] | None = None) -> pl.LazyFrame:
    """:func:`_recorded_calls` with the rule's columns (:func:`call_rows`) and the previous call's to the model
    ``_prev_prompt`` and ``_prev_input``; ``restart`` only where asked (the check needs it, the bill does not).

    Each model has its own cache: the calls are sorted by session and model (stably: in ``seq`` order within
    each), where "the previous call to the model" is the previous row, then put back in session order.
    ``contiguous``: the calls of each session and model are one run already (:func:`_models_contiguous`), and
    the two sorts, which would not move a row, are skipped. ``names``: the columns of ``calls``, where the caller
    knows them (resolving a plan's schema has its cost)."""
    st = _rule_stages()
    by_model = calls.with_columns(st.gm)
    if not contiguous:
        by_model = by_model.with_columns(st.row).sort("_gm", maintain_order=True)
    by_model = by_model.with_columns(st.same).with_columns(st.rule).with_columns(st.fresh)
    if restart:
        by_model = by_model.with_columns(st.shrank).with_columns(st.restart)
    rule = ["writes", "first", "head", "one_hour", "prev_seq", "fresh", *(["restart"] if restart else []),
            "_prev_prompt", "_prev_input"]
    return ((by_model if contiguous else by_model.sort("_row"))
            .with_columns(st.writes)
            .select(*(calls.collect_schema().names() if names is None else names), "_gm", *rule))


class _RuleStages(NamedTuple):
    """:func:`_rule_columns`'s expressions, stage by stage (:func:`_rule_stages`)."""
    gm: pl.Expr
    row: pl.Expr
    same: pl.Expr
    rule: list[pl.Expr]
    fresh: pl.Expr
    shrank: pl.Expr
    restart: pl.Expr
    writes: pl.Expr


@lru_cache(maxsize=1)
def _rule_stages() -> _RuleStages:
    """:func:`_rule_columns`'s expressions, built once (an expression is immutable; building these costs
    Python time on every bill)."""
    wrote = pl.col("cache_write_5m") + pl.col("cache_write_1h") > 0
    first = ~pl.col("_same")
    rule = [
        first.alias("first"),
        pl.when(first).then(pl.col("cache_read")).forward_fill().alias("head"),
        # The kind of the latest write of the session and model at or before the call (False before any).
        pl.when(wrote).then(pl.col("cache_write_1h") > 0).when(first).then(False).forward_fill().alias("one_hour"),
        _prev_row(pl.col(SEQ).cast(_I)).alias("prev_seq"),
        (pl.col("timestamp") - _prev_row(pl.col("timestamp"))).dt.total_milliseconds().alias("_gap"),
        _prev_row(pl.col("prompt")).alias("_prev_prompt"), _prev_row(pl.col("input")).alias("_prev_input"),
    ]
    fresh = pl.when(pl.col("first")).then(True).otherwise(
        (pl.col("_gap") <= lifetime_ms(_prev_row(pl.col("one_hour")))).fill_null(True)).alias("fresh")
    shrank = ((pl.col("anchor") > -1) & (pl.col("prompt") < pl.col("_prev_prompt"))).alias("_shrank")
    # The first shrink after each recorded summary: where the recorded compaction took effect.
    restart = (pl.col("first") | (pl.col("_shrank") & (pl.col("_shrank").cast(_I).cum_sum().over("_gm", "anchor") == 1))
               ).alias("restart")
    return _RuleStages(
        gm=_session_model().alias("_gm"), row=pl.int_range(pl.len(), dtype=pl.UInt32).alias("_row"),
        same=(pl.col("_gm") == pl.col("_gm").shift(1)).fill_null(False).alias("_same"), rule=rule, fresh=fresh,
        shrank=shrank, restart=restart, writes=wrote.cast(pl.UInt8).max().over(SESSION).cast(pl.Boolean).alias("writes"))


def call_rows(messages: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    """One row per recorded API call (an assistant message with usage), in session order, with what the rule needs.

    Columns: ``session_id``, ``seq``, ``model``, ``timestamp``, the recorded
    :data:`TOKEN_COLUMNS` (``cache_write_5m = cache_write - cache_write_1h``),
    ``prompt`` (``input + cache_read + cache_write``), ``writes`` (the session
    writes its cache), ``first`` (the first call of its session and model),
    ``head`` (the stable head: that first call's ``cache_read``),
    ``one_hour`` (the latest recorded write of the session and model at or
    before the call was a 1-hour one), ``fresh`` (the gap since the previous
    call to the model is within the lifetime of that call's kind; true
    without timestamps), ``restart`` (the first call of a session and model,
    or the first after a recorded summary at which the prompt shrank: where
    the recorded compaction took effect), ``anchor`` (the seq of the latest
    recorded summary before the call, -1 when none) and ``prev_seq`` (the
    previous call's to the model), and ``_prev_prompt`` / ``_prev_input``, the previous call's ``prompt``
    and ``input`` (null on the first).
    """
    return _rule_columns(_recorded_calls(messages.lazy()), restart=True)


def _candidate(restart: pl.Expr, fresh: pl.Expr, prev_cached: pl.Expr) -> pl.Expr:
    """What the cache holds for a call: past the lifetime, the head where the cache is automatic, else nothing;
    within it, the head after a compaction, else what the previous call left."""
    return (pl.when(~fresh).then(pl.when(pl.col("writes")).then(0).otherwise(pl.col("head")))
            .when(restart).then(pl.col("head")).otherwise(prev_cached))


def check_cache_rule(messages: pl.DataFrame | pl.LazyFrame, *, tolerance: float = 0.01) -> pl.DataFrame:
    """The cache rule run on the recorded calls with no compaction, beside what each call recorded.

    One row per recorded call: ``session_id``, ``seq``, ``source_format``
    (when the frame has it), the recorded ``cache_read`` / ``cache_write``,
    the rule's ``predicted_read`` / ``predicted_write``, the naive rule's
    (``naive_read``: the previous call's whole prompt when the gap is within
    5 minutes, else 0), ``first`` (the first call of its session and model:
    its read is the head, so it does not test the rule), ``within`` and ``naive_within``
    (read and write both within ``tolerance`` of the call's recorded prompt),
    and ``reason``, why a call that is not within missed.
    """
    lf = messages.lazy()
    has_format = "source_format" in lf.collect_schema().names()
    rows = call_rows(lf)
    if has_format:
        fmt = lf.filter(_session_start()).select(SESSION, "source_format")
        rows = rows.join(fmt, on=SESSION, how="left", maintain_order="left")
    # What the previous call to the model left cached: its prompt less its uncached tail (``writes`` is per session).
    prev_tail = pl.when(pl.col("writes")).then(pl.min_horizontal("_prev_input", "_prev_prompt")).otherwise(0)
    rows = rows.with_columns(_prev_cached=pl.col("_prev_prompt") - prev_tail)
    split = cache_split(pl.col("prompt"), pl.col("input"), pl.col("writes"),
                        _candidate(pl.col("restart"), pl.col("fresh"), pl.col("_prev_cached")))
    gap = (pl.col("timestamp") - pl.col("timestamp").shift(1)).dt.total_milliseconds()
    prev_prompt = pl.when(~_session_start()).then(pl.col("prompt").shift(1))
    naive_read = pl.when(_session_start()).then(0).when(gap.fill_null(0) <= FIVE_MINUTES_MS) \
        .then(pl.min_horizontal(prev_prompt, "prompt")).otherwise(0)
    out = rows.with_columns(
        recorded_write=pl.col("cache_write_5m") + pl.col("cache_write_1h"),
        predicted_read=split[1], predicted_write=split[2], naive_read=naive_read,
    ).with_columns(
        naive_write=pl.when(pl.col("writes")).then((pl.col("prompt") - pl.col("input") - pl.col("naive_read")).clip(0))
        .otherwise(0),
    )
    tol = pl.col("prompt").cast(pl.Float64) * tolerance

    def close(a: str, b: str) -> pl.Expr:
        return (pl.col(a) - pl.col(b)).abs().cast(pl.Float64) <= tol

    within = close("predicted_read", "cache_read") & close("predicted_write", "recorded_write")
    reason = (
        pl.when(within).then(pl.lit(None, pl.String))
        .when(pl.col("first")).then(pl.lit("first call: its read is the head"))
        .when(pl.col("cache_read") > pl.col("_prev_prompt")).then(pl.lit("read more than the previous prompt"))
        .when(pl.col("restart")).then(pl.lit("after a recorded compaction"))
        .when(~pl.col("fresh") & (pl.col("cache_read") > pl.col("predicted_read")))
        .then(pl.lit("past the lifetime, still read"))
        .when(~pl.col("fresh")).then(pl.lit("past the lifetime, read less than the head"))
        .when(pl.col("cache_read") < pl.col("predicted_read")).then(pl.lit("within the lifetime, read less"))
        .otherwise(pl.lit("within the lifetime, read more"))
    )
    return out.select(
        SESSION, SEQ, *(["source_format"] if has_format else []), "cache_read", cache_write="recorded_write",
        predicted_read="predicted_read", predicted_write="predicted_write", naive_read="naive_read",
        naive_write="naive_write", first="first", within=within,
        naive_within=close("naive_read", "cache_read") & close("naive_write", "recorded_write"), reason=reason,
    ).collect()


def _ranges(calls: pl.DataFrame, events: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """The events with ``_eid`` (their row), sorted by key, session and trigger, and the range of rows of
    ``calls`` each governs: from after its trigger's row ``_ti`` up to ``_hi`` (exclusive).

    An event governs the calls after its trigger up to and including the next trigger of its key and session
    (or the session's last call): sessions are contiguous in ``calls``, so that is a range of rows.
    """
    row = pl.int_range(pl.len(), dtype=_I)
    idx = calls.lazy().select(SESSION, trigger_seq=pl.col(SEQ).cast(_I), _ti=row, _epoch="anchor",
                       # The session's last call.
                       _last=pl.when((pl.col(SESSION) != pl.col(SESSION).shift(-1)).fill_null(True)).then(row)
                       .backward_fill())
    group = [*keys, SESSION]
    same_next = pl.all_horizontal(pl.col(c) == pl.col(c).shift(-1) for c in group).fill_null(False)
    # One query (each eager step is one, with its fixed cost).
    return (events.lazy().with_columns(pl.col("trigger_seq").cast(_I)).with_row_index("_eid")
            .join(idx, on=[SESSION, "trigger_seq"], how="left", maintain_order="left")
            .sort([*group, "trigger_seq"], maintain_order=True)
            .with_columns(
                _at=pl.col("trigger_seq") + 1,
                # The next trigger's row, or the session's last call (the trigger's row and the calls after it).
                _hi=pl.coalesce(pl.when(same_next).then(pl.col("_ti").shift(-1)), pl.col("_last")) + 1,
                _S=pl.col("summarized_tokens").cast(_I).cum_sum().over([*group, "_epoch"]),
            ).collect(engine="in-memory"))


#: The columns of :func:`call_rows` the simulation reads.
_SIMULATED_FROM = ("model", *TOKEN_COLUMNS, "prompt", "anchor", "writes", "head", "one_hour", "prev_seq", "fresh")


def _simulate(calls: pl.DataFrame, events: pl.DataFrame, keys: list[str],
              extra: Sequence[str] = ()) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The events (:func:`_ranges`), and one row per (event, call it governs) with the call's row ``_ci``,
    the calls' columns the simulation reads, and ``extra`` of them: the ranges exploded and gathered, with no
    search."""
    ev = _ranges(calls, events, keys)
    rows = (ev.select(*keys, SESSION, "event", "_eid", "_at", "_S", "_hi",
                      _ci=pl.int_ranges(pl.col("_ti") + 1, "_hi", dtype=_I))
            .explode("_ci").drop_nulls("_ci"))
    gathered = calls.select(*extra, *_SIMULATED_FROM, "_prev_prompt", "_prev_input")[rows["_ci"]]
    return ev, pl.concat([rows, gathered], how="horizontal")


def _simulated_tokens(rows: pl.DataFrame, summary_tokens: int) -> pl.DataFrame:
    """``rows`` (from :func:`_simulate`) with ``compacted``, ``_first_after`` (the first call to its model after
    the compaction), the simulated :data:`TOKEN_COLUMNS` and the recorded ones as ``recorded_*``.

    Built in stages (the prompts, then the candidate, then the split): one nested expression repeats its
    parts, and planning it costs more than evaluating it; the stages are one lazy query (each eager step is one,
    with its fixed cost)."""
    staged = rows.lazy()
    for stage in _simulation_stages(summary_tokens):
        staged = staged.with_columns(stage)
    return staged.drop("_prompt", "_prev_sim", "_first", "_cand", "_tail", "_read", "_write").collect(
        engine="in-memory")


@lru_cache(maxsize=16)
def _simulation_stages(summary_tokens: int) -> tuple[list[pl.Expr], ...]:
    """:func:`_simulated_tokens`'s stages, built once per summary size (an expression is immutable; building
    one costs Python time on every bill)."""
    summary = pl.lit(summary_tokens, _I)
    prompts = [
        ((pl.col("prompt") - pl.col("_S")).clip(0) + summary).alias("_prompt"),
        ((pl.col("_prev_prompt") - pl.col("_S")).clip(0) + summary).alias("_prev_sim"),
        (pl.col("anchor") < pl.col("_at")).alias("compacted"),
        (pl.col("prev_seq").is_null() | (pl.col("prev_seq") < pl.col("_at"))).alias("_first"),
    ]
    prev_tail = pl.when(pl.col("writes")).then(pl.min_horizontal("_prev_input", "_prev_sim")).otherwise(0)
    # cache_split, a column at a time.
    prompt, writes = pl.col("_prompt"), pl.col("writes")
    candidate = [_candidate(pl.col("_first"), pl.col("fresh"), pl.col("_prev_sim") - prev_tail).alias("_cand"),
                 _kept_uncached(prompt, pl.col("input"), writes).alias("_tail")]
    read = [_cache_read(prompt, pl.col("_tail"), pl.col("_cand")).alias("_read")]
    write = [_cache_write(prompt, pl.col("_tail"), pl.col("_read"), writes).alias("_write")]
    one_hour = pl.col("one_hour")
    compacted = pl.col("compacted")
    simulated = {
        "input": prompt - pl.col("_read") - pl.col("_write"), "output": pl.col("output"), "cache_read": pl.col("_read"),
        "cache_write_5m": pl.when(one_hour).then(0).otherwise("_write"),
        "cache_write_1h": pl.when(one_hour).then("_write").otherwise(0),
    }
    # One pass: every expression reads the recorded columns, before they are replaced.
    split = [
        *(pl.col(c).alias(f"recorded_{c}") for c in TOKEN_COLUMNS),
        # The first call to its model after the compaction: it reads only the head and re-writes the rest.
        (compacted & pl.col("_first")).alias("_first_after"),
        *(pl.when(compacted).then(expr).otherwise(pl.col(name)).alias(name) for name, expr in simulated.items()),
    ]
    return prompts, candidate, read, write, split


def simulated_calls(calls: pl.DataFrame, events: pl.DataFrame, *, keys: Sequence[str],
                    summary_tokens: int) -> pl.DataFrame:
    """The tokens of every call after each (key, session)'s first simulated compaction.

    ``calls``: :func:`call_rows`, collected. ``events``: a replay's events
    (``keys`` are their columns besides ``session_id`` that name a replay:
    ``budget``, and ``policy`` for a policy replay). One row per (key, call
    after the key's first trigger in its session), with the key, ``session_id``,
    ``seq``, ``model``, the simulated :data:`TOKEN_COLUMNS`, the recorded ones
    as ``recorded_*``, ``compacted`` (false: billed as recorded, after a
    recorded summary restarted the state) and ``event`` (the latest
    compaction before the call). Calls not listed bill as recorded.
    """
    _, rows = _simulate(calls, events, list(keys), extra=[SEQ])
    return _simulated_tokens(rows, summary_tokens).select(
        *keys, SESSION, SEQ, "model", "event", "compacted", *TOKEN_COLUMNS, *(f"recorded_{c}" for c in TOKEN_COLUMNS))


def _summarizer_tokens(ev: pl.DataFrame, keys: list[str], summary_tokens: int) -> pl.DataFrame:
    """:func:`summarizer_calls` of events that carry their trigger call: as recorded (``model``, ``writes``,
    ``_p`` its prompt, ``_in`` its input, ``_out`` its output) and, where it was simulated (``compacted``), as
    simulated (``_sp``, ``_sin``), and ``_cached``."""
    is_sim = pl.col("compacted").fill_null(False)
    # The trigger call as it was billed, and what it left cached (a writing cache: all but its uncached tail).
    trigger_prompt = pl.when(is_sim).then(pl.col("_sp")).otherwise(pl.col("_p"))
    trigger_input = pl.when(is_sim).then(pl.col("_sin")).otherwise(pl.col("_in"))
    left_cached = pl.when(pl.col("writes")).then(trigger_prompt - trigger_input).otherwise(trigger_prompt)
    request = (pl.col("request_bytes").cast(_I) + (BYTES_PER_TOKEN - 1)) // BYTES_PER_TOKEN
    conversation = trigger_prompt + pl.col("_out")
    zero = pl.lit(0, _I)
    return ev.select(
        *keys, SESSION, "event", "model",
        input=pl.when(pl.col("_cached")).then(conversation - left_cached).otherwise(request),
        output=pl.lit(summary_tokens, _I),
        cache_read=pl.when(pl.col("_cached")).then(left_cached).otherwise(zero),
        cache_write_5m=zero, cache_write_1h=zero,
    )


def _cached_column(cached: pl.Expr | bool) -> pl.Expr:
    return (cached if isinstance(cached, pl.Expr) else pl.lit(cached)).alias("_cached")


def summarizer_calls(events: pl.DataFrame, calls: pl.DataFrame, simulated: pl.DataFrame, *, keys: Sequence[str],
                     summary_tokens: int, cached: pl.Expr | bool = False) -> pl.DataFrame:
    """One summarizer call per event: the key, ``session_id``, ``event``, ``model`` (the trigger call's) and
    the :data:`TOKEN_COLUMNS` (the module docstring states both modes).

    ``cached``: per event (an expression over the events' columns, e.g. on
    ``policy``) or for all, whether the agent asks on its cached conversation.
    ``simulated``: :func:`simulated_calls`, for the trigger calls that were
    themselves simulated (a later event's trigger follows an earlier event).
    Null ``request_bytes`` gives null input.
    """
    keys = list(keys)
    trig = calls.select(SESSION, pl.col(SEQ).cast(_I).alias("trigger_seq"), "model", "writes",
                        _p=pl.col("prompt"), _in=pl.col("input"), _out=pl.col("output"))
    sim = simulated.select(*keys, SESSION, pl.col(SEQ).cast(_I).alias("trigger_seq"), "compacted",
                           _sp=pl.col("input") + pl.col("cache_read") + pl.col("cache_write_5m") + pl.col("cache_write_1h"),
                           _sin=pl.col("input"))
    ev = (events.with_columns(pl.col("trigger_seq").cast(_I), _cached_column(cached))
          .join(trig, on=[SESSION, "trigger_seq"], how="left", maintain_order="left")
          .join(sim, on=[*keys, SESSION, "trigger_seq"], how="left", maintain_order="left"))
    return _summarizer_tokens(ev, keys, summary_tokens)


#: What a price function adds to a frame of calls: the four parts and their sum (:func:`.cost.bill`'s columns).
PARTS = COST_COLUMNS

Price = Callable[[pl.DataFrame], pl.DataFrame]


def _total(column: str) -> pl.Expr:
    """The sum of ``column``, null when any row is null (an unpriced call is never billed 0)."""
    return _total_of(pl.col(column))


def _total_of(values: pl.Expr) -> pl.Expr:
    """The sum of ``values``, null when any is null."""
    return pl.when(values.is_null().any()).then(pl.lit(None, pl.Float64)).otherwise(values.sum())


#: The columns :func:`bill_replay` adds to the events, with their types (the parts' are Float64).
_EVENT_COLUMNS = {"summarizer_input": _I, "summarizer_cache_read": _I, "summarizer_output": _I}
_EVENT_TAIL = {"calls_after": pl.UInt32, "calls_recorded_cost_usd": pl.Float64, "calls_simulated_cost_usd": pl.Float64,
               "cache_miss_tokens": _I, "cache_miss_usd": pl.Float64}


class _Sums(NamedTuple):
    """:func:`bill_replay`'s expressions after the price call (:func:`_sums`)."""
    per_session: list[pl.Expr]
    per_event: list[pl.Expr]
    none_changed: list[pl.Expr]
    per_key: list[pl.Expr]
    added: frozenset[str]
    session_columns: list[pl.Expr]
    event_columns: list[pl.Expr]


@lru_cache(maxsize=8)
def _sums(parts: tuple[str, ...]) -> _Sums:
    """:func:`bill_replay`'s sums and columns after the price call, built once per ``parts`` (an expression is
    immutable; building these costs Python time on every bill)."""
    miss_write = "cache_write_usd" if "cache_write_usd" in parts else parts[-1]
    first = pl.col("_first_after")
    per_session = [pl.len().alias("_calls"), *(_total(p).alias(f"recorded_{p}") for p in parts)]
    per_event = [
        pl.len().alias("calls_after"), *(_total(f"_sim_{p}").alias(f"_sim_{p}") for p in parts),
        *(_total(f"_old_{p}").alias(f"_old_{p}") for p in parts),
        pl.col("_miss_tokens").filter(first).sum().alias("cache_miss_tokens"),
        _total_of((pl.col(f"_sim_{miss_write}") - pl.col(f"_old_{miss_write}")).clip(0).filter(first)).alias("_miss")]
    # An event whose calls all came before the next trigger changed nothing: 0, not null.
    none_changed = [*(pl.when(pl.col("calls_after").is_null()).then(0.0).otherwise(pl.col(c)).alias(c)
                      for c in [*(f"_sim_{p}" for p in parts), *(f"_old_{p}" for p in parts), "_miss"]),
                    pl.col("cache_miss_tokens").fill_null(0)]
    per_key = [pl.col("calls_after").sum().alias("_n"),
               *(_total(f"_sim_{p}").alias(f"_sim_{p}") for p in parts),
               *(_total(f"_old_{p}").alias(f"_old_{p}") for p in parts),
               *(_total(f"summarizer_{p}").alias(f"summarizer_{p}") for p in parts), _total("_miss").alias("_miss")]
    fired = pl.col("_n").fill_null(0) > 0  # some call was re-billed
    compacted = pl.col("n_compactions") > 0
    # A session without calls costs nothing.
    recorded_p = {p: pl.when(pl.col("_calls").is_null()).then(0.0).otherwise(pl.col(f"recorded_{p}")) for p in parts}
    simulated_p = {p: pl.when(fired).then(recorded_p[p] - pl.col(f"_old_{p}") + pl.col(f"_sim_{p}")).otherwise(recorded_p[p])
                   for p in parts}
    summarizer_p = {p: pl.when(compacted).then(pl.col(f"summarizer_{p}")).otherwise(0.0) for p in parts}
    added = {**{f"recorded_{p}": recorded_p[p] for p in parts}, **{f"summarizer_{p}": summarizer_p[p] for p in parts},
             **{f"simulated_{p}": simulated_p[p] for p in parts},
             "cache_miss_usd": pl.when(compacted).then(pl.col("_miss")).otherwise(0.0),
             **{f"total_{p}": simulated_p[p] + summarizer_p[p] for p in parts}}
    event_columns = [pl.col("summarizer_input"), pl.col("summarizer_cache_read"), pl.col("summarizer_output"),
                     *(pl.col(f"summarizer_{p}") for p in parts), pl.col("calls_after").fill_null(0).cast(pl.UInt32),
                     pl.col(f"_old_{parts[-1]}").alias("calls_recorded_cost_usd"),
                     pl.col(f"_sim_{parts[-1]}").alias("calls_simulated_cost_usd"), pl.col("cache_miss_tokens"),
                     pl.col("_miss").alias("cache_miss_usd")]
    return _Sums(per_session, per_event, none_changed, per_key, frozenset(added),
                 [e.alias(c) for c, e in added.items()], event_columns)


def _bill_unfired(base: pl.DataFrame, events: pl.DataFrame, sessions: pl.DataFrame, price: Price,
                  parts: Sequence[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """:func:`bill_replay` where no compaction fired: every session costs what it recorded, and the rule,
    the ranges and the summarizer are skipped (their fixed cost is most of a bill's where nothing fires)."""
    priced = price(base.select("model", *TOKEN_COLUMNS, _recorded=pl.lit(True))).select(parts)
    per_session = pl.concat([base.select(SESSION), priced], how="horizontal").group_by(SESSION).agg(
        pl.len().alias("_calls"), *(_total(p).alias(f"recorded_{p}") for p in parts))
    out = sessions.join(per_session, on=SESSION, how="left", maintain_order="left").with_columns(
        pl.when(pl.col("_calls").is_null()).then(0.0).otherwise(pl.col(f"recorded_{p}")).alias(f"recorded_{p}")
        for p in parts)
    out = out.with_columns(
        *(pl.lit(0.0, pl.Float64).alias(f"summarizer_{p}") for p in parts),
        *(pl.col(f"recorded_{p}").alias(f"simulated_{p}") for p in parts),
        cache_miss_usd=pl.lit(0.0, pl.Float64),
    ).with_columns(*(pl.col(f"recorded_{p}").alias(f"total_{p}") for p in parts))
    columns = {**_EVENT_COLUMNS, **{f"summarizer_{p}": pl.Float64 for p in parts}, **_EVENT_TAIL}
    events_out = events.with_columns(pl.col("trigger_seq").cast(_I),
                                     *(pl.lit(None, dtype).alias(name) for name, dtype in columns.items()))
    return events_out, out.select([c for c in out.columns if not c.startswith("_")])


def bill_replay(messages: pl.DataFrame | pl.LazyFrame, events: pl.DataFrame, sessions: pl.DataFrame, *,
                keys: Sequence[str], summary_tokens: int, price: Price, cached: pl.Expr | bool = False,
                parts: Sequence[str] = PARTS) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A replay's ``events`` and ``sessions`` with what every call costs (the module docstring states the rules).

    ``sessions`` (one row per key and session) gain, for each of ``parts``
    (``cost_usd`` and its four parts, as ``price`` names them), its
    ``recorded_`` sum (the session as recorded), ``simulated_`` sum (the
    replayed calls: equal, to the last digit, where nothing fired),
    ``summarizer_`` sum and ``total_`` (simulated plus summarizer); null where
    any call is unpriced. ``events`` gain the summarizer call's tokens
    (``summarizer_input``, ``summarizer_cache_read``, ``summarizer_output``)
    and ``summarizer_`` parts, how the calls billed after the event
    (up to the next) changed: ``calls_after``, ``calls_recorded_cost_usd``,
    ``calls_simulated_cost_usd``, and its cache miss: ``cache_miss_tokens``
    and ``cache_miss_usd``, what the first call to each model after the
    event writes to the cache beyond what that call recorded, in tokens and
    in cache-write cost, each call's excess floored at 0 (0 where no call
    follows); ``sessions`` gain its sum, ``cache_miss_usd``.

    ``price`` takes one row per call (``model``, :data:`TOKEN_COLUMNS` and
    ``_recorded``, true on the recorded calls) and returns the same rows with
    ``parts`` added (``outcomes.cost.bill``); it is called once, on every
    call to price (recorded, replayed, summarizer).
    """
    keys = list(keys)
    # Every recorded call, as recorded: every session's bill.
    if events.is_empty():
        base = _recorded_calls(messages.lazy()).collect(engine="in-memory")
        return _bill_unfired(base, events, sessions, price, parts)
    recorded_lf = _recorded_calls(messages.lazy(), messages.columns if isinstance(messages, pl.DataFrame) else None)
    base, contiguous = pl.collect_all([recorded_lf, _models_contiguous(recorded_lf)], engine="in-memory")
    # The rule's columns only for the sessions where something fired, each with its row in the recorded calls
    # (``_bi``: the simulation reuses the recorded call's price).
    fired_calls = base.lazy().with_row_index("_bi").join(events.lazy().select(pl.col(SESSION).unique()), on=SESSION,
                                                         how="semi", maintain_order="left")
    calls = _rule_columns(fired_calls, contiguous=contiguous.item(), names=["_bi", *base.columns]).collect(
        engine="in-memory")
    ev, rows = _simulate(calls, events, keys, extra=["_bi"])
    sim = _simulated_tokens(rows, summary_tokens)
    # The calls that changed, with what their bill needs (filtering only those columns); the cache miss: the
    # first call to each model after the event, its write beyond the recorded one.
    sim_write = pl.col("cache_write_5m") + pl.col("cache_write_1h")
    rec_write = pl.col("recorded_cache_write_5m") + pl.col("recorded_cache_write_1h")
    changed = sim.select("_eid", "_bi", "_first_after", "model", *TOKEN_COLUMNS, "compacted",
                         _miss_tokens=(sim_write - rec_write).clip(0)).filter("compacted")
    # The summarizer call: the trigger call as recorded (its row of the calls) and, where an earlier event of
    # its key re-billed it, as simulated: the trigger of an event is the last call of the previous one's range.
    triggers = (sim.select(*keys, SESSION, "compacted", "_hi", _ti="_ci", _sin="input",
                           _sp=pl.col("input") + pl.col("cache_read") + pl.col("cache_write_5m") + pl.col("cache_write_1h"))
                .filter(pl.col("_ti") == pl.col("_hi") - 1).drop("_hi"))
    trigger = calls.select("model", "writes", _p="prompt", _in="input", _out="output")[ev["_ti"]]
    ev = (pl.concat([ev.with_columns(_cached_column(cached)), trigger], how="horizontal")
          .join(triggers, on=[*keys, SESSION, "_ti"], how="left", maintain_order="left"))
    summarizer = _summarizer_tokens(ev, keys, summary_tokens)
    # One price call for everything: the recorded calls, the replayed calls that changed, the summarizer calls.
    # A changed call's recorded price is its recorded call's (row ``_bi``), not priced again.
    n_calls, n_changed = base.height, changed.height
    model_type = base.schema["model"]
    to_price = pl.concat([
        base.select("model", *TOKEN_COLUMNS, _recorded=pl.lit(True)),
        changed.select(pl.col("model").cast(model_type), *TOKEN_COLUMNS, _recorded=pl.lit(False)),
        summarizer.select(pl.col("model").cast(model_type), *TOKEN_COLUMNS, _recorded=pl.lit(False)),
    ], how="vertical_relaxed")
    priced = price(to_price).select(parts)
    recorded = priced.slice(0, n_calls)
    new = priced.slice(n_calls, n_changed)
    old = recorded[changed["_bi"]]
    summ_cost = priced.slice(n_calls + n_changed)
    x = _sums(tuple(parts))
    per_session = pl.concat([base.select(SESSION), recorded], how="horizontal").group_by(SESSION, maintain_order=True).agg(
        x.per_session)
    # Per event: the calls it changed, their recorded and replayed cost, the cache miss.
    per_event = pl.concat([
        changed.select("_eid", "_first_after", "_miss_tokens"),
        new.rename(lambda c: f"_sim_{c}"), old.rename(lambda c: f"_old_{c}")],
        how="horizontal").group_by("_eid").agg(x.per_event)
    # The summarizer calls are the events' rows, in the same order.
    ev = (pl.concat([ev, summarizer.select(summarizer_input="input", summarizer_cache_read="cache_read",
                                           summarizer_output="output"),
                     summ_cost.rename(lambda c: f"summarizer_{c}")], how="horizontal")
          .join(per_event, on="_eid", how="left")
          .sort("_eid")
          .with_columns(x.none_changed))
    rebilled = ev.group_by(group := [*keys, SESSION]).agg(x.per_key)
    out = (sessions.join(per_session, on=SESSION, how="left", maintain_order="left")
           .join(rebilled, on=group, how="left", maintain_order="left"))
    out = out.select(*(c for c in out.columns if not c.startswith("_") and c not in x.added), *x.session_columns)
    events_out = ev.select(*events.columns, *x.event_columns)
    return events_out, out


def bill_edited(messages: pl.DataFrame, edited: pl.DataFrame, events: pl.DataFrame, sessions: pl.DataFrame, *,
                price: Price, parts: Sequence[str] = PARTS) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A replay whose calls were edited in place (a clearing policy: ``edited`` is ``messages`` with each call's
    usage as the policy leaves it, row for row) billed the way :func:`bill_replay` bills a compaction.

    ``sessions`` gain the ``recorded_``, ``simulated_``, ``summarizer_`` (0: no summarizer call) and ``total_``
    sums of each of ``parts``; a session none of whose calls changed costs its recorded sums, copied. ``events``
    (one per edited call, ``trigger_seq`` its seq) gain the columns :func:`bill_replay` gives them: no
    summarizer call (0 tokens, 0 cost), ``calls_after`` 1 (the edited call itself), its recorded and replayed
    cost, and its cache miss: what it writes beyond what it recorded (tokens and write cost, floored at 0).

    >>> import polars as pl
    >>> m = pl.DataFrame({"session_id": ["s"], "seq": [0], "role": ["assistant"], "input": [10], "output": [5],
    ...                   "cache_read": [100], "cache_write": [0], "has_summary": [False]})
    >>> e = m.with_columns(pl.lit(40).alias("cache_read"))
    >>> def price(c): return c.with_columns(cost_usd=pl.col("cache_read") * 0.1 + pl.col("input") + pl.col("output"))
    >>> bill_edited(m, e, pl.DataFrame({"session_id": ["s"], "trigger_seq": [0]}), pl.DataFrame({"session_id": ["s"]}),
    ...             price=price, parts=["cost_usd"])[1].select("recorded_cost_usd", "simulated_cost_usd").rows()
    [(25.0, 19.0)]
    """
    base = _recorded_calls(messages.lazy()).collect(engine="in-memory")
    sim = _recorded_calls(edited.lazy()).collect(engine="in-memory")
    differs = pl.any_horizontal(pl.col(c) != pl.col(f"_sim_{c}") for c in TOKEN_COLUMNS)
    both = pl.concat([base, sim.select(pl.col(c).alias(f"_sim_{c}") for c in TOKEN_COLUMNS)], how="horizontal")
    changed = both.with_row_index("_bi").filter(differs)
    to_price = pl.concat([
        base.select("model", *TOKEN_COLUMNS, _recorded=pl.lit(True)),
        changed.select("model", *(pl.col(f"_sim_{c}").alias(c) for c in TOKEN_COLUMNS), _recorded=pl.lit(False)),
    ], how="vertical_relaxed")
    priced = price(to_price).select(parts)
    recorded = priced.slice(0, base.height)
    new = priced.slice(base.height)
    old = recorded[changed["_bi"]]
    per_session = pl.concat([base.select(SESSION), recorded], how="horizontal").group_by(
        SESSION, maintain_order=True).agg(pl.len().alias("_calls"), *(_total(p).alias(f"recorded_{p}") for p in parts))
    delta = pl.concat([changed.select(SESSION), new.rename(lambda c: f"_new_{c}"), old.rename(lambda c: f"_old_{c}")],
                      how="horizontal").group_by(SESSION).agg(
        *(_total(f"_new_{p}").alias(f"_new_{p}") for p in parts), *(_total(f"_old_{p}").alias(f"_old_{p}") for p in parts))
    session_key = sessions.schema[SESSION]
    out = (sessions.join(per_session.with_columns(pl.col(SESSION).cast(session_key)), on=SESSION, how="left",
                         maintain_order="left")
           .join(delta.with_columns(pl.col(SESSION).cast(session_key)), on=SESSION, how="left", maintain_order="left"))
    recorded_p = {p: pl.when(pl.col("_calls").is_null()).then(0.0).otherwise(pl.col(f"recorded_{p}")) for p in parts}
    simulated_p = {p: pl.when(pl.col(f"_new_{p}").is_null() & pl.col(f"_old_{p}").is_null()).then(recorded_p[p])
                   .otherwise(recorded_p[p] - pl.col(f"_old_{p}") + pl.col(f"_new_{p}")) for p in parts}
    out = out.with_columns(
        *(recorded_p[p].alias(f"recorded_{p}") for p in parts),
        *(pl.lit(0.0).alias(f"summarizer_{p}") for p in parts),
        *(simulated_p[p].alias(f"simulated_{p}") for p in parts),
        cache_miss_usd=pl.lit(0.0),
    ).with_columns(*(pl.col(f"simulated_{p}").alias(f"total_{p}") for p in parts))
    # Per event: its call as recorded and as replayed, and the cache miss (the write beyond the recorded one).
    miss_write = "cache_write_usd" if "cache_write_usd" in parts else parts[-1]
    per_call = pl.concat([changed.select(SESSION, pl.col(SEQ).cast(_I).alias("trigger_seq"),
                                         _miss_tokens=(pl.col("_sim_cache_write_5m") + pl.col("_sim_cache_write_1h")
                                                       - pl.col("cache_write_5m") - pl.col("cache_write_1h")).clip(0)),
                          new.select(pl.col(parts[-1]).alias("_new"), pl.col(miss_write).alias("_new_w")),
                          old.select(pl.col(parts[-1]).alias("_old"), pl.col(miss_write).alias("_old_w"))],
                         how="horizontal").with_columns(pl.col(SESSION).cast(events.schema[SESSION]))
    ev = events.with_columns(pl.col("trigger_seq").cast(_I)).join(per_call, on=[SESSION, "trigger_seq"], how="left",
                                                                  maintain_order="left")
    zero = pl.lit(0, _I)
    events_out = ev.select(
        *events.columns, summarizer_input=zero, summarizer_cache_read=zero, summarizer_output=zero,
        **{f"summarizer_{p}": pl.lit(0.0) for p in parts}, calls_after=pl.lit(1, pl.UInt32),
        calls_recorded_cost_usd=pl.col("_old"), calls_simulated_cost_usd=pl.col("_new"),
        cache_miss_tokens=pl.col("_miss_tokens").fill_null(0), cache_miss_usd=(pl.col("_new_w") - pl.col("_old_w"))
        .clip(0).fill_null(0.0))
    group = [c for c in ("policy", BUDGET) if c in events.columns and c in sessions.columns] + [SESSION]
    total_miss = events_out.group_by(group).agg(_m=pl.col("cache_miss_usd").sum())
    out = out.join(total_miss, on=group, how="left", maintain_order="left").with_columns(
        cache_miss_usd=pl.col("_m").fill_null(0.0))
    return events_out, out.select([c for c in out.columns if not c.startswith("_")])
