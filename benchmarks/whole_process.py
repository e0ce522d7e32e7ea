"""Whole processes side by side: Claude Code cold ingest as a user runs it, against ccusage.

``python -m benchmarks.whole_process`` copies the real Claude Code recordings
of ``../shared/realdata`` ``--copies`` times with fresh ids (about 4 MB a
copy) into ``projects/copies/`` of a temporary Claude config folder, then
runs each command below in a fresh process, interleaved, ``--rounds`` times,
and keeps each one's best wall time and best CPU time (user + system of the
process and its children):

- ``ccusage daily --json --offline`` with ``CLAUDE_CONFIG_DIR`` on that
  folder (``$PANTO_CCUSAGE`` names the binary, else ``ccusage`` on PATH);
- ``panto-analytics ingest TREE -o messages.parquet`` into an empty cache
  (as a user runs it: the default cache, here a fresh folder each round);
- ``panto-analytics ingest TREE -q`` into an empty cache (the cache's cost)
  and with ``--no-cache``, the latter also with ``PANTO_ANALYTICS_WORKERS``
  ``spawn`` (one spawned parsing worker) and ``off`` (none) beside the
  default forked workers (``--workers-only``: only those three);
- the same read cached (a re-read), and ``panto-analytics --help``;
- the cached re-read of ``--reread-files`` tiny files, as a whole process
  and (the benchmark's own figure, ``ingest_scale.reread_many``) in process.

The package is byte-compiled first (``compileall``), as ``pip install``
leaves it: where ``PYTHONDONTWRITEBYTECODE`` is set and nothing compiled it,
each process would compile every module it imports from source (about 0.8 s
of CPU a process on the ingest path), and the figures would measure that.

Ratios are taken within one run, so both sides meet the same load; the load
average is printed with them. ``--memory`` adds the resident bytes per
message of a cold read (``benchmarks.memory``, a fresh process).
"""
from __future__ import annotations

import compileall
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click

import panto_analytics
from panto_analytics.cli.launch import WORKERS_ENV

from .ingest_scale import ccusage_binary, reread_many, write_tiny_sessions
from .real_formats import write_copies

__all__ = ["Command", "run_side_by_side"]

REPO = Path(__file__).resolve().parent.parent


class Command:
    """One command line to time, with a fresh setup before each run (an empty cache folder, say)."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str] | None = None, fresh_cache: bool = False):
        self.name, self.argv, self.env, self.fresh_cache = name, argv, env or {}, fresh_cache
        self.walls: list[float] = []
        self.cpus: list[float] = []

    def run(self, scratch: Path) -> None:
        env = {**os.environ, **self.env, "NO_COLOR": "1"}
        argv = list(self.argv)
        if self.fresh_cache:
            cache = Path(tempfile.mkdtemp(prefix="cache-", dir=scratch))
            env["PANTO_ANALYTICS_CACHE"] = str(cache)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True, cwd=scratch)
        self.walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if self.fresh_cache:
            shutil.rmtree(cache, ignore_errors=True)


def run_side_by_side(commands: list[Command], rounds: int, scratch: Path) -> None:
    """Each command once per round, in order, ``rounds`` times: interleaved, so that load hits all alike."""
    for _ in range(rounds):
        for c in commands:
            c.run(scratch)


def cache_cost_cpu(paths: list[Path], rounds: int, scratch: Path) -> tuple[float, float]:
    """CPU seconds (best of ``rounds``, interleaved) of a cold read into an empty cache and of one without."""
    from panto_analytics.ingest import read_sessions

    cold, bare = [], []
    for _ in range(rounds):
        cache = Path(tempfile.mkdtemp(prefix="cache-", dir=scratch))
        t0 = time.process_time()
        read_sessions(paths, cache=cache)
        cold.append(time.process_time() - t0)
        shutil.rmtree(cache, ignore_errors=True)
        t0 = time.process_time()
        read_sessions(paths)
        bare.append(time.process_time() - t0)
    return min(cold), min(bare)


def byte_compile_package() -> None:
    """Write the package's ``.pyc`` files, as an installed copy has them (a no-op where they are current)."""
    compileall.compile_dir(Path(panto_analytics.__file__).parent, quiet=1)


def _cli() -> list[str]:
    script = Path(sys.executable).parent / "panto-analytics"
    return [str(script)] if script.exists() else [sys.executable, "-c",
                                                  "import sys; from panto_analytics.cli import main; sys.exit(main())"]


@click.command()
@click.option("--copies", type=click.IntRange(min=1), default=37, show_default=True,
              help="Copies of the real Claude Code recordings (about 4 MB each; 37: about 150 MB).")
@click.option("--rounds", type=click.IntRange(min=1), default=5, show_default=True, help="Runs of each command.")
@click.option("--memory", is_flag=True, help="Also the resident bytes per message of a cold read, with the parsing "
              "worker and without.")
@click.option("--reread-files", type=click.IntRange(min=0), default=30_000, show_default=True,
              help="Tiny files for the cached re-read; 0 skips it.")
@click.option("--in-process", is_flag=True, help="Also the cache's cost on a cold read in process, by CPU time.")
@click.option("--whole/--no-whole", default=True, show_default=True,
              help="Time the Claude Code commands as whole processes (--no-whole: only what else is asked).")
@click.option("--workers-only", is_flag=True, help="Of the Claude Code commands, time only the --no-cache reads: "
              f"with the default parsing workers (forked), and with {WORKERS_ENV}=spawn and =off.")
