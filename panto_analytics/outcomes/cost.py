"""What an API call costs: the one definition, and the recorded sessions' bill.

:func:`bill` prices calls. It takes one row per API call with the model and
its token counters (:data:`CALL_COLUMNS`: ``model``, ``input`` uncached input,
``output``, ``cache_read``, ``cache_write_5m``, ``cache_write_1h``) and adds
the four parts and their sum (:data:`COST_COLUMNS`), in US dollars:

- ``input_usd`` = input x the input rate;
- ``output_usd`` = output x the output rate;
- ``cache_read_usd`` = cache_read x the cache-read rate;
- ``cache_write_usd`` = cache_write_5m x the 5-minute write rate + cache_write_1h x the 1-hour write rate;
- ``cost_usd`` = their sum.

A call whose model the price table lacks gets null in all five (never 0); so does a call whose counters are
all zero (a proxy that records no usage: its cost is unknown, not $0). A model id ending in ``:free``
(OpenRouter's free variants) costs $0.
Above the tier (200k prompt tokens) the table's rule applies (see
:mod:`~panto_analytics.outcomes.prices`): ``cliff`` (genai-prices) bills every
token of a call whose prompt (input + cache_read + both writes) passes the
tier at the tier's rates; ``split`` (LiteLLM, ccusage) bills each counter's
tokens above 200k at the higher rate. It is a join with the price frame and
column arithmetic: no Python per row, lazy in, lazy out.

:func:`costs` bills a message frame's API calls (its assistant messages with
usage) and sums them per group: session, day, week, month, model, project or
format, with the price source (and the providers whose prices were taken). A model without a price is
reported once by an :class:`UnpricedWarning` (calls and tokens), calls without usage by a
:class:`NoUsageWarning`; their groups' ``cost_usd`` is null and ``priced_cost_usd`` the bill of the rest.

>>> import polars as pl
>>> calls = pl.DataFrame({"model": ["claude-opus-4-5-20251101", "mystery"], "input": [1_000, 5],
...     "output": [100, 5], "cache_read": [10_000, 0], "cache_write_5m": [2_000, 0], "cache_write_1h": [0, 0]})
>>> billed = bill(calls)  # genai-prices: $5 in, $25 out, $0.50 read, $6.25 5-minute write per MTok
>>> billed["cost_usd"].to_list()  # 0.005 + 0.0025 + 0.005 + 0.0125
[0.025, None]
"""
from __future__ import annotations

import warnings
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Literal, TypeVar, cast

import polars as pl

from ..defaults import COST_GROUPINGS
from ..frame.schema import SESSION
from ..models import normalized_model
from ..phrases import counted
from .prices import RATES, Prices, load_prices

__all__ = [
    "CALL_COLUMNS", "COST_COLUMNS", "GROUPINGS", "PICO", "Grouping", "NoUsageWarning", "UnpricedWarning", "bill",
    "call_tokens", "cost_partials", "costs", "dollars_total", "has_usage", "merge_cost_partials", "picodollars",
    "unpriced", "warn_unpriced",
]

#: What :func:`bill` reads: the model and one token counter per rate.
CALL_COLUMNS = ("model", *RATES)

#: What :func:`bill` adds: the four parts, then their sum.
COST_COLUMNS = ("input_usd", "output_usd", "cache_read_usd", "cache_write_usd", "cost_usd")

#: The groupings :func:`costs` knows.
GROUPINGS = COST_GROUPINGS
Grouping = Literal["session", "day", "week", "month", "model", "project", "format"]

F = TypeVar("F", pl.DataFrame, pl.LazyFrame)

_PRICE = "__price_"  # prefix of the joined price columns, dropped again


class UnpricedWarning(UserWarning):
    """A model the price table has no price for: its calls cost null."""


class NoUsageWarning(UnpricedWarning):
    """Calls whose usage is all zero (recorded by a proxy that counts none): their cost is unknown, null."""


def has_usage() -> pl.Expr:
    """Whether a call recorded any usage: one of its counters (:data:`CALL_COLUMNS`' ``input`` to
    ``cache_write_1h``) is above zero. A call with none costs null (unknown), never $0.

    >>> pl.DataFrame({r: [0, 1] for r in RATES}).select(has_usage())["has_usage"].to_list()
    [False, True]
    """
    return pl.any_horizontal([pl.col(r).fill_null(0) > 0 for r in RATES]).alias("has_usage")


