"""Reading what PATHS name, as the command line asks: session files or a dataset folder, the read options
(--cache, --jobs, --quiet) and the session filters (--since, --project, ...), and the engine a dataset runs on.

A read's skips and the cache's warnings are said on stderr (:mod:`._notes`); bad input is an
:class:`~panto_analytics.errors.InputError`, one line.

>>> dataset_path(["data/"]) is None   # session files, not a dataset folder
True
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..defaults import RAY_INSTALL
from ..errors import IngestReport, InputError
from ._notes import cache_warnings_on_stderr, report_skips
from .launch import READ_KEY

if TYPE_CHECKING:
    import polars as pl

    from ..dataset.source import Source

__all__ = ["dataset_path", "open_source", "read_input", "read_input_corpus", "read_settings", "session_files",
           "session_filter", "versioned", "versioned_corpus"]


def session_filter():
    """The :class:`~panto_analytics.ingest.filters.SessionFilter` the command line asks for."""
    from ..ingest.filters import SessionFilter

    given = click.get_current_context().meta.get(READ_KEY, {})
    return SessionFilter.parse(since=given.get("since"), until=given.get("until"), project=given.get("project", ()),
                               model=given.get("model", ()), subagents=not given.get("no_subagents"))


def read_settings() -> dict:
    """``cache``, ``progress`` and ``jobs`` for ``read_sessions``/``read_corpus``, from the command line."""
    from ..ingest.cache import default_cache_dir

    given = click.get_current_context().meta.get(READ_KEY, {})
    cache = None if given.get("no_cache") else (given.get("cache_dir") or default_cache_dir())
    return {"cache": cache, "progress": not given.get("quiet"), "jobs": given.get("jobs")}


def session_files(paths, format_: str | None = None) -> list[Path]:
    """The session files PATHS name; :class:`InputError` (one line saying what was searched) when there are none.

    No PATHS: the agents' default locations that exist (said on stderr), an error when none does. A file
    found in a folder whose format no adapter knows (a hook log, an export) is left out, and one note counts
    them (unless ``--format`` is given); a file named is read, and is an error if it is not a session file.
    """
    from ..ingest.paths import SESSION_PATTERNS, default_locations, expand_searched, known_locations

    if not paths:
        paths = default_locations()
        if not paths:
            raise InputError(", ".join(str(p) for p in known_locations()), None,
                             "no PATH given and none of the default session folders exists", skippable=False)
        click.echo(f"note: no PATH given: reading {', '.join(str(p) for p in paths)}", err=True)
    names, searched = expand_searched(paths)
    files = [Path(name) for name in _without_strays(names, searched, format_)]
    if not files:
        raise InputError(", ".join(str(p) for p in paths), None,
                         f"no session files found (searched for {', '.join(SESSION_PATTERNS)})", skippable=False)
    return files


def _without_strays(names: list[str], searched: set[str], format_: str | None) -> list[str]:
    """:func:`~panto_analytics.ingest.pipeline.without_strays`, said in one note on stderr."""
    if not searched or format_ is not None:
        return names
    from ..ingest.pipeline import without_strays
    from ..phrases import counted

    kept = without_strays(names, searched, None, report := IngestReport())
    if report.skipped:
        strays = sorted(f for f, _ in report.skipped)
        click.echo(f"note: skipped {counted(len(strays), 'file')} of no known session format found in the folders "
                   f"searched ({strays[0]}{', ...' if len(strays) > 1 else ''}); name one, with --format, to read it",
                   err=True)
    return kept


def _nothing_read(paths, report: IngestReport) -> InputError:
    where = ", ".join(str(p) for p in paths) or "the default session folders"
    from ..phrases import counted

    return InputError(where, None, f"no sessions in the {counted(report.files, 'file')} read", skippable=False)


def dataset_path(paths) -> Path | None:
    """The dataset folder PATHS name (``ingest --dataset DIR`` wrote it), or None when they name session files.

    A dataset is read alone: mixed with other paths, it is a usage error.
    """
    from ..dataset import is_dataset

    datasets = [Path(p) for p in paths if is_dataset(p)]
    if not datasets:
        return None
    if len(paths) > 1:
        raise click.UsageError(f"{datasets[0]} is a dataset folder: give it alone, without other paths")
    return datasets[0]


def read_input(paths, format_, skip_invalid) -> pl.DataFrame:
    """The message frame of PATHS, read as the command line says; skips and cache trouble on stderr.

    A dataset folder (see :func:`dataset_path`), or session filters, which need the sessions table,
    take the corpus read of :func:`read_input_corpus`.
    """
    if dataset_path(paths) is not None or session_filter().active:
        return read_input_corpus(paths, format_, skip_invalid).messages
    report = IngestReport()
    files = session_files(paths, format_)
    from ..ingest.parallel import keep_pandas_out

    keep_pandas_out()  # as in read_input_corpus
    from ..ingest import read_sessions

    with cache_warnings_on_stderr():
        messages = read_sessions(files, format=format_, skip_invalid=skip_invalid, report=report,
                                 **read_settings())
    report_skips(report)
    if not report.sessions:
        raise _nothing_read(paths, report)
    return messages


def read_input_corpus(paths, format_, skip_invalid, *, list_skips: bool = True):
    """Like :func:`read_input`, but the whole :class:`~panto_analytics.ingest.corpus.Corpus`."""
    if (ds := dataset_path(paths)) is not None:
        from ..dataset import dataset_corpus

        corpus = dataset_corpus(ds)
        if corpus.sessions.is_empty():
            raise _nothing_read(paths, corpus.report)
        return _filtered(corpus, paths)
    files = session_files(paths, format_)
    from ..ingest.parallel import keep_pandas_out

    keep_pandas_out()  # files are read here, never on Ray: pandas is not needed (a fresh process only)
    from ..ingest import open_corpus

    with cache_warnings_on_stderr():
        corpus = open_corpus(files, format=format_, skip_invalid=skip_invalid, **read_settings())
    if list_skips:
        report_skips(corpus.report)
    if corpus.sessions.is_empty():
        raise _nothing_read(paths, corpus.report)
    return _filtered(corpus, paths)


def versioned(messages: pl.DataFrame, policies) -> pl.DataFrame:
    """``messages`` with the agent version of each Claude Code message read back from its recording where a
    ``claude-code`` policy among ``policies`` (None: every policy) reads it
    (:mod:`panto_analytics.ingest.versions`)."""
    from ..defaults import POLICY_NAMES
    from ..ingest.versions import needs_agent_versions, with_agent_versions

    given = list(POLICY_NAMES) if not policies else [p if isinstance(p, str) else p.spec() for p in policies]
    return with_agent_versions(messages) if needs_agent_versions(messages, given) else messages


def versioned_corpus(corpus, policies):
    """:func:`versioned` on a corpus's messages."""
    from dataclasses import replace

    messages = versioned(corpus.messages, policies)
    return corpus if messages is corpus.messages else replace(corpus, messages=messages)


