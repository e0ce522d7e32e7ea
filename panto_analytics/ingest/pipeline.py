"""Reading session files into the message frame: the one path every read takes.

:func:`read_files` is the entry point that :func:`read_sessions`,
:func:`~panto_analytics.ingest.corpus.read_corpus` and the command line
share: paths -> files (:mod:`.paths`) -> cached entries (:mod:`.cache`) ->
batches parsed on worker processes (:mod:`._schedule`, :mod:`.parallel`) by
the adapters (:mod:`.formats`) -> cross-file rules -> one message frame.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "s.jsonl").write_text(
...     '{"type":"message","role":"user","content":[{"type":"text","text":"hi there"}]}\\n')
>>> read_sessions([d]).select("session_id", "seq", "role", "words").rows()
[('s', 0, 'user', 2)]
"""
from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.ma  # noqa: F401  Polars imports it at the first Series built from an array: here, before workers fork
import polars as pl

from ..errors import STRAY, WHOLE_FILE, IngestReport, InputError, UnknownFormatError
from ..formats import ADAPTERS, adapter, detect_format
from ..formats.contract import ParsedFile, SessionMeta, SourceFile
from ..formats.frame_builder import FrameBuilder
from ..formats.session_files import session_stem
from ..frame.expressions import is_api_call
from ..frame.schema import ROLE, empty_messages
from ..phrases import counted
from . import _schedule as schedule
from . import parallel
from .cache import Cache, CacheStats, CacheWarning, Entry, FileKey, as_cache
from .cache.codec import key_table, keys_of
from .cache.hits import Found, gather_messages, session_ids
from .paths import PathLike, expand_searched
from .progress import Progress

__all__ = ["Ingested", "concat_messages", "parse_files", "parse_here", "read_files", "read_sessions", "without_strays"]


@dataclass
class Ingested:
    """What one read gives: the parsed files, their message frame, the report, the cache's share."""

    files: list[ParsedFile]
    messages: pl.DataFrame
    report: IngestReport
    cache: CacheStats | None = None


def read_files(paths: Iterable[PathLike] | PathLike, *, format: str | None = None,
               skip_invalid: bool = False, report: IngestReport | None = None,
               cache: Cache | PathLike | bool | None = None, progress: bool = False,
               jobs: int | None = None) -> Ingested:
    """Read every session under ``paths``; options as in :func:`read_sessions`."""
    report = report if report is not None else IngestReport()
    store = as_cache(cache)
    before = dataclasses.replace(store.stats) if store is not None else None
    names, searched = expand_searched(paths)
    parsed = parse_files(without_strays(names, searched, format, report), format=format, skip_invalid=skip_invalid, report=report,
                         cache=store, progress=progress, jobs=jobs)
    stats = store.stats.since(before) if store is not None and before is not None else None
    return Ingested(parsed, gather_messages(parsed), report, stats)


def without_strays(names: Sequence[str], searched: set[str], format: str | None,
                   report: IngestReport | None) -> list[str]:
    """``names`` less the files found by searching a folder (``searched``) whose format no adapter knows: a hook
    log or an export beside the sessions is skipped, and counted in ``report`` (:data:`STRAY`), not an error.

    A file named (not in ``searched``) stays, to be an error when read; so
    does every file when ``format`` is forced, and a file bad in another way
    (its first line not JSON: the read says where).

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "hook.jsonl").write_text('{"hook": "PreToolUse"}\\n')
    >>> report = IngestReport()
    >>> without_strays([str(d / "hook.jsonl")], {str(d / "hook.jsonl")}, None, report), report.n_skipped
    ([], 1)
    """
    if format is not None or not searched:
        return list(names)
    kept = []
    for name in names:
        if name in searched:
            try:
                detect_format(name)
            except UnknownFormatError:
                if report is not None:
                    report.skip(name, STRAY)
                continue
            except InputError:
                pass
        kept.append(name)
    return kept


