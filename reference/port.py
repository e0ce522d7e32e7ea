"""A literal, line-by-line Python port of libpanto's ``compaction.zig``: the slow reference.

Read it side by side with ``../shared/reference/compaction.zig``: the same
functions in the same order, with the Zig names in snake_case and the Zig
control flow kept (``while j > start: j -= 1`` for ``while (j > start) { j -= 1; ...}``).
It is deliberately naive: no vectorization, no cleverness, so that a reader
can check it against the Zig source line by line and the frame engine can be
checked against it.

Data model (the canonical session format, see the harness' ``oracle.py``):

- a *message* is a canonical message dict ``{"role": ..., "content": [block, ...]}``;
  a block is a dict with ``"type"`` in ``text``, ``thinking``, ``tool_use``,
  ``tool_result``, ``system``, ``compaction_summary``;
- ``usages`` is ``None`` (Zig's null slice) or a list, one entry per message,
  of ``Usage`` or ``None`` (Zig's ``?Usage``); :func:`usages_of` reads it off
  canonical dicts, where a missing usage key is 0.

u64 semantics: every value that is a ``u64``/``usize`` in Zig goes through
:func:`u64`, which fails loudly where Zig's safety checks would trap
(``ReleaseFast`` would be undefined behaviour there); subtraction is
saturating only where the Zig code says so.

>>> msgs = [user_msg("q1"), asst_msg("a1"), user_msg("q2"), asst_msg("a2")]
>>> compute_split(msgs, None, 1_000_000)
Split(prefix_end=0, kept_turns=2)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

U64_MAX = 2**64 - 1


def u64(x: int) -> int:
    """``x`` as a Zig ``u64``: an integer in ``[0, 2**64)``, else the overflow Zig traps on."""
    if not 0 <= x <= U64_MAX:
        raise OverflowError(f"integer overflow: {x} is not a u64")
    return x


# session.zig
@dataclass(frozen=True)
class Usage:
    """``session.Usage``: four u64 counters, each defaulting to 0."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0


# conversation.zig (the harness stand-in): index of the last message with a
# CompactionSummary block.
def latest_compaction_index(messages: list[dict]) -> int | None:
    i = len(messages)
    while i > 0:
        i -= 1
        for b in messages[i]["content"]:
            if b["type"] == "compaction_summary":
                return i
    return None


# =============================================================================
# compaction.zig
# =============================================================================

#: ``word_to_token_factor: f64 = 1.3``
word_to_token_factor = 1.3


def message_token_estimate(msg: dict, usage: Usage | None) -> int:
    """``messageTokenEstimate``."""
    if usage is not None:
        u = usage
        return u64(u.input + u.cache_read + u.cache_write + u.output)
    words = count_words(msg)
    est = float(words) * word_to_token_factor  # f64 * f64, as Zig
    return u64(int(math.ceil(est)))  # @intFromFloat(@ceil(est))


def prompt_tokens(u: Usage) -> int:
    """``promptTokens``."""
    return u64(u.input + u.cache_read + u.cache_write)


def cumulative_at(u: Usage) -> int:
    """``cumulativeAt``."""
    return u64(prompt_tokens(u) + u.output)


def turn_token_estimate(
    messages: list[dict],
    usages: list[Usage | None],
    start: int,
    end: int,
    prev_usage: Usage | None,
) -> int | None:
    """``turnTokenEstimate``."""
    # Find this turn's final assistant usage (cumulative as of turn end).
    after: Usage | None = None
    j = end
    while j > start:
        j -= 1
        if messages[j]["role"] == "assistant":
            if usages[j] is not None:
                after = usages[j]
                break
    if after is None:  # `after orelse return null`
        return None
    after_usage = after
    after_total = cumulative_at(after_usage)
    before_total = cumulative_at(prev_usage) if prev_usage is not None else 0
    # Saturating subtraction: usage is an estimate and can be non-monotone.
    return after_total - before_total if after_total > before_total else 0


def prior_assistant_usage(
    messages: list[dict],
    usages: list[Usage | None],
    start: int,
) -> Usage | None:
    """``priorAssistantUsage``."""
    j = start
    while j > 0:
        j -= 1
        if messages[j]["role"] == "assistant":
            if usages[j] is not None:
                return usages[j]
    return None


