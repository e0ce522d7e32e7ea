"""Reading recorded sessions into the message frame and the corpus tables.

- :mod:`.paths`: which files a list of paths names.
- :mod:`.pipeline`: :func:`read_sessions`, :func:`read_files`, the one path every read takes.
- :mod:`.corpus`: :func:`read_corpus` and the sessions and compactions tables.
- :mod:`.request`: :func:`summary_request`, the exact summarizer request of one split, re-read from the files.
- :mod:`.formats`: one adapter per source format, and detection.
- :mod:`.cache`: the Parquet cache of parsed files.
- :mod:`.schedule`, :mod:`.parallel`, :mod:`.progress`: batching, worker processes, the progress bar.
"""
from .cache import Cache, CacheStats
from .corpus import Corpus, compactions, read_corpus, sessions
from .paths import expand_paths
from .pipeline import read_files, read_sessions
from .request import summary_request

__all__ = ["Cache", "CacheStats", "Corpus", "compactions", "expand_paths", "read_corpus", "read_files",
           "read_sessions", "sessions", "summary_request"]
