"""The benchmark behind ``panto-analytics bench``: speed and size, side by side, in one run.

:func:`run_bench` writes a synthetic corpus (:mod:`benchmarks.synth`)
into a temporary folder and measures, on that one corpus:

- **ingest**: :func:`~panto_analytics.read_sessions` throughput in MB/s,
  against the *parse-only floor*: ``orjson.loads`` of every line, in one
  process (goal: ingest at most 2x the floor);
- **cache re-read**: a second read from the Parquet cache against the cold
  read (goal: at least 20x faster);
- **frame size**: ``DataFrame.estimated_size() / height`` of the message
  frame (goal: at most 64 bytes per message);
- **the sweep**: :func:`~panto_analytics.splits` over N budgets (64 by
  default) from the message frame, against libpanto's native
  ``computeSplit`` looped over the same budgets (the harness in
  ``../shared/reference/harness`` reports the time inside ``computeSplit``
  alone; goal: at least 4x faster) and against the pure-Python port in
  ``reference/port.py`` (goal: at least 200x faster). The port is
  slow, so it runs on a random sample of sessions for a bounded time and its
  time is scaled to the whole corpus by message count. Both references'
  splits are compared with the frame's, pair by pair;
- **Claude Code ingest**: the same ingest and cache figures, with the same
  goals, on a second corpus of synthetic Claude Code transcripts
  (:mod:`benchmarks.synth_claude_code`), written as a projects tree and read
  by ccusage too (``ccusage daily --json --offline``, when installed; goal:
  our cold ingest no slower); ``claude_sessions=0`` skips it;
- **the cache's cost and many files** (:mod:`benchmarks.ingest_scale`): a
  cold read into an empty cache against ``--no-cache`` (goal: at most 1.1x),
  on the main corpus and on ``small_files`` small canonical files (about
  60 KB each, with their own orjson floor), and a cached re-read of
  ``reread_files`` unchanged files (goal: 30,000 in under a second).

The Python port is :mod:`reference.port`; libpanto's native code
is found in ``../shared`` beside the checkout (``PANTO_SHARED`` overrides).
Where it is missing its section says ``not available``; nothing fails.

No timing here is a test: ``tests/test_bench.py`` checks the structure and
the agreement on a tiny corpus, never a speed.
"""
from __future__ import annotations

import importlib.util
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import orjson
import polars as pl

from panto_analytics.budgets import parse_budgets
from panto_analytics.ingest import read_sessions
from panto_analytics.policy import annotate, replay, splits, turns
from reference import port

from . import cost_compare, ingest_scale, memory, real_formats
from .against import head_commit
from .canonical_small import orjson_floor
from .sizes import CLAUDE_SESSIONS
from .synth import write_corpus
from .synth_claude_code import write_corpus as write_claude_code_corpus

#: The goals of issue 2 item 8 and issue 3 item 3: (key, description, target, direction).
GOALS = (
    ("ingest_vs_floor", "cold ingest / orjson parse-only floor", 2.0, "max"),
    ("cache_speedup", "cold ingest / cache re-read", 20.0, "min"),
    ("bytes_per_message", "frame bytes per message", 64.0, "max"),
    ("native_speedup", "native computeSplit loop / polars sweep", 4.0, "min"),
    ("python_speedup", "python port / polars sweep", 200.0, "min"),
    ("replay_vs_sweep", "replay at a 200k window / the end-of-session sweep", 3.0, "max"),
    ("claude_ingest_vs_floor", "Claude Code: cold ingest / orjson parse-only floor", 2.0, "max"),
    ("claude_cache_speedup", "Claude Code: cold ingest / cache re-read", 20.0, "min"),
    ("claude_vs_ccusage", "Claude Code: cold ingest / ccusage daily --offline", 1.0, "max"),
    ("cache_cold_cost", "cold ingest into an empty cache / --no-cache", 1.1, "max"),
    ("small_ingest_vs_floor", "small files: cold ingest / orjson parse-only floor", 1.5, "max"),
    ("small_cache_cold_cost", "small files: cold ingest into an empty cache / --no-cache", 1.1, "max"),
    ("reread_seconds", "cached re-read of 30,000 unchanged files, seconds", 1.0, "max"),
    ("reread_peak_over_frame", "cached re-read of many files: peak memory / frame", 1.5, "max"),
    ("claude_resident_bytes", "Claude Code: resident bytes per message after a cold ingest (parsing worker "
     "launched first, as the command line does)", 1000.0, "max"),
    ("pi_vs_floor", "pi (real recordings, copied): cold ingest / orjson parse-only floor", 1.5, "max"),
    ("codex_vs_floor", "Codex (real recordings, copied): cold ingest / orjson parse-only floor", 1.5, "max"),
)