def count_words(msg: dict) -> int:
    """``countWords``."""
    total = 0
    for block in msg["content"]:
        kind = block["type"]
        if kind == "text":
            total = u64(total + count_words_in(block["text"]))
        elif kind == "thinking":
            total = u64(total + count_words_in(block["text"]))
        elif kind == "tool_use":
            total = u64(total + count_words_in(block["input"]))
        elif kind == "tool_result":
            for p in block["parts"]:
                if p["type"] == "text":
                    total = u64(total + count_words_in(p["text"]))
                elif p["type"] == "media":
                    total = u64(total + media_part_word_estimate)
                else:
                    raise ValueError(f"unknown part type {p['type']!r}")
        elif kind == "system":
            total = u64(total + count_words_in(block["text"]))
        elif kind == "compaction_summary":
            total = u64(total + count_words_in(block["text"]))
        else:
            raise ValueError(f"unknown block type {kind!r}")
    return total


#: ``media_part_word_estimate: u64 = 800``
media_part_word_estimate = 800


def count_words_in(text: str | bytes) -> int:
    """``countWordsIn``: over the UTF-8 bytes, as Zig's ``[]const u8``."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    count = 0
    in_word = False
    for c in data:
        is_space = c == ord(" ") or c == ord("\t") or c == ord("\n") or c == ord("\r")
        if is_space:
            in_word = False
        elif not in_word:
            in_word = True
            count += 1
    return count


@dataclass(frozen=True)
class Split:
    """``Split``: ``prefix_end`` indexes the full message list; ``kept_turns`` counts whole turns."""

    prefix_end: int
    kept_turns: int


@dataclass
class Trace:
    """Not in compaction.zig: what :func:`compute_split` saw, for the frame's extra columns.

    ``n_turns`` is Zig's counter (it counts past the 4096-entry buffer);
    ``turn_starts`` is the buffer's used part; ``turns`` gets one
    ``(t, start, end, turn_tokens, from_usage)`` per turn walked, last turn first.
    """

    n_turns: int = 0
    first_turn_msg: int = 0
    turn_starts: list[int] = field(default_factory=list)
    turns: list[tuple[int, int, int, int, bool]] = field(default_factory=list)


TURN_STARTS_BUF_LEN = 4096  # `var turn_starts_buf: [4096]usize`


def compute_split(
    messages: list[dict],
    usages: list[Usage | None] | None,
    keep_verbatim: int,
    trace: Trace | None = None,
) -> Split:
    """``computeSplit``. ``trace`` (not in Zig) records what the walk saw; it changes nothing."""
    if usages is not None:
        assert len(usages) == len(messages)
    keep_verbatim = u64(keep_verbatim)

    # The summary message itself anchors the window; active turns begin after it.
    anchor = latest_compaction_index(messages)
    active_start = anchor + 1 if anchor is not None else 0

    turn_starts_buf = [None] * TURN_STARTS_BUF_LEN  # undefined
    n_turns = 0
    i = active_start
    # Skip leading system messages (structural frame, not a turn).
    while i < len(messages) and messages[i]["role"] == "system":
        i += 1
    first_turn_msg = i
    while i < len(messages):
        msg = messages[i]
        if msg["role"] == "system":
            i += 1  # `continue` still runs the `: (i += 1)` step
            continue
        if is_turn_start(messages, i):
            if n_turns < len(turn_starts_buf):
                turn_starts_buf[n_turns] = i
            n_turns += 1
        i += 1
    turn_starts = turn_starts_buf[0:min(n_turns, len(turn_starts_buf))]
    if trace is not None:
        trace.n_turns, trace.first_turn_msg, trace.turn_starts = n_turns, first_turn_msg, list(turn_starts)

    if len(turn_starts) == 0:
        # No turns to keep or summarize.
        return Split(prefix_end=len(messages), kept_turns=0)

    # Walk turns backward, accumulating token totals. Stop as soon as the
    # running total exceeds the budget: the crossing turn is summarized.
    running = 0
    kept_turns = 0
    t = len(turn_starts)
    while t > 0:
        t -= 1
        start = turn_starts[t]
        end = turn_starts[t + 1] if t + 1 < len(turn_starts) else len(messages)
        turn_tokens = 0
        turn_estimate = (
            turn_token_estimate(messages, usages, start, end, prior_assistant_usage(messages, usages, start))
            if usages is not None
            else None
        )
        if turn_estimate is not None:
            turn_tokens = turn_estimate
        else:
            j = start
            while j < end:
                usage = usages[j] if usages is not None else None
                turn_tokens = u64(turn_tokens + message_token_estimate(messages[j], usage))
                j += 1
        if trace is not None:
            trace.turns.append((t, start, end, turn_tokens, turn_estimate is not None))
        if u64(running + turn_tokens) > keep_verbatim:
            # This turn crosses the budget: it (and everything before it)
            # is summarized. Kept suffix starts at the next turn.
            kept_start = turn_starts[t + 1] if t + 1 < len(turn_starts) else len(messages)
            return Split(prefix_end=kept_start, kept_turns=kept_turns)
        running = u64(running + turn_tokens)
        kept_turns += 1

    # Everything fits: nothing to summarize. Prefix ends at the first turn.
    return Split(prefix_end=first_turn_msg, kept_turns=kept_turns)


def is_turn_start(messages: list[dict], index: int) -> bool:
    """``isTurnStart``."""
    msg = messages[index]
    if msg["role"] != "user":
        return False
    for block in msg["content"]:
        if block["type"] == "tool_result":
            return False
    # First user message after a non-user message, or the start of the
    # active window. Structural frame messages are transparent here.
    j = index
    while j > 0:
        j -= 1
        if is_structural_frame(messages[j]):
            continue
        return messages[j]["role"] != "user"
    return True


def is_structural_frame(msg: dict) -> bool:
    """``isStructuralFrame``."""
    if msg["role"] == "system":
        return True
    for block in msg["content"]:
        if block["type"] == "compaction_summary":
            return True
    return False


# =============================================================================
# Transcript serialization
# =============================================================================

def serialize_transcript(messages: list[dict]) -> str:
    """``serializeTranscript`` (Zig returns the UTF-8 bytes; this returns the str)."""
    out: list[str] = []
    first = True
    for msg in messages:
        if msg["role"] == "system":
            continue
        for block in msg["content"]:
            if not first:
                out.append("\n\n")
            first = False
            kind = block["type"]
            if kind == "text":
                label = "[Assistant]: " if msg["role"] == "assistant" else "[User]: "
                out.append(label)
                out.append(block["text"])
            elif kind == "thinking":
                out.append("[Assistant thinking]: ")
                out.append(block["text"])
            elif kind == "tool_use":
                out.append(f"[Assistant tool call: {block['name']} ({block['id']})]: {block['input']}")
            elif kind == "tool_result":
                body: list[str] = []
                for p in block["parts"]:
                    if p["type"] == "text":
                        body.append(p["text"])
                    else:
                        body.append(f"[{p['media_type']} attachment]")
                out.append(f"[Tool result ({block['tool_use_id']})]: {''.join(body)}")
            elif kind == "compaction_summary":
                out.append("[Previous summary]: ")
                out.append(block["text"])
            elif kind == "system":
                pass
    return "".join(out)


# =============================================================================
# Compaction request user-prompt assembly
# =============================================================================

def build_request_body(transcript: str, previous_summary: str | None) -> str:
    """``buildRequestBody``."""
    out: list[str] = []
    if previous_summary is not None:
        prev = previous_summary
        out.append("The previous compaction generated this summary:\n\n<previous-summary>\n")
        out.append(prev)
        out.append("\n</previous-summary>\n\nThe conversation since that previous compaction:\n\n<transcript>\n")
    else:
        out.append("The conversation to summarize:\n\n<transcript>\n")
    out.append(transcript)
    out.append("\n</transcript>")
    return "".join(out)


def latest_summary_text(messages: list[dict]) -> str | None:
    """``latestSummaryText``."""
    anchor = latest_compaction_index(messages)
    if anchor is None:
        return None
    for block in messages[anchor]["content"]:
        if block["type"] == "compaction_summary":
            return block["text"]
    return None


# =============================================================================
# Test helpers of compaction.zig (userMsg, asstMsg, textToolResult) and a few
# more for the block kinds its tests build inline.
# =============================================================================

def user_msg(text: str) -> dict:
    return {"type": "message", "role": "user", "content": [{"type": "text", "text": text}]}


def asst_msg(text: str) -> dict:
    return {"type": "message", "role": "assistant", "content": [{"type": "text", "text": text}]}


def text_tool_result(id: str, text: str) -> dict:
    return {"type": "tool_result", "tool_use_id": id, "parts": [{"type": "text", "text": text}]}


def tool_result_msg(id: str, text: str) -> dict:
    return {"type": "message", "role": "user", "content": [text_tool_result(id, text)]}


def system_msg(text: str, mode: str = "append") -> dict:
    return {"type": "message", "role": "system", "content": [{"type": "system", "text": text, "mode": mode}]}


def summary_msg(text: str, role: str = "user") -> dict:
    return {"type": "message", "role": role, "content": [{"type": "compaction_summary", "text": text}]}


# =============================================================================
# Canonical glue: usages on and off message dicts.
# =============================================================================

USAGE_KEYS = ("input", "output", "cache_read", "cache_write")


def usages_of(messages: list[dict]) -> list[Usage | None]:
    """Each message's ``usage`` as a :class:`Usage` (a missing key is 0), or None."""
    out: list[Usage | None] = []
    for m in messages:
        u = m.get("usage")
        out.append(None if u is None else Usage(**{k: u.get(k) or 0 for k in USAGE_KEYS}))
    return out


