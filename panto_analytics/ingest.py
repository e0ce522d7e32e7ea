"""Reading session files into the message frame.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "s.jsonl").write_text(
...     '{"type":"message","role":"user","content":[{"type":"text","text":"hi there"}]}\\n')
>>> read_sessions([d]).select("session_id", "seq", "role", "words").rows()
[('s', 0, 'user', 2)]
"""
from __future__ import annotations

import glob
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import polars as pl

from .errors import IngestReport, InputError
from .formats import ADAPTERS, adapter, detect_format
from .formats.base import FrameBuilder, SessionMeta, SourceFile
from .schema import MESSAGE_SCHEMA, SESSION_SCHEMA

PathLike = str | Path


def expand_paths(paths: Iterable[PathLike] | PathLike) -> list[Path]:
    """Files named, ``*.jsonl`` under directories (recursively), and glob matches.

    Order is stable (sorted within a directory or glob) and duplicates are dropped.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    out: list[Path] = []
    for p in paths:
        p = Path(p).expanduser()
        if p.is_dir():
            out.extend(sorted(q for q in p.rglob("*.jsonl") if q.is_file()))
        elif p.exists():
            out.append(p)
        elif glob.has_magic(str(p)):
            out.extend(sorted(Path(q) for q in glob.glob(str(p), recursive=True) if Path(q).is_file()))
        else:
            raise InputError(p, None, "no such file or directory")
    seen: set[Path] = set()
    return [p for p in out if not (p.resolve() in seen or seen.add(p.resolve()))]


@dataclass
class ParsedFile:
    """The messages and session metadata of one file."""

    messages: pl.DataFrame
    session: SessionMeta
    path: Path
    source_format: str


def parse_file(path: PathLike, *, format: str | None = None, skip_invalid: bool = False,
               report: IngestReport | None = None) -> ParsedFile:
    """Parse one session file into frame rows (no cache, no parallelism)."""
    report = report if report is not None else IngestReport()
    fmt = format or detect_format(path)
    src = SourceFile(path, fmt, skip_invalid=skip_invalid, report=report)
    builder = FrameBuilder()
    n = builder.add_session(src, adapter(fmt).parse(src))
    report.files += 1
    report.sessions += 1
    report.messages += n
    report.api_calls += src.meta.api_calls if src.meta.api_calls is not None else 0
    return ParsedFile(builder.finish(), src.meta, Path(path), fmt)


def read_sessions(paths: Iterable[PathLike] | PathLike, *, format: str | None = None,
                  skip_invalid: bool = False, report: IngestReport | None = None) -> pl.DataFrame:
    """The message frame of every session under ``paths``.

    Parameters
    ----------
    paths
        Files, directories (searched recursively for ``*.jsonl``) and globs.
    format
        Force one source format instead of detecting it per file.
    skip_invalid
        Skip bad lines instead of raising :class:`InputError`; the skips are
        counted in ``report``.
    report
        An :class:`IngestReport` to fill with counts and skips.
    """
    parsed = parse_files(expand_paths(paths), format=format, skip_invalid=skip_invalid, report=report)
    return concat_messages([p.messages for p in parsed])


def parse_files(files: list[Path], *, format: str | None = None, skip_invalid: bool = False,
                report: IngestReport | None = None) -> list[ParsedFile]:
    """Parse files and check that no session id is claimed by two of them."""
    parsed = [parse_file(f, format=format, skip_invalid=skip_invalid, report=report) for f in files]
    parsed = postprocess(parsed, report)
    check_unique_sessions(parsed)
    return parsed


def postprocess(parsed: list[ParsedFile], report: IngestReport | None) -> list[ParsedFile]:
    """Let each adapter that defines ``postprocess(files, report)`` see all its files at once.

    This is where cross-file rules live (a Claude Code session resumed into
    another file must not be counted twice). File order is kept.
    """
    report = report if report is not None else IngestReport()
    for name, module in ADAPTERS.items():
        hook = getattr(module, "postprocess", None)
        mine = [p for p in parsed if p.source_format == name]
        if hook is None or not mine:
            continue
        kept = {id(p) for p in hook(mine, report)}
        parsed = [p for p in parsed if p.source_format != name or id(p) in kept]
    return parsed


def check_unique_sessions(parsed: list[ParsedFile]) -> None:
    owner: dict[str, Path] = {}
    for p in parsed:
        sid = p.session.session_id
        if sid in owner:
            raise InputError(p.path, None, f"session id {sid!r} is also the id of {owner[sid]}")
        owner[sid] = p.path


def concat_messages(frames: list[pl.DataFrame]) -> pl.DataFrame:
    """One message frame from many, in file order."""
    if not frames:
        return pl.DataFrame(schema=MESSAGE_SCHEMA)
    return pl.concat(frames, how="vertical", rechunk=True)


def sessions_frame(parsed: list[ParsedFile]) -> pl.DataFrame:
    """One row per parsed session with its file-level metadata."""
    rows = [
        {
            "session_id": p.session.session_id,
            "file": str(p.path),
            "source_format": p.source_format,
            "model": p.session.model,
            "context_window": p.session.context_window,
            "parent_session_id": p.session.parent_session_id,
            "created_at": p.session.created_at,
        }
        for p in parsed
    ]
    return pl.DataFrame(rows, schema=SESSION_SCHEMA)
