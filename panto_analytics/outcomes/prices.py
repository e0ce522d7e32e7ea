"""Price tables, offline: the pinned ``genai-prices`` package, or a LiteLLM price file.

:func:`load_prices` gives a :class:`Prices`: a frame with one row per model
name, in US dollars per token, and a ``source`` that every cost output
repeats (``"genai-prices 0.2.3"``, ``"LiteLLM file NAME SHA256[:12]"``).

The frame's columns (:data:`PRICE_SCHEMA`): ``model`` (the name as
:func:`~panto_analytics.models.normalized_model` writes it), the five rates
``input``, ``output``, ``cache_read``, ``cache_write_5m``, ``cache_write_1h``,
the same five with ``_above`` (the rate past ``tier_start`` prompt tokens;
null where the source has no tier), and ``tier_start``.

Above 200k tokens the two sources differ, and each is followed as written:

- **genai-prices** (``rule="cliff"``): once a call's whole prompt (input +
  cache reads + cache writes) passes ``tier_start``, *every* token of the
  call, output included, pays the tier's rate (``genai_prices.types.TieredPrices``:
  "crossing a tier applies that rate to ALL tokens").
- **LiteLLM file** (``rule="split"``), as ccusage bills it
  (``calculateTieredCost`` in ccusage's ``pricing.ts``): each counter on its
  own (input, output, cache reads, cache writes), the tokens up to 200k pay
  the base rate and those above 200k the ``*_above_200k_tokens`` rate.

A call of 300k input tokens on a $3 / $6 per MTok model costs $1.80 under the
cliff and $1.20 under the split rule.

Missing rates: genai-prices prices cache writes as input where a model has no
cache-write rate, 1-hour writes as 5-minute writes where it has no 1-hour
rate, and cache reads as input where it has no read rate (its
``decompose`` rules, checked against ``genai_prices.calc_price`` in the
tests); a LiteLLM file is read the same way (``cache_creation_input_token_cost_above_1hr``
for 1-hour writes, else the 5-minute rate), which is how ccusage 20.0.24 bills them.

Prices never come from the network: genai-prices' bundled snapshot is read
(its auto-update is never started), and the version is pinned in
``pyproject.toml``. Where genai-prices changes a model's price by date, the
price in force today is used.

>>> prices = load_prices()
>>> prices.source.startswith("genai-prices ")
True
>>> row = prices.covering(["claude-opus-4-5"]).frame.filter(pl.col("model") == "claude-opus-4-5")
>>> [round(row[c].item() * 1e6, 4) for c in ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")]
[5.0, 25.0, 0.5, 6.25, 10.0]
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

import polars as pl

from ..errors import InputError
from ..models import normalized_model

__all__ = ["FREE_SUFFIX", "PREFERRED_PROVIDERS", "PRICE_SCHEMA", "RATES", "TIER", "Prices", "TierRule", "genai_providers", "load_prices"]

#: The per-token rates a price row holds, by the token counter they price.
RATES = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")

#: Where LiteLLM's ``*_above_200k_tokens`` rates start.
TIER = 200_000

PRICE_SCHEMA: dict[str, pl.DataType] = {
    "model": pl.String(),
    **{rate: pl.Float64() for rate in RATES},
    **{f"{rate}_above": pl.Float64() for rate in RATES},
    "tier_start": pl.UInt64(),
    "provider": pl.String(),
}

#: The end of an OpenRouter model id that costs nothing (``nvidia/nemotron-3-super-120b-a12b:free``): priced $0
#: by every source, its provider ``free``.
FREE_SUFFIX = ":free"

#: How rates above ``tier_start`` apply (see the module docstring).
TierRule = Literal["cliff", "split"]

#: genai-prices providers tried first, in this order, when several price a model id.
PREFERRED_PROVIDERS = ("anthropic", "openai", "google")

_PER_MTOK = Decimal(1_000_000)


@dataclass(frozen=True)
class Prices:
    """A price table: ``frame`` (:data:`PRICE_SCHEMA`), its ``source``, its tier ``rule``, and the ``provider``
    tried first where several price a model id (None: the source's own order).

    ``covering(names)`` returns the table with a row for each name the source can price (by its own
    matching rules: genai-prices' model matchers, or LiteLLM keys as ccusage looks them up), so that a
    join on the normalized model name finds them. A name ending in :data:`FREE_SUFFIX` costs $0.
    Each row's ``provider`` says whose price it is (genai-prices' provider id, a LiteLLM entry's
    ``litellm_provider``; ``free`` for a ``:free`` id).
    """

    frame: pl.DataFrame
    source: str
    rule: TierRule
    _match: Callable[[str], dict[str, Any] | None] = field(repr=False, compare=False, default=lambda name: None)
    provider: str | None = None

    def covering(self, names: Iterable[str | None]) -> Prices:
        """This table plus a row for each of ``names`` it lacks and its source can price (names as written).

        >>> load_prices().covering(["some/model:free"]).frame.filter(pl.col("model") == "some/model:free").select(
        ...     "input", "output", "provider").row(0)
        (0.0, 0.0, 'free')
        """
        known = set(self.frame["model"].to_list())
        rows = []
        for name in sorted({n for n in names if n is not None} - known):
            row = _FREE if name.lower().endswith(FREE_SUFFIX) else self._match(name)
            if row is not None:
                rows.append({**row, "model": name})
        if not rows:
            return self
        extra = pl.DataFrame(rows, schema=PRICE_SCHEMA)
        return replace(self, frame=pl.concat([self.frame, extra]))


#: The price row of a ``:free`` model id.
_FREE: dict[str, Any] = {**{rate: 0.0 for rate in RATES}, **{f"{rate}_above": None for rate in RATES},
                         "tier_start": None, "provider": "free"}


def load_prices(source: str | Path | Prices | None = None, *, provider: str | None = None) -> Prices:
    """The price table: None for the pinned genai-prices snapshot, or the path of a LiteLLM price file.

    Parameters
    ----------
    source
        None: genai-prices, offline. A path: LiteLLM's ``model_prices_and_context_window.json`` shape (an
        object of model name -> ``input_cost_per_token``, ``output_cost_per_token``,
        ``cache_read_input_token_cost``, ``cache_creation_input_token_cost``,
        ``cache_creation_input_token_cost_above_1hr`` and the ``*_above_200k_tokens`` variants).
        A :class:`Prices` is returned as it is.
    provider
        The provider whose price a model id takes where several price it (GLM models: ``zai`` or ``zhipuai``,
        whose prices differ): a genai-prices provider id (:func:`genai_providers`), or for a LiteLLM file the
        key prefix (``zai`` tries ``zai/NAME`` first). None: genai-prices' own order (Anthropic, OpenAI,
        Google first), or the file's.

    Returns
    -------
    Prices

    Raises
    ------
    InputError
        The file cannot be read, is not JSON, or is not an object of objects; or a rate is not a finite
        number of dollars per token from 0 to 1 (NaN, infinite, negative, absurd).
    ValueError
        ``provider`` is not a genai-prices provider id.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "prices.json"
    >>> _ = f.write_text(json.dumps({"claude-x-1-20250101": {"input_cost_per_token": 3e-6, "output_cost_per_token": 1.5e-5}}))
    >>> p = load_prices(f)
    >>> p.rule, p.frame.select("model", "input", "cache_read").rows()
    ('split', [('claude-x-1', 3e-06, 3e-06)])
    """
    if isinstance(source, Prices):
        return source
    if source is None:
        return _genai_prices(provider)
    return _litellm(Path(source), provider)


def genai_providers() -> list[str]:
    """The provider ids of the pinned genai-prices snapshot (what ``provider=`` takes with its tables).

    >>> {"anthropic", "zai", "zhipuai"} <= set(genai_providers())
    True
    """
    from genai_prices import data_snapshot

    return [p.id for p in data_snapshot.get_snapshot().providers]


# --- genai-prices ------------------------------------------------------------------------------------

def _genai_prices(preferred: str | None = None) -> Prices:
    from genai_prices import __version__, data_snapshot

    snapshot = data_snapshot.get_snapshot()
    if preferred is not None and preferred not in (ids := [p.id for p in snapshot.providers]):
        raise ValueError(f"unknown provider {preferred!r}: genai-prices {__version__} has {', '.join(ids)}")
    now = datetime.now(UTC)
    first = (preferred,) if preferred is not None else ()
    order = {p: i for i, p in enumerate((*first, *PREFERRED_PROVIDERS))}
    # Only the preferred providers' ids are rows: any other name is resolved by genai-prices' own matcher
    # (``covering``), which picks the provider by the model id, as genai-prices' calc_price does; the same id
    # under another provider (a reseller, github-copilot's claude-sonnet-4) is not taken by chance.
    providers = sorted((p for p in snapshot.providers if p.id in order), key=lambda p: order[p.id])
    rows: dict[str, dict[str, Any]] = {}
    for provider in providers:
        for model in provider.models:
            name = model.id
            if name not in rows and (row := _genai_row(model, now)) is not None:
                rows[name] = {"model": name, **row, "provider": provider.id}

    frame = pl.DataFrame(list(rows.values()), schema=PRICE_SCHEMA)
    return Prices(frame, f"genai-prices {__version__}", "cliff", _GenaiMatch(now, preferred), preferred)


@dataclass(frozen=True, eq=False)
class _GenaiMatch:
    """genai-prices' own match of a model name the table does not name, priced at ``now`` (by ``provider`` first,
    where it prices the name); picklable (a dataset task's worker process gets it), the snapshot looked up where
    it runs."""

    now: datetime
    provider: str | None = None

    def __call__(self, name: str) -> dict[str, Any] | None:
        from genai_prices import data_snapshot

        snapshot = data_snapshot.get_snapshot()
        for provider_id in dict.fromkeys((self.provider, None)):
            try:
                provider, model = snapshot.find_provider_model(name, None, provider_id, None)
            except LookupError:
                continue
            row = _genai_row(model, self.now)
            return None if row is None else {**row, "provider": provider.id}
        return None


def _genai_row(model: Any, now: datetime) -> dict[str, Any] | None:
    """One price row of a genai-prices model (rates per token), or None when it prices no tokens."""
    from genai_prices.types import TieredPrices

    prices = model.get_prices(now)
    raw = {key: getattr(prices, f"{key}_mtok", None)
           for key in ("input", "output", "cache_read", "cache_write", "cache_write_1h")}
    if raw["input"] is None and raw["output"] is None:
        return None
    starts = {tp.tiers[0].start for tp in raw.values() if isinstance(tp, TieredPrices) and tp.tiers}

    def base(v: Any) -> Decimal | None:
        return v.base if isinstance(v, TieredPrices) else v

    def above(v: Any) -> Decimal | None:
        if isinstance(v, TieredPrices):
            return v.tiers[0].price if v.tiers else v.base
        return v  # an untiered rate is the same past the tier

    def per_token(v: Decimal | None) -> float | None:
        return None if v is None else float(v / _PER_MTOK)

    out: dict[str, Any] = {}
    for suffix, pick in (("", base), ("_above", above)):
        inp = pick(raw["input"])
        write = pick(raw["cache_write"])
        write = write if write is not None else inp
        write_1h = pick(raw["cache_write_1h"])
        read = pick(raw["cache_read"])
        out.update({f"input{suffix}": per_token(inp), f"output{suffix}": per_token(pick(raw["output"])),
                    f"cache_read{suffix}": per_token(read if read is not None else inp),
                    f"cache_write_5m{suffix}": per_token(write),
                    f"cache_write_1h{suffix}": per_token(write_1h if write_1h is not None else write)})
    if not starts:
        out.update({f"{rate}_above": None for rate in RATES})
    out["tier_start"] = min(starts) if starts else None
    return out


# --- LiteLLM -----------------------------------------------------------------------------------------

#: LiteLLM's field for each rate, base and above 200k.
_LITELLM_FIELDS = {
    "input": "input_cost_per_token",
    "output": "output_cost_per_token",
    "cache_read": "cache_read_input_token_cost",
    "cache_write_5m": "cache_creation_input_token_cost",
    "cache_write_1h": "cache_creation_input_token_cost_above_1hr",
}

#: ccusage's provider prefixes, tried in this order after the name itself (``pricing.ts``).
_LITELLM_PREFIXES = ("anthropic/", "claude-3-5-", "claude-3-", "claude-", "openai/", "azure/", "openrouter/openai/")


def _litellm(path: Path, preferred: str | None = None) -> Prices:
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InputError(str(path), None, f"cannot read the price file: {e.strerror or e}", skippable=False) from e
    try:
        table = json.loads(data)
    except ValueError as e:
        line = getattr(e, "lineno", None)
        raise InputError(str(path), line, f"not a JSON price file: {e}", skippable=False) from e
    if not isinstance(table, dict):
        raise InputError(str(path), None, "a LiteLLM price file is an object of model name -> prices",
                         skippable=False)
    entries: dict[str, dict[str, Any]] = {}
    for key, value in table.items():
        if isinstance(value, dict) and (row := _litellm_row(value, path, key)) is not None:
            entries[key] = row
    keys = list(entries)
    normalized = pl.DataFrame({"key": keys}, schema={"key": pl.String}).select(
        "key", normalized_model("key").alias("model"))
    # One row per normalized name: the preferred provider's key first, then the key itself, then undecorated
    # keys, then the rest, each by name.
    prefix = f"{preferred}/" if preferred is not None else None
    ranked = normalized.with_columns(
        rank=pl.when(pl.lit(prefix is not None) & pl.col("key").str.starts_with(prefix or "")).then(-1)
        .when(pl.col("key") == pl.col("model")).then(0).when(~pl.col("key").str.contains("/")).then(1)
        .otherwise(2)).sort("model", "rank", "key").unique("model", keep="first", maintain_order=True)
    rows = [{"model": m, **entries[k]} for k, m in ranked.select("key", "model").iter_rows()]
    digest = hashlib.sha256(data).hexdigest()[:12]
    frame = pl.DataFrame(rows, schema=PRICE_SCHEMA)
    return Prices(frame, f"LiteLLM file {path.name} {digest}", "split", _LiteLLMMatch(entries, prefix), preferred)


@dataclass(frozen=True, eq=False)
class _LiteLLMMatch:
    """ccusage's lookup of a model name in a LiteLLM file's ``entries``: the name, the name behind each provider
    prefix, then any key containing it or contained in it, in file order; picklable (a dataset task's worker
    process gets it)."""

    entries: dict[str, dict[str, Any]]
    prefix: str | None = None   # the preferred provider's key prefix, tried first

    def __call__(self, name: str) -> dict[str, Any] | None:
        first = (self.prefix + name,) if self.prefix is not None else ()
        for candidate in (*first, name, *(p + name for p in _LITELLM_PREFIXES)):
            if candidate in self.entries:
                return self.entries[candidate]
        low = name.lower()
        for key in self.entries:  # in file order
            key_lower = key.lower()
            if low in key_lower or key_lower in low:
                return self.entries[key]
        return None


#: The most a price file may charge for one token, in dollars: 1000 times the dearest real rate (o1-pro's
#: output, $600 per million tokens). Costs are summed as whole picodollars in a Decimal(38, 0)
#: (:func:`~panto_analytics.outcomes.cost.picodollars`): at $1 a token, a call of 1e7 tokens is 1e19
#: picodollars, and 1e10 calls (a million sessions of ten thousand calls) sum to 1e29, nine orders of magnitude
#: inside the 1e38 a sum can hold before it wraps.
_MAX_PRICE_PER_TOKEN = 1.0


def _litellm_row(entry: dict[str, Any], path: Path, model: str) -> dict[str, Any] | None:
    """One LiteLLM entry as a price row, or None when it prices neither input nor output tokens.

    Raises :class:`InputError` for a rate that is not a finite number from 0 to :data:`_MAX_PRICE_PER_TOKEN`
    (JSON's ``NaN``, ``Infinity``, a negative or absurd price).
    """
    def rate(key: str) -> float | None:
        value = entry.get(key)
        if not isinstance(value, int | float) or isinstance(value, bool):
            return None
        try:
            price = float(value)
        except OverflowError:   # an integer past a float's range
            price = float("inf")
        if not 0 <= price <= _MAX_PRICE_PER_TOKEN:   # False for NaN too
            raise InputError(str(path), None, f"model {model!r}: {key} is {value!r}; a price is a finite number "
                             f"of dollars per token from 0 to {_MAX_PRICE_PER_TOKEN:g}", skippable=False)
        return price

    base = {name: rate(key) for name, key in _LITELLM_FIELDS.items()}
    if base["input"] is None and base["output"] is None:
        return None
    raw_above = {name: rate(f"{key}_above_200k_tokens") for name, key in _LITELLM_FIELDS.items()}
    tiered = any(v is not None for v in raw_above.values())
    # Missing rates, as genai-prices reads them: reads and writes as input, 1-hour writes as 5-minute ones.
    fallback = {"cache_read": "input", "cache_write_5m": "input", "cache_write_1h": "cache_write_5m"}
    above: dict[str, float | None] = {}
    for name in RATES:  # in order, so that a fallback's target is filled first
        target = fallback.get(name)
        if base[name] is None and target is not None:
            base[name] = base[target]
            above[name] = raw_above[name] if raw_above[name] is not None else above[target]
        else:
            # Above 200k, a counter without a rate of its own keeps its base rate (ccusage's calculateTieredCost).
            above[name] = raw_above[name] if raw_above[name] is not None else base[name]
    provider = entry.get("litellm_provider")
    return {**base, **{f"{k}_above": (v if tiered else None) for k, v in above.items()},
            "tier_start": TIER if tiered else None, "provider": provider if isinstance(provider, str) else None}
