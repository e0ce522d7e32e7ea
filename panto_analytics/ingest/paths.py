"""Which files a list of paths names: files, folders searched for session files, globs.

A session file is ``*.jsonl``, or one compressed as ``*.jsonl.gz`` or ``*.jsonl.zst``.
"""
from __future__ import annotations

import glob
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from ..errors import InputError
from ..pathnames import path_string

__all__ = ["SESSION_PATTERNS", "SESSION_SUFFIXES", "PathLike", "default_locations", "expand_names", "expand_paths",
           "expand_searched", "is_session_file", "known_locations"]

PathLike = str | Path

#: What a folder is searched for.
SESSION_PATTERNS = ("*.jsonl", "*.jsonl.gz", "*.jsonl.zst")
#: The same, as name endings.
SESSION_SUFFIXES = tuple(p.removeprefix("*") for p in SESSION_PATTERNS)


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
    return [Path(name) for name in expand_names(paths)]


def expand_names(paths: Iterable[PathLike] | PathLike) -> list[str]:
    """:func:`expand_paths` as strings: no ``Path`` object per file (a cached re-read of many files needs none).

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "b.jsonl").write_text(""), (d / "a.jsonl").write_text(""), (d / "c.txt").write_text("")
    >>> [pathlib.Path(n).name for n in expand_names(d)]
    ['a.jsonl', 'b.jsonl']
    """
    return expand_searched(paths)[0]


def expand_searched(paths: Iterable[PathLike] | PathLike) -> tuple[list[str], set[str]]:
    """:func:`expand_names`, and which of them were found by searching (a folder, a glob), not named.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "a.jsonl").write_text(""), (d / "b.jsonl").write_text("")
    >>> names, searched = expand_searched([d, d / "b.jsonl"])
    >>> [pathlib.Path(n).name for n in names], sorted(pathlib.Path(n).name for n in searched)
    (['a.jsonl', 'b.jsonl'], ['a.jsonl'])
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    paths = list(paths)
    out: list[tuple[str, bool | None]] = []  # (path, is a link; None: not known yet)
    named: dict[str, bool | None] = {}  # each file named (not found by a search): whether it is a link
    for p in paths:
        name = _expanded(p)
        kind, link = _kind(name)  # one lstat per name (two for a link): no Path, no separate is_dir/exists
        if kind == "dir":
            out.extend(sorted(_jsonl_under(name)))
        elif kind == "other":
            out.append((name, link))
            named[name] = link
        elif glob.has_magic(name):
            out.extend((str(q), None) for q in sorted(Path(q) for q in glob.glob(name, recursive=True)
                                                      if os.path.isfile(q)))
        else:
            raise InputError(name, None, "no such file or directory", skippable=False)
    if len(paths) == 1 and all(is_link is False for _, is_link in out):
        # One folder walked without following links: every file is there once, under one name.
        return [path for path, _ in out], {path for path, _ in out} - named.keys()
    real = _RealPaths()  # one for all: each folder resolved once (one per name cost 3,000 realpath walks a corpus)
    named_real = {real(n, link) for n, link in named.items()}
    seen: set[str] = set()
    unique: list[str] = []
    searched: set[str] = set()
    for path, is_link in out:
        r = real(path, is_link)
        if r not in seen:
            seen.add(r)
            unique.append(path)
            if r not in named_real:
                searched.add(path)
    return unique, searched


def _expanded(path: PathLike) -> str:
    """``str(Path(path).expanduser())``, without a ``Path`` for a plain name.

    >>> _expanded("a//b.jsonl"), _expanded(Path("c")), _expanded("~") == str(Path.home())
    ('a/b.jsonl', 'c', True)
    """
    name = os.fspath(path)
    if name.startswith("~"):
        return str(Path(name).expanduser())
    if isinstance(path, Path):
        return name
    return path_string(name)


def _kind(name: str) -> tuple[str, bool]:
    """What ``name`` is, links followed: ``"dir"``, ``"other"`` (a file, or anything else there) or
    ``"missing"``; and whether ``name`` itself is a link.
    """
    try:
        st = os.lstat(name)
    except (OSError, ValueError):
        return "missing", False
    is_link = stat.S_ISLNK(st.st_mode)
    if is_link:
        try:
            st = os.stat(name)
        except (OSError, ValueError):
            return "missing", True
    return ("dir" if stat.S_ISDIR(st.st_mode) else "other"), is_link


def _jsonl_under(folder: str) -> list[tuple[str, bool]]:
    """Session files (:data:`SESSION_PATTERNS`) under ``folder``, as ``Path.rglob`` finds them (symlinked folders
    not followed).

    One ``scandir`` per folder: the entries' types come with the listing, so
    a plain file costs no system call of its own.
    """
    found: list[tuple[str, bool]] = []
    stack = [folder]
    while stack:
        try:
            with os.scandir(stack.pop()) as listing:
                entries = list(listing)
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir() and not entry.is_symlink():
                stack.append(entry.path)
            elif entry.name.endswith(SESSION_SUFFIXES) and entry.is_file():
                found.append((entry.path, entry.is_symlink()))
    return found


class _RealPaths:
    """``os.path.realpath`` of many files, resolving each folder once (a corpus has thousands of files)."""

    def __init__(self) -> None:
        self._folders: dict[str, str] = {}
        self._prefixes: dict[str, str] = {}  # "folder/" as written -> its real path, "/"-terminated

    def __call__(self, path: str, is_link: bool | None = None) -> str:
        if is_link if is_link is not None else os.path.islink(path):
            return os.path.realpath(path)
        cut = path.rfind("/") + 1  # os.path.join(self._folder(folder), name), one dict look-up a file
        prefix = path[:cut]
        real = self._prefixes.get(prefix)
        if real is None:
            real = self._prefixes[prefix] = os.path.join(self._folder(os.path.split(path)[0]), "")
        return real + path[cut:]

    def _folder(self, folder: str) -> str:
        if folder not in self._folders:
            parent, name = os.path.split(folder)
            if not name or name in (".", "..") or os.path.islink(folder):
                self._folders[folder] = os.path.realpath(folder or ".")
            else:  # a plain folder: its parent's real path, plus its name
                self._folders[folder] = os.path.join(self._folder(parent), name)
        return self._folders[folder]


def known_locations() -> list[Path]:
    """Where pi, Claude Code and Codex keep their sessions: ``~/.pi/agent/sessions``, ``~/.claude/projects``
    (each folder of ``$CLAUDE_CONFIG_DIR``, comma-separated, when set) and ``~/.codex/sessions``
    (under ``$CODEX_HOME`` when set).

    >>> [p.name for p in known_locations()][-1]
    'sessions'
    """
    home = Path.home()
    claude = os.environ.get("CLAUDE_CONFIG_DIR")
    claude_dirs = [Path(d).expanduser() for d in claude.split(",") if d.strip()] if claude else [home / ".claude"]
    codex = Path(os.environ.get("CODEX_HOME") or home / ".codex").expanduser()
    return [home / ".pi" / "agent" / "sessions", *(d / "projects" for d in claude_dirs), codex / "sessions"]


def default_locations() -> list[Path]:
    """The :func:`known_locations` that exist on this machine: what commands read when given no PATH."""
    return [p for p in known_locations() if p.is_dir()]

