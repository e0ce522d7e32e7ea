"""Time each compaction policy's replay beside libpanto's, side by side in one run (min of repeats).

``python -m benchmarks.policy_bench --sessions 500 --window 64k`` writes a
synthetic corpus (:func:`benchmarks.synth.write_corpus`), reads it once, then
for each policy times ``replay_policies`` (one setting) and libpanto's own
``replay`` at one budget, and prints seconds, events and the ratio to
libpanto. Timings on a shared machine are noisy: compare the ratios.
"""
from __future__ import annotations

import argparse
import tempfile

import panto_analytics as pa
from panto_analytics.policy.compaction.any_policy import replay_policies
from panto_analytics.policy.compaction.policies import POLICIES

from .synth import write_corpus
from .timing import best_of

__all__ = ["main", "time_policies"]


def time_policies(messages, window: int, repeat: int = 3) -> list[dict]:
    """One dict per policy: seconds (min of ``repeat``), events, and the ratio to libpanto at a 20k budget."""
    base, base_s = best_of(repeat, lambda: pa.replay(messages, [20_000], window=window, summary_tokens=2_000))
    rows = [{"policy": "libpanto", "seconds": base_s, "events": base.events.height, "vs_libpanto": 1.0}]  # type: ignore[attr-defined]
    for name in POLICIES:
        if name == "libpanto":
            continue
        result, seconds = best_of(repeat, lambda n=name: replay_policies(messages, [n], window=window, summary_tokens=2_000))
        rows.append({"policy": name, "seconds": seconds, "events": result.events.height,  # type: ignore[attr-defined]
                     "vs_libpanto": seconds / base_s})
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--window", type=pa.budgets.parse_budget, default=64_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="panto-policy-bench-") as tmp:
        write_corpus(tmp, args.sessions, seed=args.seed)
        messages = pa.read_sessions([tmp], cache=False)
    print(f"{args.sessions} sessions, {messages.height:,} messages, window {args.window:,}, min of {args.repeat}")
    for row in time_policies(messages, args.window, args.repeat):
        print(f"{row['policy']:<14} {row['seconds']:8.3f} s {row['events']:>8,} events {row['vs_libpanto']:6.2f}x libpanto")


if __name__ == "__main__":
    main()
