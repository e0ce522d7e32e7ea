"""The ``panto-analytics`` command line: a thin layer over the library.

Each command lives in its own module, named after it, and registers itself
on :data:`main`; what several commands share lives in private modules named
by their job: ``_options`` (click options and parameter types), ``_reading``
(the corpus PATHS name), ``_output`` (writing a table or file) and ``_notes``
(what is said on stderr). Exit codes: 0 success, 1 bad input or failed work,
2 usage error.
"""
from __future__ import annotations

# Commands register themselves on :data:`main` when their module is imported.
from . import (
    bench_command,
    cache_command,
    compactions_command,
    cost_command,
    ingest_command,
    loss_command,
    policy_cuts_command,
    recommend_command,
    replay_command,
    report_command,
    request_command,
    sessions_command,
    splits_command,
    sweep_command,
    timeline_command,
)
from .app import main, run

__all__ = ["bench_command", "cache_command", "compactions_command", "cost_command", "ingest_command",
           "loss_command", "main", "policy_cuts_command", "recommend_command", "replay_command", "report_command",
           "request_command", "run", "sessions_command", "splits_command", "sweep_command", "timeline_command"]
