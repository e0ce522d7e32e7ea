"""What billing adds to a replay: ``replay`` against ``replay(..., prices=...)``, side by side in fresh processes.

``python -m benchmarks.replay_cost --sessions 1000 --window 64k`` writes a
synthetic corpus (:func:`benchmarks.synth.write_corpus`) and a LiteLLM price
file that prices its models, then runs, alternately and each in a fresh
Python process, the same replay without and with the bill (the process times
the replay call only, after reading the corpus), and prints the best of
``--repeat`` runs of each, their ratio and the load average. Timings on a
shared machine are noisy: compare the best runs, and read the load.
``--in-process`` times both replays alternately in one process, and the bill
alone (``bill_replay_result`` on the replay without it), the steadier figure.

``python -m benchmarks.replay_cost --cache-rule PATH...`` prints instead the
cache rule's check on recorded sessions (:func:`panto_analytics.outcomes.billing.check_cache_rule`):
per format, the calls, the share whose predicted cache read and write are
both within 1% of the recorded prompt, the naive rule's share, and why the
others missed.
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

__all__ = ["cache_rule_table", "main", "time_side_by_side"]

_CHILD = """
import sys, time, panto_analytics as pa
path, prices, window, budgets, policies = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
messages = pa.read_sessions([path], cache=False)
budgets = [int(b) for b in budgets.split(",")]
policy = policies.split(",") if policies else None
table = pa.outcomes.load_prices(prices) if prices != "-" else None
runs = []
for _ in range(2):
    start = time.perf_counter()
    result = pa.replay(messages, budgets, window=window, policy=policy, prices=table)
    runs.append(time.perf_counter() - start)
print(runs[0], runs[1], result.events.height)
"""


def _write_prices(folder: Path, models: list[str]) -> Path:
    """A LiteLLM price file pricing ``models`` at $3 / $15 per MTok, $0.30 reads, $3.75 writes."""
    rates = {"input_cost_per_token": 3e-6, "output_cost_per_token": 15e-6, "cache_read_input_token_cost": 3e-7,
             "cache_creation_input_token_cost": 3.75e-6}
    path = folder / "prices.json"
    path.write_text(json.dumps({m: rates for m in models}))
    return path


def time_side_by_side(corpus: Path, prices: Path, *, window: int, budgets: list[int], policies: list[str],
                      repeat: int) -> dict:
    """Best seconds, without and with prices, each run in a fresh process, alternating: the whole ``replay``
    command (reading the corpus, the replay, the table), the replay call the first time in its process, and
    the second time (warm)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path.cwd()), os.environ.get("PYTHONPATH", "")])}
    times: dict[str, list[tuple[float, float, float]]] = {"plain": [], "cost": []}
    events = 0
    cli = [str(Path(sys.executable).parent / "panto-analytics"), "replay", str(corpus), "--no-cache", "-w", str(window),
           "-b", ",".join(map(str, budgets)), *(f"--policy={p}" for p in policies), "-o", os.devnull]
    for _ in range(repeat):
        for kind, price_arg in (("plain", "-"), ("cost", str(prices))):
            start = time.perf_counter()
            subprocess.run([*cli, *(["--prices", price_arg] if kind == "cost" else [])], check=True,
                           capture_output=True, env=env)
            command = time.perf_counter() - start
            out = subprocess.run([sys.executable, "-c", _CHILD, str(corpus), price_arg, str(window),
                                  ",".join(map(str, budgets)), ",".join(policies)],
                                 check=True, capture_output=True, text=True, env=env).stdout.split()
            times[kind].append((command, float(out[0]), float(out[1])))
            events = int(out[2])
    best = {k: [min(t[i] for t in v) for i in range(3)] for k, v in times.items()}
    return {"plain": best["plain"], "cost": best["cost"], "ratios": [c / p for c, p in zip(best["cost"], best["plain"])],
            "events": events, "load": os.getloadavg()}


