"""A literal, sequential reference of :func:`panto_analytics.policy.compaction.engine`: the slow, plain one.

One session, one budget, one message at a time, with libpanto's ``computeSplit``
(:func:`reference.port.compute_split`) run on the very transcript
each compaction would see. The frame engine must equal it on every event and
every per-session figure; read the rules here first.

The rules (issue 11, section 2):

- A *call* is an assistant message with usage. Its *recorded context* is
  ``cumulativeAt(usage) = input + cache_read + cache_write + output``.
- *Tokens summarized so far* (``summarized``) is the sum of the
  ``summarized_tokens`` of the simulated compactions since the latest restart
  (see below). An event's ``summarized_tokens`` is the cost, in libpanto's turn
  costs on the transcript at the trigger, of the active turns before its
  ``prefix_end``: the active window's total turn cost minus the kept turns'.
- The *simulated context* at a call is
  ``max(recorded - summarized, 0) + (summary_tokens if a compaction happened)``:
  one summary at a time, a new one replaces the old.
- A compaction fires after a call whose simulated context exceeds
  ``window - reserve`` (at most one per call). Its split is ``computeSplit``
  over the recorded messages up to and including that call, with a
  compaction-summary message (:func:`summary_message`) inserted just before the
  previous simulated compaction's ``prefix_end``, so that the active window
  starts there. Before any simulated compaction nothing is inserted: the
  active window starts after the latest recorded summary, or at 0.
- A *no-op* split (every active turn fits the budget, or there is no active
  turn: ``kept_turns`` equals the number of turns) changes nothing and is not
  an event; the next call is checked again.
- A recorded compaction summary (a message with a ``compaction_summary``
  block) restarts the state when the replay reaches it: the active window
  starts after it, ``summarized`` is 0 and no simulated summary is counted,
  because the recorded usage after it already holds the recorded summary.
  (The restart comes before that message's own context check, should it be a
  call.)
- ``prefix_end`` and ``active_start`` are indices into the *recorded* session
  (the inserted message shifts the transcript's indices by one past it);
  ``prefix_end`` is ``trigger_seq + 1`` when no turn is kept.
- ``context_after`` is the trigger's simulated context after the compaction.
  ``peak_context`` is the largest simulated context at any call (before that
  call's compaction; None without calls), ``overflow`` whether it exceeds
  ``window``, ``ineffective`` whether some event's ``context_after`` still
  exceeds ``window - reserve``.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import port

#: The text of the inserted summary message (its size does not matter to computeSplit).
SUMMARY_TEXT = "simulated compaction summary"


def summary_message() -> dict:
    """The compaction-summary message inserted before the previous simulated ``prefix_end``."""
    return {"type": "message", "role": "system", "content": [{"type": "compaction_summary", "text": SUMMARY_TEXT}]}


@dataclass(frozen=True)
class Event:
    """One compaction event, as a row of ``Replay.events`` (without session and budget)."""

    event: int
    trigger_seq: int
    context_before: int
    active_start: int
    prefix_end: int
    kept_turns: int
    kept_tokens: int
    summarized_tokens: int
    context_after: int


@dataclass(frozen=True)
class SessionReplay:
    """One (session, budget): its events and the row of ``Replay.sessions``."""

    events: list[Event]
    n_compactions: int
    zero_kept_events: int
    summarized_tokens: int
    peak_context: int | None
    overflow: bool
    ineffective: bool


def has_summary(msg: dict) -> bool:
    for block in msg["content"]:
        if block["type"] == "compaction_summary":
            return True
    return False


def transcript_at(messages: list[dict], trigger: int, active_start: int, inserted: bool) -> list[dict]:
    """The recorded messages up to and including ``trigger``, with a summary message before ``active_start``."""
    head = list(messages[:trigger + 1])
    if inserted:
        head = head[:active_start] + [summary_message()] + head[active_start:]
    return head


def replay_session(messages: list[dict], budget: int, *, window: int, reserve: int,
                   summary_tokens: int, recorded_before: list[bool] | None = None) -> SessionReplay:
    """Replay one session (canonical message dicts) under one budget.

    ``recorded_before[k]``: message ``k`` belongs to an agent's kept block recorded before its compaction
    record (it follows a recorded summary in the transcript; pi writes its compaction after what it keeps):
    its call is no trigger and no peak. A canonical file never has one.
    """
    threshold = window - reserve
    usages = port.usages_of(messages)
    events: list[Event] = []
    active_start = 0  # where the active window starts, in recorded indices
    inserted = False  # whether a simulated summary stands before active_start
    summarized = 0  # tokens summarized since the latest restart
    compacted = False  # whether a simulated summary is in the context
    peak: int | None = None
    for k in range(len(messages)):
        msg = messages[k]
        if has_summary(msg):  # a recorded compaction: restart
            active_start = k + 1
            inserted = False
            summarized = 0
            compacted = False
        if msg["role"] != "assistant" or usages[k] is None:
            continue
        if recorded_before and (recorded_before[k] or (has_summary(msg) and k + 1 < len(messages)
                                                         and recorded_before[k + 1])):
            continue  # in an agent's kept block, or its summary when one follows
        recorded = port.cumulative_at(usages[k])
        context = max(recorded - summarized, 0) + (summary_tokens if compacted else 0)
        peak = context if peak is None else max(peak, context)
        if context <= threshold:
            continue
        transcript = transcript_at(messages, k, active_start, inserted)
        t_usages = port.usages_of(transcript)
        trace = port.Trace()
        split = port.compute_split(transcript, t_usages, budget, trace)
        if split.kept_turns == len(trace.turn_starts):
            continue  # no-op: nothing to summarize; not an event
        everything = port.Trace()
        port.compute_split(transcript, t_usages, port.U64_MAX, everything)  # every turn's cost
        costs = [tokens for _, _, _, tokens, _ in everything.turns]  # last turn first
        kept_tokens = sum(costs[:split.kept_turns])
        summarized_now = sum(costs) - kept_tokens
        prefix_end = split.prefix_end - 1 if inserted else split.prefix_end
        summarized += summarized_now
        compacted = True
        events.append(Event(
            event=len(events), trigger_seq=k, context_before=context, active_start=active_start,
            prefix_end=prefix_end, kept_turns=split.kept_turns, kept_tokens=kept_tokens,
            summarized_tokens=summarized_now, context_after=max(recorded - summarized, 0) + summary_tokens,
        ))
        active_start = prefix_end
        inserted = True
    return SessionReplay(
        events=events,
        n_compactions=len(events),
        zero_kept_events=sum(1 for e in events if e.kept_turns == 0),
        summarized_tokens=sum(e.summarized_tokens for e in events),
        peak_context=peak,
        overflow=peak is not None and peak > window,
        ineffective=any(e.context_after > threshold for e in events),
    )


def expected_replay(sessions: dict[str, list[dict]], budgets: list[int], *, window: int, reserve: int,
                    summary_tokens: int, recorded_before: dict[str, list[bool]] | None = None,
                    ) -> tuple[list[dict], list[dict]]:
    """``(events, sessions)`` row dicts for every session and budget, as ``replay`` orders them."""
    event_rows: list[dict] = []
    session_rows: list[dict] = []
    for sid, msgs in sessions.items():
        for budget in sorted(set(budgets)):
            r = replay_session(msgs, budget, window=window, reserve=reserve, summary_tokens=summary_tokens,
                               recorded_before=(recorded_before or {}).get(sid))
            for e in r.events:
                event_rows.append({"session_id": sid, "budget": budget, **e.__dict__})
            session_rows.append({
                "session_id": sid, "budget": budget, "n_compactions": r.n_compactions,
                "zero_kept_events": r.zero_kept_events, "summarized_tokens": r.summarized_tokens,
                "peak_context": r.peak_context, "overflow": r.overflow, "ineffective": r.ineffective,
            })
    return event_rows, session_rows
