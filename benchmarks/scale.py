"""Time and peak memory of the sweep against corpus size: in memory, streamed locally, streamed on Ray.

``python -m benchmarks.scale`` writes a synthetic dataset per size
(:mod:`benchmarks.synth_dataset`, reused when already there), then runs a
21-budget sweep over each, each (size, engine) in a fresh Python process
that reports its own peak RSS (``VmHWM``), so no measurement inherits
another's memory. Engines:

- ``memory``: the whole dataset read into one frame, ``splits`` then ``sweep`` (the in-memory path);
- ``local``: :class:`panto_analytics.dataset.OnDataset`'s sweep, bucket by bucket in this process;
- ``ray``: the same on Ray Data started on this machine (the driver's peak RSS; Ray's workers are
  separate processes, reported as the sum of their peak RSS where ``/proc`` shows them).

Times are the minimum of ``--repeat`` runs in the same process (for Ray, the
first run includes starting Ray). Every engine's table is checked equal to
the local engine's.

    python -m benchmarks.scale --sizes 10k,100k,1M --engines memory,local,ray --workdir /tmp/scale
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["format_table", "main", "measure", "run_scale"]

BUDGETS = "0:200k:21"


def _peak_rss_mib() -> float:
    """This process image's own peak RSS (``VmHWM``; ``ru_maxrss`` would keep the parent's peak across exec)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) / 1024 for line in f if line.startswith("VmHWM:"))


def measure(root: Path, engine: str, budgets: list[int], repeat: int) -> dict:
    """Run one engine's sweep ``repeat`` times in this process; the best time, the peak RSS, the table."""
    import panto_analytics as pa
    from panto_analytics.dataset import dataset_corpus, read_info

    def run():
        if engine == "memory":
            corpus = dataset_corpus(root)
            return pa.sweep(pa.splits(corpus.messages, budgets, sessions=corpus.sessions))
        return (pa.dataset.OnRay if engine == "ray" else pa.dataset.OnDataset)(root).sweep(budgets)

    times = []
    table = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        table = run()
        times.append(time.perf_counter() - t0)
    info = read_info(root)
    out = {"engine": engine, "sessions": info.sessions, "messages": info.messages, "seconds": min(times),
           "all_seconds": times, "peak_rss_mib": _peak_rss_mib(), "table": table.write_json() if table is not None else None}
    if engine == "ray":
        out["ray_workers_peak_rss_mib"] = _ray_workers_rss()
    return out


def _ray_workers_rss() -> float | None:
    """The sum of the peak RSS (VmHWM) of this machine's Ray worker processes, where ``/proc`` shows them."""
    total = 0.0
    found = False
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        name = text.split("\n", 1)[0]
        if "ray::" in name or "raylet" in name or "gcs_server" in name:
            for line in text.splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1]) / 1024
                    found = True
    return total if found else None


def _dataset(workdir: Path, sessions: int, seed: int) -> Path:
    root = workdir / f"synth-{sessions}-{seed}"
    if not (root / "dataset.json").exists():
        subprocess.run([sys.executable, "-m", "benchmarks.synth", str(root), "--sessions", str(sessions), "--seed",
                        str(seed), "--dataset"], check=True)
    return root


def run_scale(sizes: list[int], engines: list[str], workdir: Path, *, budgets: str = BUDGETS, repeat: int = 2,
              seed: int = 0, memory_limit: int = 100_000) -> list[dict]:
    """Every (size, engine) measured in its own process; ``memory`` only up to ``memory_limit`` sessions."""
    rows = []
    for n in sizes:
        root = _dataset(workdir, n, seed)
        reference = None
        for engine in sorted(engines, key=lambda e: e != "local"):  # local first: the others are checked against it
            if engine == "memory" and n > memory_limit:
                continue
            done = subprocess.run([sys.executable, "-m", "benchmarks.scale", "--measure", str(root), "--engines", engine,
                                   "--budgets", budgets, "--repeat", str(repeat)], check=True, capture_output=True, text=True)
            row = json.loads(done.stdout.strip().splitlines()[-1])
            table = row.pop("table")
            if engine == "local":
                reference = table
            row["same_table_as_local"] = None if reference is None or engine == "local" else table == reference
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
    return rows


def format_table(rows: list[dict]) -> str:
    """A Markdown table of the measurements."""
    lines = ["| sessions | messages | engine | seconds | s per M messages | peak RSS (MiB) | same table as local |",
             "|---:|---:|---|---:|---:|---:|---|"]
    for r in rows:
        rss = f"{r['peak_rss_mib']:,.0f}"
        if r.get("ray_workers_peak_rss_mib"):
            rss += f" (+ Ray processes {r['ray_workers_peak_rss_mib']:,.0f})"
        same = {None: "(reference)" if r["engine"] == "local" else "", True: "yes", False: "NO"}[r["same_table_as_local"]]
        lines.append(f"| {r['sessions']:,} | {r['messages']:,} | {r['engine']} | {r['seconds']:.2f} | "
                     f"{r['seconds'] / r['messages'] * 1e6:.2f} | {rss} | {same} |")
    return "\n".join(lines)


def _size(text: str) -> int:
    """``10k`` -> 10000, ``1M`` -> 1000000.

    >>> _size("10k"), _size("1M"), _size("250")
    (10000, 1000000, 250)
    """
    mult = {"k": 1_000, "m": 1_000_000}.get(text[-1].lower(), 1)
    return int(float(text[:-1] if mult > 1 else text) * mult)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.scale", description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10k,100k,1M", help="sessions per dataset (default 10k,100k,1M)")
    ap.add_argument("--engines", default="memory,local,ray", help="memory, local, ray (default all three)")
    ap.add_argument("--budgets", default=BUDGETS, help=f"budgets of the sweep (default {BUDGETS})")
    ap.add_argument("--repeat", type=int, default=2, help="runs per measurement; the best time is kept (default 2)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--memory-limit", type=int, default=100_000, help="largest size the in-memory path runs at")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/panto-scale"), help="where the datasets are written")
    ap.add_argument("--measure", type=Path, default=None, help=argparse.SUPPRESS)  # one measurement, in this process
    a = ap.parse_args(argv)
    from panto_analytics.budgets import parse_budgets

    budgets = parse_budgets(a.budgets)
    if a.measure is not None:
        print(json.dumps(measure(a.measure, a.engines, budgets, a.repeat)))
        return
    a.workdir.mkdir(parents=True, exist_ok=True)
    rows = run_scale([_size(s) for s in a.sizes.split(",")], a.engines.split(","), a.workdir, budgets=a.budgets,
                     repeat=a.repeat, seed=a.seed, memory_limit=a.memory_limit)
    print(format_table(rows))


if __name__ == "__main__":
    main()