def read_sessions(paths: Iterable[PathLike] | PathLike, *, format: str | None = None,
                  skip_invalid: bool = False, report: IngestReport | None = None,
                  cache: Cache | PathLike | bool | None = None, progress: bool = False,
                  jobs: int | None = None) -> pl.DataFrame:
    """The message frame of every session under ``paths``.

    Parameters
    ----------
    paths
        Files, directories (searched recursively for ``*.jsonl``) and globs.
    format
        Force one source format instead of detecting it per file.
    skip_invalid
        Skip bad lines instead of raising :class:`InputError`; the skips are
        counted in ``report``.
    report
        An :class:`IngestReport` to fill with counts and skips.
    cache
        A :class:`~panto_analytics.ingest.cache.Cache` or its folder (True: the
        per-user default folder): files unchanged since they were cached are
        read from it, the others parsed and stored. None (default): no cache.
    progress
        Show a progress bar on stderr, if stderr is a terminal.
    jobs
        Processes to parse with, this one included; None: all cores.

    Returns
    -------
    pl.DataFrame
        One row per message (``schema.MESSAGE_SCHEMA``), sessions contiguous and in ``seq`` order.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "s.jsonl").write_text('{"type":"message","role":"user","content":[{"type":"text","text":"hi"}]}\\n')
    >>> read_sessions(d).select("session_id", "seq", "role", "words").rows()
    [('s', 0, 'user', 1)]
    """
    return read_files(paths, format=format, skip_invalid=skip_invalid, report=report, cache=cache,
                      progress=progress, jobs=jobs).messages


def parse_here(paths: list[PathLike], *, format: str | None = None, skip_invalid: bool = False,
               reports: Sequence[IngestReport | None] | None = None) -> list[ParsedFile]:
    """Parse files in this process, each counted in its own report (or one new each).

    Adapters with a columnar fast path (``read_frames(sources)``) get all
    their files at once; a file the fast path returns None for, and every
    file of other formats, is read line by line by the adapter's ``parse``.
    Errors are raised in file order.
    """
    file_reports = [r if r is not None else IngestReport() for r in (reports or [None] * len(paths))]
    return [ParsedFile(frame, session, where.path if isinstance(where, SourceFile) else Path(where), fmt)
            for (frame, session, where, fmt) in _parse_here(paths, format, skip_invalid, file_reports)]


def _parse_here(paths: list[PathLike], format: str | None, skip_invalid: bool,
                file_reports: list[IngestReport]) -> list[tuple[pl.DataFrame, SessionMeta | None,
                                                                 SourceFile | str, str | None]]:
    """:func:`parse_here`: each file's ``(messages, session, where, format)``, ``where`` its :class:`SourceFile`
    (or the path of one skipped whole), so that a ``Path`` is made only where a caller asks for it (a batch
    parsed for the cache makes none).
    """
    sources: list[SourceFile | InputError] = []
    for path, report in zip(paths, file_reports):
        try:
            sources.append(SourceFile(path, _format_of(path, format), skip_invalid=skip_invalid, report=report))
        except InputError as e:  # raised below, in file order
            sources.append(e)
    frames = _fast_frames(sources)
    # Files without a fast-path frame are read line by line into one builder,
    # whose frame is built once and sliced per file (a frame per file costs more).
    builder, rows = FrameBuilder(), {}
    for i, (src, frame, report) in enumerate(zip(sources, frames, file_reports)):
        if isinstance(src, InputError):
            if not skip_invalid:
                raise src
            # Not a session file at all (say, pretty-printed JSON): skipped whole, and counted.
            report.files += 1
            report.skip(src.path, f"{WHOLE_FILE}: {src.reason}")
            frames[i] = empty_messages()
        elif frame is None:
            src.meta = SessionMeta(session_id=session_stem(src.file))  # forget what a failed fast path read
            start = builder.height
            rows[i] = (start, builder.add_session(src, adapter(src.source_format).parse(src)))
    if rows:
        built = builder.finish()
        for i, (start, n) in rows.items():
            frames[i] = built.slice(start, n)
    filled = cast("list[pl.DataFrame]", frames)  # every file has its frame by now
    parsed: list[tuple[pl.DataFrame, SessionMeta | None, SourceFile | str, str | None]] = [
        (frame, None, src.path, None) if isinstance(src, InputError)
        else (frame, None, src, None) if src.holds_nothing
        else (frame, src.meta, src, src.source_format)
        for src, frame in zip(sources, filled)]
    counted = _counted_api_calls(filled)
    for (frame, session, _, _), src, report, calls in zip(parsed, sources, file_reports, counted):
        if session is not None:
            report.files += 1
            report.sessions += 1
            report.messages += frame.height
            report.api_calls += session.api_calls if session.api_calls is not None else calls
        elif isinstance(src, SourceFile):  # read, and nothing in it (an empty file): a file, not a session
            report.files += 1
    return parsed


