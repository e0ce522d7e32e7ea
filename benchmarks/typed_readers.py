"""The typed pi reader (msgspec Structs) against the line-by-line one it replaced, and their orjson floor.

``python -m benchmarks.typed_readers --copies 20 --rounds 3``: the real pi
recordings copied ``copies`` times with fresh ids (:mod:`benchmarks.real_formats`),
then, ``rounds`` times, one fresh process per reader, interleaved, each timing
the best of five cold ingests (``read_sessions``, no cache, one process) and
the orjson parse-only floor of the same bytes. The line-by-line reader is the
test oracle ``reference/pi_lines.py``, put in the adapter's place.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .bench import shared_dir
from .ingest_scale import orjson_floor
from .real_formats import write_copies

__all__ = ["READERS", "main", "measure"]

#: The readers compared: the package's, and the oracle it replaced.
READERS = ("typed", "line-by-line")


def measure(reader: str, paths: list[Path], repeat: int = 5) -> dict:
    """Best of ``repeat`` cold ingests with ``reader`` in this process, and the best orjson floor."""
    from panto_analytics.formats import pi
    from panto_analytics.ingest import read_sessions

    if reader == "line-by-line":
        from reference import pi_lines

        pi.parse = pi_lines.parse  # type: ignore[assignment]
    ingest = floor = float("inf")
    for _ in range(repeat):
        floor = min(floor, orjson_floor(paths))
        start = time.perf_counter()
        frame = read_sessions(paths, format="pi", skip_invalid=True, jobs=1)
        ingest = min(ingest, time.perf_counter() - start)
    return {"reader": reader, "ingest_s": ingest, "floor_s": floor, "vs_floor": ingest / floor,
            "messages": frame.height}


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.typed_readers", description=__doc__)
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--measure", nargs="+", help=argparse.SUPPRESS)  # internal: READER PATHS...
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.measure[0], [Path(p) for p in args.measure[1:]])))
        return []
    shared = shared_dir()
    if shared is None:
        print("not available: ../shared not found")
        return []
    results = []
    with tempfile.TemporaryDirectory() as d:
        paths = write_copies(shared / "realdata" / "pi", args.copies, Path(d))
        size = sum(p.stat().st_size for p in paths)
        for _ in range(args.rounds):
            for reader in READERS:
                out = subprocess.run([sys.executable, "-m", "benchmarks.typed_readers", "--measure", reader,
                                      *map(str, paths)], capture_output=True, text=True, check=True)
                row = json.loads(out.stdout)
                row["load"] = os.getloadavg()[0]
                results.append(row)
                print(f"{reader:<13} ingest {row['ingest_s']:.3f} s  floor {row['floor_s']:.3f} s  "
                      f"{row['vs_floor']:.2f}x  ({row['messages']} messages, {size / 1e6:.1f} MB, "
                      f"load average {row['load']:.1f})")
    return results


if __name__ == "__main__":
    main()