def _in_process(corpus: Path, prices: Path, args: argparse.Namespace) -> None:
    import panto_analytics as pa
    from panto_analytics.policy.compaction.priced import bill_replay_result

    messages = pa.read_sessions([corpus], cache=False)
    table = pa.outcomes.load_prices(prices)
    budgets = [int(b) for b in pa.budgets.parse_budgets(args.budgets)]
    policy = args.policy or None
    plain, cost, bill = [], [], []
    for _ in range(args.repeat):
        for runs, priced in ((plain, None), (cost, table)):
            start = time.perf_counter()
            result = pa.replay(messages, budgets, window=args.window, policy=policy, prices=priced)
            runs.append(time.perf_counter() - start)
        # The bill alone, on the replay without it: what --cost adds, less noisy than the difference of two runs.
        unbilled = pa.replay(messages, budgets, window=args.window, policy=policy)
        start = time.perf_counter()
        bill_replay_result(unbilled, messages, table)
        bill.append(time.perf_counter() - start)
    load = os.getloadavg()
    print(f"{args.sessions} sessions ({messages.height:,} messages), window {args.window:,}, budgets {args.budgets}: "
          f"{result.events.height:,} events; best of {args.repeat}, in one process")
    print(f"the bill alone {min(bill) * 1000:.1f} ms: (replay call + bill) / replay call "
          f"{(min(plain) + min(bill)) / min(plain):.2f}x")
    print(f"replay call {min(plain):.3f} s, with --cost {min(cost):.3f} s: {min(cost) / min(plain):.2f}x; "
          f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")


def cache_rule_table(paths: list[str]):
    """Per source format: calls, first calls, checked, within 1% (the rule and the naive one), and the misses."""
    import polars as pl

    import panto_analytics as pa
    from panto_analytics.outcomes.billing import check_cache_rule

    check = check_cache_rule(pa.read_sessions(paths, skip_invalid=True, cache=False))
    table = check.group_by("source_format").agg(
        calls=pl.len(), first=pl.col("first").sum(), checked=(~pl.col("first")).sum(),
        within=(pl.col("within") & ~pl.col("first")).sum(), naive=(pl.col("naive_within") & ~pl.col("first")).sum(),
    ).with_columns(share=pl.col("within") / pl.col("checked"), naive_share=pl.col("naive") / pl.col("checked"))
    misses = check.filter(~pl.col("within"), ~pl.col("first")).group_by("source_format", "reason").len()
    return table.sort("source_format"), misses.sort("source_format", "len", descending=[False, True])


def main(argv: list[str] | None = None) -> None:
    import panto_analytics as pa

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--window", type=pa.budgets.parse_budget, default=64_000)
    parser.add_argument("--budgets", default="8k,20k,50k")
    parser.add_argument("--policy", action="append", default=[])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--in-process", action="store_true",
                        help="time both replays alternately in this process (best of --repeat), not in fresh ones")
    parser.add_argument("--cache-rule", nargs="+", metavar="PATH", help="check the cache rule on these recordings")
    args = parser.parse_args(argv)
    if args.cache_rule:
        import polars as pl
        with pl.Config(tbl_rows=50, tbl_cols=20, tbl_width_chars=200):
            for frame in cache_rule_table(args.cache_rule):
                print(frame)
        print(f"load average {os.getloadavg()}")
        return
    from .synth import write_corpus

    with tempfile.TemporaryDirectory(prefix="panto-replay-cost-") as tmp:
        folder = Path(tmp)
        write_corpus(folder / "corpus", args.sessions, seed=args.seed)
        models = pa.read_sessions([folder / "corpus"], cache=False)["model"].unique().drop_nulls().to_list()
        prices = _write_prices(folder, [str(m) for m in models])
        if args.in_process:
            _in_process(folder / "corpus", prices, args)
            return
        row = time_side_by_side(folder / "corpus", prices, window=args.window,
                                budgets=[int(b) for b in pa.budgets.parse_budgets(args.budgets)],
                                policies=args.policy, repeat=args.repeat)
    print(f"{args.sessions} sessions, window {args.window:,}, budgets {args.budgets}, "
          f"policies {','.join(args.policy) or 'libpanto'}: {row['events']:,} events; best of {args.repeat}, "
          f"fresh processes")
    for i, what in enumerate(("replay command (read + replay + table)", "replay call, first in its process",
                              "replay call, warm")):
        print(f"{what}: {row['plain'][i]:.3f} s, with --cost {row['cost'][i]:.3f} s: {row['ratios'][i]:.2f}x")
    print(f"load average {row['load'][0]:.1f} {row['load'][1]:.1f} {row['load'][2]:.1f}")


if __name__ == "__main__":
    main()
