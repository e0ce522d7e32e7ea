"""Peak memory of the commands that stream over a dataset, against the number of sessions.

``python -m benchmarks.dataset_memory --sessions 10000 100000 1000000`` writes
a synthetic dataset per size (:func:`benchmarks.synth_dataset.write_synthetic_dataset`
with tool references and recorded compactions, ``tools=True``; chunk by
chunk, so writing holds one chunk, whatever the size; reused when already
there), then runs each command on it, as a user types it, each in a fresh
process:

- ``cost DS --by day --by model``;
- ``replay DS -w 64k -b 20k --cost --loss`` (with ``--sessions`` and ``--events`` written to files: the rows
  a user asks for are written as they come, not held);
- ``loss DS --cuts FILE`` (the re-fetch check, its cut rows written to a file);
- ``recommend DS --window 64k -b 20k`` (the decision under a window: every session replayed, billed and
  its loss measured, and the seeded bootstrap of its figures over the sessions);
- ``report DS -o DIR --window 64k -b 20k`` (the same decision, the overview, the budget table and
  ``splits.parquet``, bucket by bucket);
- ``recommend-no-resamples``: ``recommend`` as above with ``--resamples 0`` (the decision without its bootstrap);
- ``recommend-splits``: ``recommend DS -b 20k`` (no window: the end-of-session splits of every session and their
  bootstrap).

Each figure is the peak resident memory of that process
(``ru_maxrss`` of the child from ``os.wait4``: the largest of the process and
any worker process it started and waited for), and its wall time. As a
command over a large dataset runs its tasks in a worker process
(:mod:`panto_analytics.dataset.engines`), the table also gives the peak of
the sum of the resident memory of the process and all its descendants
(``tree``), sampled from ``/proc`` every 20 ms (so it can miss a peak shorter
than that), the memory the machine needs for the command. That
figure includes what the process had before ``exec``, so this driver stays
small: it imports no Polars and writes the datasets in child processes too
(their own peaks are the ``write`` rows). The load average is read before and
after each size; the table says both. No figure here is a test.

Fewer messages per session (``--median-turns``) make the largest sizes fit a small machine; the table says
how many messages each size has.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

__all__ = ["COMMANDS", "format_table", "main", "measure", "run"]

_REPO = Path(__file__).resolve().parent.parent

#: The commands measured, by name: their arguments after the dataset (``{out}``: a folder for their files).
COMMANDS: dict[str, list[str]] = {
    "cost": ["cost", "{ds}", "--by", "day", "--by", "model", "-o", "/dev/null"],
    "replay": ["replay", "{ds}", "-w", "64k", "-b", "20k", "--cost", "--loss", "-o", "/dev/null",
               "--sessions", "{out}/sessions.parquet", "--events", "{out}/events.parquet"],
    "loss": ["loss", "{ds}", "-o", "/dev/null", "--cuts", "{out}/cuts.parquet"],
    "recommend": ["recommend", "{ds}", "--window", "64k", "-b", "20k", "-o", "/dev/null"],
    "report": ["report", "{ds}", "-o", "{out}/report", "--window", "64k", "-b", "20k"],
    "recommend-no-resamples": ["recommend", "{ds}", "--window", "64k", "-b", "20k", "--resamples", "0", "-o",
                               "/dev/null"],
    "recommend-splits": ["recommend", "{ds}", "-b", "20k", "-o", "/dev/null"],
}

#: Exit codes that are not failures: ``recommend`` exits 1 when no budget meets its rule.
_OK = {"recommend": (0, 1), "recommend-no-resamples": (0, 1), "recommend-splits": (0, 1)}

_CLI = "import sys; from panto_analytics.cli import main; sys.argv[0] = 'panto-analytics'; main()"


def _env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(_REPO), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


def _status(pid: int) -> dict[str, int]:
    """The memory lines of ``/proc/PID/status`` (KiB); empty once the process is gone."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return {}
    return {k: int(v.split()[0]) for k, _, v in (line.partition(":") for line in lines) if k.startswith("Vm") or k.startswith("Rss")}


def _tree(pid: int) -> tuple[int, int]:
    """The memory (KiB) of ``pid`` and all its descendants (from ``/proc``: their anonymous memory summed, plus the
    largest one's mapped files, which they share: the libraries), and ``pid``'s own peak (``VmHWM``)."""
    anon, files, todo, own = 0, 0, [pid], 0
    while todo:  # one iteration per process of the tree
        p = todo.pop()
        status = _status(p)
        anon += status.get("RssAnon", 0) + status.get("RssShmem", 0)
        files = max(files, status.get("RssFile", 0))
        own = status.get("VmHWM", 0) if p == pid else own
        try:
            for task in Path(f"/proc/{p}/task").iterdir():
                todo.extend(int(c) for c in (task / "children").read_text().split())
        except (OSError, ValueError):
            continue
    return anon + files, own