REPO = Path(__file__).resolve().parent.parent

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def bench_budgets(n: int, stop: int = 200_000) -> list[int]:
    """``n`` budgets evenly spaced from 0 to ``stop`` tokens.

    >>> bench_budgets(5)
    [0, 50000, 100000, 150000, 200000]
    """
    return parse_budgets(f"0:{stop}:{n}")


def shared_dir() -> Path | None:
    """``../shared`` beside the checkout (or ``$PANTO_SHARED``), if it exists."""
    path = Path(os.environ.get("PANTO_SHARED", REPO.parent / "shared"))
    return path if path.is_dir() else None


def _load_module(name: str, path: Path) -> ModuleType | None:
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load_oracle(shared: Path | None) -> ModuleType | None:
    """The harness' ``oracle.py`` (libpanto's own computeSplit), or None without ``../shared``."""
    if shared is None:
        return None
    return _load_module("panto_oracle", shared / "reference" / "harness" / "oracle.py")


# -- measurements ---------------------------------------------------------------

def _timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def cache_reread(paths: list[Path], cold_seconds: float) -> dict:
    """Re-read from the Parquet cache, when ``read_sessions`` has one (issue 3 item 2).

    Fills the cache with one read, then times re-reads of the unchanged
    corpus (best of two, as the cold read) against ``cold_seconds``.
    """
    with tempfile.TemporaryDirectory(prefix="panto-bench-cache-") as cache:
        _, fill_seconds = _timed(read_sessions, paths, cache=cache)
        seconds = min(_timed(read_sessions, paths, cache=cache)[1] for _ in range(2))
    return {"available": True, "fill_seconds": fill_seconds, "seconds": seconds,
            "speedup": cold_seconds / seconds}


def ingest(paths: list[Path], progress: Progress = _quiet) -> tuple[pl.DataFrame, dict, dict]:
    """The message frame of ``paths``, and the ingest and cache figures of reading it.

    Best of two runs each, side by side: the machine is noisy, and the first
    read of a process also pays one-time imports and thread-pool start-up.
    """
    mb = sum(p.stat().st_size for p in paths) / 1e6
    progress("parse-only floor (orjson)")
    floor = min(orjson_floor(paths) for _ in range(2))
    progress("cold ingest (read_sessions)")
    messages, seconds = min((_timed(read_sessions, paths) for _ in range(2)), key=lambda r: r[1])
    progress("cache re-read")
    cache = cache_reread(paths, seconds)
    figures = {"seconds": seconds, "mb_per_s": mb / seconds,
               "floor_seconds": floor, "floor_mb_per_s": mb / floor, "vs_floor": seconds / floor}
    return messages, figures, cache


