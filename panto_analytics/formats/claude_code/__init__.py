"""Claude Code transcripts (``docs/formats.md``, Claude Code).

:mod:`.reference` reads a transcript line by line and is the reference for
every case; :mod:`.fast` reads whole clean transcripts through Arrow's JSON
reader and declines (returns None for) anything the reference must judge.
"""
from __future__ import annotations

from .fast import read_frames
from .lines import NAME, SYNTHETIC_MODEL, parse, postprocess, sniff

__all__ = ["NAME", "SYNTHETIC_MODEL", "parse", "postprocess", "read_frames", "sniff"]
