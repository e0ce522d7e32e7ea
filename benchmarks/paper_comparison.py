"""The Complexity Trap's comparison on recorded sessions (issue 29, item 11).

JetBrains Research ("The Complexity Trap", arXiv 2508.21433) ran Qwen3-Coder 480B on SWE-bench Verified with
no context management, observation masking (the last M = 10 tool outputs kept, older ones replaced by a
placeholder) and an LLM summary every 21 turns keeping the last 10: 53.4% solved at $1.29 per instance,
54.8% at $0.61 and 53.8% at $0.64, so both halve the cost of no management. This replays the same three
and libpanto at a budget over recorded sessions, with prompt caching as the recordings were billed, and
prints one table: per policy, the sessions priced, their replayed cost and its ratio to the recorded (no
management) cost over the same sessions, and what the policy loses (orphan rate, re-fetch tokens).

    python -m benchmarks.paper_comparison ../shared/realdata --window 200k --budget 20k

Only sessions every one of whose calls is priced are summed, the same sessions for every row, so the
ratios compare like with like.
"""
from __future__ import annotations

import argparse
import sys

import polars as pl

import panto_analytics as pa
from panto_analytics.budgets import parse_budget

__all__ = ["PAPER", "POLICIES", "comparison", "main", "markdown"]

#: The policies compared, as the paper set them (libpanto at the budget given).
POLICIES = ("observation-masking:m=10", "summarize-every:n=21,keep=10", "libpanto")

#: The paper's cost per instance (Qwen3-Coder 480B, SWE-bench Verified), by the name the replay gives each
#: policy (m=10 and n=21, keep=10 are the policies' defaults, so their names carry no settings).
PAPER = {"no management": 1.29, "observation-masking": 0.61, "summarize-every": 0.64}


def comparison(messages: pl.DataFrame, *, window: int, budget: int, prices: object = True) -> pl.DataFrame:
    """One row per policy and one for no management: sessions, compactions, cost over the priced sessions,
    its ratio to the recorded cost of the same sessions, orphan rate and re-fetch tokens."""
    replayed = pa.replay(messages, [budget], window=window, policy=list(POLICIES), prices=prices)
    lost = pa.loss(messages, replayed).sessions.select(
        "policy", "session_id", "budget", "window_calls", "orphan_calls", "refetch_tokens")
    sessions = replayed.sessions.join(lost, on=["policy", "session_id", "budget"], how="left")
    # The sessions priced under every policy: one set of sessions behind every figure.
    priced = (sessions.group_by("session_id").agg(ok=pl.col("total_cost_usd").is_not_null().all())
              .filter("ok").select("session_id"))
    same = sessions.join(priced, on="session_id")
    # The recorded bill of each session, once (every policy's row carries it).
    recorded = same.unique("session_id").select(pl.col("recorded_cost_usd").sum()).item()
    rows = (same.group_by("policy", maintain_order=True).agg(
        sessions=pl.len(), compacted=(pl.col("n_compactions") > 0).sum(), compactions=pl.col("n_compactions").sum(),
        cost_usd=pl.col("total_cost_usd").sum(), window_calls=pl.col("window_calls").sum(),
        orphan_calls=pl.col("orphan_calls").sum(), refetch_tokens=pl.col("refetch_tokens").sum()))
    none = pl.DataFrame({"policy": ["no management"], "sessions": [priced.height], "compacted": [0], "compactions": [0],
                         "cost_usd": [recorded], "window_calls": [0], "orphan_calls": [0], "refetch_tokens": [0]})
    table = pl.concat([none, rows], how="vertical_relaxed")
    paper = pl.DataFrame({"policy": list(PAPER), "paper_usd": list(PAPER.values())})
    return (table.join(paper, on="policy", how="left", maintain_order="left")
            .with_columns(cost_ratio=pl.col("cost_usd") / recorded if recorded else pl.lit(None, pl.Float64),
                          paper_ratio=pl.col("paper_usd") / PAPER["no management"],
                          orphan_rate=pl.when(pl.col("window_calls") > 0)
                          .then(pl.col("orphan_calls") / pl.col("window_calls")))
            .select("policy", "sessions", "compacted", "compactions", "cost_usd", "cost_ratio", "paper_ratio",
                    "orphan_rate", "refetch_tokens"))


def markdown(table: pl.DataFrame) -> str:
    """``table`` as a Markdown table, as docs/replay.md shows it."""
    def cell(v: object, name: str) -> str:
        if v is None:
            return "-"
        if name == "cost_usd":
            return f"${v:,.2f}"
        if isinstance(v, float):
            return f"{v:.2f}" if "ratio" in name else f"{v:.3f}"
        return f"{v:,}" if isinstance(v, int) else str(v)

    lines = ["| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(cell(v, c) for v, c in zip(row, table.columns)) + " |" for row in table.iter_rows()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.paper_comparison", description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--window", default="200k")
    parser.add_argument("--budget", default="20k")
    parser.add_argument("--prices", default=None, help="a LiteLLM price file [default: genai-prices]")
    args = parser.parse_args(argv)
    messages = pa.read_sessions(args.paths, skip_invalid=True)
    table = comparison(messages, window=parse_budget(args.window), budget=parse_budget(args.budget),
                       prices=args.prices or True)
    print(markdown(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
