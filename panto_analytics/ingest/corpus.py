"""A corpus read once, as tables: messages, sessions, recorded compactions.

:func:`read_sessions` gives the message frame only. :func:`read_corpus`
reads the same files (with the same options: format, strictness, cache,
progress, jobs) and keeps what the files say about each session::

    corpus = read_corpus("~/.claude/projects", cache=True)
    corpus.messages      # the message frame (what read_sessions returns)
    corpus.sessions      # one row per session          (SESSIONS_SCHEMA)
    corpus.compactions   # one row per recorded compaction (COMPACTIONS_SCHEMA)
    corpus.report        # IngestReport: files, messages, skips, ignored records
    corpus.cache         # CacheStats of this read, or None without a cache

:func:`sessions` and :func:`compactions` take a :class:`Corpus`, or paths
(then they read them, with the same keyword options).

Sessions (one row per session, in file order):

- ``session_id``, ``file``, ``source_format``: as in the message frame;
- ``model``: the session's, else the last model a message names, normalized
  for grouping (:func:`~panto_analytics.models.normalized_model`);
  ``model_raw``: as recorded;
- ``project``: the recorded working directory (pi, Codex, Claude Code's
  ``cwd``; a Claude Code transcript without one: its project folder);
  ``is_subagent``: a subagent's own context (Claude Code sidechain files,
  Codex spawned threads);
- ``context_window``: where the file records it;
- ``first_timestamp``, ``last_timestamp``: earliest and latest of the
  session's creation time and its messages' timestamps;
- ``messages``; ``api_calls``: as the format records them, else the
  assistant messages with usage (one call each);
- ``final_context``: libpanto's ``cumulativeAt`` of the last assistant
  usage, the context the session ended with; null without usage;
- ``compactions``: recorded compaction events; ``parent_session_id``.

Compactions: ``session_id``; ``anchor_seq``, the seq of the
``compaction_summary`` message; ``trigger`` (e.g. ``auto``, ``manual``);
``tokens_before``, the context size that triggered it; ``first_kept_seq``,
the first message kept verbatim, where recorded; ``trigger_seq``, one past
the last message of the conversation the agent compacted (rows before the
anchor, plus, where the agent recorded what it kept before the compaction
record as pi does, the rows between the anchor and ``trigger_seq``);
``kept_end_seq``, one past the last message kept verbatim.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "s.jsonl").write_text(
...     '{"type":"message","role":"user","content":[{"type":"text","text":"hi"}]}\\n'
...     '{"type":"message","role":"assistant","content":[],'
...     '"usage":{"input":90,"output":10,"cache_read":0,"cache_write":0}}\\n')
>>> sessions(d).select("session_id", "messages", "api_calls", "final_context").rows()
[('s', 2, 1, 100)]
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

import polars as pl

from ..errors import IngestReport
from ..formats.canonical.compactions import kept_before_summary
from ..formats.contract import ParsedFile, SessionMeta
from ..frame import expressions as ex
from ..frame.schema import COMPACTIONS_SCHEMA, SESSION, SESSION_META_SCHEMA, SESSIONS_SCHEMA
from ..frame.tool_targets import file_key
from ..models import normalized_model, session_model
from .cache import Cache, CacheStats
from .paths import PathLike
from .pipeline import read_files

__all__ = ["Corpus", "compactions", "read_corpus", "sessions"]

@dataclass
class Corpus:
    """Everything one read of a corpus gives (see the module docstring)."""

    messages: pl.DataFrame
    sessions: pl.DataFrame
    compactions: pl.DataFrame
    report: IngestReport
    cache: CacheStats | None = None


def read_corpus(paths: Iterable[PathLike] | PathLike, *, format: str | None = None, skip_invalid: bool = False,
                report: IngestReport | None = None, cache: Cache | PathLike | bool | None = None,
                progress: bool = False, jobs: int | None = None) -> Corpus:
    """Read the sessions under ``paths`` into a :class:`Corpus`.

    Parameters
    ----------
    paths, format, skip_invalid, report, cache, progress, jobs
        As in :func:`~panto_analytics.ingest.pipeline.read_sessions`.

    Returns
    -------
    Corpus
        ``messages``, ``sessions``, ``compactions``, ``report`` and ``cache`` (see the module docstring).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "s.jsonl").write_text('{"type":"message","role":"user","content":[{"type":"text","text":"hi"}]}\\n')
    >>> corpus = read_corpus(d)
    >>> corpus.messages.height, corpus.sessions["session_id"].to_list(), corpus.compactions.height
    (1, ['s'], 0)
    """
    read = read_files(paths, format=format, skip_invalid=skip_invalid, report=report, cache=cache,
                      progress=progress, jobs=jobs)
    return Corpus(read.messages, sessions_table(read.files, read.messages), compactions_table(read.files, read.messages),
                  read.report, read.cache)


def sessions(source: Corpus | Iterable[PathLike] | PathLike, **options) -> pl.DataFrame:
    """The sessions table (``SESSIONS_SCHEMA``, the module docstring says its columns) of ``source``: a
    :class:`Corpus`, or paths, read with ``options`` as :func:`read_corpus` takes them.

    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "s.jsonl").write_text('{"type":"session","id":"s1","model":"claude-opus-4-5-20251101"}\\n'
    ...     '{"type":"message","role":"user","content":[{"type":"text","text":"hi"}]}\\n')
    >>> sessions(d).select("session_id", "model", "model_raw", "messages").rows()
    [('s1', 'claude-opus-4-5', 'claude-opus-4-5-20251101', 1)]
    """
    return _corpus(source, options).sessions


def compactions(source: Corpus | Iterable[PathLike] | PathLike, **options) -> pl.DataFrame:
    """The recorded compaction events (``COMPACTIONS_SCHEMA``), one row each in file and event order, of ``source``
    (a :class:`Corpus`, or paths read with ``options``, as :func:`sessions` takes them).

    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "s.jsonl").write_text('{"type":"message","role":"user","content":[{"type":"text","text":"hi"}]}\\n')
    >>> compactions(d).height
    0
    """
    return _corpus(source, options).compactions


def _corpus(source, options: dict) -> Corpus:
    if isinstance(source, Corpus):
        if options:
            raise TypeError("read options apply to paths, not to a Corpus already read")
        return source
    return read_corpus(source, **options)


def _session(p: ParsedFile) -> SessionMeta:
    """The session of a file that was read (files skipped whole are dropped before a corpus is built)."""
    assert p.session is not None
    return p.session


def sessions_table(parsed: list[ParsedFile], messages: pl.DataFrame) -> pl.DataFrame:
    """The sessions table of parsed files whose message frame is ``messages``."""
    recorded = pl.DataFrame({
        "recorded_api_calls": [_session(p).api_calls for p in parsed],
        "compactions": [len(_session(p).compactions) for p in parsed],
    }, schema={"recorded_api_calls": pl.UInt32(), "compactions": pl.UInt32()})
    meta = pl.concat([sessions_frame(parsed), recorded], how="horizontal")
    per_session = messages.group_by(SESSION).agg(
        messages=pl.len(),
        first_message=pl.col("timestamp").min(),
        last_message=pl.col("timestamp").max(),
        message_model=session_model("model"),
        counted_api_calls=ex.is_api_call().sum(),
        final_context=ex.assistant_cumulative().drop_nulls().last(),
    )
    table = meta.join(per_session, on=SESSION, how="left", maintain_order="left")
    return table.select(
        SESSION, "file", "source_format",
        normalized_model(pl.coalesce("model", "message_model")).alias("model"),
        pl.coalesce("model", "message_model").alias("model_raw"),
        "project", "is_subagent", "context_window",
        pl.min_horizontal("created_at", "first_message").alias("first_timestamp"),
        pl.max_horizontal("created_at", "last_message").alias("last_timestamp"),
        pl.col("messages").fill_null(0),
        pl.coalesce("recorded_api_calls", "counted_api_calls", pl.lit(0)).alias("api_calls"),
        "final_context", "compactions", "parent_session_id",
    ).cast(cast("dict[Any, pl.DataType]", SESSIONS_SCHEMA))


def compactions_table(parsed: list[ParsedFile], messages: pl.DataFrame) -> pl.DataFrame:
    """One row per compaction event the files recorded, in file and event order; ``messages``, their message
    frame, gives a canonical compaction's kept turns (:func:`~..formats.canonical.compactions.kept_before_summary`)."""
    rows = [(_session(p).session_id, c.get("anchor_index"), c.get("trigger"), c.get("tokens_before"),
             c.get("first_kept_index"), c.get("trigger_index", c.get("anchor_index")), c.get("kept_end_index"),
             None if (files := c.get("restored_files")) is None else [file_key(f, _session(p).project) for f in files])
            for p in parsed for c in _session(p).compactions]
    return kept_before_summary(pl.DataFrame(rows, schema=COMPACTIONS_SCHEMA, orient="row"), messages)


def sessions_frame(parsed: list[ParsedFile]) -> pl.DataFrame:
    """One row per parsed session with its file-level metadata."""
    rows = [
        {
            SESSION: _session(p).session_id,
            "file": str(p.path),
            "source_format": p.source_format,
            "model": _session(p).model,
            "context_window": _session(p).context_window,
            "parent_session_id": _session(p).parent_session_id,
            "created_at": _session(p).created_at,
            "project": _session(p).project,
            "is_subagent": _session(p).is_subagent,
        }
        for p in parsed
    ]
    return pl.DataFrame(rows, schema=SESSION_META_SCHEMA)
