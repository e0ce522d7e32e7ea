"""The benchmark's default corpus sizes, apart so that ``python -m benchmarks --help`` loads no Polars."""
from __future__ import annotations

__all__ = ["CLAUDE_SESSIONS", "REAL_COPIES", "REREAD_FILES", "SMALL_FILES"]

#: Copies of the real pi and Codex recordings timed, by default.
REAL_COPIES = 20

#: Small canonical files (about 60 KB each) and tiny files for the re-read, by default.
SMALL_FILES = 3000
REREAD_FILES = 30000

#: Synthetic Claude Code sessions in the second ingest corpus: about 150 MB.
CLAUDE_SESSIONS = 200