def bill(calls: F, prices: Prices | str | None = None) -> F:
    """``calls`` with :data:`COST_COLUMNS` added (see the module docstring for the rule).

    Parameters
    ----------
    calls
        One row per API call: ``model`` (as recorded or normalized; it is normalized for the lookup) and
        the counters ``input``, ``output``, ``cache_read``, ``cache_write_5m``, ``cache_write_1h``
        (integers; null counts as 0). A DataFrame or a LazyFrame; the result is the same kind, in the
        same row order.
    prices
        A :class:`~panto_analytics.outcomes.prices.Prices`, a LiteLLM price file, or None for genai-prices.
        For a DataFrame, the table is first extended to the names the calls use (``Prices.covering``);
        a LazyFrame is joined with the table as it is: call ``covering`` yourself for names the source
        only finds by its matching rules.

    Returns
    -------
    DataFrame or LazyFrame
        ``calls`` and the five cost columns (Float64, US dollars); null where the model has no price.

    Examples
    --------
    Above the tier genai-prices bills the whole call at the higher rates ($3 -> $6 in, $15 -> $22.50 out):

    >>> calls = pl.DataFrame({"model": ["claude-sonnet-4-5"] * 2, "input": [200_000, 200_001], "output": [10, 10],
    ...     "cache_read": [0, 0], "cache_write_5m": [0, 0], "cache_write_1h": [0, 0]})
    >>> bill(calls)["cost_usd"].round(6).to_list()
    [0.60015, 1.200231]
    """
    table = load_prices(prices)
    if isinstance(calls, pl.DataFrame):
        # Eagerly, step by step: on frames of calls this size a lazy query's fixed cost is most of the bill.
        names = _model_names(calls)
        table = table.covering(names[_KEY].to_list())
        prices_of = _name_prices(names, table)
        # Where no model of these calls has a tier, every call pays its base rates: only those are joined.
        tiers = prices_of[_PRICE + "tier_start"].null_count() < prices_of.height
        # The join and the arithmetic as one query (each eager step is one, with its fixed cost).
        priced = _priced(calls.lazy(), table, prices_of=prices_of.lazy(), columns=None if tiers else RATES)
        return cast(F, _costs(priced, table.rule, tiers=tiers).collect(engine="in-memory"))
    return cast(F, _costs(_priced(calls, table), table.rule))


_RAW, _KEY = _PRICE + "raw", _PRICE + "key"


def _costs(priced: F, rule: str, *, tiers: bool = True) -> F:
    """``priced`` (calls joined with their price columns) with :data:`COST_COLUMNS`, the price columns dropped
    (``tiers=False``: no call's model has a tier, and only the base rates were joined).
    In two stages (the parts, then their sums): planning one nested expression costs more than evaluating it."""
    stage_parts, stage_sums = _cost_stages(rule, tiers)
    return priced.with_columns(stage_parts).with_columns(stage_sums).drop(pl.selectors.starts_with(_PRICE))


@lru_cache(maxsize=8)
def _cost_stages(rule: str, tiers: bool) -> tuple[list[pl.Expr], list[pl.Expr]]:
    """:func:`_costs`'s two stages, built once per rule (an expression is immutable; building one costs Python
    time on every bill)."""
    parts = {r: pl.col(f"{_PRICE}part_{r}") for r in RATES}
    return ([e.alias(f"{_PRICE}part_{r}") for r, e in _parts(rule, tiers=tiers).items()], _sums(parts))


def _model_names(calls: F) -> F:
    """Each distinct ``model`` of ``calls`` (``_RAW``) and its normalized name (``_KEY``): names are normalized
    once per distinct name, not once per call."""
    return calls.select(pl.col("model").unique().alias(_RAW)).with_columns(normalized_model(_RAW).alias(_KEY))


