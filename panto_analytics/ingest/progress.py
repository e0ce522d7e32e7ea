"""A one-line progress bar for long ingests: files, MB and rate, on a terminal only.

The bar is drawn on stderr, and only when stderr is a TTY: piped or
redirected output, CI logs and notebooks stay clean. It appears only once
an ingest has run for :data:`DELAY` seconds (short reads never flicker), is
redrawn at most every :data:`INTERVAL` seconds, and is erased when done.
:meth:`Progress.advance` may be called from several threads (the parallel
reader reports finished files from a pool's callback thread).

>>> import io
>>> out = io.StringIO()
>>> p = Progress(3, 3_000_000, stream=out, enabled=False)
>>> p.advance(1_000_000)
>>> p.line()
'reading 1/3 files     1.0/3.0 MB'
>>> p.close(); out.getvalue()
''
"""
from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

__all__ = ["DELAY", "INTERVAL", "Progress"]

#: Seconds an ingest runs before the bar appears.
DELAY = 0.5
#: Smallest interval between two redraws, in seconds.
INTERVAL = 0.1

_MB = 1e6


class Progress:
    """Progress of reading ``total_files`` files holding ``total_bytes`` bytes.

    Parameters
    ----------
    total_files, total_bytes
        What will be read, for the ``n/N`` counters.
    stream
        Where to draw; ``sys.stderr`` by default.
    enabled
        ``None`` (default): draw only when ``stream`` is a TTY. ``False``:
        never draw. ``True``: always draw (tests).
    label
        The word in front of the counters.
    delay
        Seconds before the first draw.
    """

    def __init__(self, total_files: int, total_bytes: int, *, stream: TextIO | None = None,
                 enabled: bool | None = None, label: str = "reading", delay: float = DELAY):
        self.total_files, self.total_bytes = total_files, total_bytes
        self.files = self.bytes = self.cached = 0
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            enabled = _isatty(self.stream)
        self.enabled = enabled
        self.label = label
        self._start = time.perf_counter()
        self._shown_at = self._start + delay
        self._last_draw = 0.0
        self._drawn = False
        self._lock = threading.Lock()

    def advance(self, nbytes: int, *, files: int = 1, cached: bool = False) -> None:
        """``files`` more files (of ``nbytes`` bytes in all) are done; ``cached``: read from the cache."""
        with self._lock:
            self.files += files
            self.bytes += nbytes
            self.cached += files if cached else 0
            if not self.enabled:
                return
            now = time.perf_counter()
            if now >= self._shown_at and now - self._last_draw >= INTERVAL:
                self._draw(now)

    def line(self, now: float | None = None) -> str:
        """The bar's text: files, megabytes, and the rate once it means something."""
        width = len(str(self.total_files))
        text = (f"{self.label} {self.files:>{width}}/{self.total_files} files  "
                f"{self.bytes / _MB:>6.1f}/{self.total_bytes / _MB:.1f} MB")
        elapsed = (now if now is not None else time.perf_counter()) - self._start
        if self._drawn and elapsed > 0:
            text += f"  {self.bytes / _MB / elapsed:.1f} MB/s"
        if self.cached:
            text += f"  ({self.cached} from cache)"
        return text

    def _draw(self, now: float) -> None:
        self._drawn = True
        self._last_draw = now
        self.stream.write("\r\x1b[K" + self.line(now))
        self.stream.flush()

    def close(self) -> None:
        """Erase the bar, so that what follows starts on a clean line."""
        with self._lock:
            if self._drawn:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
                self._drawn = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed or not a real file
        return False
