"""Which files a list of paths names: files, folders searched for session files, globs.

A session file is ``*.jsonl``, or one compressed as ``*.jsonl.gz`` or ``*.jsonl.zst``.
"""
from __future__ import annotations

import glob
import os
from collections.abc import Iterable
from pathlib import Path

from ..errors import InputError

__all__ = ["SESSION_PATTERNS", "PathLike", "expand_paths", "is_session_file"]

PathLike = str | Path

#: What a folder is searched for.
SESSION_PATTERNS = ("*.jsonl", "*.jsonl.gz", "*.jsonl.zst")


def is_session_file(path: Path) -> bool:
    """Whether a file's name is one :data:`SESSION_PATTERNS` matches.

    >>> [is_session_file(Path(n)) for n in ("a.jsonl", "a.jsonl.zst", "a.json", "a.gz")]
    [True, True, False, False]
    """
    return any(path.match(p) for p in SESSION_PATTERNS)


def expand_paths(paths: Iterable[PathLike] | PathLike) -> list[Path]:
    """Files named, session files (:data:`SESSION_PATTERNS`) under directories (recursively), and glob matches.

    Order is stable (sorted within a directory or glob) and duplicates are dropped.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    out: list[Path] = []
    for p in paths:
        p = Path(p).expanduser()
        if p.is_dir():
            out.extend(sorted((q for pattern in SESSION_PATTERNS for q in p.rglob(pattern) if q.is_file()), key=str))
        elif p.exists():
            out.append(p)
        elif glob.has_magic(str(p)):
            out.extend(sorted(Path(q) for q in glob.glob(str(p), recursive=True) if Path(q).is_file()))
        else:
            raise InputError(p, None, "no such file or directory", skippable=False)
    seen: set[str] = set()
    real = _RealPaths()
    unique: list[Path] = []
    for p in out:
        r = real(p)
        if r not in seen:
            seen.add(r)
            unique.append(p)
    return unique


class _RealPaths:
    """``os.path.realpath`` of many files, resolving each folder once (a corpus has thousands of files)."""

    def __init__(self) -> None:
        self._folders: dict[str, str] = {}

    def __call__(self, path: Path) -> str:
        if os.path.islink(path):
            return os.path.realpath(path)
        folder, name = os.path.split(path)
        return os.path.join(self._folder(folder), name)

    def _folder(self, folder: str) -> str:
        if folder not in self._folders:
            parent, name = os.path.split(folder)
            if not name or name in (".", "..") or os.path.islink(folder):
                self._folders[folder] = os.path.realpath(folder or ".")
            else:  # a plain folder: its parent's real path, plus its name
                self._folders[folder] = os.path.join(self._folder(parent), name)
        return self._folders[folder]
