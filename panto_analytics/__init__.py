"""panto_analytics: libpanto's compaction policy over whole corpora, on Polars.

>>> import panto_analytics as pa
>>> sorted(n for n in pa.__all__ if not n[0].isupper())[:3]
['annotate', 'parse_budget', 'parse_budgets']
"""
from .budgets import parse_budget, parse_budgets
from .errors import IngestReport, InputError
from .ingest import read_sessions
from .policy import annotate, splits, turns
from .sweep import summarize_splits

__all__ = [
    "IngestReport",
    "InputError",
    "annotate",
    "parse_budget",
    "parse_budgets",
    "read_sessions",
    "splits",
    "summarize_splits",
    "turns",
]
