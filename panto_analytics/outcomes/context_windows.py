"""Each model's context window, from a maintained table, and the window a corpus's recordings imply.

The table is genai-prices' (the package the prices come from, pinned in ``pyproject.toml`` and read offline
from its bundled snapshot): its ``ModelInfo.context_window``, which 1,419 of its 2,330 models carry in
genai-prices 0.2.3 (``claude-opus-4-5``: 200,000; ``claude-sonnet-4-6``: 1,000,000; ``gpt-5``: 400,000).
LiteLLM's ``model_prices_and_context_window.json`` carries ``max_input_tokens`` too, but LiteLLM is not a
dependency: only a price file the user gives is read, and only for prices.

A model is found as its price is (:mod:`.prices`): by its normalized name among the model ids of the
preferred provider, Anthropic, OpenAI and Google, else by genai-prices' own matching rules (which pick the
provider by the model id). :func:`corpus_window` gives the window a replay should use where the user gives none: per session,
the window the recording states (Codex's ``model_context_window``, a canonical file's ``context_window``),
else its model's; the window of the most sessions (on a tie, the smaller), with a sentence that says which
window and from where (``recommend`` and ``report`` print it).

>>> window_of("claude-opus-4-5-20251101")
(200000, 'genai-prices 0.2.3 (anthropic)')
>>> window_of("synth-pro") is None
True
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import polars as pl

from ..models import NOT_A_MODEL, normalized_model
from ..phrases import counted
from .prices import PREFERRED_PROVIDERS

__all__ = ["CorpusWindow", "corpus_window", "model_windows", "window_of", "windows_source"]


def windows_source() -> str:
    """The table's name, as every output states it (``genai-prices 0.2.3``)."""
    from genai_prices import __version__

    return f"genai-prices {__version__}"


@lru_cache(maxsize=8)
def _table(provider: str | None) -> dict[str, tuple[int, str]]:
    """``{model id (lowercase): (context window, provider id)}``, the preferred providers' first."""
    from genai_prices import data_snapshot

    first = (provider,) if provider is not None else ()
    order = {p: i for i, p in enumerate((*first, *PREFERRED_PROVIDERS))}
    out: dict[str, tuple[int, str]] = {}
    for prov in sorted((p for p in data_snapshot.get_snapshot().providers if p.id in order), key=lambda p: order[p.id]):
        for model in prov.models:
            if model.context_window and model.id.lower() not in out:
                out[model.id.lower()] = (int(model.context_window), prov.id)
    return out


@lru_cache(maxsize=4096)
def _lookup(name: str, provider: str | None) -> tuple[int, str] | None:
    """The window of one normalized model name and the provider it was found under, or None."""
    found = _table(provider).get(name.lower())
    if found is not None:
        return found
    from genai_prices import data_snapshot

    snapshot = data_snapshot.get_snapshot()
    for provider_id in dict.fromkeys((provider, None)):
        try:
            prov, model = snapshot.find_provider_model(name, None, provider_id, None)
        except LookupError:
            continue
        return (int(model.context_window), prov.id) if model.context_window else None
    return None


def window_of(model: str | None, *, provider: str | None = None) -> tuple[int, str] | None:
    """A model's context window in tokens and where it comes from (``genai-prices 0.2.3 (anthropic)``), or None
    where the table has none for it. ``provider``: the provider tried first (as ``load_prices(provider=)``)."""
    if model is None or model in NOT_A_MODEL:
        return None
    name = pl.select(normalized_model(pl.lit(model, pl.String))).item()
    found = _lookup(name, provider)
    return None if found is None else (found[0], f"{windows_source()} ({found[1]})")


def model_windows(models: Iterable[str | None], *, provider: str | None = None) -> pl.DataFrame:
    """One row per distinct model name: ``model`` (as given), ``context_window`` (null where unknown) and
    ``window_source``.

    >>> model_windows(["gpt-5", "synth-pro"]).rows()
    [('gpt-5', 400000, 'genai-prices 0.2.3 (openai)'), ('synth-pro', None, None)]
    """
    names = sorted({m for m in models if m is not None})
    found = [window_of(m, provider=provider) for m in names]
    return pl.DataFrame({"model": names, "context_window": [f and f[0] for f in found],
                         "window_source": [f and f[1] for f in found]},
                        schema={"model": pl.String, "context_window": pl.UInt64, "window_source": pl.String})


