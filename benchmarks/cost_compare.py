"""``cost`` against the tool users trust for it, and its speed.

- :func:`compare_ccusage`: on a Claude Code projects tree, ``pa.costs(...,
  by="day")`` against ``ccusage daily --json --offline -z UTC`` (ccusage
  20.0.24, from npm), day by day: equal token totals, and costs within
  max($0.01, 0.1%) (the goal). Like for like, both bill with ccusage's own
  prices. ccusage 20.0.24 is a native binary that embeds its LiteLLM
  prices (the ``--offline`` table, in no readable form), so they are read
  back from it: for each model of the tree, one call of each counter, once
  below 200k tokens and once above, on a day of its own, billed by ccusage;
  each rate is the cost divided by the tokens (the part above 200k for the
  ``*_above_200k_tokens`` rate; the 1-hour write rate from a call whose
  writes Claude Code's ``cache_creation`` split puts in the 1-hour cache).
  They are written as a LiteLLM price file, which ``cost --prices`` reads.
  The genai-prices total is reported beside.
- :func:`cost_speed`: ``pa.costs(by="day")`` and the bare ``bill`` over a
  synthetic message frame of a million messages.

Neither timing is a test. ``python -m benchmarks.cost_compare`` runs both.

>>> probe_days(["m"])[("m", "input", "below")]
'2030-01-01'
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

import panto_analytics as pa
from panto_analytics.frame.schema import MESSAGE_SCHEMA
from panto_analytics.outcomes.cost import UnpricedWarning, bill, call_tokens
from panto_analytics.outcomes.prices import TIER, load_prices

from .ingest_scale import CCUSAGE_HOWTO, CCUSAGE_VERSION, ccusage_binary
from .timing import best_of

__all__ = ["PROBE_TOKENS", "compare_ccusage", "cost_speed", "format_comparison", "probe_days", "probe_prices"]

#: Tokens of a probe call: below the tier, and above it (200k at the base rate, the rest at the higher one).
PROBE_TOKENS = {"below": 100_000, "above": 1_000_000}

#: The counters a probe call carries, by their LiteLLM field and Anthropic usage key.
_COUNTERS = {"input": ("input_cost_per_token", "input_tokens"),
             "output": ("output_cost_per_token", "output_tokens"),
             "cache_read": ("cache_read_input_token_cost", "cache_read_input_tokens"),
             "cache_write": ("cache_creation_input_token_cost", "cache_creation_input_tokens"),
             "cache_write_1h": ("cache_creation_input_token_cost_above_1hr", "cache_creation_input_tokens")}

_FIRST_PROBE_DAY = date(2030, 1, 1)

#: The goal: per day, costs within max($0.01, 0.1%).
ABS_TOLERANCE = 0.01
REL_TOLERANCE = 0.001


def probe_days(models: list[str]) -> dict[tuple[str, str, str], str]:
    """The UTC day of each probe call, one day per (model, counter, below|above)."""
    keys = [(m, c, size) for m in models for c in _COUNTERS for size in PROBE_TOKENS]
    return {key: (_FIRST_PROBE_DAY + timedelta(days=i)).isoformat() for i, key in enumerate(keys)}


def _ccusage_daily(binary: str, config_dir: Path) -> list[dict[str, Any]]:
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(config_dir), "NO_COLOR": "1"}
    out = subprocess.run([binary, "daily", "--json", "--offline", "-z", "UTC", "--breakdown"], env=env,
                         capture_output=True, check=True, timeout=600)
    return json.loads(out.stdout)["daily"]


def probe_prices(binary: str, models: list[str], workdir: Path) -> dict[str, dict[str, float]]:
    """ccusage's own per-token rates for ``models``, as a LiteLLM price table (models it cannot price: left out)."""
    days = probe_days(models)
    folder = workdir / "probe" / "projects" / "probe"
    folder.mkdir(parents=True)
    for i, ((model, counter, size), day) in enumerate(days.items()):
        usage: dict[str, Any] = {key: 0 for _, key in _COUNTERS.values()}
        usage[_COUNTERS[counter][1]] = PROBE_TOKENS[size]
        if counter == "cache_write_1h":  # Claude Code's split: every write of the call to the 1-hour cache
            usage["cache_creation"] = {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": PROBE_TOKENS[size]}
        record = {"type": "assistant", "uuid": f"p{i}", "parentUuid": None, "sessionId": f"probe-{i}",
                  "requestId": f"req-{i}", "timestamp": f"{day}T12:00:00.000Z", "cwd": "/probe",
                  "message": {"id": f"msg-{i}", "model": model, "role": "assistant", "type": "message",
                              "content": [{"type": "text", "text": "probe"}], "usage": usage}}
        # Compact JSON, as Claude Code writes it: ccusage skips a line with a space after its colons.
        (folder / f"probe-{i}.jsonl").write_text(json.dumps(record, separators=(",", ":")) + "\n")
    billed: dict[str, float] = {}
    for row in _ccusage_daily(binary, workdir / "probe"):
        for part in row.get("modelBreakdowns", []):
            billed[f"{row['period']}|{part['modelName']}"] = float(part["cost"])
    table: dict[str, dict[str, float]] = {}
    for model in models:
        entry: dict[str, float] = {}
        for counter, (field, _) in _COUNTERS.items():
            below = billed.get(f"{days[(model, counter, 'below')]}|{model}")
            above = billed.get(f"{days[(model, counter, 'above')]}|{model}")
            if below is None or above is None:
                continue
            base = below / PROBE_TOKENS["below"]
            high = (above - TIER * base) / (PROBE_TOKENS["above"] - TIER)
            entry[field] = base
            if abs(high - base) > 1e-9 * max(base, 1e-12):
                entry[f"{field}_above_200k_tokens"] = high
        if any(entry.values()):
            table[model] = entry
    return table


def _copy_tree(tree: Path, config_dir: Path) -> None:
    projects = config_dir / "projects"
    projects.mkdir(parents=True)
    for child in sorted(tree.iterdir()):
        target = projects / child.name
        if child.is_dir():
            shutil.copytree(child, target)
        elif child.suffix == ".jsonl":
            shutil.copy2(child, target)


def compare_ccusage(tree: Path, workdir: Path | None = None, binary: str | None = None) -> dict[str, Any]:
    """``pa.costs(by="day")`` against ccusage's daily report on the Claude Code tree ``tree``, day by day."""
    binary = binary or ccusage_binary()
    if binary is None:
        return {"available": False, "note": f"ccusage {CCUSAGE_HOWTO}"}
    try:
        version = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError) as e:
        return {"available": False, "note": f"ccusage failed: {e}"}
    if not tree.is_dir():
        return {"available": False, "note": f"no Claude Code tree at {tree}"}
    with tempfile.TemporaryDirectory(prefix="panto-cost-") as tmp:
        work = Path(workdir or tmp)
        config = work / "claude-config"
        _copy_tree(tree, config)
        t0 = time.perf_counter()
        try:
            theirs = _ccusage_daily(binary, config)
        except (OSError, subprocess.SubprocessError, ValueError, KeyError) as e:
            return {"available": False, "note": f"ccusage failed: {e}"}
        ccusage_seconds = time.perf_counter() - t0
        messages = pa.read_sessions(config / "projects", cache=False)
        raw_models = sorted(m for m in messages.filter(pl.col("input").is_not_null())["model"]
                            .cast(pl.String).unique().drop_nulls().to_list())
        table = probe_prices(binary, raw_models, work)
        price_file = work / "ccusage-prices.json"
        price_file.write_text(json.dumps(table, indent=1, sort_keys=True))
        prices = load_prices(price_file)
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as notes:
            warnings.simplefilter("always", UnpricedWarning)
            ours = pa.costs(messages, by="day", prices=prices, timezone="UTC")
        cost_seconds = time.perf_counter() - t0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnpricedWarning)
            genai = pa.costs(messages, prices=None)
    days = _by_day(theirs, ours)
    within = days.filter(pl.col("within")).height
    tokens_equal = days.filter(pl.col("tokens_equal")).height
    return {"available": True, "binary": binary, "version": version, "version_ok": version == CCUSAGE_VERSION,
            "tree": str(tree), "days": days, "n_days": days.height, "days_within": within,
            "days_tokens_equal": tokens_equal, "ours_total": float(days["ours_usd"].sum()),
            "ccusage_total": float(days["ccusage_usd"].sum()), "max_abs_diff": float(days["abs_diff"].max() or 0.0),
            "genai_total": genai["cost_usd"].item(), "genai_source": genai["price_source"].item(),
            "prices": table, "price_source": prices.source, "models": raw_models,
            "unpriced": [str(n.message) for n in notes], "ccusage_seconds": ccusage_seconds,
            "cost_seconds": cost_seconds}


