"""Parsing workers started before the command's own work: both cores parse, the parser's memory stays there."""
from __future__ import annotations

import functools
import os
import sys

import click

__all__ = ["READ_KEY", "WORKERS_ENV", "launching"]

#: Where ``input_options`` keep the read options on the click context (``cli._options``).
READ_KEY = "panto_analytics.read"

#: How a command starts its parsing workers: ``fork`` (the default), ``spawn``, or ``off`` (parse in the
#: command's own process, and in a pool of spawned workers only when a read is big enough for one).
WORKERS_ENV = "PANTO_ANALYTICS_WORKERS"

_WORKER_MODES = ("fork", "spawn", "off")


def _mode() -> str:
    mode = os.environ.get(WORKERS_ENV, "").strip().lower() or "fork"
    if mode not in _WORKER_MODES:
        raise click.UsageError(f"{WORKERS_ENV}={os.environ[WORKERS_ENV]!r}: expected one of {', '.join(_WORKER_MODES)}")
    return mode


def launching(fn):
    """Run the command with its parsing workers started before anything else (unless ``--jobs 1``).

    By default (:data:`WORKERS_ENV` unset or ``fork``) this process imports
    the parsers (Polars, Arrow, the adapters) and forks one worker per core
    before any of them has run: the workers share those imports, and the
    read hands them its batches, contiguous runs of files of about equal
    bytes, while this process waits and keeps only the frames
    (:func:`panto_analytics.ingest.parallel.launch`). ``spawn`` starts one
    worker that imports the parsers itself while this process imports what
    the command needs; ``off`` starts none. The workers end with the
    command. A process that has the parsers already (a test or a notebook
    calling the command) starts none, nor does a command over a dataset
    folder (nothing to parse).
    """
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from ..dataset.info import is_dataset  # these two: the standard library only, nothing heavy before the launch
        from ..ingest import parallel

        mode = _mode()
        # A dataset folder (cli._reading.dataset_path) is read from its Parquet, here or on Ray: nothing to parse.
        reads_a_dataset = any(is_dataset(p) for p in kwargs.get("paths") or ())
        try:   # the launch too: a Ctrl-C that comes as it forks must still close what it started
            if mode != "off" and parallel.PARSER_MODULE not in sys.modules and not reads_a_dataset:
                parallel.keep_pandas_out()  # session files are read here, never on Ray; forked workers inherit it
                parallel.launch(click.get_current_context().meta.get(READ_KEY, {}).get("jobs"), method=mode)
            return fn(*args, **kwargs)
        finally:
            parallel.close()
    return wrapper