def _name_prices(names: F, table: Prices) -> F:
    """``names`` (:func:`_model_names`) with the price columns of their model (prefixed ``_PRICE``; ``_KEY``
    stays: :func:`costs` groups by it)."""
    frame = table.frame.rename(lambda c: _PRICE + c)
    return cast(F, names.join(frame if isinstance(names, pl.DataFrame) else frame.lazy(), left_on=_KEY,
                              right_on=_PRICE + "model", how="left"))


def _priced(calls: F, table: Prices, *, prices_of: F | None = None, columns: Sequence[str] | None = None) -> F:
    """``calls`` with the price columns of their model (prefixed ``_PRICE``), joined back by the recorded name.

    ``prices_of``: :func:`_name_prices` of the calls' names, when the caller has it already; ``columns``: only
    these price columns (unprefixed, e.g. :data:`~.prices.RATES`), else all of them and ``_KEY``."""
    if prices_of is None:
        prices_of = _name_prices(_model_names(calls), table)
    if columns is not None:
        prices_of = prices_of.select(_RAW, *(_PRICE + c for c in columns))
    return cast(F, calls.join(prices_of, left_on="model", right_on=_RAW, how="left",
                              maintain_order="left"))


def _bill_exprs(rule: str) -> list[pl.Expr]:
    """The five cost columns over the calls joined with the price columns."""
    return _sums(_parts(rule))


def _parts(rule: str, *, tiers: bool = True) -> dict[str, pl.Expr]:
    """Each rate's dollars over the calls joined with the price columns. ``tiers=False``: no call's model has
    a tier, so either rule bills count x base rate (what each gives where ``tier_start`` is null)."""
    count = {r: pl.col(r).cast(pl.Float64).fill_null(0.0) for r in RATES}
    base = {r: pl.col(_PRICE + r) for r in RATES}
    if not tiers:
        return {r: count[r] * base[r] for r in RATES}
    above = {r: pl.col(f"{_PRICE}{r}_above") for r in RATES}
    start = pl.col(_PRICE + "tier_start").cast(pl.Float64)
    tiered = start.is_not_null()
    if rule == "cliff":
        prompt = count["input"] + count["cache_read"] + count["cache_write_5m"] + count["cache_write_1h"]
        over = tiered & (prompt > start)
        part = {r: count[r] * pl.when(over).then(above[r]).otherwise(base[r]) for r in RATES}
    else:
        def split(r: str) -> pl.Expr:
            past = (count[r] - start).clip(lower_bound=0.0)
            return pl.when(tiered).then((count[r] - past) * base[r] + past * above[r]).otherwise(count[r] * base[r])
        part = {r: split(r) for r in RATES}
    return part


def _sums(part: dict[str, pl.Expr]) -> list[pl.Expr]:
    """The five cost columns from each rate's dollars ``part``; null for a call without usage (:func:`has_usage`)."""
    known = has_usage()
    exprs = [part["input"].alias("input_usd"), part["output"].alias("output_usd"),
             part["cache_read"].alias("cache_read_usd"),
             (part["cache_write_5m"] + part["cache_write_1h"]).alias("cache_write_usd")]
    total = part["input"] + part["output"] + part["cache_read"] + (part["cache_write_5m"] + part["cache_write_1h"])
    return [pl.when(known).then(e).alias(e.meta.output_name()) for e in [*exprs, total.alias("cost_usd")]]


def call_tokens(messages: F) -> F:
    """The API calls of a message frame, as :func:`bill` reads them.

    An API call is a message with usage (adapters store all four counters or none; only assistant messages
    have them). ``cache_write_1h`` is the frame's where it has one, else 0: a write without a recorded
    lifetime is a 5-minute write, and ``cache_write_5m`` is the rest of ``cache_write``.
    """
    one_hour = (pl.col("cache_write_1h") if "cache_write_1h" in messages.collect_schema().names()
                else pl.lit(0)).cast(pl.UInt32).fill_null(0)
    return (messages.filter(pl.col("input").is_not_null())
            .with_columns(one_hour.alias("cache_write_1h"))
            .with_columns((pl.col("cache_write").cast(pl.Int64) - pl.col("cache_write_1h")).clip(lower_bound=0)
                          .cast(pl.UInt32).alias("cache_write_5m")))