def claude_code(sessions: int, seed: int, workdir: Path, progress: Progress = _quiet) -> dict:
    """Ingest figures on ``sessions`` synthetic Claude Code transcripts (none: skipped)."""
    if sessions <= 0:
        return {"available": False, "note": "skipped (--claude-sessions 0)"}
    progress(f"writing {sessions} synthetic Claude Code sessions (seed {seed})")
    config = workdir / "claude-config"  # CLAUDE_CONFIG_DIR for ccusage: the sessions under projects/
    paths, gen_seconds = _timed(write_claude_code_corpus, config / "projects" / "synth", sessions, seed)
    messages, figures, cache = ingest(paths, lambda line: progress(f"Claude Code: {line}"))
    progress("Claude Code: ccusage daily --json --offline")
    cc = ingest_scale.ccusage(config, figures["seconds"])
    progress("Claude Code: resident memory of a cold ingest (a fresh process)")
    return {"available": True, "ccusage": cc, "memory": memory.resident(paths, launch=True),
            "corpus": {"sessions": len(paths), "seed": seed, "messages": messages.height,
                       "bytes": sum(p.stat().st_size for p in paths), "generate_seconds": gen_seconds},
            "ingest": figures, "cache": cache}


def _best(repeat: int, fn, *args):
    """``fn(*args)`` run ``repeat`` times: its last result, and every time taken."""
    times = []
    for _ in range(repeat):
        out, seconds = _timed(fn, *args)
        times.append(seconds)
    return out, times


def sweep(messages: pl.DataFrame, budgets: list[int], repeat: int = 3) -> tuple[pl.DataFrame, dict]:
    """Time ``splits(messages, budgets)``, and its steps on their own, each best of ``repeat``.

    The steps, :func:`annotate` (per-message columns) and :func:`turns` (which
    includes it), show where the sweep's time goes.
    """
    result, times = _best(repeat, splits, messages, budgets)
    _, annotate_times = _best(repeat, annotate, messages)
    turn_frame, turns_times = _best(repeat, turns, messages)
    return result, {"seconds": min(times), "runs": times, "annotate_seconds": min(annotate_times),
                    "turns_seconds": min(turns_times), "turns": turn_frame.height, "rows": result.height}


#: Context windows the replay is timed at (the goal is judged at the first).
REPLAY_WINDOWS = (200_000, 64_000)


def replay_timing(messages: pl.DataFrame, budgets: list[int], sweep_seconds: float, repeat: int = 2) -> dict:
    """Time :func:`~panto_analytics.replay` at :data:`REPLAY_WINDOWS` against the sweep's time, side by side."""
    out = {}
    for window in REPLAY_WINDOWS:
        result, times = _best(repeat, lambda m, b, w=window: replay(m, b, window=w), messages, budgets)
        out[str(window)] = {"seconds": min(times), "events": result.events.height,
                            "vs_sweep": min(times) / sweep_seconds}
    return out


def load_canonical(paths: list[Path]) -> list[tuple[str, list[dict]]]:
    """(session id, message records) per file, as the references take them."""
    out = []
    for path in paths:
        sid, msgs = path.stem, []
        with open(path, "rb") as f:
            for line in f:
                if not line.strip():
                    continue
                rec = orjson.loads(line)
                if rec.get("type") == "message":
                    msgs.append(rec)
                elif rec.get("type") == "session" and rec.get("id"):
                    sid = rec["id"]
        out.append((sid, msgs))
    return out


def _pairs(result: pl.DataFrame) -> dict[tuple[str, int], tuple[int, int]]:
    """(session_id, budget) -> (prefix_end, kept_turns) of a splits frame."""
    rows = result.select(pl.col("session_id").cast(pl.String), "budget", "prefix_end", "kept_turns").rows()
    return {(s, b): (p, k) for s, b, p, k in rows}


def _mismatches(ours: dict, theirs: dict) -> list[dict]:
    return [{"session_id": s, "budget": b, "polars": ours.get((s, b)), "reference": v}
            for (s, b), v in theirs.items() if ours.get((s, b)) != v]


