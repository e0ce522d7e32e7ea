"""Ingest figures that users compare: ccusage on the same projects tree, the cache's cost, many files.

- :func:`ccusage`: ``ccusage daily --json --offline`` (20.0.24, from npm)
  over a projects tree, timed the same way as our cold ingest of that tree;
- :func:`cache_cost`: a cold read with an empty cache against ``--no-cache``
  (goal: at most 1.1x), and the re-read that follows;
- :func:`small_files`: the same on many small canonical files (3,000 of about
  60 KB), with the orjson floor;
- :func:`reread_many`: a cached re-read of tens of thousands of unchanged
  files (goal: 30,000 in under a second).

No timing here is a test.

>>> ccusage_binary({"PANTO_CCUSAGE": "/nonexistent/ccusage"}) is None
True
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import orjson

from panto_analytics.ingest import read_sessions

from . import memory
from .canonical_small import orjson_floor
from .synth import write_corpus
from .timing import best_of, cpu_seconds

__all__ = ["CCUSAGE_HOWTO", "CCUSAGE_VERSION", "cache_cost", "ccusage", "ccusage_binary", "reread_many",
           "small_files", "write_tiny_sessions"]

CCUSAGE_VERSION = "20.0.24"

CCUSAGE_HOWTO = (f"not installed: npm install --prefix ~/.cache/panto-tools ccusage@{CCUSAGE_VERSION}, then set "
                 "PANTO_CCUSAGE=~/.cache/panto-tools/node_modules/.bin/ccusage (or put ccusage on PATH)")


def ccusage_binary(env: dict[str, str] | None = None) -> str | None:
    """``$PANTO_CCUSAGE`` if it is a file, else ``ccusage`` on PATH, else None."""
    env = dict(os.environ) if env is None else env
    named = env.get("PANTO_CCUSAGE")
    if named:
        path = Path(named).expanduser()
        return str(path) if path.is_file() else None
    return shutil.which("ccusage")


def _run_ccusage(binary: str, config_dir: Path) -> dict:
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(config_dir), "NO_COLOR": "1"}
    out = subprocess.run([binary, "daily", "--json", "--offline"], env=env, capture_output=True, check=True,
                         timeout=600)
    return orjson.loads(out.stdout)


def ccusage(config_dir: Path, ours_seconds: float) -> dict:
    """ccusage's ``daily --json --offline`` over ``config_dir/projects``, best of two, against ``ours_seconds``."""
    binary = ccusage_binary()
    if binary is None:
        return {"available": False, "note": CCUSAGE_HOWTO}
    try:
        report, seconds = best_of(2, _run_ccusage, binary, config_dir)
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        return {"available": False, "note": f"ccusage failed: {e}"}
    totals = report.get("totals", {}) if isinstance(report, dict) else {}
    return {"available": True, "binary": binary, "seconds": seconds, "ratio": ours_seconds / seconds,
            "total_tokens": totals.get("totalTokens")}


def cache_cost(paths: list[Path], no_cache_seconds: float, repeat: int = 2) -> dict:
    """A cold read into an empty cache (best of ``repeat``) against ``no_cache_seconds``, and the re-read."""
    fills = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="panto-bench-cold-") as cache:
            _, seconds = best_of(1, read_sessions, paths, cache=cache)
            fills.append(seconds)
            _, reread = best_of(2, read_sessions, paths, cache=cache)
    cold = min(fills)
    return {"cold_seconds": cold, "ratio": cold / no_cache_seconds, "reread_seconds": reread,
            "reread_speedup": no_cache_seconds / reread}


def small_files(n: int, seed: int, workdir: Path) -> dict:
    """Cold ingest of ``n`` small canonical files (about 60 KB each) against the floor and with a cache."""
    if n <= 0:
        return {"available": False, "note": "skipped (--small-files 0)"}
    paths = write_corpus(workdir / "small", n, seed, median_turns=4, max_turns=10)
    size = sum(p.stat().st_size for p in paths)
    floor = min(orjson_floor(paths) for _ in range(2))
    _, seconds = best_of(2, read_sessions, paths)
    return {"available": True, "files": n, "bytes": size, "seconds": seconds, "floor_seconds": floor,
            "vs_floor": seconds / floor, "cache": cache_cost(paths, seconds)}


def write_tiny_sessions(directory: Path, n: int) -> None:
    """``n`` three-line canonical sessions, a thousand per folder: the re-read is about files, not bytes."""
    for i in range(n):
        folder = directory / f"p{i // 1000:03d}"
        if i % 1000 == 0:
            folder.mkdir(parents=True, exist_ok=True)
        records = [{"type": "session", "id": f"s{i:06d}", "model": "m", "context_window": 1000},
                   {"type": "message", "role": "user", "content": [{"type": "text", "text": f"question {i}"}]},
                   {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "answer"}],
                    "usage": {"input": 10, "output": 5, "cache_read": 0, "cache_write": 0}}]
        (folder / f"s{i:06d}.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))


def reread_many(n: int, workdir: Path) -> dict:
    """A cached re-read of ``n`` unchanged files (best of two, after one read that fills the cache)."""
    if n <= 0:
        return {"available": False, "note": "skipped (--reread-files 0)"}
    folder = workdir / "many"
    write_tiny_sessions(folder, n)
    with tempfile.TemporaryDirectory(prefix="panto-bench-many-") as cache:
        _, fill = best_of(1, read_sessions, [folder], cache=cache)
        frame, seconds = best_of(2, read_sessions, [folder], cache=cache)
        cpu = min(cpu_seconds(read_sessions, [folder], cache=cache) for _ in range(2))
        mem = memory.resident([folder], cache)
    return {"available": True, "files": n, "fill_seconds": fill, "seconds": seconds, "cpu_seconds": cpu,
            "messages": frame.height, "memory": mem}  # type: ignore[attr-defined]

