"""A literal, sequential reference of the clearing policies (``policy/compaction/clearing_replay.py``).

One session at a time, one call at a time, as the sources state the edits:
Anthropic's ``clear_tool_uses_20250919`` (every request whose input passes
the trigger: clear the oldest tool results but the newest ``keep``, not the
excluded tools, and only if at least ``clear_at_least`` tokens go), SWE-agent's
``last_n_observations`` (every request: all observations but the last ``n``)
and opencode's prune (walk back from the last two turns summing outputs;
those past the protected total go, if more than the minimum does). Then each
edited call's usage, one call at a time, under the rule stated in
``cleared_usage``'s docstring.

A session is a list of message-frame rows (dicts with ``role``,
``has_tool_result``, ``has_summary``, the four usage counters, optionally
``cache_write_1h``, ``model``, ``line``/``file`` and ``refs``: a list of
``{"call", "kind", "tokens"}`` per tool call target, as the frame holds them).
A rule is a dict of :class:`~panto_analytics.policy.compaction.policies.clearing.ClearRule`'s fields.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["PLACEHOLDER", "TRIMMED", "CallEdit", "Use", "expected_clearing", "rule_edits", "saved"]

USAGE = ("input", "output", "cache_read", "cache_write")

#: The placeholder's tokens (``[Old tool result content cleared]``, 34 characters at 4 per token).
PLACEHOLDER = 9

#: A trimmed result's tokens (OpenClaw: its first and last 1,500 characters, ``\n...\n`` between them and an
#: 82-character note after: 3,087 characters at 4 per token, rounded up).
TRIMMED = 772


@dataclass
class Use:
    """One tool call: its message, its result's tokens (None: no result recorded) and its kinds."""

    msg: int
    tokens: int | None
    kinds: set[str] = field(default_factory=set)


def is_call(m: dict) -> bool:
    return m["role"] == "assistant" and all(m.get(c) is not None for c in USAGE)


def uses_of(msgs: list[dict]) -> list[Use]:
    """The session's tool calls in order: one per distinct ``call`` of a message's refs."""
    out: list[Use] = []
    for i, m in enumerate(msgs):
        seen: dict[int, Use] = {}
        for ref in m.get("refs") or []:
            if ref["call"] not in seen:
                seen[ref["call"]] = Use(i, ref["tokens"])
                out.append(seen[ref["call"]])
            seen[ref["call"]].kinds.add(ref["kind"])
    return out


def turn_starts(msgs: list[dict]) -> list[int]:
    """The messages that start a turn: a prompt (not a tool result, not a summary) whose nearest earlier message
    that is neither a system message nor a summary is not a user's."""
    starts = []
    for i, m in enumerate(msgs):
        if m["role"] != "user" or m["has_tool_result"] or m["has_summary"]:
            continue
        before = next((p for p in reversed(msgs[:i]) if p["role"] != "system" and not p["has_summary"]), None)
        if before is None or before["role"] != "user":
            starts.append(i)
    return starts


def inert_rows(msgs: list[dict]) -> set[int]:
    """The summaries and, after each, the run of messages recorded before it (same file, a lower line)."""
    out = set()
    for i, m in enumerate(msgs):
        if not m["has_summary"]:
            continue
        out.add(i)
        j = i + 1
        while (j < len(msgs) and not msgs[j]["has_summary"] and m.get("line") is not None
               and msgs[j].get("line") is not None and msgs[j]["line"] < m["line"]
               and msgs[j].get("file") == m.get("file")):
            out.add(j)
            j += 1
    return out


def position(msgs: list[dict], i: int) -> int:
    """Where message ``i`` starts in a later prompt: its own recorded context if it is a call, else the last
    call's before it (0 when none)."""
    for j in range(i, -1, -1):
        if msgs[j]["role"] == "assistant" and all(msgs[j].get(c) is not None for c in USAGE):
            return sum(msgs[j][c] for c in USAGE)
    return 0


@dataclass
class CallEdit:
    seq: int
    start: int            # the first message in context
    first_use: int        # index in the session's uses of the first use in context
    boundary: int         # uses before it (index in the session's uses) may be cleared; first_use where none
    cleared: list[int]    # indices of the edited uses (cleared or trimmed), in order
    removed: int          # tokens removed, placeholders counted
    trimmed: set[int] = field(default_factory=set)   # of ``cleared``, those trimmed (OpenClaw), not cleared

    def state(self, k: int) -> str | None:
        """What the edit made of use ``k``'s result: ``trimmed``, ``cleared`` or None."""
        return "trimmed" if k in self.trimmed else "cleared" if k in self.cleared else None

    def hard(self) -> int:
        """How many results the edit cleared (not trimmed)."""
        return len(self.cleared) - len(self.trimmed)


