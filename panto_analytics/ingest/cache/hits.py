"""What a cache lookup found: files served from their packs, with no frame and no session per file until one is asked for.

A re-read of many unchanged files must cost one stat per file and one read
per pack, whatever the number of files, and hold little per file. So a
lookup keeps its packs once and, as columns (:class:`Served`), where each
file's rows are and the session columns of its manifest row;
:class:`CachedFile` is the :class:`~panto_analytics.formats.contract.ParsedFile`
of one such file: its ``messages`` are sliced from the pack, and its
``session`` built (with every other file's of the lookup, in one pass) on
first use. :func:`gather_messages` builds the frame of many files with one
``gather`` instead of a slice and a concat per file, and :func:`session_ids`
gives their session ids without building a session per file.

>>> import polars as pl
>>> from panto_analytics.formats.contract import SessionMeta
>>> pack = pl.DataFrame({"x": [1, 2, 3, 4]})
>>> a, b = CachedFile.of(pack, 2, 2, SessionMeta("a"), "a.jsonl", "pi"), CachedFile.of(pack, 0, 1, SessionMeta("b"), "b.jsonl", "pi")
>>> gather_messages([a, b])["x"].to_list(), a.messages["x"].to_list(), session_ids([a, b]).to_list()
([3, 4, 1], [3, 4], ['a', 'b'])
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from ...errors import IngestReport
from ...formats.contract import ParsedFile, SessionMeta
from ...frame.schema import SESSION, empty_messages
from .codec import SESSION_COLUMNS

__all__ = ["CachedFile", "Found", "Served", "gather_messages", "session_ids"]


class Served:
    """The files one lookup served, as columns, each by its row ``k`` among the files asked for.

    ``packs``: the packs read; ``pack_index``, ``offsets``, ``rows``: where
    file ``k``'s rows are (``packs[pack_index[k]][offsets[k]:][:rows[k]]``);
    ``columns``: the manifest's :data:`~.codec.SESSION_COLUMNS`, one row per
    file, at ``row_of[k]``. The sessions of all the files are built from
    them together, the first time one is asked for (a file whose session is
    given, from its record, never asks).

    >>> served = Served([pl.DataFrame({"x": [1, 2, 3]})], [0, 0], [0, 1], [1, 2],
    ...                 pl.DataFrame({"session_id": ["a", "b"]}))
    >>> served.where(1)[1:], served.session(1).session_id
    ((1, 2), 'b')
    """

    __slots__ = ("_sessions", "columns", "offsets", "pack_index", "packs", "row_of", "rows")

    def __init__(self, packs: list[pl.DataFrame], pack_index, offsets, rows, columns: pl.DataFrame | None = None,
                 row_of=None) -> None:
        self.packs = packs
        self.pack_index = np.asarray(pack_index, dtype=np.int64)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.rows = np.asarray(rows, dtype=np.int64)
        self.columns = columns
        self.row_of = np.arange(len(self.rows), dtype=np.int64) if row_of is None else np.asarray(row_of, np.int64)
        self._sessions: list[SessionMeta] | None = None

    def where(self, k: int) -> tuple[pl.DataFrame, int, int]:
        """``(pack, offset, rows)`` of file ``k``."""
        return self.packs[int(self.pack_index[k])], int(self.offsets[k]), int(self.rows[k])

    def session(self, k: int) -> SessionMeta:
        """The session of file ``k``, from its manifest columns (all the files' built on the first call)."""
        if self._sessions is None:
            assert self.columns is not None  # only files whose session was not given ask
            self._sessions = _sessions_from(self.columns)
        return self._sessions[int(self.row_of[k])]

    def session_ids(self, ks: np.ndarray) -> pl.Series:
        """The session ids of files ``ks``, from the column (no session built)."""
        assert self.columns is not None
        return self.columns[SESSION].gather(self.row_of[ks])


def _sessions_from(columns: pl.DataFrame) -> list[SessionMeta]:
    """One :class:`SessionMeta` per row of a manifest's session columns (those rows that have an id)."""
    values = [columns[name].to_list() if name in columns.columns else [None] * columns.height
              for name in SESSION_COLUMNS]
    return [SessionMeta(sid, model, window, parent, api_calls=calls, project=project, is_subagent=bool(sub))
            for sid, model, window, parent, calls, project, sub in zip(*values)]


class CachedFile(ParsedFile):
    """A parsed file served from a cache pack: file ``k`` of a :class:`Served`.

    It is a :class:`ParsedFile` in every way; the slice of its pack is taken
    when ``messages`` is first read, and its session built when ``session``
    is; a ``messages`` or ``session`` assigned (by an adapter's
    ``postprocess``) replaces it. Made with ParsedFile's own arguments (as
    ``dataclasses.replace`` does), it is a plain parsed file.

    >>> from dataclasses import replace
    >>> f = CachedFile.of(pl.DataFrame({"x": [1, 2]}), 1, 1, SessionMeta("a"), "a.jsonl", "pi")
    >>> replace(f, session=SessionMeta("b")).messages["x"].to_list(), CachedFile.of(f.messages, 0, 1, None, "b", "pi").session
    ([2], None)
    """

    __slots__ = ("_k", "_messages", "_path", "_served", "_session")

    def __init__(self, served: Served, k: int, path: str | Path, source_format: str | None,
                 session: SessionMeta | None = None) -> None:
        self._served: Served | None = served
        self._k = k
        self._messages: pl.DataFrame | None = None
        self._path = path
        self._session = session
        self.source_format = source_format

    def __new__(cls, *args: object, **kwargs: object) -> CachedFile:
        if "messages" in kwargs and not args:  # ParsedFile's arguments (dataclasses.replace): a plain parsed file
            return ParsedFile(**kwargs)  # type: ignore[arg-type,return-value]
        return super().__new__(cls)

    @classmethod
    def of(cls, pack: pl.DataFrame, offset: int, rows: int, session: SessionMeta | None, path: str | Path,
           source_format: str | None) -> CachedFile:
        """A file whose rows are ``pack[offset : offset + rows]``, on its own."""
        return cls(Served([pack], [0], [offset], [rows]), 0, path, source_format, session)

    @property
    def messages(self) -> pl.DataFrame:
        if self._messages is None:
            assert self._served is not None  # set until messages are assigned
            pack, offset, rows = self._served.where(self._k)
            self._messages = pack.slice(offset, rows)
        return self._messages

    @messages.setter
    def messages(self, frame: pl.DataFrame) -> None:
        if self._session is None:
            self._session = self.session  # the session outlives the pack's columns
        self._messages, self._served = frame, None

    @property
    def session(self) -> SessionMeta | None:
        if self.lazy_session() is not None:
            self._session = self._served.session(self._k)  # type: ignore[union-attr]
        return self._session

    @session.setter
    def session(self, value: SessionMeta | None) -> None:
        self._session = value

    @property
    def path(self) -> Path:
        return self._path if isinstance(self._path, Path) else Path(self._path)

    @path.setter
    def path(self, value: Path) -> None:
        self._path = value

    def in_pack(self) -> tuple[pl.DataFrame, int, int] | None:
        """``(pack, offset, rows)``, unless its messages were replaced."""
        return None if self._served is None else self._served.where(self._k)

    def served_at(self) -> tuple[Served, int] | None:
        """``(served, k)`` while its messages are still in the pack, else None."""
        return None if self._served is None else (self._served, self._k)

    def lazy_session(self) -> tuple[Served, int] | None:
        """``(served, k)`` while its session is still only in the lookup's columns, else None."""
        lazy = self._session is None and self._served is not None and self._served.columns is not None
        return (self._served, self._k) if lazy else None  # type: ignore[return-value]


@dataclass
class Found:
    """The files a lookup found: their positions among the files asked for, where their rows are, their metadata.

    ``report``: the found files' shares of the read's report, summed.
    """

    index: list[int] = field(default_factory=list)
    files: list[CachedFile] = field(default_factory=list)
    report: IngestReport = field(default_factory=IngestReport)


def session_ids(parsed: list[ParsedFile]) -> pl.Series:
    """The session id of each file (null for a file skipped whole), in order, as one String series.

    A cached file whose session was not asked for yet gives its id from the
    lookup's column: checking the ids of many cached files builds no session.

    >>> served = Served([pl.DataFrame({"x": [1, 2]})], [0, 0], [0, 1], [1, 1], pl.DataFrame({"session_id": ["a", "b"]}))
    >>> files = [CachedFile(served, 1, "b.jsonl", "pi"), ParsedFile(pl.DataFrame(), SessionMeta("c"), Path("c"), "pi")]
    >>> session_ids(files).to_list(), files[0].lazy_session() is not None
    (['b', 'c'], True)
    """
    servers: dict[int, int] = {}  # id of a Served -> its number
    owners: list[Served] = []
    k_of = np.zeros(len(parsed), dtype=np.int64)

    def owner(pos: int, p: ParsedFile) -> int:
        """The number of the Served that holds ``p``'s session id (its ``k`` noted), or -1."""
        where = p.lazy_session() if isinstance(p, CachedFile) else None
        if where is None:
            return -1
        served, k_of[pos] = where
        number = servers.get(id(served))
        if number is None:
            number = servers[id(served)] = len(owners)
            owners.append(served)
        return number

    # Arrays, not a list of pairs: nothing is kept per file but what the ids themselves need.
    owner_of = np.fromiter((owner(pos, p) for pos, p in enumerate(parsed)), dtype=np.int64, count=len(parsed))
    plain = [None if o >= 0 else p.session.session_id if p.session is not None else None
             for p, o in zip(parsed, owner_of.tolist())]
    ids = pl.Series(SESSION, plain, dtype=pl.String)
    for number, served in enumerate(owners):
        positions = np.flatnonzero(owner_of == number)
        ids = ids.scatter(positions, served.session_ids(k_of[positions]))
    return ids


class _ByServed:
    """Files of one or more :class:`Served`, grouped: for each, the files' positions in a list and their ``k``."""

    def __init__(self) -> None:
        self._groups: dict[int, tuple[Served, list[int], list[int]]] = {}

    def add(self, pos: int, served: Served, k: int) -> None:
        group = self._groups.get(id(served))
        if group is None:
            group = self._groups[id(served)] = (served, [], [])
        group[1].append(pos)
        group[2].append(k)

    def groups(self) -> list[tuple[Served, np.ndarray, np.ndarray]]:
        return [(served, np.asarray(positions, dtype=np.int64), np.asarray(ks, dtype=np.int64))
                for served, positions, ks in self._groups.values()]


def gather_messages(parsed: list[ParsedFile]) -> pl.DataFrame:
    """One message frame of ``parsed``, in order: rows still in their packs are gathered in one take.

    Each pack (and each other file's frame) is concatenated once; the rows of
    every file are then picked with one ``gather``, so the cost does not grow
    with the number of files beyond building an index.
    """
    if not parsed:
        return empty_messages()
    sources: list[pl.DataFrame] = []
    src, start, count = np.empty(len(parsed), np.int64), np.empty(len(parsed), np.int64), np.empty(len(parsed), np.int64)
    in_packs = _ByServed()
    for pos, p in enumerate(parsed):
        where = p.served_at() if isinstance(p, CachedFile) else None
        if where is None:
            frame = p.messages
            src[pos], start[pos], count[pos] = len(sources), 0, frame.height
            sources.append(frame)
        else:
            in_packs.add(pos, *where)
    for served, positions, ks in in_packs.groups():  # each lookup's packs once, its files' places as arrays
        src[positions] = len(sources) + served.pack_index[ks]
        start[positions] = served.offsets[ks]
        count[positions] = served.rows[ks]
        sources.extend(served.packs)
    heights = np.array([f.height for f in sources], dtype=np.int64)
    base = np.concatenate(([0], np.cumsum(heights)))[:-1]
    total = int(count.sum())
    first = base[src] + start
    idx = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(count) - count, count) + np.repeat(first, count)
    whole = pl.concat(sources, how="vertical", rechunk=False)
    if total == whole.height and bool((np.diff(idx) == 1).all()):
        return whole.rechunk()
    return whole.select(pl.all().gather(pl.Series(idx, dtype=pl.Int64)))