def _by_day(theirs: list[dict[str, Any]], ours: pl.DataFrame) -> pl.DataFrame:
    cc = pl.DataFrame([{"day": r["period"], "ccusage_input": r["inputTokens"], "ccusage_output": r["outputTokens"],
                        "ccusage_cache_read": r["cacheReadTokens"], "ccusage_cache_write": r["cacheCreationTokens"],
                        "ccusage_usd": float(r["totalCost"])} for r in theirs],
                      schema={"day": pl.String, "ccusage_input": pl.Int64, "ccusage_output": pl.Int64,
                              "ccusage_cache_read": pl.Int64, "ccusage_cache_write": pl.Int64,
                              "ccusage_usd": pl.Float64})
    mine = ours.select(pl.col("day").cast(pl.String), pl.col("api_calls"),
                       pl.col("input").cast(pl.Int64), pl.col("output").cast(pl.Int64),
                       pl.col("cache_read").cast(pl.Int64),
                       (pl.col("cache_write_5m") + pl.col("cache_write_1h")).cast(pl.Int64).alias("cache_write"),
                       pl.col("cost_usd").fill_null(0.0).alias("ours_usd"), pl.col("unpriced_calls"))
    joined = mine.join(cc, on="day", how="full", coalesce=True).sort("day")
    diff = (pl.col("ours_usd").fill_null(0.0) - pl.col("ccusage_usd").fill_null(0.0)).abs()
    allowed = pl.max_horizontal(pl.lit(ABS_TOLERANCE), REL_TOLERANCE * pl.col("ccusage_usd").fill_null(0.0).abs())
    equal = pl.all_horizontal([pl.col(c).eq_missing(pl.col(f"ccusage_{c}"))
                               for c in ("input", "output", "cache_read", "cache_write")])
    return joined.with_columns(abs_diff=diff, within=diff <= allowed, tokens_equal=equal)