def python_port(sessions: list[tuple[str, list[dict]]], budgets: list[int], ours: dict,
                max_seconds: float, seed: int = 0) -> dict:
    """The Python port's sweep on a random sample of sessions, for about ``max_seconds``.

    Sessions are taken in a seeded random order until the time is spent (at
    least one). The corpus time is the sample's time scaled by message count.
    """
    order = list(range(len(sessions)))
    random.Random(seed).shuffle(order)
    total_messages = sum(len(m) for _, m in sessions)
    theirs, spent, done, messages = {}, 0.0, 0, 0
    for i in order:
        sid, msgs = sessions[i]
        usages = port.usages_of(msgs)
        t0 = time.perf_counter()
        found = [port.compute_split(msgs, usages, b) for b in budgets]
        spent += time.perf_counter() - t0
        theirs.update({(sid, b): (s.prefix_end, s.kept_turns) for b, s in zip(budgets, found)})
        done, messages = done + 1, messages + len(msgs)
        if spent >= max_seconds:
            break
    scale = total_messages / messages if messages else float(len(sessions) / done)
    bad = _mismatches(ours, theirs)
    return {"available": True, "sessions_timed": done, "sessions": len(sessions),
            "messages_timed": messages, "seconds_timed": spent, "seconds": spent * scale,
            "scaled": done < len(sessions), "compared": len(theirs), "mismatches": len(bad),
            "mismatch_examples": bad[:5]}


def native(sessions: list[tuple[str, list[dict]]], budgets: list[int], ours: dict, shared: Path | None) -> dict:
    """libpanto's computeSplit over every session and budget, through the harness."""
    oracle = load_oracle(shared)
    if oracle is None:
        return {"available": False, "note": "not available: ../shared not found"}
    timing: dict = {}
    try:
        rows, wall = _timed(oracle.oracle_splits, [m for _, m in sessions], budgets, timing=timing)
    except Exception as e:  # a harness that cannot build or run is reported, not fatal
        return {"available": False, "note": f"not available: the harness failed ({type(e).__name__}: {e})"}
    theirs = {(sid, b): tuple(v) for (sid, _), row in zip(sessions, rows) for b, v in zip(budgets, row)}
    bad = _mismatches(ours, theirs)
    return {"available": True, "seconds": timing["split_seconds"], "wall_seconds": wall,
            "compared": len(theirs), "mismatches": len(bad), "mismatch_examples": bad[:5]}


# -- the whole run --------------------------------------------------------------