@click.option("--against", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Another checkout (a folder holding panto_analytics/, say the commit before a change): its "
              "ingest TREE -o messages.parquet and --no-cache -q are timed too, side by side (PYTHONPATH).")
def main(copies: int, rounds: int, memory: bool, reread_files: int, in_process: bool, whole: bool,
         workers_only: bool, against: Path | None) -> None:
    """Time Claude Code ingest against ccusage, whole processes, side by side."""
    source = REPO.parent / "shared" / "realdata" / "claude-code"
    if not source.is_dir():
        raise click.UsageError(f"no real recordings at {source}")
    with tempfile.TemporaryDirectory(prefix="panto-whole-") as tmp:
        work = Path(tmp)
        tree = work / "claude" / "projects" / "copies"
        paths = write_copies(source, copies, tree)
        size = sum(p.stat().st_size for p in paths)
        warm = work / "warm-cache"
        cli = _cli()
        byte_compile_package()
        subprocess.run([*cli, "ingest", str(tree), "-q", "--cache", str(warm)], check=True, capture_output=True)
        commands = [] if not whole else [
            Command("panto-analytics --help", [*cli, "--help"]),
            Command("ingest TREE -o messages.parquet (empty cache)", [*cli, "ingest", str(tree), "-o",
                                                                       "messages.parquet"], fresh_cache=True),
            Command("ingest TREE -q (empty cache)", [*cli, "ingest", str(tree), "-q"], fresh_cache=True),
            Command("ingest TREE --no-cache -q", [*cli, "ingest", str(tree), "--no-cache", "-q"]),
            *[Command(f"ingest TREE --no-cache -q, {WORKERS_ENV}={mode}", [*cli, "ingest", str(tree), "--no-cache",
                                                                          "-q"], {WORKERS_ENV: mode})
              for mode in ("spawn", "off")],
            Command("ingest TREE -q (cached)", [*cli, "ingest", str(tree), "-q", "--cache", str(warm)]),
        ]
        if workers_only:
            commands = [c for c in commands if "--no-cache" in c.argv]
        if against is not None and whole:
            compileall.compile_dir(against / "panto_analytics", quiet=1)
            other = {"PYTHONPATH": str(against.resolve())}
            commands += [
                Command(f"ingest TREE -o messages.parquet (empty cache), {against.name}",
                        [*cli, "ingest", str(tree), "-o", "messages.parquet"], other, fresh_cache=True),
                Command(f"ingest TREE --no-cache -q, {against.name}", [*cli, "ingest", str(tree), "--no-cache", "-q"],
                        other)]
        if reread_files:
            many, many_cache = work / "many", work / "many-cache"
            write_tiny_sessions(many, reread_files)
            subprocess.run([*cli, "ingest", str(many), "-q", "--cache", str(many_cache)], check=True,
                           capture_output=True)
            commands.append(Command(f"ingest MANY -q (cached, {reread_files:,} files)",
                                    [*cli, "ingest", str(many), "-q", "--cache", str(many_cache)]))
        binary = ccusage_binary()
        if binary is not None and whole:
            commands.insert(1, Command("ccusage daily --json --offline", [binary, "daily", "--json", "--offline"],
                                       {"CLAUDE_CONFIG_DIR": str(work / "claude")}))
        run_side_by_side(commands, rounds, work)
        load = os.getloadavg()
        click.echo(f"{len(paths)} files, {size / 1e6:.0f} MB of Claude Code ({copies} copies); best of {rounds}, "
                   f"interleaved; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
        base = next((c for c in commands if c.name.startswith("ccusage")), None)
        for c in commands:
            wall, cpu = min(c.walls), min(c.cpus)
            versus = f"  {wall / min(base.walls):5.2f}x wall  {cpu / min(base.cpus):5.2f}x CPU" if base else ""
            click.echo(f"  {c.name:<48}{wall:6.2f} s wall {cpu:6.2f} s CPU{versus}")
        if whole and not workers_only:
            cold, bare = (next(c for c in commands if c.name == n) for n in ("ingest TREE -q (empty cache)",
                                                                               "ingest TREE --no-cache -q"))
            click.echo(f"  empty cache / --no-cache, whole processes: {min(cold.walls) / min(bare.walls):.2f}x wall, "
                       f"{min(cold.cpus) / min(bare.cpus):.2f}x CPU")
        if in_process:
            cpu_cold, cpu_bare = cache_cost_cpu(paths, rounds, work)
            click.echo(f"  empty cache / --no-cache, in process (read_sessions, CPU time, best of {rounds}): "
                       f"{cpu_cold:.2f} s / {cpu_bare:.2f} s = {cpu_cold / cpu_bare:.2f}x")
        if reread_files:
            inside = reread_many(reread_files, work / "inside")
            click.echo(f"  cached re-read of {reread_files:,} files in process (read_sessions): "
                       f"{inside['seconds']:.2f} s wall, {inside['cpu_seconds']:.2f} s CPU")
        if memory:
            from .memory import resident

            for launch in ("fork", "spawn", None):
                m = resident(paths, launch=launch)
                where = f"parsing workers launched first ({launch})" if launch else "parsed in the same process"
                click.echo(f"  resident after a cold read, {where}: "
                           f"{m.get('resident_bytes_per_message', float('nan')):.0f} bytes/message "
                           f"({m.get('messages')} messages)")


if __name__ == "__main__":
    main()