def format_comparison(r: dict[str, Any]) -> str:
    """The comparison as a few lines of text."""
    if not r["available"]:
        return f"cost vs ccusage: skipped: {r['note']}"
    lines = [f"cost vs ccusage {r['version']} (daily --json --offline -z UTC) on {r['tree']}",
             f"  days {r['n_days']}: within max($0.01, 0.1%) {r['days_within']}/{r['n_days']}, "
             f"token totals equal {r['days_tokens_equal']}/{r['n_days']}",
             f"  total: cost ${r['ours_total']:.6f}, ccusage ${r['ccusage_total']:.6f}, "
             f"largest daily difference ${r['max_abs_diff']:.6f}",
             f"  prices: ccusage's own, read back per model ({', '.join(r['models'])}) into {r['price_source']}",
             f"  with {r['genai_source']} (1-hour writes at their own rate, the cliff above 200k): "
             f"${r['genai_total']:.6f}" if r["genai_total"] is not None else
             f"  with {r['genai_source']}: some model unpriced (null)"]
    lines += [f"  note: {n}" for n in r["unpriced"]]
    return "\n".join(lines)


# --- speed ---------------------------------------------------------------------------------------------

#: Models of the synthetic frame: names genai-prices prices, and one it does not.
_SPEED_MODELS = ("claude-opus-4-5-20251101", "claude-sonnet-4-5", "claude-haiku-4-5-20251001", "gpt-5",
                 "house-model")


