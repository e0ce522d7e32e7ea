"""panto_analytics: libpanto's compaction policy over whole corpora, on Polars.

A tour, from files to a budget::

    import panto_analytics as pa
    messages = pa.read_sessions(["~/.claude/projects"])   # read: one row per message (pa.examples.messages(): a tiny one)
    turns = pa.turns(messages)                            # turns: one row per turn, with its token cost
    splits = pa.splits(messages, [8_000, 20_000])         # splits: one row per (session, budget); one budget is fine
    table = pa.sweep(splits)                              # sweep: one row per budget
    fig = pa.plots.kept_tokens_by_budget(splits)          # plots (matplotlib, loaded on first use)
    rec = pa.recommend(splits, pa.Criteria(min_kept_turns=2))   # recommend: a budget, and why
    pa.report.build_report(messages, [8_000, 20_000])     # report: HTML, Markdown, PNGs, Parquet

``pa.open_corpus(paths, filter=pa.SessionFilter.parse(since="2026-11-01", subagents=False))`` reads
the sessions you ask for with their sessions and compactions tables (``pa.read_corpus`` then
``pa.filter_corpus``, in one call); ``pa.worst_served(messages, budget, n)`` lists
the sessions a budget serves worst; ``pa.Cache`` is the Parquet cache of parsed files.
``pa.costs(corpus, by="day")`` says what the recorded calls cost (prices: ``pa.load_prices``, genai-prices
offline or a LiteLLM price file). ``pa.loss(messages, pa.replay(messages, budgets, window=...))`` says what each
compaction loses (orphan references among the next tool calls; ``pa.references(messages)``: what every tool call
touched), and ``pa.refetch(corpus.messages, corpus.compactions, corpus.sessions)`` checks it on the compactions
agents recorded (``docs/loss.md``).

Past one machine's memory: ``pa.write_dataset(paths, "corpus.ds")`` writes a
Parquet dataset partitioned by session, ``pa.scan_dataset("corpus.ds")`` is
a LazyFrame over it, and ``pa.sweep_dataset`` / ``pa.recommend_dataset``
run bucket by bucket in bounded memory (``engine="ray"`` on Ray Data), with
the same results as the in-memory path (``docs/scale.md``).

The package is floors over a shared vocabulary, and imports only go down
(``docs/architecture.md``):

- :mod:`panto_analytics.cli`: the ``panto-analytics`` command, thin over the rest;
- :mod:`panto_analytics.dataset`: the out-of-core lane (a Parquet dataset, bucket by bucket);
- :mod:`panto_analytics.analysis`: plots, recommendation, report;
- :mod:`panto_analytics.ingest`: files -> the message frame (adapters, cache);
- :mod:`panto_analytics.policy`: the message frame -> turns, splits, sweeps (no I/O);
- :mod:`panto_analytics.outcomes`: prices and the cost of a call;
- ``schema``, ``errors``, ``budgets``, ``words``, ``models``: the shared vocabulary.

>>> import panto_analytics as pa
>>> {"read_sessions", "sessions", "splits", "sweep"} <= set(pa.__all__)
True
"""
import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "Cache",
    "Corpus",
    "Criteria",
    "IngestReport",
    "InputError",
    "Loss",
    "Recommendation",
    "Replay",
    "SessionFilter",
    "annotate",
    "compactions",
    "costs",
    "filter_corpus",
    "load_prices",
    "open_corpus",
    "loss",
    "parse_budget",
    "parse_budgets",
    "read_corpus",
    "read_sessions",
    "recommend",
    "recommend_dataset",
    "references",
    "refetch",
    "replay",
    "scan_dataset",
    "sessions",
    "splits",
    "summarize_replay",
    "summary_request",
    "sweep",
    "sweep_dataset",
    "turns",
    "worst_served",
    "write_dataset",
]

#: Where each public name is defined. Nothing is imported until a name is asked for, so ``import
#: panto_analytics`` (and every ``import panto_analytics.x``, the command line's included) loads no Polars,
#: Arrow or NumPy by itself; the TYPE_CHECKING imports below say the same to type checkers.
_FROM = {
    **dict.fromkeys(["Criteria", "Recommendation", "recommend", "worst_served"], ".analysis"),
    **dict.fromkeys(["parse_budget", "parse_budgets"], ".budgets"),
    **dict.fromkeys(["IngestReport", "InputError"], ".errors"),
    **dict.fromkeys(["Cache", "Corpus", "compactions", "open_corpus", "read_corpus", "read_sessions", "sessions"],
                    ".ingest"),
    "summary_request": ".analysis.request",
    **dict.fromkeys(["scan_dataset", "write_dataset"], ".dataset"),
    **dict.fromkeys(["recommend_dataset", "sweep_dataset"], ".dataset.streaming"),
    **dict.fromkeys(["SessionFilter", "filter_corpus"], ".ingest.filters"),
    **dict.fromkeys(["Loss", "costs", "load_prices", "loss", "references", "refetch"], ".outcomes"),
    **dict.fromkeys(["Replay", "annotate", "replay", "splits", "summarize_replay", "sweep", "turns"], ".policy"),
}

#: Submodules reachable as ``pa.plots`` and ``pa.report``, imported on first use (matplotlib is heavy).
_LAZY = {"plots": ".analysis.plots", "report": ".analysis.report", "plot_data": ".analysis.plot_data",
         "examples": ".examples"}

if TYPE_CHECKING:
    from .analysis import Criteria, Recommendation, recommend, worst_served
    from .analysis.request import summary_request
    from .budgets import parse_budget, parse_budgets
    from .dataset import scan_dataset, write_dataset
    from .dataset.streaming import recommend_dataset, sweep_dataset
    from .errors import IngestReport, InputError
    from .ingest import Cache, Corpus, compactions, open_corpus, read_corpus, read_sessions, sessions
    from .ingest.filters import SessionFilter, filter_corpus
    from .outcomes import Loss, costs, load_prices, loss, references, refetch
    from .policy import Replay, annotate, replay, splits, summarize_replay, sweep, turns


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = importlib.import_module(_LAZY[name], __name__)
    elif name in _FROM:
        value = getattr(importlib.import_module(_FROM[name], __name__), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names, the lazy submodules and the subpackages imported so far: not this module's machinery."""
    loaded = {n for n, v in globals().items() if isinstance(v, type(importlib)) and n != "importlib"}
    return sorted({*__all__, *_LAZY, *loaded})
