"""An independent bill of Claude Code transcripts: the raw records, call by call, in plain Python.

Written from the records alone, without the package's readers, frames or ``bill``, so that
``panto-analytics cost --by day`` can be checked against it (``tests/outcomes/test_real_bill.py``). The rules,
each stated once:

- an API call is an ``assistant`` record that is not Claude Code's own (``message.model`` ``<synthetic>``);
  records of one call share ``message.id`` and ``requestId`` (a record without ``message.id`` is a call of its
  own); a record whose ``uuid`` came before in its file is a copy, skipped;
- a call's usage is the usage of its last record that has one, wherever that record is in the file; its day
  is the UTC date of its first record's ``timestamp``;
- its counters: ``input_tokens``, ``output_tokens``, ``cache_read_input_tokens``,
  ``cache_creation_input_tokens`` (all writes) and ``cache_creation.ephemeral_1h_input_tokens`` (the 1-hour
  part); where the first four are all zero and ``usage.iterations`` lists steps, the sum of the steps';
- its price: genai-prices' own ``calc_price`` on the model id as recorded (its matcher, its tier rule), the
  model id ending in ``:free`` at $0; a call whose counters are all zero, or whose model ``calc_price`` cannot
  find, has no cost (None), and a day with such a call has no total.

>>> import json, tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "s.jsonl"
>>> rec = lambda uid, out: {"type": "assistant", "uuid": uid, "requestId": "r1", "timestamp": "2026-11-01T10:00:00Z",
...     "message": {"id": "m1", "model": "claude-opus-4-5-20251101", "usage": {"input_tokens": 1000, "output_tokens": out}}}
>>> _ = p.write_text("".join(json.dumps(r) + "\\n" for r in (rec("a", 1), {"type": "user", "uuid": "u"}, rec("b", 400))))
>>> [(c.day, c.output, round(c.cost, 6)) for c in calls([p])]   # $5 in, $25 out per MTok
[('2026-11-01', 400, 0.015)]
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

__all__ = ["Call", "by_day", "calls"]

_COUNTERS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


@dataclass
class Call:
    """One API call: its model, day, counters and cost (None: unknown)."""

    model: str | None
    day: str
    input: int
    output: int
    cache_read: int
    cache_write: int
    cache_write_1h: int
    cost: float | None = None


def _counters(usage: dict[str, Any]) -> tuple[int, int, int, int, int]:
    def one_hour(u: dict[str, Any]) -> int:
        split = u.get("cache_creation")
        return (split.get("ephemeral_1h_input_tokens") or 0) if isinstance(split, dict) else 0

    top = [usage.get(k) or 0 for k in _COUNTERS]
    steps = usage.get("iterations")
    if not any(top) and isinstance(steps, list) and steps:
        sums = [sum(step.get(k) or 0 for step in steps) for k in _COUNTERS]
        return sums[0], sums[1], sums[2], sums[3], sum(one_hour(step) for step in steps)
    return top[0], top[1], top[2], top[3], one_hour(usage)


def _cost(call: Call) -> float | None:
    from genai_prices import Usage, calc_price

    if not (call.input or call.output or call.cache_read or call.cache_write):
        return None
    if call.model is None:
        return None
    if call.model.endswith(":free"):
        return 0.0
    usage = Usage(input_tokens=call.input + call.cache_read + call.cache_write, output_tokens=call.output,
                  cache_read_tokens=call.cache_read, cache_write_tokens=call.cache_write,
                  cache_write_1h_tokens=call.cache_write_1h)
    try:
        return float(calc_price(usage, call.model).total_price)
    except LookupError:
        return None


def calls(paths: Iterable[Path]) -> list[Call]:
    """Every API call of the transcripts, billed."""
    out: list[Call] = []
    for path in paths:
        seen: set[str] = set()
        found: dict[Any, tuple[dict[str, Any], dict[str, Any] | None]] = {}   # key -> (first record, last usage)
        for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines()):
            if not line.strip():
                continue
            rec = json.loads(line)
            if not isinstance(rec, dict) or rec.get("type") != "assistant":
                continue
            uid = rec.get("uuid")
            if isinstance(uid, str):
                if uid in seen:
                    continue
                seen.add(uid)
            message = rec.get("message") or {}
            if message.get("model") == "<synthetic>":
                continue
            key = (message["id"], rec.get("requestId")) if isinstance(message.get("id"), str) else ("line", n)
            first, usage = found.get(key, (rec, None))
            if isinstance(message.get("usage"), dict):
                usage = message["usage"]
            found[key] = (first, usage)
        for first, usage in found.values():
            counters = _counters(usage or {})
            call = Call(first["message"].get("model"), first["timestamp"][:10], *counters)
            call.cost = _cost(call)
            out.append(call)
    return out


def by_day(billed: list[Call]) -> dict[str, dict[str, Any]]:
    """Per UTC day: calls, token sums, the cost (None where a call has none) and the priced part."""
    days: dict[str, dict[str, Any]] = {}
    for c in billed:
        d = days.setdefault(c.day, {"api_calls": 0, "input": 0, "output": 0, "cache_read": 0, "cache_write": 0,
                                    "cache_write_1h": 0, "priced": Decimal(0), "unknown": 0})
        d["api_calls"] += 1
        for k in ("input", "output", "cache_read", "cache_write", "cache_write_1h"):
            d[k] += getattr(c, k)
        if c.cost is None:
            d["unknown"] += 1
        else:
            d["priced"] += Decimal(repr(c.cost))
    for d in days.values():
        d["priced_cost_usd"] = float(d.pop("priced"))
        d["cost_usd"] = None if d["unknown"] else d["priced_cost_usd"]
    return dict(sorted(days.items()))
