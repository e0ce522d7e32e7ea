"""Where a command's CPU goes with its parsing workers: the main process and each worker, per way of starting them.

``python -m benchmarks.worker_cpu PATH...`` runs ``panto-analytics ingest
PATH... --no-cache -q`` in fresh processes, interleaved, once per round for
each ``PANTO_ANALYTICS_WORKERS`` setting (``fork``, the default; ``spawn``;
``off``), and reads the CPU time of the main process (``RUSAGE_SELF`` at its
exit) and of each worker (``/proc/PID/stat`` just before the workers are
ended). On a shared machine no idle core is there to show a wall-time gain,
so the figure to compare is the **critical path**: the main process's CPU
plus that of its slowest worker, what the command would take on two idle
cores if nothing else waited (the workers parse at the same time, the main
process waits for them). With ``off`` it is the one process's CPU (an upper
bound: the columnar fast paths use threads); with ``spawn`` it overstates,
since the worker's own imports overlap the main process's. Best of
``--rounds``. Linux only (``/proc``). No figure here is a test.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click

__all__ = ["critical_paths"]

#: Run in the child: the command line, with the main process's and each worker's CPU written to stderr at exit.
_CHILD = """import atexit, json, os, resource, sys
from panto_analytics.ingest import parallel

seen = {}
real_close = parallel.close

def close():
    pool = parallel._launched
    for process in dict(getattr(pool, "_processes", None) or {}).values():
        try:
            with open(f"/proc/{process.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            seen.setdefault("workers", []).append((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"))
        except OSError:
            pass
    real_close()

parallel.close = close

@atexit.register
def report():
    own = resource.getrusage(resource.RUSAGE_SELF)
    sys.stderr.write("WORKER_CPU " + json.dumps({**seen, "main": own.ru_utime + own.ru_stime}) + "\\n")

from panto_analytics.cli import main
sys.argv = ["panto-analytics", *sys.argv[1:]]
main()
"""

MODES = ("fork", "spawn", "off")


def one_run(paths: list[Path], mode: str) -> dict:
    """The main process's CPU seconds and each worker's, of one ``ingest PATHS --no-cache -q`` under ``mode``."""
    env = {**os.environ, "PANTO_ANALYTICS_WORKERS": mode,
           "PYTHONPATH": os.pathsep.join(p for p in (str(Path(__file__).resolve().parent.parent),
                                                     os.environ.get("PYTHONPATH")) if p)}
    done = subprocess.run([sys.executable, "-c", _CHILD, "ingest", *map(str, paths), "--no-cache", "-q"],
                          capture_output=True, text=True, env=env)
    lines = [line for line in done.stderr.splitlines() if line.startswith("WORKER_CPU ")]
    if done.returncode != 0 or not lines:
        raise click.ClickException(f"{mode}: the command failed: {done.stderr[-2000:]}")
    return json.loads(lines[-1].removeprefix("WORKER_CPU "))


def critical_paths(paths: list[Path], rounds: int, modes: tuple[str, ...] = MODES) -> dict[str, dict]:
    """Per mode, the best (over ``rounds``, interleaved) critical path and total CPU, and the best run's split."""
    runs: dict[str, list[dict]] = {m: [] for m in modes}
    for _ in range(rounds):
        for mode in modes:
            runs[mode].append(one_run(paths, mode))
    out = {}
    for mode, rs in runs.items():
        critical = [r["main"] + max(r.get("workers") or [0.0]) for r in rs]
        total = [r["main"] + sum(r.get("workers") or []) for r in rs]
        best = min(range(len(rs)), key=critical.__getitem__)
        out[mode] = {"critical": critical[best], "total": min(total), "main": rs[best]["main"],
                     "workers": rs[best].get("workers") or []}
    return out


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--rounds", type=click.IntRange(min=1), default=5, show_default=True, help="Runs of each setting.")
def main(paths: tuple[Path, ...], rounds: int) -> None:
    """CPU of the main process and of each parsing worker, per PANTO_ANALYTICS_WORKERS setting."""
    found = critical_paths(list(paths), rounds)
    load = os.getloadavg()
    click.echo(f"ingest --no-cache -q, best of {rounds}, interleaved; load average {load[0]:.2f} {load[1]:.2f} "
               f"{load[2]:.2f}")
    for mode, f in found.items():
        workers = ", ".join(f"{w:.2f}" for w in f["workers"]) or "none"
        click.echo(f"  {mode:<6} critical path {f['critical']:5.2f} s   all CPU {f['total']:5.2f} s   "
                   f"(main {f['main']:.2f} s, workers {workers})")


if __name__ == "__main__":
    main()