def minutes_idle(msgs: list[dict], i: int) -> float | None:
    """Minutes from the session's last assistant message before ``i`` to ``i`` (None: none, or no timestamps)."""
    before = next((m for m in reversed(msgs[:i]) if m["role"] == "assistant"), None)
    if before is None or before.get("timestamp") is None or msgs[i].get("timestamp") is None:
        return None
    return (msgs[i]["timestamp"] - before["timestamp"]).total_seconds() / 60


def edit_at(msgs: list[dict], uses: list[Use], i: int, start: int, rule: dict, inert: bool,
            kept: int | None = None) -> CallEdit:
    """The edit ``rule`` makes to call ``i``'s prompt (the context starting at message ``start``). A cache-gated
    rule (``gap_minutes``) fires only after that idle gap, and ``kept`` is the boundary its earlier firings left
    (the agent keeps what it cleared)."""
    in_ctx = [k for k, u in enumerate(uses) if start <= u.msg < i]
    first_use = next((k for k, u in enumerate(uses) if u.msg >= start), len(uses))
    p = len(in_ctx) - rule.get("keep", 0)
    if rule.get("keep_turns", 0) > 0:
        starts = [t for t in turn_starts(msgs) if t <= i]
        if len(starts) >= rule["keep_turns"] and starts[-rule["keep_turns"]] >= start:
            p = min(p, sum(1 for k in in_ctx if uses[k].msg < starts[-rule["keep_turns"]]))
        else:
            p = min(p, 0)
    p = max(p, 0)
    b = p
    if rule.get("keep_tokens", 0) > 0:
        total = 0
        while b > 0 and total + (uses[in_ctx[b - 1]].tokens or 0) <= rule["keep_tokens"]:
            total += uses[in_ctx[b - 1]].tokens or 0
            b -= 1
    excluded = set(rule.get("exclude", ()))
    cleared = [k for k in in_ctx[:b] if (uses[k].tokens or 0) > 0 and not (uses[k].kinds & excluded)]
    gross = sum(uses[k].tokens or 0 for k in cleared)
    prompt = msgs[i]["input"] + msgs[i]["cache_read"] + msgs[i]["cache_write"]
    applies = not (inert or not cleared or prompt <= rule.get("trigger", 0) or gross < rule.get("clear_at_least", 0))
    if rule.get("gap_minutes", 0) > 0:
        idle = minutes_idle(msgs, i)
        boundary = max(first_use + b if applies and idle is not None and idle > rule["gap_minutes"] else first_use,
                       kept if kept is not None else first_use)
        cleared = [k for k in range(first_use, boundary) if k in in_ctx and (uses[k].tokens or 0) > 0
                   and not (uses[k].kinds & excluded)]
        if inert or not cleared:
            return CallEdit(i, start, first_use, first_use, [], 0)
        return CallEdit(i, start, first_use, boundary, cleared,
                        sum(uses[k].tokens or 0 for k in cleared) - PLACEHOLDER * len(cleared))
    if not applies:
        return CallEdit(i, start, first_use, first_use, [], 0)
    return CallEdit(i, start, first_use, first_use + b, cleared, gross - PLACEHOLDER * len(cleared))


def rule_edits(rule: dict) -> Callable[[list[dict], list[Use]], dict[int, CallEdit]]:
    """The edit ``rule`` makes at every call of a session, call by call (:func:`edit_at`)."""
    def edits(msgs: list[dict], uses: list[Use]) -> dict[int, CallEdit]:
        inert = inert_rows(msgs)
        start, fired, out = 0, [], {}
        for i, m in enumerate(msgs):
            if m["has_summary"]:
                start = i + 1
            if not is_call(m):
                continue
            kept = max((p.boundary for p in fired if p.start == start), default=None)
            out[i] = edit_at(msgs, uses, i, start, rule, i in inert, kept)
            fired.append(out[i])
        return out
    return edits


