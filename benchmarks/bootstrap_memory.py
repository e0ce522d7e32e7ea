"""Peak memory of the seeded bootstrap alone, against the size of its passes.

``python -m benchmarks.bootstrap_memory DS --budget 20k --rows-per-pass 2000000 250000`` writes the split
rows of the dataset ``DS`` at one budget to a Parquet file (as ``recommend`` does over a dataset, the
sessions with messages only, each session's hash in place of its id), then, in a fresh process for each
pass size, reads them back lazily and runs
:func:`~panto_analytics.analysis.choose.from_splits.with_split_intervals` (``--resamples``, seed 0) with
:data:`~panto_analytics.analysis.choose.bootstrap.ROWS_PER_PASS` set to that size. Each row of the table:
the process's peak RSS (``VmHWM``) before and after the bootstrap, the difference (what the bootstrap
added) and its seconds. No figure here is a test.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["main", "measure"]

_CHILD = """
import json, sys, time
import polars as pl
from panto_analytics.analysis.choose import bootstrap
from panto_analytics.analysis.choose.from_splits import choose_from_coverage, coverage_table, with_split_intervals
from panto_analytics.analysis.choose.rule import Rule
path, per_pass, resamples = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def hwm():  # this process's peak RSS, MiB (VmHWM: its own, where ru_maxrss keeps the parent's across exec)
    line = next(x for x in open("/proc/self/status") if x.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024
bootstrap.ROWS_PER_PASS = per_pass
lf = pl.scan_parquet(path)
rule = Rule().on_splits()
chosen = choose_from_coverage(coverage_table(lf, rule), rule)
before = hwm()
t = time.perf_counter()
with_split_intervals(chosen, lf, resamples=resamples, seed=0)
print(json.dumps({"rows_per_pass": per_pass, "rows": lf.select(pl.len()).collect().item(), "before_mib": before,
                  "peak_mib": hwm(),
                  "seconds": time.perf_counter() - t}))
"""


def measure(splits: Path, rows_per_pass: int, resamples: int) -> dict:
    """The bootstrap over ``splits`` in a fresh process: its peak RSS before and after (MiB), its seconds."""
    out = subprocess.run([sys.executable, "-c", _CHILD, str(splits), str(rows_per_pass), str(resamples)],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> list[dict]:
    from panto_analytics.budgets import parse_budgets
    from panto_analytics.dataset._streaming import write_splits

    ap = argparse.ArgumentParser(prog="python -m benchmarks.bootstrap_memory", description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("--budget", default="20k", help="the one budget of the split rows (default 20k)")
    ap.add_argument("--rows-per-pass", type=int, nargs="+", default=[2_000_000, 250_000])
    ap.add_argument("--resamples", type=int, default=200)
    a = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="panto-bootstrap-") as tmp:
        splits = Path(tmp) / "splits.parquet"
        write_splits(a.dataset, parse_budgets(a.budget), splits, with_sessions=False, hashed=True)
        for per_pass in a.rows_per_pass:  # one fresh process per pass size
            row = measure(splits, per_pass, a.resamples)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    print("| rows | rows per pass | peak before (MiB) | peak after (MiB) | added (MiB) | seconds |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['rows']:,} | {r['rows_per_pass']:,} | {r['before_mib']:,.0f} | {r['peak_mib']:,.0f} | "
              f"{r['peak_mib'] - r['before_mib']:,.0f} | {r['seconds']:.1f} |")
    return rows


if __name__ == "__main__":
    main()