def run_bench(sessions: int = 1000, seed: int = 0, n_budgets: int = 64, *, port_seconds: float = 20.0,
              workdir: str | Path | None = None, shared: Path | None | bool = True,
              claude_sessions: int = CLAUDE_SESSIONS, small_files: int = 0, reread_files: int = 0,
              real_copies: int = 0, cost_messages: int = 0, progress: Progress = _quiet) -> dict:
    """Generate a corpus and measure everything; returns the results as a dict.

    Parameters
    ----------
    sessions, seed
        The synthetic corpus (see :func:`benchmarks.synth.write_corpus`).
    n_budgets
        Budgets in the sweep, evenly spaced from 0 to 200k tokens.
    port_seconds
        About how long the pure-Python port may run (on a sample).
    workdir
        Where to write the corpus; a temporary folder (removed after) by default.
    shared
        ``../shared`` (for libpanto's native computeSplit): True finds it,
        a path names it, False or None skips the native comparison.
    claude_sessions
        Synthetic Claude Code sessions for the second ingest corpus (same
        ``seed``); 0 skips it.
    small_files, reread_files
        Small canonical files for the many-files ingest, and tiny files for
        the cached re-read; 0 (the default here, not on the command line) skips them.
    cost_messages
        Messages of the synthetic frame ``cost`` is timed on (:func:`benchmarks.cost_compare.cost_speed`);
        0 (the default here, not on the command line) skips it. The ccusage comparison of ``cost`` runs on
        ``../shared/realdata/claude-code`` when present, else on the synthetic Claude Code tree, when
        ccusage is installed.
    real_copies
        Copies of the real pi and Codex recordings in ``../shared`` timed
        against their orjson floor (:mod:`benchmarks.real_formats`); 0 (the
        default here, not on the command line) skips them.
    progress
        Called with a short line before each step.
    """
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="panto-bench-") as tmp:
            return run_bench(sessions, seed, n_budgets, port_seconds=port_seconds, workdir=tmp,
                             shared=shared, claude_sessions=claude_sessions, small_files=small_files,
                             reread_files=reread_files, real_copies=real_copies, cost_messages=cost_messages,
                             progress=progress)
    shared = shared_dir() if shared is True else (shared or None)
    budgets = bench_budgets(n_budgets)
    load_at_start = os.getloadavg()[0]
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")

    progress(f"writing {sessions} synthetic sessions (seed {seed})")
    paths, gen_seconds = _timed(write_corpus, Path(workdir) / "corpus", sessions, seed)
    size = sum(p.stat().st_size for p in paths)
    messages, ingest_figures, cache = ingest(paths, progress)
    progress("cold ingest into an empty cache")
    cold_cache = ingest_scale.cache_cost(paths, ingest_figures["seconds"])
    claude = claude_code(claude_sessions, seed, Path(workdir), progress)
    progress(f"{small_files} small files")
    small = ingest_scale.small_files(small_files, seed, Path(workdir))
    progress(f"cached re-read of {reread_files} files")
    many = ingest_scale.reread_many(reread_files, Path(workdir))
    progress(f"pi and Codex: {real_copies} copies of the real recordings")
    real = {fmt: real_formats.real_format(fmt, shared_dir(), real_copies, Path(workdir)) for fmt in real_formats.FORMATS}

    cost = cost_figures(Path(workdir), claude["available"], cost_messages, progress)

    progress(f"{len(budgets)}-budget sweep (polars)")
    result, sweep_info = sweep(messages, budgets)
    ours = _pairs(result)
    progress(f"replay at windows {', '.join(map(str, REPLAY_WINDOWS))}")
    replays = replay_timing(messages, budgets, sweep_info["seconds"])

    progress("loading sessions for the references")
    canonical = load_canonical(paths)
    progress(f"native computeSplit x {len(budgets)} budgets")
    nat = native(canonical, budgets, ours, shared)
    progress(f"python port (up to ~{port_seconds:g} s)")
    port = python_port(canonical, budgets, ours, port_seconds, seed)

    frame_bytes = messages.estimated_size()
    values = {
        "ingest_vs_floor": ingest_figures["vs_floor"],
        "cache_speedup": cache.get("speedup"),
        "bytes_per_message": frame_bytes / max(messages.height, 1),
        "native_speedup": nat["seconds"] / sweep_info["seconds"] if nat["available"] else None,
        "python_speedup": port["seconds"] / sweep_info["seconds"] if port["available"] else None,
        "replay_vs_sweep": replays[str(REPLAY_WINDOWS[0])]["vs_sweep"],
        "claude_ingest_vs_floor": claude["ingest"]["vs_floor"] if claude["available"] else None,
        "claude_cache_speedup": claude["cache"].get("speedup") if claude["available"] else None,
        "claude_vs_ccusage": (claude["ccusage"]["ratio"] if claude["available"] and claude["ccusage"]["available"]
                              else None),
        "cache_cold_cost": cold_cache["ratio"],
        "small_ingest_vs_floor": small["vs_floor"] if small["available"] else None,
        "small_cache_cold_cost": small["cache"]["ratio"] if small["available"] else None,
        "reread_seconds": many["seconds"] if many["available"] else None,
        "reread_peak_over_frame": (many["memory"].get("peak_over_frame") if many["available"] else None),
        "claude_resident_bytes": (claude["memory"].get("resident_bytes_per_message")
                                  if claude["available"] else None),
        **{f"{fmt}_vs_floor": figures["vs_floor"] if figures["available"] else None for fmt, figures in real.items()},
    }
    goals = []
    for key, what, target, direction in GOALS:
        value = values[key]
        ok = None if value is None else (value <= target if direction == "max" else value >= target)
        goals.append({"goal": key, "what": what, "value": value, "target": target, "direction": direction,
                      "pass": ok})
    return {
        "corpus": {"sessions": len(paths), "seed": seed, "messages": messages.height, "bytes": size,
                   "generate_seconds": gen_seconds},
        "budgets": budgets,
        "ingest": ingest_figures,
        "cache": cache,
        "cache_cold": cold_cache,
        "small_files": small,
        "reread_many": many,
        "real_formats": real,
        "frame": {"bytes": frame_bytes, "rows": messages.height,
                  "bytes_per_message": values["bytes_per_message"]},
        "sweep": sweep_info,
        "replay": replays,
        "native": nat,
        "python_port": port,
        "claude_code": claude,
        "cost": cost,
        "goals": goals,
        "machine": {"cpus": os.cpu_count(), "polars_threads": pl.thread_pool_size(),
                    "python": sys.version.split()[0], "polars": pl.__version__, "commit": head_commit(),
                    "date": started, "load": [load_at_start, os.getloadavg()[0]]},
    }


