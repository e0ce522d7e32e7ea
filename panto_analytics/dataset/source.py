"""One face for every verb, the backend chosen by the input (narwhals' pattern): a :class:`Source`.

A command is read, verb, write: it opens the :class:`Source` its PATHS name and calls the verb on it, never
asking which lane it runs in. Three backends give the same results (each verb's test in ``tests/dataset`` is
parametrized over them, ``tests/conftest.py``'s ``LANES``):

- :class:`InMemory`: a corpus in one frame (session files read by ``ingest``, or a dataset folder gathered
  whole), read on first use;
- :class:`OnDataset`: a Parquet dataset (``ingest --dataset DIR``) bucket by bucket, in bounded memory, here;
- :class:`OnRay`: the same, its tasks on Ray Data.

The dataset backends run the private per-bucket implementations of :mod:`._streaming`, :mod:`._cost`,
:mod:`._decision`, :mod:`._replay`, :mod:`._refetch` and :mod:`._report` (private modules: no user imports
them); the in-memory one the library's own verbs.

>>> import tempfile
>>> from panto_analytics.dataset import write_dataset
>>> from panto_analytics.ingest import read_corpus
>>> root = tempfile.mkdtemp() + "/corpus.ds"
>>> _ = write_dataset(["data/"], root, buckets=4, cache=False)
>>> memory, on_dataset = InMemory(lambda: read_corpus(["data/"], cache=False)), OnDataset(root)
>>> memory.sweep([0, 20_000]).equals(on_dataset.sweep([0, 20_000]))   # the same figures, bucket by bucket
True
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..defaults import DEFAULT_RESAMPLES, DEFAULT_RESERVE, DEFAULT_SEED
from ..errors import InputError
from ..outcomes.orphan_loss import DEFAULT_HORIZON

if TYPE_CHECKING:
    import polars as pl

    from ..analysis.choose.choice import Choice
    from ..analysis.choose.rule import Rule
    from ..analysis.report.model import Report
    from ..ingest.corpus import Corpus
    from ..outcomes.cost import Grouping
    from ._replay import RowSink

__all__ = ["Choosing", "InMemory", "OnDataset", "OnRay", "Refetched", "ReplayTable", "Source", "Unserved"]


class Unserved(InputError):
    """A verb this backend cannot run: one line, naming where the corpus is and the verb
    (the command line says it as ``error: ...``, never a traceback).

    >>> str(Unserved("corpus.ds", "sweep"))
    'corpus.ds: sweep does not run on this backend'
    """

    def __init__(self, where: str | Path, verb: str, reason: str | None = None):
        super().__init__(where, None, reason or f"{verb} does not run on this backend", skippable=False)
        self.verb = verb

    def __reduce__(self) -> tuple:
        return type(self), (self.path, self.verb, self.reason)


@dataclass(frozen=True)
class Choosing:
    """What :meth:`Source.choose_budget` returns: the choice and where its prices came from (None: nothing billed)."""

    choice: Choice
    price_source: str | None


@dataclass(frozen=True)
class Refetched:
    """What :meth:`Source.refetch` returns: the summary table and the agents the corpus holds."""

    summary: pl.DataFrame
    agents: list[str]


@dataclass(frozen=True)
class ReplayTable:
    """What :meth:`Source.replay_table` returns: ``replay``'s per-budget table, the summary size and its source,
    and the price source (None when nothing was billed)."""

    table: pl.DataFrame
    summary_tokens: int
    summary_source: str
    price_source: str | None


class Source:
    """A corpus and the verbs over it; the subclasses say where the work runs. A verb a backend does not run
    raises :class:`Unserved` (one line), never ``NotImplementedError``."""

    #: Where the corpus is, as an error names it.
    where: str = "the corpus"

    def _unserved(self, verb: str) -> Unserved:
        return Unserved(self.where, verb)

    def corpus(self) -> Corpus:
        """The whole corpus in one frame (:class:`~panto_analytics.ingest.corpus.Corpus`), for the verbs that exist
        in memory only (``compactions``, ``timeline``, ``policy-cuts``, ``report``, ...): over a dataset,
        gathered here whole, as big as the corpus."""
        raise self._unserved("corpus")

    def messages(self) -> pl.DataFrame:
        """The message frame alone (:meth:`corpus`'s ``messages``, where a backend can read it alone)."""
        return self.corpus().messages

    def sessions(self) -> pl.DataFrame:
        """The sessions table (``session_id``, ``model``, ``context_window``, ...)."""
        raise self._unserved("sessions")

    def splits(self, budgets: Any) -> pl.DataFrame:
        """:func:`~panto_analytics.policy.splits`: every session's split at every budget."""
        raise self._unserved("splits")

    def write_splits(self, budgets: Any, output: Path) -> int:
        """The rows of :meth:`splits` written to the Parquet file ``output``; the number of rows."""
        raise self._unserved("write_splits")

    def sweep(self, budgets: Any) -> pl.DataFrame:
        """:func:`~panto_analytics.policy.sweep` of :meth:`splits`: one row per budget."""
        raise self._unserved("sweep")

    def choose_budget(self, budgets: Any, rule: Rule | None = None, *, window: int | None = None,
                      reserve: int = DEFAULT_RESERVE, summary_tokens: int | None = None,
                      policy: list[str] | None = None, prices: Any = True, summarizer: str | None = None,
                      horizon: int | None = None, resamples: int = DEFAULT_RESAMPLES,
                      seed: int = DEFAULT_SEED) -> Choosing:
        """:func:`~panto_analytics.analysis.choose.choose_budget`: by end-of-session splits without ``window``,
        by a billed replay under one (``prices``: what ``replay(prices=...)`` takes)."""
        raise self._unserved("choose_budget")

    def cost(self, *, by: Sequence[Grouping] = (), prices: Any = None, timezone: str = "UTC") -> pl.DataFrame:
        """:func:`~panto_analytics.outcomes.costs`: the recorded calls' bill per group."""
        raise self._unserved("cost")

    def refetch(self, *, horizon: int = DEFAULT_HORIZON, on_cuts: Callable[[pl.DataFrame], None] | None = None) -> Refetched:
        """:func:`~panto_analytics.outcomes.recorded_refetch.refetch_summary` of the cuts, each piece of the cuts
        given to ``on_cuts`` (in memory: all of them at once)."""
        raise self._unserved("refetch")

    def replay_table(self, budgets: Any, *, window: int, reserve: int = DEFAULT_RESERVE,
                     summary_tokens: int | None = None, policy: list[Any] | None = None, prices: Any = None,
                     summarizer: str | None = None, with_loss: bool = False, horizon: int = DEFAULT_HORIZON,
                     on_rows: RowSink | None = None) -> ReplayTable:
        """``replay``'s per-budget table (with the loss columns when ``with_loss``); the events and sessions
        rows given to ``on_rows(events, sessions)`` (in memory: all at once)."""
        raise self._unserved("replay_table")

    def report(self, budgets: Any, *, splits_to: Path, **options: Any) -> Report:
        """:func:`~panto_analytics.analysis.report.build_report` of the corpus (``options``: its keywords); over a
        dataset, bucket by bucket, the sections that do not need every session in memory
        (:mod:`panto_analytics.dataset._report`), its splits written to the Parquet file ``splits_to``."""
        raise self._unserved("report")


class InMemory(Source):
    """A corpus in one frame, read on first use: ``read()`` gives the corpus, ``read_messages()`` (by default
    the corpus's messages) the message frame alone, for the verbs that need nothing else."""

    def __init__(self, read: Callable[[], Corpus], read_messages: Callable[[], pl.DataFrame] | None = None):
        self._read = functools.cache(read)
        self._read_messages = read_messages

    def corpus(self) -> Corpus:
        return self._read()

    def messages(self) -> pl.DataFrame:
        return self._read_messages() if self._read_messages is not None else self.corpus().messages

    def sessions(self) -> pl.DataFrame:
        return self.corpus().sessions

    def splits(self, budgets: Any) -> pl.DataFrame:
        from ..policy import splits

        corpus = self.corpus()
        return splits(corpus.messages, budgets, sessions=corpus.sessions)

    def write_splits(self, budgets: Any, output: Path) -> int:
        rows = self.splits(budgets)
        output.parent.mkdir(parents=True, exist_ok=True)
        rows.write_parquet(output)
        return rows.height

    def sweep(self, budgets: Any) -> pl.DataFrame:
        from ..policy import sweep

        return sweep(self.splits(budgets))

    def choose_budget(self, budgets: Any, rule: Rule | None = None, *, window: int | None = None,
                      reserve: int = DEFAULT_RESERVE, summary_tokens: int | None = None,
                      policy: list[str] | None = None, prices: Any = True, summarizer: str | None = None,
                      horizon: int | None = None, resamples: int = DEFAULT_RESAMPLES,
                      seed: int = DEFAULT_SEED) -> Choosing:
        from ..analysis.choose import choose_budget

        corpus = self.corpus()
        rec, result = choose_budget(corpus.messages, budgets, rule, window=window,
                                    windows=corpus.sessions["context_window"].to_list(), reserve=reserve,
                                    summary_tokens=summary_tokens, policy=policy,
                                    prices=prices if window is not None else None, summarizer=summarizer,
                                    horizon=horizon, resamples=resamples, seed=seed)
        return Choosing(rec, None if result is None else result.price_source)

    def cost(self, *, by: Sequence[Grouping] = (), prices: Any = None, timezone: str = "UTC") -> pl.DataFrame:
        from ..outcomes import costs

        return costs(self.corpus(), by=list(by), prices=prices, timezone=timezone)

    def refetch(self, *, horizon: int = DEFAULT_HORIZON, on_cuts: Callable[[pl.DataFrame], None] | None = None) -> Refetched:
        from ..outcomes.recorded_refetch import refetch, refetch_summary

        corpus = self.corpus()
        cuts = refetch(corpus.messages, corpus.compactions, corpus.sessions, horizon=horizon)
        if on_cuts is not None:
            on_cuts(cuts)
        agents = sorted(set(corpus.sessions["source_format"].cast(str).unique().to_list()))
        return Refetched(refetch_summary(cuts), agents)

    def replay_table(self, budgets: Any, *, window: int, reserve: int = DEFAULT_RESERVE,
                     summary_tokens: int | None = None, policy: list[Any] | None = None, prices: Any = None,
                     summarizer: str | None = None, with_loss: bool = False, horizon: int = DEFAULT_HORIZON,
                     on_rows: RowSink | None = None) -> ReplayTable:
        from dataclasses import replace

        from ..outcomes.orphan_loss import loss, with_loss_columns
        from ..policy.compaction.any_policy import replay
        from ..policy.compaction.summary import compare_policies, summarize_replay

        messages = self.messages()
        result = replay(messages, budgets, window=window, reserve=reserve, summary_tokens=summary_tokens,
                        policy=policy, prices=prices, summarizer=summarizer)
        lost_events = None
        if with_loss:
            lost = loss(messages, result, horizon=horizon)
            result, lost_events = replace(result, events=lost.events, sessions=lost.sessions), lost.events
        if on_rows is not None:
            on_rows(result.events, result.sessions)
        table = (compare_policies if policy else summarize_replay)(result.events, result.sessions)
        if lost_events is not None:
            table = with_loss_columns(table, lost_events)
        return ReplayTable(table, result.summary_tokens, result.summary_source, result.price_source)

    def report(self, budgets: Any, *, splits_to: Path, **options: Any) -> Report:
        from ..analysis.report import build_report

        return build_report(self.corpus(), budgets, **options)


class OnDataset(Source):
    """A Parquet dataset (``ingest --dataset DIR``), read bucket by bucket, here (:class:`OnRay`: on Ray Data);
    ``address``: the Ray cluster to join; ``task_rows``: the messages a task holds (None: each verb's default;
    a test gives 1, a task per bucket group of one bucket)."""

    engine = "local"

    def __init__(self, root: str | Path, *, address: str | None = None, task_rows: int | None = None):
        self.root = Path(root)
        self.where = str(self.root)
        self.address = address
        self.task_rows = task_rows

    @property
    def _where(self) -> dict[str, Any]:
        where: dict[str, Any] = {"engine": self.engine, "address": self.address}
        return where if self.task_rows is None else {**where, "task_rows": self.task_rows}

    def corpus(self) -> Corpus:
        from .store import dataset_corpus

        return dataset_corpus(self.root)

    def messages(self) -> pl.DataFrame:
        from .store import collect, scan_dataset

        return collect(scan_dataset(self.root, "messages"), self.root)

    def sessions(self) -> pl.DataFrame:
        from .store import collect, scan_dataset

        return collect(scan_dataset(self.root, "sessions"), self.root)

    def splits(self, budgets: Any) -> pl.DataFrame:
        return InMemory(self.corpus).splits(budgets)

    def write_splits(self, budgets: Any, output: Path) -> int:
        from ._streaming import write_splits

        output.parent.mkdir(parents=True, exist_ok=True)
        if self.task_rows is None:
            return write_splits(self.root, budgets, output)
        return write_splits(self.root, budgets, output, task_rows=self.task_rows)

    def sweep(self, budgets: Any) -> pl.DataFrame:
        from ._streaming import sweep_dataset

        return sweep_dataset(self.root, budgets, **self._where)

    def choose_budget(self, budgets: Any, rule: Rule | None = None, *, window: int | None = None,
                      reserve: int = DEFAULT_RESERVE, summary_tokens: int | None = None,
                      policy: list[str] | None = None, prices: Any = True, summarizer: str | None = None,
                      horizon: int | None = None, resamples: int = DEFAULT_RESAMPLES,
                      seed: int = DEFAULT_SEED) -> Choosing:
        if window is None:
            from ._streaming import recommend_dataset

            return Choosing(recommend_dataset(self.root, budgets, rule, resamples=resamples, seed=seed,
                                              **self._where), None)
        from ..policy.compaction.priced import resolve_prices
        from ._decision import decision_dataset

        table = resolve_prices(prices)
        dec = decision_dataset(self.root, budgets, rule, window=window, reserve=reserve,
                               summary_tokens=summary_tokens, policy=policy, prices=table, summarizer=summarizer,
                               horizon=horizon, resamples=resamples, seed=seed, **self._where)
        return Choosing(dec, table.source)

    def cost(self, *, by: Sequence[Grouping] = (), prices: Any = None, timezone: str = "UTC") -> pl.DataFrame:
        from ._cost import cost_dataset

        return cost_dataset(self.root, by=list(by), prices=prices, timezone=timezone, **self._where)

    def refetch(self, *, horizon: int = DEFAULT_HORIZON, on_cuts: Callable[[pl.DataFrame], None] | None = None) -> Refetched:
        from ._refetch import refetch_dataset

        streamed = refetch_dataset(self.root, horizon=horizon, on_cuts=on_cuts, **self._where)
        return Refetched(streamed.summary, streamed.agents)

    def replay_table(self, budgets: Any, *, window: int, reserve: int = DEFAULT_RESERVE,
                     summary_tokens: int | None = None, policy: list[Any] | None = None, prices: Any = None,
                     summarizer: str | None = None, with_loss: bool = False, horizon: int = DEFAULT_HORIZON,
                     on_rows: RowSink | None = None) -> ReplayTable:
        from ._replay import replay_table_dataset

        s = replay_table_dataset(self.root, budgets, window=window, reserve=reserve, summary_tokens=summary_tokens,
                                 policy=policy, prices=prices, summarizer=summarizer, with_loss=with_loss,
                                 horizon=horizon, on_rows=on_rows, **self._where)
        return ReplayTable(s.table, s.summary_tokens, s.summary_source, s.price_source)

    def report(self, budgets: Any, *, splits_to: Path, **options: Any) -> Report:
        from ._report import report_dataset

        return report_dataset(self.root, budgets, splits_to=splits_to, **options, **self._where)


class OnRay(OnDataset):
    """A Parquet dataset whose per-bucket tasks run on Ray Data (``address``: the cluster; None starts Ray here).
    Every session's splits (``sweep --plot``) are held in memory, here: not on Ray (:class:`Unserved`)."""

    engine = "ray"

    def splits(self, budgets: Any) -> pl.DataFrame:
        raise Unserved(self.where, "splits", "every session's splits are held in memory here, never on Ray Data "
                                             "(read the dataset without --engine ray for them)")