def _format_of(path: PathLike, forced: str | None) -> str:
    """The format to read ``path`` in: detected, or ``forced`` unless the file is plainly another format.

    A forced format is taken as is where detection cannot tell (the adapter
    then judges the file line by line).
    """
    if forced is None:
        return detect_format(path)
    try:
        detected = detect_format(path)
    except InputError:
        return forced
    if detected != forced:
        raise InputError(path, None, f"this is a {detected} file, not {forced} (format {forced!r} was forced)")
    return forced


def _fast_frames(sources: list) -> list[pl.DataFrame | None]:
    """Frames from the adapters' columnar fast paths, None where there is none or it declined.

    A fast path spends part of its time in Arrow, NumPy and Polars code
    that releases the GIL, so its files are split between threads, one per
    core this process has to itself (:func:`.parallel.threads_here`: one in
    each forked worker, where the workers take every core between them).
    """
    frames: list[pl.DataFrame | None] = [None] * len(sources)
    threads = parallel.threads_here()
    for name, fmt in ADAPTERS.items():
        fast = fmt.read_frames
        mine = [i for i, src in enumerate(sources) if isinstance(src, SourceFile) and src.source_format == name]
        if fast is None or not mine:
            continue
        shares = [mine[k::threads] for k in range(threads) if mine[k::threads]]
        if len(shares) == 1:   # no thread to start
            for i, frame in zip(mine, fast([sources[i] for i in mine])):
                frames[i] = frame
            continue
        with ThreadPoolExecutor(len(shares)) as pool:
            done = pool.map(fast, [[sources[i] for i in share] for share in shares])
            for share, share_frames in zip(shares, done):
                for i, frame in zip(share, share_frames):
                    frames[i] = frame
    return frames


def _counted_api_calls(frames: list[pl.DataFrame]) -> list[int]:
    """:func:`counted_api_calls` of each frame, in one query over all of them (per-frame queries add up)."""
    if not frames:
        return []
    # Only the two columns the rule reads are put together (all twenty cost about 30 µs a file).
    columns = {name: pl.concat([f.get_column(name) for f in frames], rechunk=False) for name in (ROLE, "input")}
    is_call = pl.DataFrame(columns).select(is_api_call()).to_series().to_numpy()
    owner = np.repeat(np.arange(len(frames)), [f.height for f in frames])
    return np.bincount(owner, weights=is_call, minlength=len(frames)).astype(int).tolist()


