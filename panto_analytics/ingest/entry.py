"""The one call the command line and notebooks make to read a corpus: :func:`open_corpus`.

Paths in, a filtered :class:`~panto_analytics.ingest.corpus.Corpus` out:
:func:`~panto_analytics.ingest.corpus.read_corpus` (the cache, the worker
processes, every adapter's rules) and then, when a filter is given,
:func:`~panto_analytics.ingest.filters.filter_corpus`.
"""
from __future__ import annotations

from collections.abc import Iterable

from ..errors import IngestReport
from .cache import Cache
from .corpus import Corpus, read_corpus
from .filters import SessionFilter, filter_corpus
from .paths import PathLike

__all__ = ["open_corpus"]


def open_corpus(paths: Iterable[PathLike] | PathLike, *, filter: SessionFilter | None = None, format: str | None = None,
                skip_invalid: bool = False, report: IngestReport | None = None,
                cache: Cache | PathLike | bool | None = None, progress: bool = False,
                jobs: int | None = None) -> Corpus:
    """Read the sessions under ``paths`` into a :class:`~panto_analytics.ingest.corpus.Corpus`, filtered.

    Parameters
    ----------
    paths
        Files, folders (searched for session files) and globs.
    filter
        Which sessions to keep (:class:`~panto_analytics.ingest.filters.SessionFilter`); None keeps all.
    format, skip_invalid, report, cache, progress, jobs
        As in :func:`~panto_analytics.ingest.corpus.read_corpus`.

    Returns
    -------
    Corpus
        ``messages``, ``sessions``, ``compactions``: the sessions ``filter`` accepts, in every table;
        ``report``: what was read (before the filter).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> line = '{"type":"message","role":"user","content":[{"type":"text","text":"hi"}]}\\n'
    >>> _ = (d / "a.jsonl").write_text(line), (d / "b.jsonl").write_text(line)
    >>> open_corpus(d).sessions.height
    2
    >>> open_corpus(d, filter=SessionFilter.parse(model=["claude-opus-4"])).sessions.height  # no session names it
    0
    """
    corpus = read_corpus(paths, format=format, skip_invalid=skip_invalid, report=report, cache=cache,
                         progress=progress, jobs=jobs)
    return corpus if filter is None else filter_corpus(corpus, filter)