def _group_key(by: str, timezone: str) -> pl.Expr:
    local = pl.col("timestamp").dt.convert_time_zone(timezone)
    if by == "session":
        return pl.col(SESSION).cast(pl.String).alias(SESSION)
    if by == "day":
        return local.dt.date().alias("day")
    if by == "week":
        return local.dt.truncate("1w").dt.date().alias("week")
    if by == "month":
        return local.dt.truncate("1mo").dt.date().alias("month")
    if by == "model":
        return normalized_model("model").alias("model")
    if by == "project":
        return pl.col("project")
    if by == "format":
        return pl.col("source_format").alias("source_format")
    raise ValueError(f"unknown grouping {by!r}: one of {', '.join(GROUPINGS)}")


def costs(messages: Any, *, by: Grouping | Sequence[Grouping] = (), prices: Prices | str | None = None,
          timezone: str = "UTC", sessions: pl.DataFrame | None = None) -> pl.DataFrame:
    """What the recorded API calls cost, one row per group.

    Parameters
    ----------
    messages
        A message frame (DataFrame or LazyFrame), or a corpus (anything with ``.messages`` and ``.sessions``,
        such as :class:`~panto_analytics.ingest.corpus.Corpus`).
    by
        Groupings, in order: ``session``, ``day``, ``week`` (starting Monday), ``month`` (dates in
        ``timezone``), ``model`` (normalized), ``project`` (needs the sessions table), ``format``.
        None: one row for everything.
    prices
        As in :func:`bill`.
    timezone
        The time zone of days, weeks and months (IANA name).
    sessions
        The sessions table, for ``project`` (taken from a corpus when ``messages`` is one).

    Returns
    -------
    pl.DataFrame
        The group columns (``session_id``, ``day``, ``week``, ``month``, ``model``, ``project``,
        ``source_format``), ``api_calls``, ``input``, ``output``, ``cache_read``, ``cache_write_5m``,
        ``cache_write_1h`` (UInt64 sums), the five cost columns (null where a call of the group has no price
        or no usage), ``priced_cost_usd`` (the bill of the group's calls that have a cost: a total at hand
        where ``cost_usd`` is null), ``unpriced_calls`` (calls of models without a price), ``no_usage_calls``
        (calls whose counters are all zero: cost unknown) and ``price_source`` (the table, and in brackets
        the providers whose prices its calls took, e.g. ``genai-prices 0.2.3 (anthropic, zai)``); sorted by
        the groups.

    Warns
    -----
    UnpricedWarning
        Once per model without a price: how many calls and tokens went unpriced.
    NoUsageWarning
        Once per model with calls that recorded no usage: how many (their cost is null).

    Examples
    --------
    >>> import panto_analytics as pa, warnings
    >>> with warnings.catch_warnings(record=True) as notes:
    ...     table = costs(pa.examples.messages(), by="model")   # example-model has no price
    >>> table.select("model", "api_calls", "input", "cost_usd").rows(), len(notes)
    ([('example-model', 4, 7700, None)], 1)
    """
    partials = cost_partials(messages, by=by, prices=prices, timezone=timezone, sessions=sessions)
    return merge_cost_partials([partials], by=by)


#: Dollars are summed as whole picodollars (each call's cost rounded to 1e-12 $), so that a group's total is
#: one integer sum whatever the order or the split of its calls: partial tables merge exactly.
PICO = 10**12



def picodollars(column: str | pl.Expr) -> pl.Expr:
    """Dollars as whole picodollars (rounded to 1e-12 $; a Decimal, exact to add up), null where null."""
    c = pl.col(column) if isinstance(column, str) else column
    return (c * PICO).round().cast(pl.Decimal(38, 0))


def dollars_total(column: str | pl.Expr) -> pl.Expr:
    """The sum of a column of dollars, as every total of dollars is taken: the whole picodollars of its values
    added up (exact, so the same in any order or split), then one division (nulls are left out).

    >>> pl.DataFrame({"usd": [0.1, 0.2, None]}).select(dollars_total("usd")).item()
    0.3
    """
    return picodollars(column).sum().cast(pl.Float64) / PICO


_MODEL_KEY = "__cost_model"
_PRICED_KEY = "__cost_priced"       # the model has a price
_PROVIDER_KEY = "__cost_provider"   # whose price it is
_NO_USAGE = "__cost_no_usage"       # calls without usage