def with_usages(messages: list[dict], usages: list[Usage | None] | None) -> list[dict]:
    """Copies of ``messages`` carrying ``usages`` as canonical ``usage`` objects."""
    if usages is None:
        usages = [None] * len(messages)
    return [
        {**m, "usage": None if u is None else {k: getattr(u, k) for k in USAGE_KEYS}}
        for m, u in zip(messages, usages, strict=True)
    ]


# =============================================================================
# The computeSplit tests of compaction.zig, as data, so that the port, the
# frame engine and libpanto's compiled code all run the very same scenarios.
# Expected values are the ones the Zig tests assert.
# =============================================================================

@dataclass(frozen=True)
class ZigSplitTest:
    """One ``computeSplit(&msgs, usages, budget)`` call of a Zig test and what the test asserts.

    ``expect`` is ``(prefix_end, kept_turns)``, or None where the Zig test
    asserts only ``holds`` (a predicate on the split).
    """

    name: str
    messages: list[dict]
    usages: list[Usage | None] | None
    budget: int
    expect: tuple[int, int] | None
    holds: object = None

    def canonical(self) -> list[dict]:
        """The messages with their usages, as canonical session records."""
        return with_usages(self.messages, self.usages)


def _u(input: int = 0, output: int = 0) -> Usage:
    return Usage(input=input, output=output)


