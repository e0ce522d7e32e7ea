"""panto_analytics: libpanto's compaction policy over whole corpora, on Polars.

The package has three floors, and imports only go down:

- :mod:`panto_analytics.cli`: the ``panto-analytics`` command, thin over the rest;
- :mod:`panto_analytics.analysis`: plots, recommendation, report;
- :mod:`panto_analytics.ingest`: files -> the message frame (adapters, cache);
- :mod:`panto_analytics.policy`: the message frame -> turns, splits, sweeps (no I/O);
- ``schema``, ``errors``, ``budgets``, ``words``: the shared vocabulary.

>>> import panto_analytics as pa
>>> {"read_sessions", "sessions", "splits"} <= set(pa.__all__)
True
"""
from .analysis import Criteria, Recommendation, recommend
from .budgets import parse_budget, parse_budgets
from .errors import IngestReport, InputError
from .ingest import Cache, Corpus, compactions, read_corpus, read_sessions, sessions, summary_request
from .policy import Replay, annotate, replay, splits, summarize_replay, summarize_splits, turns

__all__ = [
    "Cache",
    "Corpus",
    "Criteria",
    "IngestReport",
    "InputError",
    "Recommendation",
    "Replay",
    "annotate",
    "compactions",
    "parse_budget",
    "parse_budgets",
    "read_corpus",
    "read_sessions",
    "recommend",
    "replay",
    "sessions",
    "splits",
    "summarize_replay",
    "summarize_splits",
    "summary_request",
    "turns",
]
