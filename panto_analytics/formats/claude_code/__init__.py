"""Claude Code transcripts (``docs/formats.md``, Claude Code): :mod:`.fast` reads whole clean transcripts and
declines (returns None for) the rest, which :mod:`.reader` reads one by one (its oracle:
``reference/claude_code_lines.py``); :mod:`.resume` folds a session resumed into another file into that file.
"""
from __future__ import annotations

from .fast import read_frames
from .reader import parse
from .resume import postprocess
from .vocabulary import NAME, SYNTHETIC_MODEL, sniff

__all__ = ["NAME", "SYNTHETIC_MODEL", "parse", "postprocess", "read_frames", "sniff"]
