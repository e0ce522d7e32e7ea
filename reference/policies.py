"""A literal, sequential reference of :func:`panto_analytics.policy.compaction.any_policy.replay_policies`.

One session, one policy, one message at a time, each policy's cut written
as its source writes it (a walk over the messages, not a formula): pi's
``findCutPoint`` (both versions), Codex's ``build_compacted_history_with_limit``,
Gemini CLI's ``findCompressSplitPoint``, Claude Code's summary and preserved round, and the
last-n-turns baseline. The replay rules around the cut are
:mod:`reference.replay`'s (see ``any_policy``'s docstring).

A session is a list of message-frame rows (dicts with ``role``,
``has_tool_result``, ``has_summary``, optionally ``bash_execution``, ``serialized_bytes`` and the four usage
counters, and optionally ``line`` and ``file``), so the reference reads exactly
what the engine reads. After a recorded summary, the run of messages recorded
before it (same file, a lower line: the agent's kept block, see
``policy/compaction/engine.py``) is skipped: no trigger, no peak.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from .replay import Event

__all__ = ["PolicyEvent", "cut_of", "expected_policy_replay", "replay_session"]

USAGE = ("input", "output", "cache_read", "cache_write")


def call_context(m: dict) -> int | None:
    """The recorded context of an assistant message with usage (``cumulativeAt``); None otherwise."""
    if m["role"] != "assistant" or any(m.get(c) is None for c in USAGE):
        return None
    return sum(m[c] for c in USAGE)


def recorded_before(anchor: dict, m: dict) -> bool:
    """``m``, a message after the recorded summary ``anchor``, was recorded before it: same file, lower line
    (pi writes its compaction after the entries it keeps). Rows without a line never are."""
    if m["has_summary"] or anchor.get("line") is None or m.get("line") is None:
        return False
    return m["line"] < anchor["line"] and m.get("file") == anchor.get("file")


def is_user(m: dict) -> bool:
    """A user message that is neither a tool result nor a recorded summary."""
    return m["role"] == "user" and not m["has_tool_result"] and not m["has_summary"]


def is_bash(m: dict) -> bool:
    """pi's ``bashExecution``: a user message flagged ``bash_execution`` (absent or null: not one)."""
    return is_user(m) and bool(m.get("bash_execution"))


def is_turn_start(msgs: list[dict], i: int) -> bool:
    """libpanto's turn start over the whole session: a prompt whose nearest earlier conversational message is not a user's."""
    m = msgs[i]
    if m["role"] != "user" or m["has_tool_result"]:
        return False
    for j in range(i - 1, -1, -1):
        p = msgs[j]
        if p["role"] == "system" or p["has_summary"]:
            continue
        return p["role"] != "user"
    return True


def tokens4(chars: int) -> int:
    return math.ceil(chars / 4)


@dataclass(frozen=True)
class Cut:
    prefix_end: int
    kept_start: int | None
    kept_tokens: int | None = None
    split_turn: bool = False
    kept_messages: int | None = None


def _suffix(cut: int, k: int, split: bool = False) -> Cut:
    return Cut(cut, cut if cut <= k else None, None, split)


def cut_pi(msgs, first, k, keep_recent_tokens, **_) -> Cut:
    cut_points = [i for i in range(first, k + 1)
                  if (msgs[i]["role"] == "user" and not msgs[i]["has_tool_result"]) or msgs[i]["role"] == "assistant"]
    if not cut_points:
        return _suffix(first, k)
    accumulated = 0
    cut = cut_points[0]
    for i in range(k, first - 1, -1):
        accumulated += tokens4(msgs[i]["serialized_bytes"])
        if accumulated >= keep_recent_tokens:
            for c in cut_points:
                if c >= i:
                    cut = c
                    break
            break
    user_at_cut = msgs[cut]["role"] == "user"
    turn_start = -1
    if not user_at_cut:
        for i in range(cut, first - 1, -1):
            if msgs[i]["role"] == "user" and not msgs[i]["has_tool_result"]:
                turn_start = i
                break
    return _suffix(cut, k, not user_at_cut and turn_start != -1)