def expected_clearing(sessions: dict[str, list[dict]], rule: dict, *, window: int,
                      edits: Callable[[list[dict], list[Use]], dict[int, CallEdit]] | None = None
                      ) -> tuple[list[dict], list[dict], dict[tuple[str, int], dict]]:
    """Events, one row per session and the usage of every call, as ``replay_clearing`` and ``cleared_usage``
    give them; ``edits`` gives every call's edit (default: ``rule``'s, :func:`rule_edits`)."""
    edits = edits or rule_edits(rule)
    events: list[dict] = []
    per_session: list[dict] = []
    usage: dict[tuple[str, int], dict] = {}
    for sid, msgs in sessions.items():
        if not msgs:
            continue
        uses = uses_of(msgs)
        inert = inert_rows(msgs)
        made = edits(msgs, uses)
        writes = any((m.get("cache_write") or 0) > 0 for m in msgs)
        prev, by_model = None, {}
        peak, n_events, summarized, ineffective = None, 0, 0, False
        one_hour = False
        starts = turn_starts(msgs)
        for i, m in enumerate(msgs):
            if (m.get("cache_write") or 0) > 0:
                one_hour = (m.get("cache_write_1h") or 0) > 0
            if not is_call(m):
                continue
            e = made[i]
            cum = sum(m[c] for c in USAGE)
            context = max(cum - e.removed, 0)
            if i not in inert:
                peak = context if peak is None else max(peak, context)
            same = prev is not None and prev.start == e.start
            prev_count = len(prev.cleared) if same else 0
            prev_hard = prev.hard() if same else 0
            prev_removed = prev.removed if same else 0
            # An event: a result edited that was not, or trimmed before and cleared now.
            if len(e.cleared) > prev_count or e.hard() > prev_hard:
                events.append({
                    "session_id": sid, "event": n_events, "trigger_seq": i, "context_before": max(cum - prev_removed, 0),
                    "active_start": e.start, "prefix_end": e.start,
                    "kept_turns": sum(1 for t in starts if e.start <= t <= i), "kept_tokens": context,
                    "summarized_tokens": max(e.removed - prev_removed, 0), "context_after": context,
                    "kept_start": e.start, "kept_messages": i + 1 - e.start,
                    "cleared_calls": e.boundary,
                    "cleared_tokens": e.removed})
                n_events += 1
                summarized += max(e.removed - prev_removed, 0)
                ineffective |= rule.get("trigger", 0) > 0 and context > rule["trigger"]
            prev = e
            usage[(sid, i)] = _usage(msgs, uses, m, e, by_model.get(m.get("model")), writes, one_hour)
            by_model[m.get("model")] = (e, usage[(sid, i)], m["input"])
        per_session.append({"session_id": sid, "n_compactions": n_events, "zero_kept_events": 0,
                            "summarized_tokens": summarized, "peak_context": peak,
                            "overflow": peak is not None and peak > window, "ineffective": ineffective})
    return events, per_session, usage


def saved(uses: list[Use], e: CallEdit, k: int) -> int:
    """What the edit ``e`` removed of use ``k``'s result: its tokens less the placeholder, or less the trimmed
    size."""
    return (uses[k].tokens or 0) - (TRIMMED if k in e.trimmed else PLACEHOLDER)


def _usage(msgs: list[dict], uses: list[Use], m: dict, e: CallEdit, prev: tuple[CallEdit, dict, int] | None,
           writes: bool, one_hour: bool) -> dict:
    """The call's input, cache read and writes (5-minute, 1-hour) after the edit (``cleared_usage``'s rule):
    ``prev`` is the previous call to the same model, its edit, its usage as billed and its recorded input."""
    recorded = {"input": m["input"], "cache_read": m["cache_read"], "cache_write": m["cache_write"],
                "cache_write_1h": m.get("cache_write_1h") or 0}
    if e.removed == 0 and (prev is None or prev[0].removed == 0):
        return recorded
    prompt = m["input"] + m["cache_read"] + m["cache_write"]
    sim = max(prompt - e.removed, 0)
    tail = min(m["input"], sim) if writes else 0
    candidates = [sim - tail]
    first = min(e.cleared, default=None)
    if first is not None and m["cache_read"] > position(msgs, uses[first].msg):
        candidates.append(max(m["cache_read"] - e.removed, position(msgs, uses[first].msg)))
    else:
        candidates.append(m["cache_read"])
    if prev is not None:
        pe, pu, prev_input = prev
        prev_sim = pu["input"] + pu["cache_read"] + pu["cache_write"]
        candidates.append(prev_sim - (min(prev_input, prev_sim) if writes else 0))
        if pe.start == e.start:
            differing = [k for k in range(len(uses)) if pe.state(k) != e.state(k)]
            if differing:
                removed_before = sum(saved(uses, pe, k) for k in pe.cleared if k < differing[0])
                candidates.append(max(position(msgs, uses[differing[0]].msg) - removed_before, 0))
    read = max(min(candidates), 0)
    write = sim - tail - read if writes else 0
    return {"input": sim - read - write, "cache_read": read, "cache_write": write,
            "cache_write_1h": write if one_hour else 0}