def _filtered(corpus, paths):
    """The corpus with the sessions the filter options accept; a note says how many, an error if none."""
    from ..ingest.filters import filter_corpus

    wanted = session_filter()
    if not wanted.active:
        return corpus
    kept = filter_corpus(corpus, wanted)
    what = " ".join(wanted.described)
    from ..phrases import counted

    read = counted(corpus.sessions.height, "session")
    if kept.sessions.is_empty():
        where = ", ".join(str(p) for p in paths)
        raise InputError(where, None, f"none of the {read} read matches {what} "
                                      f"({wanted.what_exists(corpus.sessions)})", skippable=False)
    click.echo(f"note: {what}: kept {kept.sessions.height:,} of {read}", err=True)
    return kept


def open_source(paths, format_, skip_invalid, engine: str = "local", ray_address: str | None = None, *,
                messages_only: bool = False, versions_for=None) -> Source:
    """The :class:`~panto_analytics.dataset.source.Source` PATHS name, the one face every verb runs on: a dataset
    folder bucket by bucket (here, or on Ray with ``engine="ray"``), else the corpus in memory, read on first use
    (session files; or a dataset with session filters given, which run in memory). ``messages_only``: the
    verbs read the message frame alone (:func:`read_input`); ``versions_for``: the policies whose Claude Code
    versions a corpus in memory is given (:func:`versioned`; None: none). A usage error, before any work, for an engine that
    cannot run, and the one-line error of :func:`read_input_corpus` for a dataset without sessions."""
    from ..dataset.source import InMemory, OnDataset, OnRay

    ds = _dataset_to_stream(paths, engine, ray_address)
    if ds is None:
        def corpus():
            read = read_input_corpus(paths, format_, skip_invalid)
            return read if versions_for is None else versioned_corpus(read, versions_for)

        def messages():
            read = read_input(paths, format_, skip_invalid)
            return read if versions_for is None else versioned(read, versions_for)

        return InMemory(corpus, messages if messages_only else None)
    return (OnRay if engine == "ray" else OnDataset)(ds, address=ray_address)


def _dataset_to_stream(paths, engine: str, ray_address: str | None) -> Path | None:
    ds = dataset_path(paths)
    if ds is not None:
        from ..dataset import read_info

        info = read_info(ds)
        if not info.sessions:  # as in memory (read_input_corpus), not an empty table or a traceback
            raise _nothing_read(paths, IngestReport(files=info.files, sessions=0, messages=info.messages))
    if ds is not None and session_filter().active:
        if engine == "ray":
            raise click.UsageError("session filters (--since, --project, ...) run in memory; --engine ray does not "
                                   "apply with them")
        return None
    if engine == "ray":
        if ds is None:
            raise click.UsageError("--engine ray runs over a dataset folder; write one with "
                                   "'panto-analytics ingest PATH... --dataset DIR'")
        from ..dataset.engines import ray_available

        if not ray_available():
            raise click.UsageError(f"--engine ray needs Ray Data, which is not installed: {RAY_INSTALL}")
    elif ray_address is not None:
        raise click.UsageError("--ray-address is for --engine ray")
    return ds
