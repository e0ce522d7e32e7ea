"""panto_analytics: libpanto's compaction policy over whole corpora, on Polars.

>>> import panto_analytics as pa
>>> {"read_sessions", "sessions", "splits"} <= set(pa.__all__)
True
"""
from .budgets import parse_budget, parse_budgets
from .errors import IngestReport, InputError
from .ingest import read_sessions
from .policy import annotate, splits, turns
from .recommend import Criteria, recommend
from .sweep import summarize_splits
from .tables import Corpus, compactions, read_corpus, sessions

__all__ = [
    "Corpus",
    "Criteria",
    "IngestReport",
    "InputError",
    "annotate",
    "compactions",
    "parse_budget",
    "parse_budgets",
    "read_corpus",
    "read_sessions",
    "recommend",
    "sessions",
    "splits",
    "summarize_splits",
    "turns",
]