def parse_files(files: Sequence[PathLike], *, format: str | None = None, skip_invalid: bool = False,
                report: IngestReport | None = None, cache: Cache | PathLike | bool | None = None,
                progress: bool = False, jobs: int | None = None) -> list[ParsedFile]:
    """Parse files and check that no session id is claimed by two of them.

    Cached files are read from ``cache``; the rest are parsed on ``jobs``
    processes (see :mod:`panto_analytics.ingest.parallel`) and stored. The
    adapters' ``postprocess`` hooks then see every file, cached or not, so a
    cached read gives the same frame and report as a cold one. Options as in
    :func:`read_sessions`.
    """
    report = report if report is not None else IngestReport()
    cache = as_cache(cache)
    before = dataclasses.replace(cache.stats) if cache is not None else None
    table = key_table(files)  # one stat per file
    found = cache.find(table, format, skip_invalid, files) if cache is not None else Found()
    hit = np.zeros(table.height, dtype=bool)
    hit[found.index] = True
    todo = np.flatnonzero(~hit).tolist()
    todo_keys = keys_of(table[todo]) if todo else []
    sizes = table["size"].to_numpy()
    bar = Progress(table.height, int(sizes.sum()), enabled=None if progress else False)
    bar.advance(int(sizes[hit].sum()), files=len(found.index), cached=True)
    with bar:
        pool_from = schedule.pool_threshold(todo_keys, format)
        shared_by = parallel.launched_workers() if jobs != 1 else 0
        batches = schedule.batches(todo_keys, jobs, pool_from, shared_by=shared_by)
        batch_results = parallel.run(
            _parse_batch, [(batch, format, skip_invalid, cache) for batch in batches],
            weights=[sum(k.size for k in batch) for batch in batches], jobs=jobs, min_weight=pool_from,
            on_done=lambda j, _: bar.advance(sum(k.size for k in batches[j]), files=len(batches[j])),
            stop=lambda r: r[0] == "error")
    errors = [r[1] for r in batch_results if r is not None and r[0] == "error"]
    if errors:
        kind, *where = errors[0]
        raise kind(*where)
    done = cast("list[tuple]", batch_results)  # every batch ran: none stopped the others
    parsed_entries = [entry for _, batch_entries, _, _, _ in done for entry in batch_entries]
    if cache is not None:
        assert before is not None  # taken whenever there is a cache
        for _, _, _, stats, error in done:
            cache.absorb(stats, error)
        cache.count_misses(len(todo))
        cache.commit([rows for _, _, rows, _, _ in done])
        _warn_about(cache, before)
    report.merge(found.report)
    files_in_order: list[ParsedFile | None] = [None] * table.height
    for i, cached in zip(found.index, found.files):
        files_in_order[i] = cached  # its Path is made when asked for
    for i, entry in zip(todo, parsed_entries):
        report.merge(entry.report)
        if entry.session is not None:
            f = files[i]
            files_in_order[i] = ParsedFile(entry.messages, entry.session, f if isinstance(f, Path) else Path(f),
                                           entry.source_format)
    parsed = [p for p in files_in_order if p is not None]
    parsed = postprocess(parsed, report)
    return check_unique_sessions(parsed, skip_invalid=skip_invalid, report=report)


def parse_entries(paths: list[PathLike], format: str | None = None, skip_invalid: bool = False) -> list[Entry]:
    """Parse files, each with a report of its own: what the cache stores."""
    reports = [IngestReport() for _ in paths]
    parsed = _parse_here(paths, format, skip_invalid, reports)
    return [Entry(frame, session, fmt, r) for (frame, session, _, fmt), r in zip(parsed, reports)]


def _parse_batch(task: tuple[list[FileKey], str | None, bool, Cache | None]) -> tuple:
    """Parse a batch of files and write its pack, here or in a worker.

    Returns ``("ok", entries, manifest rows or None, stats, error)``, or
    ``("error", (kind, path, line, reason))``, an :class:`InputError` as its parts. The
    calling process commits the manifest rows of every batch at once.
    """
    keys, format, skip_invalid, cache = task
    try:
        entries = _Shipped(parse_entries([key.path for key in keys], format, skip_invalid))
    except InputError as e:
        return ("error", (UnknownFormatError if isinstance(e, UnknownFormatError) else InputError, e.path, e.line,
                          e.reason))
    if cache is None:
        return ("ok", entries, None, CacheStats(), None)
    mine = Cache(cache.root)  # counts what this task wrote, wherever it runs
    rows = mine.store_batch(keys, format, entries)
    return ("ok", entries, rows, mine.stats, mine.last_error)