def speed_frame(n: int = 1_000_000, seed: int = 0) -> pl.DataFrame:
    """A synthetic message frame of ``n`` messages: 500 per session, every other one an API call."""
    rng = np.random.default_rng(seed)
    per = 500
    session = np.arange(n) // per
    seq = np.arange(n) % per
    call = seq % 2 == 1

    def usage(values: np.ndarray) -> pl.Series:
        return pl.Series(np.where(call, values, 0), dtype=pl.UInt32).set(pl.Series(~call), None)

    frame = pl.DataFrame({
        "session_id": pl.Series([f"s{i}" for i in range(session.max() + 1)]).gather(session),
        "seq": seq, "role": pl.Series(np.where(call, "assistant", "user")),
        "words": rng.integers(1, 400, n), "serialized_bytes": rng.integers(10, 4_000, n),
        "has_tool_result": np.zeros(n, bool), "has_summary": np.zeros(n, bool),
        "input": usage(rng.integers(0, 50, n)), "output": usage(rng.integers(1, 2_000, n)),
        "cache_read": usage(rng.integers(0, 250_000, n)), "cache_write": usage(rng.integers(0, 20_000, n)),
        "cache_write_1h": usage(rng.integers(0, 5_000, n)),
        "recorded_cost": pl.Series([None] * n, dtype=pl.Float32),
        "source_format": "claude-code",
        "model": pl.Series(_SPEED_MODELS).gather(session % len(_SPEED_MODELS)),
        "timestamp": pl.Series(1_780_000_000_000 + session * 3_600_000 + seq * 20_000)
        .cast(pl.Datetime("ms", "UTC")),
        "file": pl.Series([f"s{i}.jsonl" for i in range(session.max() + 1)]).gather(session),
        "line": seq + 1,
    })
    extra = {name: pl.lit(None, dtype) for name, dtype in MESSAGE_SCHEMA.items() if name not in frame.columns}
    return frame.with_columns(**extra).select(list(MESSAGE_SCHEMA)).cast(dict(MESSAGE_SCHEMA))  # type: ignore[arg-type]


def cost_speed(n: int = 1_000_000, repeat: int = 3) -> dict[str, Any]:
    """Best-of-``repeat`` seconds of ``pa.costs(by="day")``, ``by="session"`` and ``bill`` over ``n`` messages."""
    frame = speed_frame(n)
    prices = load_prices().covering(_SPEED_MODELS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnpricedWarning)
        _, by_day = best_of(repeat, pa.costs, frame, by="day", prices=prices)
        _, by_session = best_of(repeat, pa.costs, frame, by="session", prices=prices)
        calls = call_tokens(frame)
        _, bare = best_of(repeat, bill, calls, prices)
    return {"messages": n, "calls": calls.height, "by_day_seconds": by_day, "by_session_seconds": by_session,
            "bill_seconds": bare, "load_prices_seconds": best_of(1, load_prices)[1]}


def format_speed(r: dict[str, Any]) -> str:
    return (f"cost over {r['messages']:,} messages ({r['calls']:,} calls): by day {r['by_day_seconds']:.3f} s, "
            f"by session {r['by_session_seconds']:.3f} s, bill alone {r['bill_seconds']:.3f} s "
            f"(loading genai-prices: {r['load_prices_seconds']:.2f} s, once)")


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.cost_compare [TREE]``: the ccusage comparison (TREE: a Claude Code projects folder;
    default ../shared/realdata/claude-code), then the speed figure."""
    args = sys.argv[1:] if argv is None else argv
    repo = Path(__file__).resolve().parents[1]
    tree = Path(args[0]) if args else repo.parent / "shared" / "realdata" / "claude-code"
    result = compare_ccusage(tree)
    print(format_comparison(result))
    if result["available"]:
        with pl.Config(tbl_rows=100, tbl_cols=-1, tbl_width_chars=250):
            print(result["days"].select("day", "api_calls", "input", "ccusage_input", "output", "ccusage_output",
                                        "cache_read", "cache_write", "ours_usd", "ccusage_usd", "abs_diff"))
    print(format_speed(cost_speed()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