def zig_split_tests() -> list[ZigSplitTest]:
    """Every ``computeSplit`` call in compaction.zig's tests (fresh objects each time)."""
    qa = [user_msg("q1"), asst_msg("a1"), user_msg("q2"), asst_msg("a2")]
    collapse = [user_msg("a"), user_msg("b"), user_msg("c"), asst_msg("a1"), user_msg("q2"), asst_msg("a2")]
    regression = [m for k in range(1, 13) for m in (user_msg(f"q{k}"), asst_msg(f"a{k}"))]
    regression_usage = [(1286, 118), (2167, 62), (2352, 146), (9710, 153), (10233, 180), (12562, 127),
                        (13087, 110), (14153, 68), (16794, 838), (17666, 228), (24762, 203), (28098, 5477)]
    return [
        ZigSplitTest("computeSplit - everything fits keeps all turns, summarizes nothing",
                     qa, None, 1_000_000, (0, 2)),
        ZigSplitTest("computeSplit - tiny budget summarizes all but the last turn",
                     [user_msg("q1"), asst_msg("a1"), user_msg("q2"), asst_msg("a2"), user_msg("q3"), asst_msg("a3")],
                     [_u(0), _u(100, 100), _u(0), _u(300, 100), _u(0), _u(500, 100)], 250, (4, 1)),
        ZigSplitTest("computeSplit - crossing turn goes into the summary (upper-bound semantics)",
                     qa, [_u(0), _u(100, 100), _u(0), _u(300, 100)], 200, (2, 1)),
        ZigSplitTest("computeSplit - tool-result user messages attach to the current turn",
                     [user_msg("q1"), asst_msg("calling tool"),
                      {"type": "message", "role": "user", "content": [text_tool_result("t1", "result")]},
                      asst_msg("a1"), user_msg("q2"), asst_msg("a2")],
                     [_u(0), _u(100, 50), _u(0), _u(200, 100), _u(0), _u(400, 100)], 250, (4, 1)),
        ZigSplitTest("computeSplit - consecutive user messages collapse into a single turn [no usage]",
                     collapse, None, 1_000_000, (0, 2)),
        ZigSplitTest("computeSplit - consecutive user messages collapse into a single turn [usage]",
                     collapse, [_u(0), _u(0), _u(0), _u(300, 100), _u(0), _u(500, 100)], 250, (4, 1)),
        ZigSplitTest("computeSplit - active window starts after an existing compaction summary",
                     [user_msg("old q"), asst_msg("old a"), summary_msg("S1"), user_msg("new q"), asst_msg("new a")],
                     None, 1_000_000, (3, 1)),
        ZigSplitTest("computeSplit - leading system messages are not turns",
                     [system_msg("you are helpful"), user_msg("q1"), asst_msg("a1")], None, 1_000_000, (1, 1)),
        ZigSplitTest("computeSplit - regression: real cumulative session overflows keep_verbatim",
                     regression, [u for i, o in regression_usage for u in (None, _u(i, o))], 20_000, None,
                     holds=lambda s: s.prefix_end > 0 and s.kept_turns < 12),
    ]