class _Shipped(list):
    """A batch's entries, which travel from a worker as one frame, cut again into the files' frames on arrival.

    Pickling hundreds of small frames costs several times pickling their
    rows as one (about 46 ms against 9 ms for a quarter of 154 MB of Claude
    Code, both ways), so the frames are concatenated for the trip and sliced
    back, each file its rows, in order. Where they cannot be concatenated
    (their columns differ), they travel as they are.

    >>> import pickle, polars as pl
    >>> from panto_analytics.ingest.cache import Entry
    >>> from panto_analytics.errors import IngestReport
    >>> batch = _Shipped(Entry(pl.DataFrame({"seq": list(range(n))}), None, None, IngestReport()) for n in (2, 0, 3))
    >>> [e.messages["seq"].to_list() for e in pickle.loads(pickle.dumps(batch))]
    [[0, 1], [], [0, 1, 2]]
    """

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        frames = [entry.messages for entry in self]
        try:
            whole: pl.DataFrame | None = pl.concat(frames, how="vertical", rechunk=True) if frames else None
        except pl.exceptions.PolarsError:
            whole = None
        if whole is None:
            return (_Shipped, (list(self),))
        rest = [(entry.messages.height, dataclasses.replace(entry, messages=cast("pl.DataFrame", None)))
                for entry in self]
        return (_arrived, (whole, rest))


def _arrived(whole: pl.DataFrame, rest: list[tuple[int, Entry]]) -> _Shipped:
    """A :class:`_Shipped` batch unpacked: each entry gets its rows of ``whole`` back."""
    batch, start = _Shipped(), 0
    for height, entry in rest:
        entry.messages = whole.slice(start, height)
        batch.append(entry)
        start += height
    return batch


def _warn_about(cache: Cache, before: CacheStats) -> None:
    """One warning per kind of trouble this read had with the cache."""
    now = cache.stats.since(before)
    rebuilt, failed = now.rebuilt, now.write_errors
    if rebuilt:
        warnings.warn(f"cache: {counted(rebuilt, 'corrupt or foreign cache file')} in {cache.root} "
                      "were discarded and rebuilt", CacheWarning, stacklevel=4)
    if failed:
        warnings.warn(f"cache: {counted(failed, 'file')} not cached; {cache.last_error}", CacheWarning, stacklevel=4)


def postprocess(parsed: list[ParsedFile], report: IngestReport | None) -> list[ParsedFile]:
    """Let each adapter that defines ``postprocess(files, report)`` see all its files at once.

    This is where cross-file rules live (a Claude Code session resumed into
    another file must not be counted twice). File order is kept.
    """
    report = report if report is not None else IngestReport()
    for name, fmt in ADAPTERS.items():
        hook = fmt.postprocess
        mine = [p for p in parsed if p.source_format == name]
        if hook is None or not mine:
            continue
        kept = {id(p) for p in hook(mine, report)}
        parsed = [p for p in parsed if p.source_format != name or id(p) in kept]
    return parsed


def check_unique_sessions(parsed: list[ParsedFile], *, skip_invalid: bool = False,
                          report: IngestReport | None = None) -> list[ParsedFile]:
    """The files, each session id claimed once: a second file with an id already seen is an error.

    Under ``skip_invalid`` the first file keeps the session; a later one (a
    backup, a copy) is dropped, its messages uncounted, and the skip noted
    with both files.
    """
    ids = session_ids(parsed)  # a cached file's from the lookup's columns: no session built for this check
    if ids.null_count() == 0 and ids.n_unique() == len(parsed):  # the usual case, in one pass
        return parsed
    owner: dict[str, Path] = {}
    kept: list[ParsedFile] = []
    for p in parsed:
        assert p.session is not None  # files skipped whole are dropped before this check
        sid = p.session.session_id
        if sid in owner:
            reason = f"session id {sid!r} is also the id of {owner[sid]}"
            if not skip_invalid:
                raise InputError(p.path, None, reason)
            if report is not None:
                report.skip(p.path, f"{WHOLE_FILE}: {reason} (the first one kept)")
                report.sessions -= 1
                report.messages -= p.messages.height
                recorded = p.session.api_calls
                report.api_calls -= recorded if recorded is not None else _counted_api_calls([p.messages])[0]
            continue
        owner[sid] = p.path
        kept.append(p)
    return kept


def concat_messages(frames: list[pl.DataFrame]) -> pl.DataFrame:
    """One message frame from many, in file order."""
    if not frames:
        return empty_messages()
    return pl.concat(frames, how="vertical", rechunk=True)