def cut_pi_whole_turn(msgs, first, k, keep_recent_tokens, **_) -> Cut:
    # findTurnBoundaries: role "user" only; a bashExecution is no turn start.
    boundaries = [i for i in range(first, k + 1) if is_user(msgs[i]) and not is_bash(msgs[i])]
    if not boundaries:
        return _suffix(first, k)
    usages = [(i, call_context(msgs[i])) for i in range(k, first - 1, -1) if call_context(msgs[i]) is not None]
    if not usages:
        return _suffix(boundaries[-1], k)
    newest = usages[0][1]
    cut = first
    for j in range(1, len(usages)):
        if newest - usages[j][1] >= keep_recent_tokens:
            last_kept = usages[j - 1][0]
            for b in reversed(boundaries):
                if b <= last_kept:
                    cut = b
                    break
            break
    # The backward scan: take in the entries before the cut that start no turn (here: bashExecution messages),
    # stopping at an assistant, user or tool-result message, and at the window's start.
    while cut > first and is_bash(msgs[cut - 1]):
        cut -= 1
    return _suffix(cut, k)


def cut_codex(msgs, first, k, user_tokens, **_) -> Cut:
    user_messages = [i for i in range(first, k + 1) if is_user(msgs[i])]
    selected: list[int] = []
    kept = 0
    if user_tokens > 0:
        remaining = user_tokens
        for i in reversed(user_messages):
            if remaining == 0:
                break
            t = tokens4(msgs[i]["serialized_bytes"])
            if t <= remaining:
                selected.append(i)
                remaining -= t
                kept += t
            else:
                selected.append(i)
                kept += remaining
                break
    return Cut(k + 1, min(selected) if selected else None, kept, False, len(selected))


def version_tuple(version) -> tuple[int, int, int] | None:
    """``"2.1.185"`` as (2, 1, 185) (a suffix after the third number ignored); None for anything else."""
    parts = str(version).split(".") if version else []
    if len(parts) < 3:
        return None
    digits = "".join(itertools.takewhile(str.isdigit, parts[2]))
    if not all(p.isdigit() and len(p) <= 6 for p in parts[:2]) or not digits or len(digits) > 6:
        return None
    return int(parts[0]), int(parts[1]), int(digits)


def cut_claude_code(msgs, first, k, version, preserved_since, output_reserve, buffer, precompute, precompute_from, *,
                    context, window, **_) -> Cut:
    recorded = version or msgs[k].get("agent_version")
    v = version_tuple(recorded)
    if v is None or v < version_tuple(preserved_since):
        return _suffix(k + 1, k)
    # The reactive compaction keeps the newest API round; the precomputed one made its summary when the context
    # first reached the precompute line, keeping the round it ended on and everything since.
    if window is None:  # a compaction the agent recorded: Claude Code's 200k window, or 1M above it
        window = 200_000 if context <= 200_000 else 1_000_000
    if window < precompute_from:  # no precomputed summary: the reactive compaction keeps the trigger's round
        return _suffix(k, k)
    effective = window - output_reserve
    line = min(effective - math.floor(effective * precompute + 0.5), effective - buffer)
    newest = next((j for j in range(k, first - 1, -1) if call_context(msgs[j]) is not None), None)
    if newest is None:
        return _suffix(k, k)
    shift = call_context(msgs[newest]) - context  # the recorded context less the simulated one
    for j in range(first, k + 1):
        c = call_context(msgs[j])
        if c is None:
            continue
        # Checked after the call, and before the next one with the messages since estimated (ceil(bytes / 4)).
        since = 0
        for i in range(j + 1, k + 1):
            if call_context(msgs[i]) is not None:
                break
            since += tokens4(msgs[i]["serialized_bytes"])
        if c - shift + since >= line:
            return _suffix(j, k)
    return _suffix(k, k)


def cut_anthropic_compact(msgs, first, k, **_) -> Cut:
    return _suffix(k + 1, k)


def cut_openai_compact(msgs, first, k, **_) -> Cut:
    kept = [i for i in range(first, k + 1) if is_user(msgs[i])]
    return Cut(k + 1, min(kept) if kept else None, sum(tokens4(msgs[i]["serialized_bytes"]) for i in kept), False,
               len(kept))


def cut_cline(msgs, first, k, preserve_recent_tokens, **_) -> Cut:
    window = msgs[first:k + 1]
    turn_start = [is_user(m) for m in window]
    last_turn = max((i for i, t in enumerate(turn_start) if t), default=0)
    if last_turn <= 0:
        return _suffix(first, k)
    total, candidate = 0, len(window)
    for i in range(len(window) - 1, -1, -1):
        total += tokens4(window[i]["serialized_bytes"])
        candidate = i
        if total >= preserve_recent_tokens:
            break
    if candidate <= 0:
        return _suffix(first, k)
    cut = min(candidate, last_turn)
    while cut > 0 and not turn_start[cut]:
        cut -= 1
    return _suffix(first + cut, k)