# -- the report -------------------------------------------------------------------

def _verdict(goal: dict) -> str:
    if goal["pass"] is None:
        return "n/a"
    return "PASS" if goal["pass"] else "MISS"


def format_report(r: dict) -> str:
    """The results as the table ``panto-analytics bench`` prints."""
    c, ing, fr, sw, nat, port = r["corpus"], r["ingest"], r["frame"], r["sweep"], r["native"], r["python_port"]
    goals = {g["goal"]: g for g in r["goals"]}
    n = len(r["budgets"])

    def goal(key: str) -> str:
        g = goals[key]
        sign = "<=" if g["direction"] == "max" else ">="
        unit = {"bytes_per_message": "", "claude_resident_bytes": "", "reread_seconds": " s"}.get(key, "x")
        return f"goal {sign} {g['target']:g}{unit}  {_verdict(g)}"

    def ingest_lines(ing: dict, cache: dict, indent: str = "", prefix: str = "") -> list[str]:
        out = [
            f"{indent + 'ingest, cold (read_sessions)':<38}{ing['seconds']:>9.2f} s  {ing['mb_per_s']:>7.1f} MB/s",
            f"{indent + 'parse-only floor (orjson.loads)':<38}{ing['floor_seconds']:>9.2f} s"
            f"  {ing['floor_mb_per_s']:>7.1f} MB/s   ingest/floor {ing['vs_floor']:.2f}x"
            f"   {goal(prefix + 'ingest_vs_floor')}",
        ]
        out.append(_figure_row(indent + "cache re-read", cache, lambda c: f"{c['seconds']:>9.3f} s"
                               f"   {'':>13}cold/re-read {c['speedup']:.1f}x   {goal(prefix + 'cache_speedup')}"))
        return out

    lines = [
        f"corpus: {c['sessions']:,} synthetic sessions (seed {c['seed']}), {c['messages']:,} messages, "
        f"{c['bytes'] / 1e6:.1f} MB (written in {c['generate_seconds']:.1f} s)",
        f"budgets: {n}, from {r['budgets'][0]:,} to {r['budgets'][-1]:,} tokens; "
        f"{r['machine']['cpus']} CPUs, polars {r['machine']['polars']}",
        "",
        *ingest_lines(ing, r["cache"]),
        f"{'cold ingest into an empty cache':<38}{r['cache_cold']['cold_seconds']:>9.2f} s"
        f"   {'':>13}cache/no-cache {r['cache_cold']['ratio']:.2f}x   {goal('cache_cold_cost')}",
        f"{'frame':<38}{fr['bytes_per_message']:>9.1f} bytes/message ({fr['bytes'] / 1e6:.1f} MB)"
        f"   {goal('bytes_per_message')}",
        "",
    ]
    cc = r["claude_code"]
    if cc["available"]:
        k = cc["corpus"]
        lines += [f"Claude Code JSONL: {k['sessions']:,} synthetic sessions (seed {k['seed']}), "
                  f"{k['messages']:,} messages, {k['bytes'] / 1e6:.1f} MB (written in {k['generate_seconds']:.1f} s)",
                  *ingest_lines(cc["ingest"], cc["cache"], "  ", "claude_"), *_ccusage_lines(cc, goal),
                  *_memory_lines(cc["memory"], "  resident after a cold ingest", "resident_bytes_per_message",
                                 "bytes/message", goal("claude_resident_bytes")), ""]
    else:
        lines += [f"Claude Code JSONL: {cc['note']}", ""]
    lines += [*_small_lines(r["small_files"], goal), *_reread_lines(r["reread_many"], goal), ""]
    if "cost" in r:
        lines += [*_cost_lines(r["cost"]), ""]
    lines += [*_real_lines(r.get("real_formats", {}), goal), ""]
    lines += [
        f"{f'{n}-budget sweep, polars splits()':<38}{sw['seconds']:>9.3f} s"
        f"  (of which, alone: annotate() {sw['annotate_seconds']:.3f} s, turns() {sw['turns_seconds']:.3f} s)",
    ]
    lines.append(_figure_row("  native computeSplit loop", nat, lambda f: f"{f['seconds']:>9.3f} s"
                             f"  polars {f['seconds'] / sw['seconds']:.1f}x faster   {goal('native_speedup')}"))
    lines.append(_figure_row("  python reference port", port, lambda f: f"{f['seconds']:>9.1f} s"
                             f"  polars {f['seconds'] / sw['seconds']:.0f}x faster   {goal('python_speedup')}"
                             + (f"  (estimated: {f['seconds_timed']:.1f} s on {f['sessions_timed']} of {f['sessions']} "
                                f"sessions, a random sample, scaled by message count)" if f["scaled"] else "")))
    for window, rep in r["replay"].items():
        judged = f"   {goal('replay_vs_sweep')}" if window == str(REPLAY_WINDOWS[0]) else ""
        lines.append(f"{f'  replay, {int(window) // 1000}k window':<38}{rep['seconds']:>9.3f} s"
                     f"  {rep['vs_sweep']:.2f}x the sweep ({rep['events']:,} compactions){judged}")
    lines.append("")
    for name, ref in (("native computeSplit", nat), ("python port", port)):
        if ref["available"]:
            verdict = "all equal" if ref["mismatches"] == 0 else f"{ref['mismatches']:,} DIFFER"
            lines.append(f"splits vs {name}: {ref['compared']:,} (session, budget) pairs compared, {verdict}")
    return "\n".join(lines)


