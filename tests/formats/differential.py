"""What an adapter's ``parse`` makes of one file, compared whole: the typed readers against their line-by-line oracles.

The outcome of a read is its messages (every field a frame row is built
from), the session metadata, the skips and ignores counted, and the error
raised, if any (its line and reason): two readers agree on a file when these
are equal, strict and under ``skip_invalid``.
"""
from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

from conftest import FIXTURES, REALDATA

from panto_analytics.errors import IngestReport, InputError
from panto_analytics.formats.contract import SourceFile

__all__ = ["gzipped", "outcome", "recording_id", "recordings"]


def recordings(fixtures: str, real: str) -> tuple[list[Path], list[Path]]:
    """The bundled files of a format (``tests/fixtures/<fixtures>/``, subfolders included) and the real recordings
    present (``realdata/<real>*/``; none where realdata is absent).

    >>> [p.name for p in recordings("pi", "pi")[0]][:1]
    ['v1.jsonl']
    """
    real_files = sorted(REALDATA.glob(f"{real}*/**/*.jsonl")) if REALDATA.is_dir() else []
    return sorted((FIXTURES / fixtures).rglob("*.jsonl")), real_files


def recording_id(path: Path) -> str:
    """A file's test id: its folder and name (``pi/v1.jsonl``, ``pi-sessions/s.jsonl``)."""
    return f"{path.parent.name}/{path.name}"


def outcome(module: Any, path: Path, fmt: str, skip_invalid: bool) -> tuple[Any, ...]:
    """``parse``'s messages, metadata, skips and ignores on ``path``, or the error it raised (line, reason)."""
    report = IngestReport()
    src = SourceFile(path, fmt, skip_invalid=skip_invalid, report=report)
    try:
        messages = list(module.parse(src))
    except InputError as e:
        return ("error", e.line, e.reason, dict(report.skipped), dict(report.ignored))
    return ("read", messages, src.meta, dict(report.skipped), dict(report.ignored))


def gzipped(source: Path, folder: Path, cut: int | None) -> Path:
    """``source`` compressed into ``folder`` as ``.jsonl.gz``, whole or with its last ``cut`` bytes cut off."""
    data = gzip.compress(source.read_bytes())
    f = folder / (source.stem + ".jsonl.gz")
    f.write_bytes(data if cut is None else data[:-cut])
    return f