def cut_opencode(msgs, first, k, preserve_recent_tokens, **_) -> Cut:
    window = msgs[first:k + 1]
    starts = [i for i, m in enumerate(window) if is_user(m)]
    turns = [(s, starts[j + 1] if j + 1 < len(starts) else len(window)) for j, s in enumerate(starts)]
    size = lambda a, b: sum(tokens4(m["serialized_bytes"]) for m in window[a:b])  # noqa: E731
    total, keep = 0, None
    for start, end in reversed(turns):
        turn_size = size(start, end)
        if total + turn_size <= preserve_recent_tokens:
            total += turn_size
            keep = start
            continue
        remaining = preserve_recent_tokens - total
        if remaining > 0 and end - start > 1:  # splitTurn
            for s in range(start + 1, end):
                if window[s]["role"] == "assistant" and size(s, end) <= remaining:
                    keep = s
                    break
        break
    if keep is None or keep == 0:
        return _suffix(k + 1, k)
    return _suffix(first + keep, k)


def cut_openhands(msgs, first, k, max_size, keep_first, max_tokens_ratio, *, start, context, window, **_) -> Cut:
    head_end = first + keep_first
    view = keep_first + 1 + (k + 1 - start) if start > first else k + 1 - first
    limit = None if window is None else window * max_tokens_ratio
    by_tokens = limit is not None and context > limit
    by_events = view > max_size
    if not (by_events or by_tokens):
        return _suffix(start, k)
    raw = max(head_end, start)
    if by_events:
        raw = max(raw, k + 1 - max(max_size // 2 - keep_first - 1, 0))
    newest = call_context(msgs[k]) or 0
    if by_tokens:
        def before(i):
            return next((call_context(msgs[j]) for j in range(i - 1, -1, -1) if call_context(msgs[j]) is not None), 0)
        tokens_start = next((i for i in range(head_end, k + 1) if newest - before(i) <= limit / 2), k + 1)
        raw = max(raw, tokens_start)
    cut = next((i for i in range(raw, k + 1) if not msgs[i]["has_tool_result"]), k + 1)
    head = [i for i in range(first, min(head_end, cut))]
    tail = max(k + 1 - cut, 0)
    tail_tokens = 0
    if tail:
        b = next((call_context(msgs[j]) for j in range(cut - 1, -1, -1) if call_context(msgs[j]) is not None), 0)
        tail_tokens = max(newest - b, 0)
    return Cut(cut, cut if tail else None, tail_tokens + sum(tokens4(msgs[i]["serialized_bytes"]) for i in head),
               False, tail + len(head))


def cut_summarize_every(msgs, first, k, n, keep, *, start, **_) -> Cut:
    turns = [i for i in range(start, k + 1) if msgs[i]["role"] == "assistant"]
    if len(turns) < n + keep:
        return _suffix(start, k)
    return _suffix(turns[n] if len(turns) > n else k + 1, k)


def cut_gemini_cli(msgs, first, k, preserve, **_) -> Cut:
    contents = msgs[first:k + 1]
    chars = [m["serialized_bytes"] for m in contents]
    target = sum(chars) * (1 - preserve)
    last_split = 0
    cumulative = 0
    for i, m in enumerate(contents):
        if is_user(m):
            if cumulative >= target:
                return _suffix(first + i, k)
            last_split = i
        cumulative += chars[i]
    calls_tool = k + 1 < len(msgs) and msgs[k + 1]["has_tool_result"]
    if contents[-1]["role"] == "assistant" and not calls_tool:
        return _suffix(first + len(contents), k)
    return _suffix(first + last_split, k)


def cut_last_n_turns(msgs, first, k, n, **_) -> Cut:
    starts = [i for i in range(first, k + 1) if is_turn_start(msgs, i)]
    if len(starts) <= n:
        return _suffix(first, k)
    return _suffix(starts[-n], k)


CUTS = {"pi": cut_pi, "pi-whole-turn": cut_pi_whole_turn, "codex": cut_codex, "claude-code": cut_claude_code,
        "gemini-cli": cut_gemini_cli, "last-n-turns": cut_last_n_turns, "anthropic-compact": cut_anthropic_compact,
        "openai-compact": cut_openai_compact, "cline": cut_cline, "opencode": cut_opencode,
        "openhands": cut_openhands, "summarize-every": cut_summarize_every}


def cut_of(name: str, msgs: list[dict], first: int, k: int, settings: dict, *, context: int | None = None,
           start: int | None = None, window: int | None = None) -> Cut:
    """The named policy's cut of ``msgs[first:k + 1]``; ``context``: the simulated context at ``k`` (default: its
    recorded context), ``start``: where the previous cut ended (default: ``first``), ``window``: the replay's
    (None: a cut at a compaction the agent recorded)."""
    return CUTS[name](msgs, first, k, context=(call_context(msgs[k]) or 0) if context is None else context,
                      start=first if start is None else start, window=window, **settings)


@dataclass(frozen=True)
class PolicyEvent(Event):
    """A libpanto replay event plus what a policy's cut adds (where the kept messages start, how many, a split turn)."""

    kept_start: int | None
    kept_messages: int
    split_turn: bool


def replay_session(msgs: list[dict], name: str, settings: dict, *, threshold: int, window: int,
                   summary_tokens: int, from_anchor: bool = False,
                   limit: int | None = None) -> tuple[list[PolicyEvent], dict]:
    """Replay one session under one policy: its events and its per-session row (without ids). ``limit``: the
    context a compaction must leave the session below, else ``ineffective`` (default: ``threshold``)."""
    events: list[PolicyEvent] = []
    active_start = anchor_start = 0
    summarized = 0
    compacted = False
    peak: int | None = None
    inert_until = 0  # calls before this index are the agent's kept block, recorded before its compaction
    for k, m in enumerate(msgs):
        if m["has_summary"]:
            active_start = anchor_start = k + 1
            summarized = 0
            compacted = False
            inert_until = k + 1
            while inert_until < len(msgs) and recorded_before(m, msgs[inert_until]):
                inert_until += 1
            if inert_until == k + 1:  # no kept block: the summary's own call, if any, is checked
                inert_until = k
        if k < inert_until:
            continue
        recorded = call_context(m)
        if recorded is None:
            continue
        context = max(recorded - summarized, 0) + (summary_tokens if compacted else 0)
        peak = context if peak is None else max(peak, context)
        if context <= threshold:
            continue
        cut = cut_of(name, msgs, anchor_start if from_anchor else active_start, k, settings, context=context,
                     start=active_start, window=window)
        if cut.prefix_end <= active_start:
            continue  # nothing summarized: a no-op, not an event
        if cut.kept_tokens is not None:  # Codex: its own estimate of the user messages it keeps
            kept_tokens, kept_turns, kept_messages = cut.kept_tokens, 0, cut.kept_messages or 0
        else:
            kept_tokens = kept_turns = 0
            if cut.kept_start is not None:
                before = 0
                for j in range(cut.kept_start - 1, -1, -1):
                    if call_context(msgs[j]) is not None:
                        before = call_context(msgs[j])
                        break
                kept_tokens = max(recorded - before, 0)
                kept_turns = sum(1 for i in range(cut.kept_start, k + 1) if is_turn_start(msgs, i))
            kept_messages = 0 if cut.kept_start is None else k + 1 - cut.kept_start
        without_summary = max(recorded - summarized, 0)
        now = max(without_summary - kept_tokens, 0)
        summarized += now
        compacted = True
        events.append(PolicyEvent(len(events), k, context, active_start, cut.prefix_end, kept_turns, kept_tokens, now,
                                  max(recorded - summarized, 0) + summary_tokens, cut.kept_start, kept_messages,
                                  cut.split_turn))
        active_start = cut.prefix_end
    row = {"n_compactions": len(events), "zero_kept_events": sum(1 for e in events if e.kept_turns == 0),
           "summarized_tokens": sum(e.summarized_tokens for e in events), "peak_context": peak,
           "overflow": peak is not None and peak > window,
           "ineffective": any(e.context_after > (threshold if limit is None else limit) for e in events)}
    return events, row


def expected_policy_replay(sessions: dict[str, list[dict]], name: str, settings: dict, *, threshold: int,
                           window: int, summary_tokens: int, from_anchor: bool = False,
                           limit: int | None = None) -> tuple[list[dict], list[dict]]:
    """``(events, sessions)`` row dicts (session ids included, no policy or budget) for every session."""
    event_rows, session_rows = [], []
    for sid, msgs in sessions.items():
        events, row = replay_session(msgs, name, settings, threshold=threshold, window=window,
                                     summary_tokens=summary_tokens, from_anchor=from_anchor, limit=limit)
        event_rows += [{"session_id": sid, **e.__dict__} for e in events]
        session_rows.append({"session_id": sid, **row})
    return event_rows, session_rows