def cost_figures(workdir: Path, synthetic_claude: bool, messages: int, progress: Progress = _quiet) -> dict:
    """``cost`` against ccusage (the real Claude Code tree, else the synthetic one) and its speed."""
    shared = shared_dir()
    real = shared / "realdata" / "claude-code" if shared is not None else None
    if real is not None and real.is_dir():
        tree: Path | None = real
    else:
        tree = workdir / "claude-config" / "projects" if synthetic_claude else None
    progress(f"cost against ccusage daily --json --offline -z UTC on {tree}")
    compared = (cost_compare.compare_ccusage(tree, workdir / "cost-ccusage") if tree is not None
                else {"available": False, "note": "no Claude Code tree (no ../shared/realdata, --claude-sessions 0)"})
    if compared.get("available"):
        compared = {k: v for k, v in compared.items() if k != "days"} | {
            "days": compared["days"].with_columns(pl.col(pl.Boolean).cast(pl.Int8)).to_dicts()}
    progress(f"cost over {messages:,} synthetic messages")
    speed = cost_compare.cost_speed(messages) if messages > 0 else {"available": False,
                                                                    "note": "skipped (--cost-messages 0)"}
    return {"ccusage": compared, "speed": speed}


def _cost_lines(cost: dict) -> list[str]:
    lines = cost_compare.format_comparison(cost["ccusage"]).splitlines()
    sp = cost["speed"]
    lines.append(cost_compare.format_speed(sp) if "messages" in sp else f"cost speed: {sp['note']}")
    return lines


