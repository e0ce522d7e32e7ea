"""Bad input: one exception that names the file and line, and a report of skips.

>>> str(InputError("s.jsonl", 3, "malformed JSON"))
's.jsonl:3: malformed JSON'
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Polars is loaded only when a frame is asked for: the command line starts without it
    import polars as pl

__all__ = ["FORCE_FORMAT", "FORCE_FORMAT_OPTION", "STRAY", "WHOLE_FILE", "IngestReport", "InputError", "UnknownFormatError"]

#: How a skip reason begins when the whole file was skipped, not a line of it (``whole file skipped: ...``).
WHOLE_FILE = "whole file skipped"


#: The skip reason of a file found by searching a folder whose format no adapter knows
#: (:func:`~panto_analytics.ingest.pipeline.without_strays`).
STRAY = f"{WHOLE_FILE}: found in a folder searched, of no known session format"

#: How an error of the library says a format can be forced (``read_sessions(..., format=...)``), and how the command
#: line says it (its ``--format`` option; :meth:`InputError.for_command_line`).
FORCE_FORMAT = "use format= to force one"
FORCE_FORMAT_OPTION = "use --format to force one"


class InputError(ValueError):
    """A line (or file) that cannot be read, with where it is.

    ``skippable``: whether reading with ``skip_invalid`` would skip it (a
    missing path, or nothing to read at all, is not).
    """

    def __init__(self, path: str | Path, line: int | None, reason: str, *, skippable: bool = True):
        self.path, self.line, self.reason, self.skippable = str(path), line, reason, skippable
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {reason}")

    def for_command_line(self) -> str:
        """The message as the command line says it: the library's ``format=`` is its ``--format`` option.

        >>> e = InputError("x.jsonl", None, f"unknown session format; {FORCE_FORMAT}")
        >>> str(e), e.for_command_line()
        ('x.jsonl: unknown session format; use format= to force one', 'x.jsonl: unknown session format; use --format to force one')
        """
        return str(self).replace(FORCE_FORMAT, FORCE_FORMAT_OPTION)

    def __reduce__(self) -> tuple:
        """Pickled whole (a dataset task's error comes back from its worker process as it was raised)."""
        return type(self), (self.path, self.line, self.reason), self.__dict__


class UnknownFormatError(InputError):
    """A file that no adapter recognises (:func:`~panto_analytics.formats.detect_format`): not a session file.

    Named, it is an error; found by searching a folder, it is skipped and counted (see
    :func:`~panto_analytics.ingest.pipeline.without_strays`).
    """


@dataclass
class IngestReport:
    """What an ingest read, skipped and ignored, so nothing is lost silently.

    ``skipped`` counts invalid lines dropped under ``skip_invalid`` per
    ``(file, reason)``; ``ignored`` counts records that are valid but not
    conversation (titles, progress events, ...) per ``(source_format, type)``.
    """

    files: int = 0
    sessions: int = 0
    messages: int = 0
    api_calls: int = 0
    skipped: Counter = field(default_factory=Counter)
    ignored: Counter = field(default_factory=Counter)

    def skip(self, path: str | Path, reason: str) -> None:
        self.skipped[(str(path), reason)] += 1

    def ignore(self, source_format: str, record_type: str, n: int = 1) -> None:
        self.ignored[(source_format, record_type)] += n

    def merge(self, other: IngestReport) -> None:
        for name in ("files", "sessions", "messages", "api_calls"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        if other.skipped:
            self.skipped.update(other.skipped)
        if other.ignored:
            self.ignored.update(other.ignored)

    @property
    def n_skipped(self) -> int:
        """Skips of every kind: lines, and files skipped whole (one each)."""
        return sum(self.skipped.values())

    @property
    def skipped_files(self) -> list[str]:
        """The files skipped whole (a reason that begins with :data:`WHOLE_FILE`), in order.

        >>> r = IngestReport()
        >>> r.skip("a.json", "whole file skipped: not JSONL"); r.skip("b.jsonl", "malformed JSON")
        >>> r.skipped_files, r.n_skipped_lines
        (['a.json'], 1)
        """
        return sorted({f for (f, reason) in self.skipped if reason.startswith(WHOLE_FILE)})

    @property
    def n_skipped_lines(self) -> int:
        """Lines skipped, files skipped whole left out."""
        return sum(n for (_, reason), n in self.skipped.items() if not reason.startswith(WHOLE_FILE))

    def skipped_frame(self) -> pl.DataFrame:
        """One row per (file, reason) with the number of lines skipped."""
        import polars as pl

        rows = [(f, r, n) for (f, r), n in sorted(self.skipped.items())]
        return pl.DataFrame(rows, schema={"file": pl.String, "reason": pl.String, "lines": pl.UInt64}, orient="row")

    def ignored_frame(self) -> pl.DataFrame:
        """One row per (source_format, record type) with the number of records ignored."""
        import polars as pl

        rows = [(f, t, n) for (f, t), n in sorted(self.ignored.items())]
        return pl.DataFrame(rows, schema={"source_format": pl.String, "record_type": pl.String, "records": pl.UInt64}, orient="row")
