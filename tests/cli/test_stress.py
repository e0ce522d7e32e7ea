"""Every command ends, and leaves no process behind, however it ends: the stress test of issue 32.

A few hundred short commands run through the console script (which forks its
parsing workers at launch): cached reads, commands that fail at once on bad
input or a bad option, and commands sent Ctrl-C (SIGINT to the whole process
group, as a terminal does) or SIGTERM (to the command alone, as ``kill`` and
``timeout`` do) at random points of their life, from the launch of the
workers to their shutdown; meanwhile two busy processes load both cores, and
three commands run at once. Each runs in a session of its own, so that every
process it started carries its process group: after it ends, none may be left.

A hang is forever (one was seen waiting 698 s for a worker that was never
told to stop), so the bound a command is given is generous (:data:`HANG_S`):
it says "hung", not "slow". The random points are drawn from a fixed seed
(``PANTO_STRESS_SEED``); ``PANTO_STRESS_RUNS`` sets how many commands run.

Out of the quick run (``-m "not stress"``, the default ``addopts``); CI runs
it as a step of its own (``.ci/run``): ``python -m pytest -q -m stress``.
"""
from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from conftest import DATA

from panto_analytics.cli.launch import WORKERS_ENV

pytestmark = [pytest.mark.stress, pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                                                       reason="finds a command's processes in /proc (Linux)")]

(ENTRY,) = entry_points(group="console_scripts", name="panto-analytics")

#: Seconds after which a command that has not ended is a hang (a cached command takes about a second).
HANG_S = 120

#: Commands run at once (besides the two busy processes).
AT_ONCE = 3


def _script() -> list[str]:
    module, _, attr = ENTRY.value.partition(":")
    return [sys.executable, "-c", f"import sys; from {module} import {attr}; sys.exit({attr}())"]


def _group_members(group: int) -> list[int]:
    """The processes whose process group is ``group`` (read from /proc; a zombie counts)."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:  # ended meanwhile
                continue
            fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state, ppid, pgrp, ...
            if int(fields[2]) == group:
                members.append(int(entry.name))
    return members


@dataclass
class Outcome:
    case: str
    args: list[str]
    status: int | None   # None: it hung
    left_behind: list[int]
    stderr: str


def _one(args: list[str], case: str, signal_after: tuple[float, int] | None, env: dict[str, str]) -> Outcome:
    process = subprocess.Popen([*_script(), *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, start_new_session=True, env=env)
    group = process.pid   # its own session: the group is its pid, and every worker it forks is in it
    if signal_after is not None:
        delay, sig = signal_after
        time.sleep(delay)
        try:
            if sig == signal.SIGINT:
                os.killpg(group, sig)    # Ctrl-C: the terminal signals the whole foreground group
            else:
                os.kill(process.pid, sig)   # kill, timeout: the command alone
        except ProcessLookupError:  # it ended first
            pass
    try:
        _, err = process.communicate(timeout=HANG_S)
        status: int | None = process.returncode
    except subprocess.TimeoutExpired:
        status, err = None, b""
    left = _group_members(group)
    if left:   # ended by the test so that nothing outlives it; reported below
        # a process only just ending (its parent gone a moment ago) is given a moment to go
        time.sleep(1)
        left = _group_members(group)
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    if status is None:
        process.kill()
        process.wait()
    return Outcome(case, args[:2], status, left, err.decode(errors="replace")[-400:])


def _busy() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)


def test_every_command_ends_and_leaves_no_process_behind(tmp_path):
    cache = tmp_path / "cache"
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "s.jsonl").write_text('{"type":"message","role":"user","content":[{"type":"text","text":"hi"}]}\n'
                                 '{"type": nope}\n')
    env = {k: v for k, v in os.environ.items() if k != WORKERS_ENV}
    warm = subprocess.run([*_script(), "ingest", str(DATA), "-q", "--cache", str(cache)], capture_output=True, env=env)
    assert warm.returncode == 0, warm.stderr[-2000:]

    cached = [["cost", str(DATA), "--cache", str(cache), "--by", "session"],
              ["sweep", str(DATA), "--cache", str(cache), "-b", "0:100k:11"],
              ["sessions", str(DATA), "--cache", str(cache)],
              ["ingest", str(DATA), "-q", "--cache", str(cache)]]
    failing = [["cost", str(bad), "--cache", str(cache)],           # bad input, found by a worker
               ["sweep", str(DATA), "--cache", str(cache), "-b", "nonsense"],   # a usage error
               ["sweep", str(tmp_path / "missing"), "--cache", str(cache)]]     # nothing to read
    rng = random.Random(int(os.environ.get("PANTO_STRESS_SEED", "32")))
    runs = int(os.environ.get("PANTO_STRESS_RUNS", "300"))
    plan: list[tuple[list[str], str, tuple[float, int] | None]] = []
    for _ in range(runs):
        kind = rng.random()
        if kind < 0.4:
            plan.append((rng.choice(cached), "cached", None))
        elif kind < 0.6:
            plan.append((rng.choice(failing), "failing", None))
        else:
            sig = rng.choice([signal.SIGINT, signal.SIGTERM])
            plan.append((rng.choice(cached + failing), f"signal {sig.name}", (rng.uniform(0.0, 1.2), sig)))

    busy = [_busy(), _busy()]
    try:
        with ThreadPoolExecutor(AT_ONCE) as pool:
            outcomes = list(pool.map(lambda p: _one(p[0], p[1], p[2], env), plan))
    finally:
        for b in busy:
            b.kill()
            b.wait()

    hung = [o for o in outcomes if o.status is None]
    left = [o for o in outcomes if o.left_behind]
    assert not hung and not left, (f"{len(hung)} of {len(outcomes)} commands hung, {len(left)} left processes behind: "
                                   f"{[(o.case, o.args, o.status, o.stderr) for o in hung + left][:5]}")
    # Those that were not signalled ended as they should: cached ones well, failing ones with one line.
    for o in outcomes:
        if o.case == "cached":
            assert o.status == 0, o.stderr
        elif o.case == "failing":
            assert o.status in (1, 2) and "Traceback" not in o.stderr, o.stderr
        else:   # signalled: ended by it (130 or 143, or killed by it) or finished before it came
            assert o.status in (0, 1, 2, 130, 143, -signal.SIGINT, -signal.SIGTERM), (o.case, o.status, o.stderr)
