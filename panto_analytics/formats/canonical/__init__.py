"""The canonical session JSONL format (``docs/formats.md``).

:mod:`.reader` reads one file, each line decoded into the record shapes
declared in :mod:`.shapes` (a line of another shape read plain by checks that
name its fields); :mod:`.fast` reads many whole files at once, decoded into
the same shapes, and declines (returns None for) any file :mod:`.reader` must
judge. The line-by-line reader they replaced is the tests' oracle,
``reference/canonical_lines.py``.
"""
from __future__ import annotations

from ..contract import Postprocess
from .fast import read_frames
from .reader import NAME, parse, sniff

#: No cross-file rules (see :class:`..contract.Adapter`).
postprocess: Postprocess | None = None

__all__ = ["NAME", "parse", "postprocess", "read_frames", "sniff"]
