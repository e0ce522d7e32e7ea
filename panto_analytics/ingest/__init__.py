"""Reading recorded sessions into the message frame and the corpus tables.

- :mod:`.paths`: which files a list of paths names.
- :mod:`.pipeline`: :func:`read_sessions`, :func:`read_files`, the one path every read takes.
- :mod:`.entry`: :func:`open_corpus`, the one call the command line and notebooks make (read, then filter).
- :mod:`.corpus`: :func:`read_corpus` and the sessions and compactions tables.
- :mod:`.cache`: the Parquet cache of parsed files.
- :mod:`._schedule`, :mod:`.parallel`, :mod:`.progress`: batching, worker processes, the progress bar.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_getattr

__all__ = ["Cache", "CacheStats", "Corpus", "SessionFilter", "compactions", "expand_paths", "filter_corpus",
           "open_corpus", "read_corpus", "read_files", "read_sessions", "sessions"]

#: Where each name is defined, imported on first use: ``import panto_analytics.ingest.parallel`` (the
#: command line starts its parsing worker with it) loads no Polars.
_FROM = {"Cache": ".cache", "CacheStats": ".cache", "Corpus": ".corpus", "compactions": ".corpus",
         "read_corpus": ".corpus", "sessions": ".corpus", "expand_paths": ".paths", "read_files": ".pipeline",
         "read_sessions": ".pipeline", "open_corpus": ".entry", "SessionFilter": ".filters",
         "filter_corpus": ".filters"}

if TYPE_CHECKING:
    from .cache import Cache, CacheStats
    from .corpus import Corpus, compactions, read_corpus, sessions
    from .entry import open_corpus
    from .filters import SessionFilter, filter_corpus
    from .paths import expand_paths
    from .pipeline import read_files, read_sessions


__getattr__ = lazy_getattr(__name__, _FROM)
