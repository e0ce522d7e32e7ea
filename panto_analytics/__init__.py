"""panto_analytics: libpanto's compaction policy over whole corpora, on Polars.

A tour, from files to a budget::

    import panto_analytics as pa
    messages = pa.read_sessions(["~/.claude/projects"])   # read: one row per message (pa.examples.messages(): a tiny one)
    turns = pa.turns(messages)                            # turns: one row per turn, with its token cost
    splits = pa.splits(messages, [8_000, 20_000])         # splits: one row per (session, budget); one budget is fine
    table = pa.sweep(splits)                              # sweep: one row per budget
    fig = pa.plots.kept_tokens_by_budget(splits)          # plots (matplotlib, loaded on first use)
    rec = pa.recommend(splits, pa.Rule(min_kept_turns=2))       # recommend: a budget, and why
    choice, replayed = pa.choose_budget(messages, "0:60k:7", window=200_000)   # under a window: cost and loss
    pa.report.build_report(messages, [8_000, 20_000])     # report: HTML, Markdown, PNGs, Parquet

``pa.open_corpus(paths, filter=pa.SessionFilter.parse(since="2026-11-01", subagents=False))`` reads
the sessions you ask for with their sessions and compactions tables; ``pa.Cache`` is the Parquet cache of
parsed files. ``pa.costs(corpus, by="day")`` says what the recorded calls cost, and
``pa.loss(messages, pa.replay(messages, budgets, window=...))`` what each compaction loses (orphan references
among the next tool calls, ``docs/loss.md``).

``pa`` hands out only these verbs and the types you construct (``__all__``). Everything else is one
attribute further, in the subpackage that owns it, each imported on first use:
``pa.ingest.read_corpus``, ``pa.ingest.filter_corpus``, ``pa.analysis.worst_served``,
``pa.analysis.summary_request``, ``pa.outcomes.load_prices``, ``pa.outcomes.references``,
``pa.outcomes.refetch``, ``pa.policy.summarize_replay``, ``pa.budgets.parse_budgets``,
``pa.errors.InputError``. Past one machine's memory: ``pa.dataset.write_dataset(paths, "corpus.ds")``
writes a Parquet dataset partitioned by session, ``pa.dataset.scan_dataset("corpus.ds")`` is a LazyFrame
over it, and ``pa.dataset.OnDataset("corpus.ds")`` runs every verb on it (``.sweep``, ``.choose_budget``,
``.cost``, ...) bucket by bucket in bounded memory (``pa.dataset.OnRay``: on Ray Data), with the same results
as the in-memory path
(``docs/scale.md``).

The package is floors over a shared vocabulary, and imports only go down
(``docs/architecture.md``):

- :mod:`panto_analytics.cli`: the ``panto-analytics`` command, thin over the rest;
- :mod:`panto_analytics.dataset`: the out-of-core lane (a Parquet dataset, bucket by bucket);
- :mod:`panto_analytics.analysis`: plots, recommendation, report;
- :mod:`panto_analytics.ingest`: files -> the message frame (adapters, cache);
- :mod:`panto_analytics.policy`: the message frame -> turns, splits, sweeps (no I/O);
- :mod:`panto_analytics.outcomes`: prices and the cost of a call;
- :mod:`panto_analytics.frame`: the message frame's vocabulary (``schema``, word counts, column expressions);
- ``errors``, ``budgets``, ``models``: the shared vocabulary.

>>> import panto_analytics as pa
>>> {"read_sessions", "splits", "sweep"} <= set(pa.__all__), "read_corpus" in pa.__all__
(True, False)
>>> callable(pa.ingest.read_corpus)
True
"""
from types import ModuleType
from typing import TYPE_CHECKING

from .lazy import lazy_getattr

__all__ = [
    "Cache",
    "Rule",
    "SessionFilter",
    "choose_budget",
    "costs",
    "loss",
    "open_corpus",
    "read_sessions",
    "recommend",
    "replay",
    "splits",
    "sweep",
    "turns",
]

#: Where each public name is defined. Nothing is imported until a name is asked for, so ``import
#: panto_analytics`` (and every ``import panto_analytics.x``, the command line's included) loads no Polars,
#: Arrow or NumPy by itself; the TYPE_CHECKING imports below say the same to type checkers.
_FROM = {
    **dict.fromkeys(["Rule", "choose_budget", "recommend"], ".analysis"),
    **dict.fromkeys(["Cache", "open_corpus", "read_sessions"], ".ingest"),
    "SessionFilter": ".ingest.filters",
    **dict.fromkeys(["costs", "loss"], ".outcomes"),
    **dict.fromkeys(["replay", "splits", "sweep", "turns"], ".policy"),
}

#: Subpackages and modules reachable as attributes (``pa.dataset.write_dataset``, ``pa.outcomes.load_prices``,
#: ``pa.plots``), each imported on first use (matplotlib is heavy): everything not in ``__all__`` is here.
_LAZY = {
    **{name: f".{name}" for name in ("analysis", "budgets", "dataset", "errors", "formats", "ingest", "outcomes",
                                     "policy", "examples")},
    "schema": ".frame.schema",
    "plots": ".analysis.plots", "report": ".analysis.report", "plot_data": ".analysis.plot_data",
}

if TYPE_CHECKING:
    from . import analysis as analysis
    from . import budgets as budgets
    from . import dataset as dataset
    from . import errors as errors
    from . import examples as examples
    from . import formats as formats
    from . import ingest as ingest
    from . import outcomes as outcomes
    from . import policy as policy
    from .analysis import Rule, choose_budget, recommend
    from .analysis import plot_data as plot_data
    from .analysis import plots as plots
    from .analysis import report as report
    from .frame import schema as schema
    from .ingest import Cache, open_corpus, read_sessions
    from .ingest.filters import SessionFilter
    from .outcomes import costs, loss
    from .policy import replay, splits, sweep, turns


__getattr__ = lazy_getattr(__name__, _FROM, _LAZY)


def __dir__() -> list[str]:
    """The public names, the lazy submodules and the subpackages imported so far: not this module's machinery."""
    loaded = {n for n, v in globals().items() if isinstance(v, ModuleType) and n != "lazy"}
    return sorted({*__all__, *_LAZY, *loaded})
