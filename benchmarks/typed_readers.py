"""The typed readers (msgspec Structs) against the line-by-line ones they replaced, and their orjson floor.

``python -m benchmarks.typed_readers --format codex --copies 20 --rounds 3``: the
real recordings of the format (pi or Codex) copied ``copies`` times with fresh
ids (:mod:`benchmarks.real_formats`), then, ``rounds`` times, one fresh process
per reader, interleaved, each timing the best of ``repeat`` (5) cold ingests
(``read_sessions``, no cache, one process), the best of as many parses alone
(the adapter's ``parse`` over every file, no frame: the decoding and the
format's rules) and the orjson parse-only floor of the same bytes, in wall
and CPU seconds. The "typed" reader is the package's (its columnar fast path
where the format has one, pi's; ``parse`` for what it declines); the
line-by-line reader is the test oracle (``reference/pi_lines.py``,
``reference/codex_lines.py``), put in the adapter's place, without the fast path.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .bench import shared_dir
from .canonical_small import orjson_floor
from .real_formats import FORMATS, write_copies

__all__ = ["ORACLES", "READERS", "main", "measure"]

#: The readers compared: the package's, and the oracle it replaced.
READERS = ("typed", "line-by-line")

#: Each format's line-by-line reader (the test oracle).
ORACLES = {"pi": "reference.pi_lines", "codex": "reference.codex_lines"}


def _timed(fn: Callable[[], object]) -> tuple[float, float, object]:
    """Wall and CPU seconds of ``fn()``, and what it returned."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def measure(fmt: str, reader: str, paths: list[Path], repeat: int = 5) -> dict:
    """Best of ``repeat`` cold ingests and parses with ``reader`` in this process, and the best orjson floor,
    each in wall and CPU seconds (on a shared machine the CPU seconds are the steadier figure)."""
    from panto_analytics.formats.contract import SourceFile
    from panto_analytics.ingest import read_sessions

    adapter = importlib.import_module(f"panto_analytics.formats.{fmt}")
    if reader == "line-by-line":
        adapter.parse = importlib.import_module(ORACLES[fmt]).parse
        adapter.read_frames = None   # no fast path: every file through the oracle

    def floor() -> None:
        orjson_floor(paths)

    def parse() -> None:
        for path in paths:
            for _message in adapter.parse(SourceFile(path, fmt, skip_invalid=True)):
                pass

    def ingest() -> Any:
        return read_sessions(paths, format=fmt, skip_invalid=True, jobs=1)

    best: dict[str, list[float]] = {}
    for _ in range(repeat):
        for name, fn in (("floor", floor), ("parse", parse), ("ingest", ingest)):
            wall, cpu, out = _timed(fn)
            if name == "ingest":
                messages = out.height  # type: ignore[attr-defined]
            was = best.get(name, [float("inf")] * 2)
            best[name] = [min(was[0], wall), min(was[1], cpu)]
    row: dict[str, Any] = {"format": fmt, "reader": reader, "messages": messages}
    for name, (wall, cpu) in best.items():
        row[f"{name}_s"], row[f"{name}_cpu_s"] = wall, cpu
    for name in ("parse", "ingest"):
        row[f"{name}_vs_floor"] = best[name][0] / best["floor"][0]
        row[f"{name}_cpu_vs_floor"] = best[name][1] / best["floor"][1]
    return row


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.typed_readers", description=__doc__)
    parser.add_argument("--format", choices=sorted(ORACLES), default="pi")
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5, help="timings per process, the best kept (default 5)")
    parser.add_argument("--measure", nargs="+", help=argparse.SUPPRESS)  # internal: READER PATHS...
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.format, args.measure[0], [Path(p) for p in args.measure[1:]], args.repeat)))
        return []
    shared = shared_dir()
    if shared is None:
        print("not available: ../shared not found")
        return []
    results = []
    with tempfile.TemporaryDirectory() as d:
        paths = write_copies(shared / "realdata" / FORMATS[args.format], args.copies, Path(d))
        size = sum(p.stat().st_size for p in paths)
        for _ in range(args.rounds):
            for reader in READERS:
                out = subprocess.run([sys.executable, "-m", "benchmarks.typed_readers", "--format", args.format,
                                      "--repeat", str(args.repeat), "--measure", reader, *map(str, paths)],
                                     capture_output=True, text=True, check=True)
                row = json.loads(out.stdout)
                row["load"] = os.getloadavg()[0]
                results.append(row)
                print(f"{args.format} {reader:<13} CPU: ingest {row['ingest_cpu_s']:.3f} s "
                      f"({row['ingest_cpu_vs_floor']:.2f}x), parse {row['parse_cpu_s']:.3f} s "
                      f"({row['parse_cpu_vs_floor']:.2f}x), floor {row['floor_cpu_s']:.3f} s; wall: ingest "
                      f"{row['ingest_s']:.3f} s ({row['ingest_vs_floor']:.2f}x), parse {row['parse_s']:.3f} s "
                      f"({row['parse_vs_floor']:.2f}x), floor {row['floor_s']:.3f} s  ({row['messages']} messages, "
                      f"{size / 1e6:.1f} MB, load average {row['load']:.1f})")
    return results


if __name__ == "__main__":
    main()
