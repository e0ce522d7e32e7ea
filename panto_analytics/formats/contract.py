"""The adapter contract: what every source format satisfies, the message it yields, the file it reads.

An adapter is a module that satisfies :class:`Adapter`: ``NAME`` (a
``schema.SOURCE_FORMATS`` entry), ``sniff(record) -> bool`` (does this first
JSON record look like my format?), ``parse(src: SourceFile) ->
Iterator[Message]``, and two optional hooks, ``read_frames`` (a columnar fast
path over many files) and ``postprocess`` (cross-file rules over every
:class:`ParsedFile` of the format), each ``None`` where the format has none.
``parse`` yields libpanto messages, in the order the agent had them, with
*canonical* content blocks (see ``docs/formats.md``);
:class:`~.frame_builder.FrameBuilder` turns them into frame rows. Bad lines go
through :meth:`SourceFile.invalid`, which raises or counts a skip; records that
are not conversation go through :meth:`SourceFile.ignore`. The file itself is
opened by :mod:`.session_files`, and a record's fields are checked by
:mod:`.record_fields`.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any, Protocol

import polars as pl

from ..errors import IngestReport, InputError
from ..pathnames import path_string
from .session_files import TRUNCATED, DamagedFileError, open_session_file, session_stem

__all__ = ["Adapter", "Message", "ParsedFile", "Postprocess", "ReadFrames", "SessionMeta", "SourceFile"]


@dataclass(slots=True)
class Message:
    """One libpanto message: role, canonical blocks, usage (or None), provenance."""

    role: str
    content: list[dict[str, Any]]
    usage: dict[str, int] | None
    line: int
    timestamp: datetime | None = None
    model: str | None = None
    #: The call's cost as the agent recorded it, in US dollars (``recorded_cost``); None where none is.
    cost: float | None = None
    #: pi's ``bashExecution``, a user message that is the user's ``!command`` run (``bash_execution``).
    bash: bool = False
    #: The working directory its record gives (Claude Code's ``cwd``): its tool calls' own; None: the session's.
    cwd: str | None = None


@dataclass(slots=True)
class SessionMeta:
    """What a file says about its session as a whole (slots: a cached re-read holds one per file)."""

    session_id: str
    model: str | None = None
    context_window: int | None = None
    parent_session_id: str | None = None
    created_at: datetime | None = None
    #: The working directory the agent recorded (pi, Codex, Claude Code's ``cwd``); None when unrecorded.
    project: str | None = None
    #: A subagent's own context (Claude Code sidechain files, Codex spawned threads), not a main session.
    is_subagent: bool = False
    #: Recorded compaction events: dicts with anchor_index (index of the
    #: summary message among the messages yielded), trigger, tokens_before,
    #: first_kept_index (or None), trigger_index (one past the last message of
    #: the conversation the agent compacted: rows ``[0, anchor_index)`` plus
    #: ``(anchor_index, trigger_index)``; equal to anchor_index unless what was
    #: kept verbatim was recorded before the compaction, as in pi) and
    #: kept_end_index (one past the last message kept verbatim, or None).
    compactions: list[dict[str, Any]] = field(default_factory=list)
    api_calls: int | None = None
    #: A source id per yielded message, in order (Claude Code: the uuid of the
    #: record that opened it), for cross-file rules in an adapter's
    #: ``postprocess``; None when the format has no such ids.
    message_ids: list[str | None] | None = None


class SourceFile:
    """A file being parsed: its path (``file``, a string; the ``Path`` made when first asked for), its session's
    metadata, its error policy.

    >>> src = SourceFile("a/./b.jsonl", "canonical")
    >>> src.file, src.path, src.meta.session_id
    ('a/b.jsonl', PosixPath('a/b.jsonl'), 'b')
    """

    def __init__(self, path: str | Path, source_format: str, *, skip_invalid: bool = False,
                 report: IngestReport | None = None):
        #: ``str(self.path)``.
        self.file = path_string(path)
        self._path = path if isinstance(path, Path) else None
        self.source_format = source_format
        self.skip_invalid = skip_invalid
        self.report = report if report is not None else IngestReport()
        self.meta = SessionMeta(session_id=session_stem(self.file))
        #: Set by an adapter that found no record at all (an empty or blank file): it holds no session.
        self.holds_nothing = False
        self._size: int | None = None

    def size(self) -> int:
        """The file's size on disk, taken when first asked for (a reader groups files by it, then reads them)."""
        if self._size is None:
            self._size = os.stat(self.file).st_size
        return self._size

    @property
    def path(self) -> Path:
        """The file's path."""
        if self._path is None:
            self._path = Path(self.file)
        return self._path

    @path.setter
    def path(self, value: str | Path) -> None:
        self.file = path_string(value)
        self._path = value if isinstance(value, Path) else None
        self._size = None

    def invalid(self, line: int | None, reason: str) -> None:
        """A bad line: raise :class:`InputError`, or count it under ``skip_invalid``."""
        if not self.skip_invalid:
            raise InputError(self.file, line, reason)
        self.report.skip(self.file, reason)

    def truncated(self, line: int) -> None:
        """The file's last line has no newline and is not JSON: skipped and counted, never fatal."""
        self.report.skip(self.file, TRUNCATED)

    def ignore(self, record_type: str) -> None:
        """A valid record that is not conversation: counted, never fatal."""
        self.report.ignore(self.source_format, record_type)

    def open(self) -> IO[bytes]:
        """The file's bytes (decompressed, without a BOM): see :func:`open_session_file`.

        A damaged compressed file raises :class:`DamagedFileError`, or under
        ``skip_invalid`` reads as its whole lines before the damage and is
        counted as skipped once, however often it is opened.
        """
        return open_session_file(self.file, on_damage=self.damaged)

    def damaged(self, reason: str) -> None:
        """A compressed file cut short or corrupt: raise, or count it once under ``skip_invalid``."""
        if not self.skip_invalid:
            raise DamagedFileError(self.file, reason)
        if (self.file, reason) not in self.report.skipped:
            self.report.skip(self.file, reason)


@dataclass(slots=True)
class ParsedFile:
    """The messages and session metadata of one file (``session`` None: skipped whole under skip_invalid).

    Slots, not a ``__dict__``: a cached re-read of tens of thousands of files holds one per file.
    """

    messages: pl.DataFrame
    session: SessionMeta | None
    path: Path
    source_format: str | None


#: A columnar fast path: the message frame of each file, or None where it declines (the file is then parsed).
ReadFrames = Callable[[list[SourceFile]], list[pl.DataFrame | None]]


#: Cross-file rules: every parsed file of the format in, the files kept out (in order; a kept one may be updated).
Postprocess = Callable[[list[ParsedFile], IngestReport], list[ParsedFile]]


class Adapter(Protocol):
    """What the ingest pipeline needs of a source format; each format module satisfies it."""

    @property
    def NAME(self) -> str: ...  # noqa: N802 (a module constant)

    def sniff(self, record: Any) -> bool: ...

    def parse(self, src: SourceFile) -> Iterator[Message]: ...

    @property
    def read_frames(self) -> ReadFrames | None: ...

    @property
    def postprocess(self) -> Postprocess | None: ...