def _figure_row(label: str, figure: dict, shown: Callable[[dict], str]) -> str:
    """A row of the report: ``label`` in the labels' column, then what ``shown`` writes of ``figure``, or the
    figure's note where it is not available.

    >>> _figure_row("x", {"available": False, "note": "skipped"}, str).split()
    ['x', 'skipped']
    """
    return f"{label:<38}{shown(figure) if figure['available'] else figure['note']}"


def _ccusage_lines(cc: dict, goal: Callable[[str], str]) -> list[str]:
    return [_figure_row("  ccusage daily --json --offline", cc["ccusage"], lambda cu: f"{cu['seconds']:>9.2f} s"
                        f"   {'':>13}ingest/ccusage {cu['ratio']:.2f}x   {goal('claude_vs_ccusage')}")]


def _small_lines(sm: dict, goal: Callable[[str], str]) -> list[str]:
    if not sm["available"]:
        return [f"small canonical files: {sm['note']}"]
    c = sm["cache"]
    return [f"small canonical files: {sm['files']:,} files, {sm['bytes'] / 1e6:.1f} MB "
            f"({sm['bytes'] / sm['files'] / 1e3:.0f} KB each)",
            f"{'  ingest, cold (--no-cache)':<38}{sm['seconds']:>9.2f} s   {'':>13}ingest/floor "
            f"{sm['vs_floor']:.2f}x (floor {sm['floor_seconds']:.2f} s)   {goal('small_ingest_vs_floor')}",
            f"{'  cold ingest into an empty cache':<38}{c['cold_seconds']:>9.2f} s   {'':>13}cache/no-cache "
            f"{c['ratio']:.2f}x   {goal('small_cache_cold_cost')}",
            f"{'  cache re-read':<38}{c['reread_seconds']:>9.3f} s   {'':>13}cold/re-read {c['reread_speedup']:.1f}x"]


def _real_lines(real: dict, goal: Callable[[str], str]) -> list[str]:
    out = []
    for fmt, f in real.items():
        if not f["available"]:
            out.append(f"{fmt} (real recordings): {f['note']}")
            continue
        out += [f"{fmt} (real recordings, {f['copies']} copies with fresh ids): {f['files']:,} files, "
                f"{f['messages']:,} messages, {f['bytes'] / 1e6:.1f} MB",
                f"{'  ingest, cold (--no-cache)':<38}{f['seconds']:>9.2f} s   {'':>13}ingest/floor "
                f"{f['vs_floor']:.2f}x (floor {f['floor_seconds']:.2f} s)   {goal(fmt + '_vs_floor')}"]
    return out


def _reread_lines(many: dict, goal: Callable[[str], str]) -> list[str]:
    if not many["available"]:
        return [f"cached re-read of many files: {many['note']}"]
    what = f"cached re-read, {many['files']:,} unchanged files"
    return [f"{what:<38}{many['seconds']:>9.3f} s   (CPU {many['cpu_seconds']:.3f} s; filled in "
            f"{many['fill_seconds']:.2f} s)   {goal('reread_seconds')}",
            *_memory_lines(many["memory"], "  peak memory of the re-read", "peak_over_frame", "x the frame",
                           goal("reread_peak_over_frame"))]


def _memory_lines(mem: dict, what: str, key: str, unit: str, verdict: str) -> list[str]:
    def shown(m: dict) -> str:
        value = "n/a (below the peak of the imports)" if m.get(key) is None else f"{m[key]:.1f} {unit}"
        return (f"{value:>24}   (frame {m['frame_bytes_per_message']:.1f} bytes/message, "
                f"resident {m['resident_bytes_per_message']:.0f})   {verdict}")
    return [_figure_row(what, mem, shown)]