def _nulls(c: str) -> str:
    return f"__nulls_{c}"


def cost_partials(messages: Any, *, by: Grouping | Sequence[Grouping] = (), prices: Prices | str | None = None,
                  timezone: str = "UTC", sessions: pl.DataFrame | None = None) -> pl.DataFrame:
    """The partial sums of :func:`costs` over some whole sessions: one row per group, model and whether the
    call is priced, with only sums (calls, tokens, picodollars, null counts), so that the partial tables of
    disjoint sets of sessions merge exactly by :func:`merge_cost_partials` (the dataset lane bills bucket by
    bucket this way). Arguments as in :func:`costs`.

    Examples
    --------
    >>> import panto_analytics as pa, warnings
    >>> m = pa.examples.messages()
    >>> halves = [cost_partials(m.filter(pl.col("session_id") == s), by="model") for s in m["session_id"].unique()]
    >>> with warnings.catch_warnings(record=True):
    ...     merge_cost_partials(halves, by="model").equals(costs(m, by="model"))
    True
    """
    groups = [by] if isinstance(by, str) else list(by)
    for g in groups:
        if g not in GROUPINGS:
            raise ValueError(f"unknown grouping {g!r}: one of {', '.join(GROUPINGS)}")
    if hasattr(messages, "messages") and hasattr(messages, "sessions"):
        sessions = messages.sessions if sessions is None else sessions
        messages = messages.messages
    calls = call_tokens(messages.lazy())
    if "project" in groups:
        if sessions is None:
            raise ValueError("by='project' needs the sessions table: pass a corpus or sessions=")
        about = sessions.lazy().select(pl.col(SESSION).cast(pl.String).alias("__sid"), "project")
        calls = calls.with_columns(pl.col(SESSION).cast(pl.String).alias("__sid")).join(
            about, on="__sid", how="left").drop("__sid")
    names = calls.select(normalized_model(pl.col("model").unique())).collect()["model"].to_list()
    table = load_prices(prices).covering(names)
    keys = [_group_key(g, timezone) for g in groups if g != "model"]
    # The model, normalized once per distinct name by the price lookup, replaces the recorded one.
    priced = pl.any_horizontal([pl.col(_PRICE + r).is_not_null() for r in RATES])
    billed = (_priced(calls.with_columns(keys), table).with_columns(_bill_exprs(table.rule))
              .with_columns(pl.col(_PRICE + "key").alias("model"), priced.alias(_PRICED_KEY),
                            pl.col(_PRICE + "provider").alias(_PROVIDER_KEY))
              .drop(pl.selectors.starts_with(_PRICE)))
    key_names = [_group_key(g, timezone).meta.output_name() for g in groups]
    hidden = [pl.col("model").alias(_MODEL_KEY), _PRICED_KEY, _PROVIDER_KEY]
    aggs = [pl.len().cast(pl.UInt64).alias("api_calls"),
            *[pl.col(c).cast(pl.UInt64).sum() for c in RATES],
            *[picodollars(c).sum().alias(c) for c in COST_COLUMNS],
            *[pl.col(c).is_null().sum().cast(pl.UInt64).alias(_nulls(c)) for c in COST_COLUMNS],
            (~has_usage()).sum().cast(pl.UInt64).alias(_NO_USAGE)]
    out = (billed.group_by([*key_names, *hidden]).agg(aggs)
           .with_columns(pl.lit(table.source).alias("price_source")).collect())
    return out


