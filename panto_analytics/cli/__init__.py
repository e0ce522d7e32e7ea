"""The ``panto-analytics`` command line: a thin layer over the library.

Each command lives in its own module and registers itself on :data:`main`;
options shared by several commands are decorators in :mod:`.options`.
Exit codes: 0 success, 1 bad input or failed work, 2 usage error.
"""
from __future__ import annotations

# Commands register themselves on :data:`main` when their module is imported.
from . import (
    bench_command,
    compactions_command,
    core_commands,
    cost_command,
    ingest_commands,
    loss_command,
    policy_cuts_command,
    replay_command,
    report_commands,
    request_command,
    sessions_command,
    timeline_command,
)
from .app import main, run

__all__ = ["bench_command", "compactions_command", "core_commands", "cost_command", "ingest_commands",
           "loss_command", "main", "policy_cuts_command", "run",
           "replay_command", "report_commands", "request_command", "sessions_command", "timeline_command"]
