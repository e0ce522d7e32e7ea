"""Claude Code transcripts (``docs/formats.md``, Claude Code).

:mod:`.lines` reads a transcript line by line and is the reference for
every case; :mod:`.fast` decodes whole clean transcripts into the record
shapes declared in :mod:`.shapes` (``msgspec.Struct``) and declines (returns
None for) anything the line-by-line reader must judge.
"""
from __future__ import annotations

from .fast import read_frames
from .lines import NAME, SYNTHETIC_MODEL, parse, postprocess, sniff

__all__ = ["NAME", "SYNTHETIC_MODEL", "parse", "postprocess", "read_frames", "sniff"]
