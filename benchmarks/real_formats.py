"""pi and Codex cold ingest against the orjson floor, on their real recordings copied with fresh ids.

There is no synthetic generator for pi or Codex, and the recordings in
``../shared/realdata`` are a few MB: too little to time. So each recording is
copied ``copies`` times, every UUID in copy *k* shifted by *k* (the same
shift in every file of a copy, so links between sessions hold), and the
copies are read cold (``read_sessions``, no cache, best of two) and parsed
by orjson line by line in one process (the floor). Files that are not JSON
Lines (a pretty-printed Codex file) have no floor and are left out.

>>> fresh_ids(b'{"id":"019d99dc-2884-7da0-ae50-c7b6053d6595"}', 1)
b'{"id":"019d99dc-2884-7da0-ae50-c7b6053d6596"}'
"""
from __future__ import annotations

import re
from pathlib import Path

import orjson

from panto_analytics.ingest import read_sessions

from .canonical_small import orjson_floor
from .timing import best_of

__all__ = ["FORMATS", "fresh_ids", "real_format", "write_copies"]

#: The recordings timed, by format: their folder under ``realdata``.
FORMATS = {"pi": "pi", "codex": "codex"}

_UUID = re.compile(rb"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-)([0-9a-f]{12})")


def fresh_ids(data: bytes, copy: int) -> bytes:
    """``data`` with every UUID's last 12 hex digits shifted by ``copy`` (modulo 2**48)."""
    if copy == 0:
        return data
    return _UUID.sub(lambda m: m.group(1) + b"%012x" % ((int(m.group(2), 16) + copy) % (1 << 48)), data)


def _is_jsonl(path: Path) -> bool:
    try:
        for line in path.read_bytes().splitlines():
            if line.strip():
                orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return True


def write_copies(source: Path, copies: int, out: Path) -> list[Path]:
    """``copies`` copies of every JSON Lines file under ``source``, with fresh ids, in ``out``; their paths."""
    files = sorted(p for p in source.rglob("*.jsonl") if _is_jsonl(p))
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for k in range(copies):
        for i, path in enumerate(files):
            target = out / f"c{k:03d}-{i:02d}-{path.name}"
            target.write_bytes(fresh_ids(path.read_bytes(), k))
            written.append(target)
    return written


def real_format(fmt: str, shared: Path | None, copies: int, workdir: Path) -> dict:
    """Cold ingest of ``copies`` copies of ``fmt``'s real recordings against their orjson floor."""
    if shared is None or copies <= 0:
        return {"available": False, "note": "not available: ../shared not found" if shared is None
                else "skipped (--real-copies 0)"}
    source = shared / "realdata" / FORMATS[fmt]
    paths = write_copies(source, copies, workdir / f"real-{fmt}")
    if not paths:
        return {"available": False, "note": f"not available: no JSON Lines files in {source}"}
    size = sum(p.stat().st_size for p in paths)
    floor = min(orjson_floor(paths) for _ in range(2))
    frame, seconds = best_of(2, read_sessions, paths, format=fmt, skip_invalid=True)
    return {"available": True, "files": len(paths), "copies": copies, "bytes": size,
            "messages": frame.height, "seconds": seconds,  # type: ignore[attr-defined]
            "floor_seconds": floor, "vs_floor": seconds / floor}
