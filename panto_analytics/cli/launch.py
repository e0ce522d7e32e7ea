"""A parsing worker started before the command's own imports: the read's imports overlap, its memory stays there."""
from __future__ import annotations

import functools
import sys

import click

__all__ = ["READ_KEY", "launching"]

#: Where ``input_options`` keep the read options on the click context (``cli.options``).
READ_KEY = "panto_analytics.read"


def launching(fn):
    """Run the command with a parsing worker started before anything else (unless ``--jobs 1``).

    The worker imports the parsers (Polars, Arrow, the adapters) while this
    process imports what the command needs and finds the files; the read
    then parses on it (:func:`panto_analytics.ingest.parallel.launch`), and
    it ends with the command. A process that has the parsers already (a
    test or a notebook calling the command) starts none: there is no import
    left to overlap.
    """
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from ..ingest import parallel  # the standard library only: the worker starts before Polars loads here

        if parallel.PARSER_MODULE not in sys.modules:
            parallel.launch(click.get_current_context().meta.get(READ_KEY, {}).get("jobs"))
        try:
            return fn(*args, **kwargs)
        finally:
            parallel.close()
    return wrapper