# =============================================================================
# Not in compaction.zig: canonical files, and the frame columns as the port
# defines them (panto_analytics' turns() and splits() must equal these).
# =============================================================================

def write_session(path, messages: list[dict], session_id: str | None = None) -> None:
    """Write one canonical session JSONL file (a header line when ``session_id`` is given).

    A session without messages always gets its header: an empty file holds no
    session (it is counted as a file read, never as a session), so the header is
    what records that the session exists. Its id is then the file's stem, the id
    the reader would take from the name anyway.
    """
    import json
    from pathlib import Path

    if session_id is None and not messages:
        session_id = Path(path).stem
    with open(path, "w", encoding="utf-8") as f:
        if session_id is not None:
            f.write(json.dumps({"type": "session", "id": session_id}) + "\n")
        for m in messages:
            f.write(json.dumps({"type": "message", **m}, ensure_ascii=False) + "\n")


def walk(messages: list[dict]) -> Trace:
    """Every turn's cost, as computeSplit's backward walk computes it (the budget never crosses)."""
    trace = Trace()
    compute_split(messages, usages_of(messages), U64_MAX, trace)
    return trace


def expected_turns(messages: list[dict], trace: Trace | None = None) -> list[dict]:
    """The rows of ``turns()`` for one session, in turn order (``trace``: its :func:`walk`, if at hand)."""
    return [
        {"turn": t, "start_seq": start, "end_seq": end, "n_messages": end - start,
         "tokens": tokens, "token_source": "usage" if from_usage else "words"}
        for t, start, end, tokens, from_usage in reversed((trace or walk(messages)).turns)
    ]


def expected_splits(messages: list[dict], budgets: list[int], trace: Trace | None = None) -> dict[int, dict]:
    """The rows of ``splits()`` for one session, by budget.

    ``prefix_end`` and ``kept_turns`` are computeSplit's; ``kept_tokens`` sums
    the kept turns, ``active_tokens`` all turns computeSplit can see,
    ``n_turns`` is how many those are (at most 4096), ``capped`` says
    whether Zig's counter went past the buffer, and ``request_bytes`` is the
    size of the summarizer request (:func:`request_bytes`), None for a no-op.
    """
    trace = trace or walk(messages)
    costs = [tokens for _, _, _, tokens, _ in reversed(trace.turns)]
    usages = usages_of(messages)
    rows = {}
    for budget in budgets:
        split = compute_split(messages, usages, budget)
        kept_tokens = sum(costs[len(costs) - split.kept_turns:])
        rows[budget] = {
            "prefix_end": split.prefix_end, "kept_turns": split.kept_turns,
            "kept_tokens": kept_tokens, "summarized_tokens": sum(costs) - kept_tokens,
            "active_tokens": sum(costs), "n_turns": len(trace.turn_starts), "n_messages": len(messages),
            "noop": split.kept_turns == len(trace.turn_starts), "capped": trace.n_turns > TURN_STARTS_BUF_LEN,
        }
        rows[budget]["request_bytes"] = None if rows[budget]["noop"] else request_bytes(messages, split.prefix_end)
    return rows


def request_bytes(messages: list[dict], prefix_end: int) -> int:
    """UTF-8 bytes of ``buildRequestBody(serializeTranscript(messages[active_start:prefix_end]), latestSummaryText(messages))``,
    ``active_start`` one past the latest compaction summary, as in computeSplit."""
    anchor = latest_compaction_index(messages)
    active_start = 0 if anchor is None else anchor + 1
    body = build_request_body(serialize_transcript(messages[active_start:prefix_end]), latest_summary_text(messages))
    return len(body.encode())