@dataclass(frozen=True)
class CorpusWindow:
    """The window the recordings imply: ``window`` (None: none is known), the sentence that says which and from
    where (``source``), and ``sessions``: one row per session with its ``context_window`` and ``window_source``
    (``recorded``, a table's name, or null)."""

    window: int | None
    source: str
    sessions: pl.DataFrame

    @property
    def from_models(self) -> bool:
        """Whether a session's window came from its model (the recordings name models the table knows): then
        ``recommend`` and ``report`` replay under ``window`` where the user gives none."""
        source = self.sessions["window_source"]
        return bool((source.is_not_null() & (source != "recorded")).any())

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the window and its source."""
        return {"window": self.window, "window_source": self.source}


def corpus_window(sessions: pl.DataFrame, *, provider: str | None = None) -> CorpusWindow:
    """The context window a replay of these sessions should use where the user gives none.

    Parameters
    ----------
    sessions
        The sessions table (``session_id``, ``model``, ``context_window``), or a corpus (its ``.sessions``).
    provider
        The provider whose model table is tried first.

    Returns
    -------
    CorpusWindow
        Each session's window: the one its recording states, else its model's in the table; the corpus's: the
        window of the most sessions (on a tie, the smaller). ``source`` names it, the model(s) behind it, the
        table, and how many sessions have another window or none.

    Examples
    --------
    >>> t = pl.DataFrame({"session_id": ["a", "b", "c", "d"],
    ...                   "model": ["claude-opus-4-5-20251101", "claude-opus-4-5", "gpt-5", "synth-pro"],
    ...                   "context_window": [None, None, None, None]})
    >>> w = corpus_window(t)
    >>> w.window
    200000
    >>> print(w.source)  # doctest: +NORMALIZE_WHITESPACE
    window 200k: the context window of claude-opus-4-5 in genai-prices 0.2.3 (anthropic), for 2 of 4 sessions
    (1 has another window, 1 none known)
    >>> w.from_models
    True
    """
    table = sessions.sessions if hasattr(sessions, "sessions") else sessions
    recorded = (table["context_window"].cast(pl.UInt64) if "context_window" in table.columns
                else pl.Series([None] * table.height, dtype=pl.UInt64))
    models = table.select(normalized_model(pl.col("model").cast(pl.String)))["model"]
    known = model_windows(models.to_list(), provider=provider)
    named = pl.DataFrame({"session_id": table["session_id"].cast(pl.String), "model": models,
                          "recorded": recorded}).join(known, on="model", how="left")
    per_session = named.select(
        "session_id", "model",
        context_window=pl.coalesce("recorded", "context_window"),
        window_source=pl.when(pl.col("recorded").is_not_null()).then(pl.lit("recorded"))
        .otherwise(pl.col("window_source")))
    counts = (per_session.drop_nulls("context_window").group_by("context_window").len()
              .sort(["len", "context_window"], descending=[True, False]))
    n = per_session.height
    if counts.is_empty():
        return CorpusWindow(None, f"no context window known for the models of {counted(n, 'session')} "
                                  f"({windows_source()} has none for them): give --window", per_session)
    window = int(counts["context_window"][0])
    behind = per_session.filter(pl.col("context_window") == window)
    sources = (behind.group_by("window_source").agg(pl.col("model").drop_nulls().unique().sort(), n=pl.len())
               .sort(["n", "window_source"], descending=[True, False]))
    what = []
    for source, names, _ in sources.rows():
        if source == "recorded":
            what.append("as the files record it")
        else:
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            what.append(f"the context window of {shown} in {source}")
    other = per_session.filter(pl.col("context_window").is_not_null() & (pl.col("context_window") != window)).height
    unknown = per_session["context_window"].null_count()
    rest = [f"{other} {'has' if other == 1 else 'have'} another window"] if other else []
    rest += [f"{unknown} none known"] if unknown else []
    tail = f" ({', '.join(rest)})" if rest else ""
    return CorpusWindow(window, f"window {_short(window)}: {'; '.join(what)}, for "
                                f"{behind.height} of {counted(n, 'session')}{tail}", per_session)


def _short(tokens: int) -> str:
    """``200000`` -> ``200k``, ``1000000`` -> ``1M``, else the number."""
    if tokens % 1_000_000 == 0:
        return f"{tokens // 1_000_000}M"
    if tokens % 1_000 == 0:
        return f"{tokens // 1_000}k"
    return str(tokens)
