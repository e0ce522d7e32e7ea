"""What a cache lookup found: files served from their packs, with no frame per file until one is asked for.

A re-read of many unchanged files must cost one stat per file and one read
per pack, whatever the number of files. So :class:`Found` keeps each pack
once and, per file found, only where its rows are; :class:`CachedFile` is the
:class:`~panto_analytics.ingest.formats.base.ParsedFile` of such a file,
whose ``messages`` are sliced from the pack on first use, and
:func:`gather_messages` builds the frame of many files with one ``gather``
instead of a slice and a concat per file.

>>> import polars as pl
>>> from panto_analytics.ingest.formats.base import SessionMeta
>>> pack = pl.DataFrame({"x": [1, 2, 3, 4]})
>>> a, b = CachedFile(pack, 2, 2, SessionMeta("a"), "a.jsonl", "pi"), CachedFile(pack, 0, 1, SessionMeta("b"), "b.jsonl", "pi")
>>> gather_messages([a, b])["x"].to_list(), a.messages["x"].to_list()
([3, 4, 1], [3, 4])
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from ...errors import IngestReport
from ...schema import empty_messages
from ..formats.base import ParsedFile, SessionMeta

__all__ = ["CachedFile", "Found", "gather_messages"]


class CachedFile(ParsedFile):
    """A parsed file served from a cache pack: its rows are ``pack[offset : offset + rows]``.

    It is a :class:`ParsedFile` in every way; the slice is taken when
    ``messages`` is first read, and a ``messages`` assigned (by an adapter's
    ``postprocess``) replaces it. Made with ParsedFile's own arguments (as
    ``dataclasses.replace`` does), it is a plain parsed file.

    >>> from dataclasses import replace
    >>> f = CachedFile(pl.DataFrame({"x": [1, 2]}), 1, 1, SessionMeta("a"), "a.jsonl", "pi")
    >>> replace(f, session=SessionMeta("b")).messages["x"].to_list()
    [2]
    """

    __slots__ = ("_messages", "_offset", "_pack", "_path", "_rows")

    def __init__(self, pack: pl.DataFrame, offset: int, rows: int, session: SessionMeta | None,
                 path: str | Path, source_format: str | None) -> None:
        self._pack: pl.DataFrame | None = pack
        self._offset, self._rows = offset, rows
        self._messages: pl.DataFrame | None = None
        self._path = path
        self.session = session
        self.source_format = source_format

    def __new__(cls, *args: object, **kwargs: object) -> CachedFile:
        if "messages" in kwargs and not args:  # ParsedFile's arguments (dataclasses.replace): a plain parsed file
            return ParsedFile(**kwargs)  # type: ignore[arg-type,return-value]
        return super().__new__(cls)

    @property
    def messages(self) -> pl.DataFrame:
        if self._messages is None:
            assert self._pack is not None  # set until messages are assigned
            self._messages = self._pack.slice(self._offset, self._rows)
        return self._messages

    @messages.setter
    def messages(self, frame: pl.DataFrame) -> None:
        self._messages, self._pack = frame, None

    @property
    def path(self) -> Path:
        return self._path if isinstance(self._path, Path) else Path(self._path)

    @path.setter
    def path(self, value: Path) -> None:
        self._path = value

    def in_pack(self) -> tuple[pl.DataFrame, int, int] | None:
        """``(pack, offset, rows)``, unless its messages were replaced."""
        return None if self._pack is None else (self._pack, self._offset, self._rows)


@dataclass
class Found:
    """The files a lookup found: their positions among the files asked for, where their rows are, their metadata.

    ``report``: the found files' shares of the read's report, summed.
    """

    index: list[int] = field(default_factory=list)
    files: list[CachedFile] = field(default_factory=list)
    report: IngestReport = field(default_factory=IngestReport)


def gather_messages(parsed: list[ParsedFile]) -> pl.DataFrame:
    """One message frame of ``parsed``, in order: rows still in their packs are gathered in one take.

    Each pack (and each other file's frame) is concatenated once; the rows of
    every file are then picked with one ``gather``, so the cost does not grow
    with the number of files beyond building an index.
    """
    if not parsed:
        return empty_messages()
    sources: list[pl.DataFrame] = []
    source_of: dict[int, int] = {}
    src, start, count = np.empty(len(parsed), np.int64), np.empty(len(parsed), np.int64), np.empty(len(parsed), np.int64)
    for k, p in enumerate(parsed):
        where = p.in_pack() if isinstance(p, CachedFile) else None
        if where is None:
            frame, offset, rows = p.messages, 0, p.messages.height
            source_of[id(frame)] = len(sources)
            sources.append(frame)
        else:
            frame, offset, rows = where
            if id(frame) not in source_of:
                source_of[id(frame)] = len(sources)
                sources.append(frame)
        src[k], start[k], count[k] = source_of[id(frame)], offset, rows
    heights = np.array([f.height for f in sources], dtype=np.int64)
    base = np.concatenate(([0], np.cumsum(heights)))[:-1]
    total = int(count.sum())
    first = base[src] + start
    idx = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(count) - count, count) + np.repeat(first, count)
    whole = pl.concat(sources, how="vertical", rechunk=False)
    if total == whole.height and bool((np.diff(idx) == 1).all()):
        return whole.rechunk()
    return whole.select(pl.all().gather(pl.Series(idx, dtype=pl.Int64)))
