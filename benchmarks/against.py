"""This checkout against a named earlier commit, in one run: a regression shows before it lands (issue 31 item 10).

``python -m benchmarks.against --against COMMIT`` extracts the package as it
was at ``COMMIT`` (``git archive`` of ``panto_analytics/`` into a temporary
folder: a work tree of that commit, nothing else of it is needed) and writes
one synthetic canonical corpus (:func:`benchmarks.synth.write_corpus`, the
many-files shape of ``python -m benchmarks --small-files``: about 68 KB a
session, 3,000 sessions about 205 MB). Then, ``--rounds`` times, each tree in
a fresh process, interleaved (the order turns each round, so neither side
always meets the machine first), each process timing the best of
``--repeat`` cold in-process reads (``read_sessions(paths, jobs=J)``, no
cache) for each ``--jobs`` and the best of as many orjson parse-only floors
of the same bytes. Both trees run under this checkout's interpreter and
libraries, byte-compiled first (as ``pip install`` leaves a package).

The table: per tree and ``jobs``, the best ingest and floor seconds (wall and
CPU), the ingest/floor ratio (the best of the processes: load only ever makes
a process slower) and this checkout's ratio over the other's. Ratios are
taken within one run, so both sides meet the same load; the load average
is printed with them. ``--instructions`` adds a figure that load does not
move: callgrind's instruction count of one ``jobs=1`` read per tree (a
process that reads the corpus, less one that reads only its first file).

Timings are never tested (``tests/benchmarks/test_against.py`` checks the
table's shape on a tiny corpus).

>>> [c for c, _ in COLUMNS][:4]
['tree', 'commit', 'jobs', 'ingest_s']
"""
from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

__all__ = ["COLUMNS", "compare", "extract", "format_table", "head_commit", "instructions", "main", "measure"]

REPO = Path(__file__).resolve().parent.parent

#: The table's columns: (key, heading).
COLUMNS = (
    ("tree", "tree"), ("commit", "commit"), ("jobs", "jobs"), ("ingest_s", "ingest s"), ("floor_s", "floor s"),
    ("vs_floor", "ingest/floor"), ("cpu_s", "ingest CPU s"), ("cpu_vs_floor", "CPU/floor CPU"),
    ("vs_against", "ratio / against's"), ("messages", "messages"), ("load", "load"),
)


def measure(paths: Sequence[Path], jobs: Sequence[int | None], repeat: int) -> dict:
    """In this process: the best of ``repeat`` orjson floors and cold reads of ``paths`` for each of ``jobs``.

    Imports nothing of the benchmarks (it runs against another checkout's
    package): only ``panto_analytics.read_sessions`` and orjson.
    """
    import time

    import orjson

    import panto_analytics
    from panto_analytics import read_sessions

    def floor() -> tuple[float, float]:
        t0, c0 = time.perf_counter(), time.process_time()
        for path in paths:
            with open(path, "rb") as f:
                for line in f:
                    if line.strip():
                        orjson.loads(line)
        return time.perf_counter() - t0, time.process_time() - c0

    best_floor = best_floor_cpu = float("inf")
    reads: dict[str, dict] = {}
    for _ in range(repeat):
        wall, cpu = floor()
        best_floor, best_floor_cpu = min(best_floor, wall), min(best_floor_cpu, cpu)
        for j in jobs:
            t0, c0 = time.perf_counter(), time.process_time()
            height = read_sessions(list(paths), jobs=j).height
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            got = reads.setdefault(_jobs_name(j), {"ingest_s": wall, "cpu_s": cpu, "messages": height})
            got["ingest_s"], got["cpu_s"] = min(got["ingest_s"], wall), min(got["cpu_s"], cpu)
    return {"floor_s": best_floor, "floor_cpu_s": best_floor_cpu, "reads": reads,
            "package": str(Path(panto_analytics.__file__).resolve().parent)}


def _jobs_name(jobs: int | None) -> str:
    """``jobs`` as the table names it.

    >>> _jobs_name(None), _jobs_name(1)
    ('default', '1')
    """
    return "default" if jobs is None else str(jobs)


def _jobs_value(name: str) -> int | None:
    return None if name == "default" else int(name)


def extract(commit: str, into: Path, repo: Path = REPO) -> str:
    """The package as it was at ``commit`` (``git archive``), under ``into``; returns the commit's short hash."""
    short = subprocess.run(["git", "rev-parse", "--short", f"{commit}^{{commit}}"], cwd=repo, check=True,
                           capture_output=True, text=True).stdout.strip()
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", "--format=tar", short, "panto_analytics"], cwd=repo, check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return short


