"""Codex CLI rollouts (``docs/formats.md``, Codex): :mod:`.fast` reads clean rollouts at once and declines
(returns None for) the rest, which :mod:`.reader` reads one by one (its oracle: ``reference/codex_lines.py``);
:mod:`.shapes` holds the vocabulary and header rules both share.
"""
from __future__ import annotations

from .reader import CONTEXTUAL_USER_FRAGMENTS, ENVELOPES, NAME, is_contextual_fragment, parse, postprocess, read_frames, sniff

__all__ = ["CONTEXTUAL_USER_FRAGMENTS", "ENVELOPES", "NAME", "is_contextual_fragment", "parse", "postprocess",
           "read_frames", "sniff"]
