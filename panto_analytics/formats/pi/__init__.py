"""pi sessions (``docs/formats.md``, pi): :mod:`.fast` reads many clean files at once and declines (returns None
for) the rest, which :mod:`.reader` reads one by one (its oracle: ``reference/pi_lines.py``); :mod:`.shapes`
declares the record shapes and tree rules both share.
"""
from __future__ import annotations

from .reader import NAME, parse, postprocess, read_frames, sniff

__all__ = ["NAME", "parse", "postprocess", "read_frames", "sniff"]