def measure(argv: list[str], ok: tuple[int, ...] = (0,)) -> dict:
    """Run ``argv`` in a fresh process; its wall seconds, peak RSS (MiB, ``ru_maxrss``) and the peak of its
    process tree's summed RSS (MiB, sampled)."""
    t0 = time.perf_counter()
    child = subprocess.Popen(argv, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert child.stderr is not None
    chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: chunks.append(child.stderr.read()))  # type: ignore[union-attr]
    reader.start()
    tree = own = 0
    while True:  # sample until it exits; reaped here with its rusage
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        now, hwm = _tree(child.pid)
        tree, own = max(tree, now), max(own, hwm)
        time.sleep(0.02)
    child.returncode = os.waitstatus_to_exitcode(status)
    reader.join()
    seconds = time.perf_counter() - t0
    if child.returncode not in ok:
        raise RuntimeError(f"{' '.join(argv[3:])} exited {child.returncode}: {b''.join(chunks).decode()[-2000:]}")
    return {"seconds": seconds, "peak_rss_mib": usage.ru_maxrss / 1024, "tree_rss_mib": tree / 1024,
            "own_rss_mib": own / 1024}


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _write(root: Path, sessions: int, seed: int, median_turns: float, chunk: int) -> dict:
    """Write the dataset (in a child process, measured), unless it is there already."""
    if (root / "dataset.json").exists():
        return {}
    code = ("import sys; from pathlib import Path; from benchmarks.synth_dataset import write_synthetic_dataset; "
            f"write_synthetic_dataset(Path({str(root)!r}), {sessions}, seed={seed}, buckets=256, chunk={chunk}, "
            f"tools=True, median_turns={median_turns})")
    return measure([sys.executable, "-c", code])


def run(sizes: list[int], workdir: Path, *, commands: list[str], seed: int = 1, median_turns: float = 10,
        chunk: int = 50_000) -> list[dict]:
    """Every (size, command) measured in its own process; the ``write`` row when the dataset was written now."""
    rows = []
    for n in sizes:
        root = workdir / f"synth-{n}-{seed}-t{median_turns:g}"
        load_before = _load()
        wrote = _write(root, n, seed, median_turns, chunk)
        info = json.loads((root / "dataset.json").read_text())
        found = [("write", wrote)] if wrote else []
        out = workdir / f"out-{n}"
        out.mkdir(parents=True, exist_ok=True)
        for name in commands:
            args = [a.format(ds=root, out=out) for a in COMMANDS[name]]
            found.append((name, measure([sys.executable, "-c", _CLI, *args], _OK.get(name, (0,)))))
        load_after = _load()
        for name, m in found:
            row = {"sessions": info["sessions"], "messages": info["messages"], "command": name, **m,
                   "load_before": load_before, "load_after": load_after}
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def format_table(rows: list[dict]) -> str:
    """A Markdown table of the measurements."""
    lines = ["| sessions | messages | command | seconds | peak RSS (MiB) | command's own (MiB) | tree (MiB) "
             "| load average (before; after) |",
             "|---:|---:|---|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['sessions']:,} | {r['messages']:,} | {r['command']} | {r['seconds']:.1f} | "
                     f"{r['peak_rss_mib']:,.0f} | {r['own_rss_mib']:,.0f} | {r['tree_rss_mib']:,.0f} | "
                     f"{r['load_before']}; {r['load_after']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.dataset_memory", description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, nargs="+", default=[10_000, 100_000], help="sessions per dataset")
    ap.add_argument("--commands", default=",".join(COMMANDS), help=f"which of {', '.join(COMMANDS)} (default all)")
    ap.add_argument("--median-turns", type=float, default=10, help="turns per session, median (default 10)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--chunk", type=int, default=50_000, help="sessions generated and written at a time")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/panto-dataset-memory"), help="where datasets go")
    a = ap.parse_args(argv)
    names = a.commands.split(",")
    unknown = [c for c in names if c not in COMMANDS]
    if unknown:
        ap.error(f"unknown command {unknown[0]!r}: choose from {', '.join(COMMANDS)}")
    a.workdir.mkdir(parents=True, exist_ok=True)
    rows = run(a.sessions, a.workdir, commands=names, seed=a.seed, median_turns=a.median_turns, chunk=a.chunk)
    print(format_table(rows))
    return rows


if __name__ == "__main__":
    main()
