"""The canonical session JSONL format (``docs/formats.md``).

:mod:`.lines` reads it line by line and is the reference for every
case; :mod:`.fast` reads many whole files at once, decoded into the record
shapes declared in :mod:`.shapes`, and declines (returns None for) anything
the reference must judge.
"""
from __future__ import annotations

from ..base import Postprocess
from .fast import read_frames
from .lines import NAME, parse, sniff

#: No cross-file rules (see :class:`..base.Adapter`).
postprocess: Postprocess | None = None

__all__ = ["NAME", "parse", "postprocess", "read_frames", "sniff"]
