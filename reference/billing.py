"""The billing rules of ``panto_analytics.outcomes.billing``, stated as a plain loop over one session's calls.

Hand-checkable on purpose: one call at a time, no frames, no vectorization.
``messages`` is a list of dicts (one session, in ``seq`` order) with ``seq``,
``role``, ``has_summary``, ``model``, ``timestamp_ms`` (or None), ``input``,
``output``, ``cache_read``, ``cache_write`` and ``cache_write_1h`` (None on
messages without usage). ``events`` is one replay key's events of that
session: dicts with ``event``, ``trigger_seq``, ``summarized_tokens`` and
``request_bytes``.
"""
from __future__ import annotations

__all__ = ["annotate", "calls_of", "check_rule", "simulate", "split", "summarizer"]

FIVE_MINUTES_MS = 5 * 60 * 1000
ONE_HOUR_MS = 60 * 60 * 1000
BYTES_PER_TOKEN = 4


def calls_of(messages: list[dict]) -> list[dict]:
    """The API calls (assistant messages with all four counters), each with its latest recorded summary before it."""
    calls = []
    anchor = -1
    for m in messages:
        if m["has_summary"]:
            anchor = m["seq"]
        counters = (m["input"], m["output"], m["cache_read"], m["cache_write"])
        if m["role"] == "assistant" and all(c is not None for c in counters):
            w1h = min(m.get("cache_write_1h") or 0, m["cache_write"])
            calls.append({**m, "anchor": anchor, "w1h": w1h, "w5m": m["cache_write"] - w1h,
                          "prompt": m["input"] + m["cache_read"] + m["cache_write"]})
    return calls


def annotate(calls: list[dict]) -> None:
    """Add, per call: the previous call to the same model, the head, the write kind, freshness."""
    writes = any(c["cache_write"] > 0 for c in calls)
    last_of_model: dict = {}
    head_of_model: dict = {}
    one_hour_of_model: dict = {}
    for c in calls:
        model = c["model"]
        prev = last_of_model.get(model)
        if prev is None:
            head_of_model[model] = c["cache_read"]
            one_hour_of_model[model] = False
        if c["cache_write"] > 0:
            one_hour_of_model[model] = c["w1h"] > 0
        c["writes"] = writes
        c["prev"] = prev
        c["head"] = head_of_model[model]
        c["one_hour"] = one_hour_of_model[model]
        if prev is None or c["timestamp_ms"] is None or prev["timestamp_ms"] is None:
            c["fresh"] = True
        else:
            lifetime = ONE_HOUR_MS if prev["one_hour"] else FIVE_MINUTES_MS
            c["fresh"] = c["timestamp_ms"] - prev["timestamp_ms"] <= lifetime
        last_of_model[model] = c


def split(prompt: int, recorded_input: int, writes: bool, candidate: int) -> tuple[int, int, int]:
    """(input, cache_read, cache_write) of a prompt, given what the cache holds for it."""
    tail = min(recorded_input, prompt) if writes else 0
    read = min(max(candidate, 0), prompt - tail)
    write = prompt - tail - read if writes else 0
    return prompt - read - write, read, write


def check_rule(messages: list[dict]) -> list[dict]:
    """The rule on the recorded calls, no compaction: per call, the predicted read and write."""
    calls = calls_of(messages)
    annotate(calls)
    out = []
    shrink_seen: set = set()
    for c in calls:
        prev = c["prev"]
        first = prev is None
        restart = first
        if not first and c["anchor"] > -1 and c["prompt"] < prev["prompt"]:
            key = (c["model"], c["anchor"])
            if key not in shrink_seen:
                shrink_seen.add(key)
                restart = True
        if not c["fresh"]:
            candidate = 0 if c["writes"] else c["head"]
        elif restart:
            candidate = c["head"]
        else:
            tail = min(prev["input"], prev["prompt"]) if c["writes"] else 0
            candidate = prev["prompt"] - tail
        _, read, write = split(c["prompt"], c["input"], c["writes"], candidate)
        out.append({"seq": c["seq"], "predicted_read": read, "predicted_write": write, "first": first})
    return out


def simulate(messages: list[dict], events: list[dict], summary_tokens: int) -> list[dict]:
    """Every call after the first event's trigger, as the replay bills it (None when there is no event)."""
    calls = calls_of(messages)
    annotate(calls)
    events = sorted(events, key=lambda e: e["trigger_seq"])
    if not events:
        return []
    anchor_at = {c["seq"]: c["anchor"] for c in calls}
    # Tokens summarized since the latest restart, through each event.
    summarized_through = {}
    for e in events:
        epoch = anchor_at[e["trigger_seq"]]
        summarized_through[e["event"]] = sum(o["summarized_tokens"] for o in events
                                             if anchor_at[o["trigger_seq"]] == epoch
                                             and o["trigger_seq"] <= e["trigger_seq"])
    out = []
    for c in calls:
        if c["seq"] <= events[0]["trigger_seq"]:
            continue
        latest = [e for e in events if e["trigger_seq"] < c["seq"]][-1]
        row = {"seq": c["seq"], "event": latest["event"], "model": c["model"]}
        if c["anchor"] > latest["trigger_seq"]:  # a recorded summary restarted the state: as recorded
            row.update(compacted=False, input=c["input"], output=c["output"], cache_read=c["cache_read"],
                       cache_write_5m=c["w5m"], cache_write_1h=c["w1h"])
            out.append(row)
            continue
        summarized = summarized_through[latest["event"]]
        prompt = max(c["prompt"] - summarized, 0) + summary_tokens
        prev = c["prev"]
        if not c["fresh"]:
            candidate = 0 if c["writes"] else c["head"]
        elif prev is None or prev["seq"] <= latest["trigger_seq"]:
            candidate = c["head"]  # the first call after the compaction: only the stable head is cached
        else:
            prev_prompt = max(prev["prompt"] - summarized, 0) + summary_tokens
            prev_tail = min(prev["input"], prev_prompt) if c["writes"] else 0
            candidate = prev_prompt - prev_tail
        inp, read, write = split(prompt, c["input"], c["writes"], candidate)
        row.update(compacted=True, input=inp, output=c["output"], cache_read=read,
                   cache_write_5m=0 if c["one_hour"] else write, cache_write_1h=write if c["one_hour"] else 0)
        out.append(row)
    return out


def summarizer(messages: list[dict], events: list[dict], simulated: list[dict], summary_tokens: int,
               cached: bool) -> list[dict]:
    """One summarizer call per event."""
    calls = {c["seq"]: c for c in calls_of(messages)}
    writes = any(c["cache_write"] > 0 for c in calls.values())
    billed = {r["seq"]: r for r in simulated}
    out = []
    for e in events:
        trigger = calls[e["trigger_seq"]]
        row = {"event": e["event"], "model": trigger["model"], "output": summary_tokens, "cache_write_5m": 0,
               "cache_write_1h": 0}
        if cached:
            b = billed.get(e["trigger_seq"])
            if b is not None and b["compacted"]:
                prompt = b["input"] + b["cache_read"] + b["cache_write_5m"] + b["cache_write_1h"]
                uncached = b["input"]
            else:
                prompt, uncached = trigger["prompt"], trigger["input"]
            left = prompt - uncached if writes else prompt
            row.update(input=prompt + trigger["output"] - left, cache_read=left)
        else:
            size = e["request_bytes"]
            row.update(input=None if size is None else -(-size // BYTES_PER_TOKEN), cache_read=0)
        out.append(row)
    return out