def head_commit(repo: Path = REPO) -> str:
    """This checkout's short commit, ``+`` when its package has changes not committed."""
    try:
        short = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=repo, check=True, capture_output=True,
                               text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "panto_analytics"], cwd=repo, check=True,
                               capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return short + ("+" if dirty else "")


def _run_tree(tree: Path, listing: Path, jobs: Sequence[str], repeat: int) -> dict:
    """:func:`measure` in a fresh process that imports the package from ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, __file__, "--measure", str(listing), ",".join(jobs), str(repeat)],
                         env=env, cwd=tree, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"{tree}: the measure failed:\n{out.stderr[-2000:]}")
    got = json.loads(out.stdout.strip().splitlines()[-1])
    if Path(got["package"]) != (tree / "panto_analytics").resolve():
        raise RuntimeError(f"{tree}: the measure imported {got['package']}, not this tree's package")
    return got


def instructions(tree: Path, listing: Path) -> int | None:
    """Instructions of one ``jobs=1`` read of the corpus with ``tree``'s package (callgrind, every thread; a
    process that reads only the first file subtracted); None without valgrind."""
    if shutil.which("valgrind") is None:
        return None

    def count(first_only: bool) -> int:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "callgrind.out"
            env = {**os.environ, "PYTHONPATH": str(tree), "POLARS_MAX_THREADS": "1"}
            subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, __file__,
                            "--read-once", str(listing), *(["--first-only"] if first_only else [])],
                           env=env, cwd=tree, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for line in out.read_text().splitlines():
                if line.startswith(("summary:", "totals:")):
                    return int(line.split()[1])
        raise RuntimeError(f"{tree}: no instruction total")

    with ThreadPoolExecutor(2) as pool:   # two valgrind processes at once: each is single-threaded
        whole, first = pool.map(count, (False, True))
    return whole - first


def _read_once(listing: Path, first_only: bool) -> None:
    """What :func:`instructions` counts: the first file read (imports and first-use costs), then every file."""
    from panto_analytics import read_sessions

    paths = _listed(listing)
    read_sessions(paths[:1], jobs=1)
    if not first_only:
        read_sessions(paths, jobs=1)


def _listed(listing: Path) -> list[Path]:
    return [Path(p) for p in listing.read_text().split("\n") if p]


def compare(against: str, *, sessions: int = 3000, seed: int = 0, rounds: int = 3, repeat: int = 3,
            jobs: Sequence[str] = ("default", "1"), with_instructions: bool = False, corpus: Path | None = None,
            progress=lambda line: None) -> dict:
    """This checkout and ``against`` side by side on one corpus; returns the rows of the table and the run's facts.

    Each row: :data:`COLUMNS`, for one (tree, jobs), the best over the rounds.
    """
    from .synth import write_corpus

    with tempfile.TemporaryDirectory(prefix="panto-against-") as tmp:
        trees = {"this": (REPO, head_commit()), "against": (Path(tmp) / "tree", "")}
        trees["against"] = (trees["against"][0], extract(against, trees["against"][0]))
        for tree, _ in trees.values():
            compileall.compile_dir(str(tree / "panto_analytics"), quiet=2)
        folder = corpus or Path(tmp) / "corpus"
        paths = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
        if len(paths) != sessions:
            paths = write_corpus(folder, sessions, seed, median_turns=4, max_turns=10)
        listing = Path(tmp) / "paths.txt"
        listing.write_text("\n".join(str(p) for p in paths))
        size = sum(p.stat().st_size for p in paths)
        progress(f"{len(paths):,} sessions, {size / 1e6:.1f} MB; {rounds} rounds, best of {repeat} per process")
        runs: dict[str, list[dict]] = {name: [] for name in trees}
        loads = []
        for r in range(rounds):
            for name in (list(trees) if r % 2 == 0 else list(trees)[::-1]):
                load = os.getloadavg()[0]
                loads.append(load)
                got = _run_tree(trees[name][0], listing, jobs, repeat)
                runs[name].append({**got, "load": load})
                progress(f"round {r + 1} {name} ({trees[name][1]}): " + ", ".join(
                    f"jobs={j} {g['ingest_s'] / got['floor_s']:.2f}x" for j, g in got["reads"].items())
                    + f"; load {load:.1f}")
        counted: dict[str, int | None] = {}
        if with_instructions:
            progress("callgrind: a jobs=1 read per tree (minutes)")
            with ThreadPoolExecutor(len(trees)) as pool:
                counted = dict(zip(trees, pool.map(lambda tree: instructions(tree[0], listing), trees.values())))
    rows = _rows(runs, trees, jobs)
    return {"against": trees["against"][1], "this": trees["this"][1], "sessions": len(paths), "bytes": size,
            "rounds": rounds, "repeat": repeat, "load": [min(loads), max(loads)], "cpus": os.cpu_count(),
            "rows": rows, "instructions": counted}


def _rows(runs: dict[str, list[dict]], trees: dict[str, tuple[Path, str]], jobs: Sequence[str]) -> list[dict]:
    """The table's rows from every process's figures: the best of each, per (tree, jobs)."""
    rows = []
    for name, got in runs.items():
        for j in jobs:
            reads = [(g["reads"][j], g) for g in got]
            rows.append({
                "tree": name, "commit": trees[name][1], "jobs": j,
                "ingest_s": min(r["ingest_s"] for r, _ in reads), "floor_s": min(g["floor_s"] for g in got),
                "vs_floor": min(r["ingest_s"] / g["floor_s"] for r, g in reads),
                "cpu_s": min(r["cpu_s"] for r, _ in reads),
                "cpu_vs_floor": min(r["cpu_s"] / g["floor_cpu_s"] for r, g in reads),
                "messages": reads[0][0]["messages"],
                "load": f"{min(g['load'] for g in got):.1f}-{max(g['load'] for g in got):.1f}",
            })
    theirs = {row["jobs"]: row["vs_floor"] for row in rows if row["tree"] == "against"}
    for row in rows:
        row["vs_against"] = row["vs_floor"] / theirs[row["jobs"]]
    return rows


def format_table(result: dict) -> str:
    """The comparison as a Markdown table, with the corpus, the load and the instruction counts under it."""
    def cell(key: str, value: object) -> str:
        if isinstance(value, float):
            return f"{value:.2f}x" if key in ("vs_floor", "cpu_vs_floor", "vs_against") else f"{value:.3f}"
        return f"{value:,}" if isinstance(value, int) else str(value)

    lines = ["| " + " | ".join(h for _, h in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cell(k, row[k]) for k, _ in COLUMNS) + " |" for row in result["rows"]]
    lines.append("")
    lines.append(f"{result['sessions']:,} synthetic canonical sessions, {result['bytes'] / 1e6:.1f} MB; "
                 f"{result['rounds']} rounds of fresh processes, interleaved, best of {result['repeat']} each; "
                 f"{result['cpus']} CPUs, load average {result['load'][0]:.1f}-{result['load'][1]:.1f}")
    counted = result["instructions"]
    if counted:
        if None in counted.values():
            lines.append("instructions: valgrind is not installed")
        else:
            lines.append(f"instructions of a jobs=1 read (callgrind): this {counted['this'] / 1e6:,.1f} M, "
                         f"{result['against']} {counted['against'] / 1e6:,.1f} M: "
                         f"{counted['this'] / counted['against']:.3f}x")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict | None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.against", description=__doc__.split("\n\n")[0])
    ap.add_argument("--against", help="the earlier commit (any git revision: a hash, a tag, main~5)")
    ap.add_argument("--sessions", type=int, default=3000, help="synthetic canonical sessions (about 68 KB each)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=3, help="fresh processes per tree, interleaved")
    ap.add_argument("--repeat", type=int, default=3, help="reads per process (the best is kept)")
    ap.add_argument("--jobs", default="default,1", help="comma-separated jobs values to read with")
    ap.add_argument("--instructions", action="store_true", help="also count a jobs=1 read's instructions "
                    "(callgrind; minutes)")
    ap.add_argument("--corpus", type=Path, help="reuse (or write) the corpus in this folder")
    ap.add_argument("--json", action="store_true", help="the results as JSON")
    ap.add_argument("--measure", nargs=3, help=argparse.SUPPRESS)      # internal: LISTING JOBS REPEAT
    ap.add_argument("--read-once", type=Path, help=argparse.SUPPRESS)  # internal: what callgrind counts
    ap.add_argument("--first-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.measure:
        listing, jobs, repeat = args.measure
        print(json.dumps(measure(_listed(Path(listing)), [_jobs_value(j) for j in jobs.split(",")], int(repeat))))
        return None
    if args.read_once:
        _read_once(args.read_once, args.first_only)
        return None
    if not args.against:
        ap.error("--against COMMIT is required")
    jobs = [j.strip() for j in args.jobs.split(",") if j.strip()]
    bad = [j for j in jobs if not re.fullmatch(r"default|[1-9]\d*", j)]
    if bad:
        ap.error(f"--jobs: {', '.join(bad)} is neither 'default' nor a positive number")
    result = compare(args.against, sessions=args.sessions, seed=args.seed, rounds=args.rounds, repeat=args.repeat,
                     jobs=jobs, with_instructions=args.instructions, corpus=args.corpus,
                     progress=lambda line: print(line, file=sys.stderr, flush=True))
    print(json.dumps(result, indent=1) if args.json else format_table(result))
    return result


if __name__ == "__main__":
    main()