def merge_cost_partials(partials: Sequence[pl.DataFrame], *, by: Grouping | Sequence[Grouping] = ()) -> pl.DataFrame:
    """:func:`costs` from the :func:`cost_partials` of disjoint sets of sessions (all with the same ``by`` and
    prices): sums per group, dollars from the summed picodollars, null where a call of the group is unpriced.
    Warns once per unpriced model, as :func:`costs` does."""
    groups = [by] if isinstance(by, str) else list(by)
    key_names = [_group_key(g, "UTC").meta.output_name() for g in groups]
    frames = [p for p in partials if p.height] or list(partials[:1])
    both = pl.concat(frames, how="vertical_relaxed").lazy()
    source = both.select(pl.col("price_source").first()).collect().item() if frames and frames[0].height else None
    providers = pl.col(_PROVIDER_KEY).filter(pl.col(_PRICED_KEY)).drop_nulls().unique().sort().str.join(", ")
    aggs = [pl.col("api_calls").sum(), *[pl.col(c).sum() for c in RATES],
            *[pl.when(pl.col(_nulls(c)).sum() > 0).then(None)
              .otherwise(pl.col(c).sum().cast(pl.Float64) / PICO).alias(c) for c in COST_COLUMNS],
            (pl.col("cost_usd").sum().cast(pl.Float64) / PICO).alias("priced_cost_usd"),
            pl.col("api_calls").filter(~pl.col(_PRICED_KEY)).sum().alias("unpriced_calls"),
            pl.col(_NO_USAGE).sum().alias("no_usage_calls"),
            pl.when(providers.str.len_chars() > 0).then(pl.lit(f"{source} (") + providers + pl.lit(")"))
            .otherwise(pl.lit(source, pl.String)).alias("price_source")]
    grouped = (both.group_by(key_names).agg(aggs).sort(key_names, nulls_last=True) if key_names
               else both.select(aggs))
    by_model = pl.col(_MODEL_KEY).fill_null("(no model)").alias("model")
    missing = (both.filter(~pl.col(_PRICED_KEY)).group_by(by_model)
               .agg(pl.col("api_calls").sum(), pl.sum_horizontal([pl.col(c).sum() for c in RATES]).alias("tokens"))
               .sort("model"))
    no_usage = (both.filter(pl.col(_NO_USAGE) > 0).group_by(by_model).agg(pl.col(_NO_USAGE).sum().alias("api_calls"))
                .sort("model"))
    out, miss, unknown = pl.collect_all([grouped, missing, no_usage])
    warn_unpriced(miss)
    _warn_no_usage(unknown)
    return out


def unpriced(billed: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """One row per model whose calls :func:`bill` left unpriced: ``model``, ``api_calls``, ``tokens``."""
    return _unpriced(billed.lazy().with_columns(normalized_model("model"))).collect()


def _unpriced(billed: pl.LazyFrame) -> pl.LazyFrame:
    """:func:`unpriced` of calls whose ``model`` is normalized already (a call without usage is not unpriced:
    its cost is unknown whatever the price)."""
    return (billed.filter(pl.col("cost_usd").is_null() & has_usage())
            .group_by(pl.col("model").fill_null("(no model)"))
            .agg(pl.len().cast(pl.UInt64).alias("api_calls"),
                 pl.sum_horizontal([pl.col(c).cast(pl.UInt64).fill_null(0) for c in RATES]).sum().alias("tokens"))
            .sort("model"))


def warn_unpriced(table: pl.DataFrame, *, replay: bool = False, stacklevel: int = 3) -> None:
    """One :class:`UnpricedWarning` per model of ``table`` (:func:`unpriced`'s columns, or a replay's
    ``unpriced``): how many of its calls and tokens went unpriced. The one wording of the warning, for
    :func:`costs` and, with ``replay``, for a billed replay (its recorded calls; its sessions' costs are null).

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_unpriced(pl.DataFrame({"model": ["m"], "api_calls": [2], "tokens": [15]}))
    >>> str(caught[0].message)
    'no price for model m: 2 calls, 15 tokens unpriced (their cost is null)'
    """
    calls, whose = ("recorded call", "their sessions' costs are null") if replay else ("call", "their cost is null")
    for model, n_calls, tokens in table.iter_rows():
        warnings.warn(UnpricedWarning(f"no price for model {model}: {counted(n_calls, calls)}, "
                                      f"{counted(tokens, 'token')} unpriced ({whose})"), stacklevel=stacklevel)


def _warn_no_usage(table: pl.DataFrame) -> None:
    for model, calls in table.iter_rows():
        warnings.warn(NoUsageWarning(f"{counted(calls, 'call')} of model {model} recorded no usage (every counter 0, "
                                     "as behind a proxy that counts none): their cost is unknown (null), not $0"),
                      stacklevel=3)
