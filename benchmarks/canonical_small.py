"""Many small canonical files: the cold ingest against its orjson floor, reader against reader, side by side.

``python -m benchmarks.canonical_small --files 3000 --rounds 3``: the small-file
corpus of ``python -m benchmarks --small-files`` (about 68 KB a file, from
:func:`benchmarks.synth.write_corpus`), then, ``rounds`` times, one fresh
process per reader, interleaved, each timing the best of ``--repeat`` cold
ingests (``read_sessions``, no cache, wall and CPU time) and the best of as
many orjson parse-only floors of the same bytes (:func:`orjson_floor`).

The readers: ``typed``, the package's (the batch path of
``formats/canonical/fast.py``); ``one-by-one``, every file through the
package's one-file reader (``formats/canonical/reader.py``, what the batch path
leaves to it); ``line-by-line``, every file through the oracle the package's
readers replaced (``reference/canonical_lines.py``); these two are timed in one
process (``jobs=1``), so that their CPU time is all of it; and, with ``--before DIR``,
``before``: the package as checked out in ``DIR`` (say, a ``git worktree`` of
an earlier commit), the same measure run on it. ``--large`` writes files of
the main benchmark's shape instead (``python -m benchmarks --sessions N``).
``--concat N`` reads the same bytes from files of ``N`` sessions each (their
messages one after the other, under the first one's header): what a reader
spends per file is the difference between the two.
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

__all__ = ["main", "measure", "orjson_floor"]


def orjson_floor(paths: list[Path]) -> float:
    """Seconds to read every file and ``orjson.loads`` every non-blank line, in this process: the parse-only floor.

    Defined here, where nothing of the package is imported at the top, so that ``--measure`` times a checkout
    named by ``--before`` with nothing of this one.
    """
    import orjson

    t0 = time.perf_counter()
    for path in paths:
        with open(path, "rb") as f:
            for line in f:
                if line.strip():
                    orjson.loads(line)
    return time.perf_counter() - t0


def measure(reader: str, paths: list[Path], repeat: int) -> dict:
    """Best of ``repeat`` cold ingests with ``reader`` in this process (wall and CPU), and the best floor."""
    import panto_analytics.formats.canonical as canonical
    from panto_analytics.ingest import read_sessions

    jobs = None
    if reader in ("one-by-one", "line-by-line"):
        canonical.read_frames = None  # type: ignore[assignment]
        jobs = 1  # no worker processes (they would start from 48 MB): all the CPU time is this process's
    if reader == "line-by-line":
        from reference import canonical_lines

        canonical.parse = canonical_lines.parse
    wall = cpu = floor = floor_cpu = float("inf")
    height = 0
    for _ in range(repeat):
        c0 = time.process_time()
        floor = min(floor, orjson_floor(paths))
        floor_cpu = min(floor_cpu, time.process_time() - c0)
        t0, c0 = time.perf_counter(), time.process_time()
        height = read_sessions(paths, jobs=jobs).height
        wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
    return {"reader": reader, "ingest_s": wall, "cpu_s": cpu, "floor_s": floor, "floor_cpu_s": floor_cpu,
            "vs_floor": wall / floor, "cpu_vs_floor": cpu / floor_cpu, "messages": height}


def _concatenated(paths: list[Path], n: int, folder: Path) -> list[Path]:
    """The files of ``paths`` in groups of ``n``, each group one file: its messages in order, one header (the first's).

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> for i in range(3):
    ...     _ = (d / f"{i}.jsonl").write_text('{"type":"session","id":"s%d"}\\n{"type":"message","role":"user"}\\n' % i)
    >>> [p.read_text().count("session") for p in _concatenated(sorted(d.glob("*.jsonl")), 2, d / "c")]
    [1, 1]
    """
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for k in range(0, len(paths), n):
        lines: list[bytes] = []
        for j, path in enumerate(paths[k:k + n]):
            own = path.read_bytes().splitlines(keepends=True)
            lines += own[1:] if j and own and json.loads(own[0]).get("type") == "session" else own
        out.append(folder / f"c{k // n:05d}.jsonl")
        out[-1].write_bytes(b"".join(lines))
    return out


def _run(reader: str, tree: Path, listing: Path, repeat: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, __file__, "--measure", reader, str(listing), str(repeat)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.canonical_small", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3, help="cold ingests per process (the best is kept)")
    parser.add_argument("--readers", default="typed,line-by-line", help="comma-separated: typed, one-by-one, line-by-line")
    parser.add_argument("--before", type=Path, help="a checkout of the package to time as 'before'")
    parser.add_argument("--corpus", type=Path, help="reuse (or write) the corpus in this folder")
    parser.add_argument("--large", action="store_true",
                        help="files of the main benchmark's shape (python -m benchmarks --sessions), not small ones")
    parser.add_argument("--concat", type=int, default=1, metavar="N",
                        help="read the same bytes from files of N sessions each (the per-file cost: the difference)")
    parser.add_argument("--measure", nargs=3, help=argparse.SUPPRESS)  # internal: READER LISTING REPEAT
    args = parser.parse_args(argv)
    if args.measure:
        reader, listing, repeat = args.measure
        paths = [Path(p) for p in Path(listing).read_text().split("\n") if p]
        print(json.dumps(measure(reader, paths, int(repeat))))
        return []
    from .synth import write_corpus

    here = Path(__file__).resolve().parent.parent
    runs = [(reader, here) for reader in args.readers.split(",") if reader]
    if args.before is not None:
        runs.append(("before", args.before.resolve()))
    results: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="panto-canonical-small-") as tmp:
        folder = args.corpus or Path(tmp) / "small"
        paths = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
        if len(paths) != args.files:
            shape = {} if args.large else {"median_turns": 4, "max_turns": 10}
            paths = write_corpus(folder, args.files, args.seed, **shape)
        if args.concat > 1:
            paths = _concatenated(paths, args.concat, Path(tmp) / f"concat{args.concat}")
        listing = Path(tmp) / "paths.txt"
        listing.write_text("\n".join(str(p) for p in paths))
        size = sum(p.stat().st_size for p in paths)
        print(f"{len(paths):,} files, {size / 1e6:.1f} MB; best of {args.repeat} per process, {args.rounds} rounds",
              file=sys.stderr)
        for r in range(args.rounds):
            for reader, tree in runs:
                load = os.getloadavg()[0]
                got = {**_run("typed" if reader == "before" else reader, tree, listing, args.repeat),
                       "reader": reader, "round": r + 1, "load": load}
                results.append(got)
                print(f"round {got['round']} {reader:>12}: ingest {got['ingest_s']:.3f} s, floor {got['floor_s']:.3f} s: "
                      f"{got['vs_floor']:.2f}x; CPU {got['cpu_s']:.3f} s / {got['floor_cpu_s']:.3f} s: "
                      f"{got['cpu_vs_floor']:.2f}x; {got['messages']:,} messages; load {load:.1f}", file=sys.stderr)
    for reader, _ in runs:
        mine = [g for g in results if g["reader"] == reader]
        best = min(mine, key=lambda g: g["vs_floor"])
        print(f"{reader:>12}: best {best['vs_floor']:.2f}x the floor ({best['ingest_s']:.3f} s / {best['floor_s']:.3f} s), "
              f"over rounds {min(g['vs_floor'] for g in mine):.2f}-{max(g['vs_floor'] for g in mine):.2f}x; "
              f"CPU best {min(g['cpu_s'] for g in mine):.3f} s, {min(g['cpu_vs_floor'] for g in mine):.2f}x the floor's CPU")
    return results


if __name__ == "__main__":
    main()
