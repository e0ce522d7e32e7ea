"""Random conversations in the canonical session format, for property and differential tests.

Two generators draw from the same vocabulary (:data:`ALPHABET`, block kinds,
usage shapes): hypothesis strategies (:func:`conversations`,
:func:`long_conversations`, :func:`budgets`) that shrink to a small failing
case, and a seeded :func:`random_conversation` for large fixed batches (one
call to libpanto's oracle for hundreds of sessions).

Conversations mix agent-shaped turns (a user prompt, tool rounds, a final
answer) with chaos: any block kind under any role, stray system messages and
compaction summaries anywhere, runs of user messages, empty content. Usage is
absent, partial (missing keys), zero, cumulative, or non-monotone.
"""
from __future__ import annotations

import random

from hypothesis import strategies as st

U64_MAX = 2**64 - 1
MAX_USAGE = 2**32 - 1  # the frame stores usage counters as UInt32
USAGE_KEYS = ("input", "output", "cache_read", "cache_write")

#: Word characters and whitespace: only ' ', '\t', '\n', '\r' separate words;
#: the rest (vertical tab, form feed, NBSP, ideographic space, NEL, LS) do not.
ALPHABET = ["a", "b", "é", "語", "😀", '"', "\\", "\x00", "{", ":",
            " ", " ", "\t", "\n", "\r", "\x0b", "\x0c", "\u00a0", "\u3000", "\x85", "\u2028"]
ROLES = ("system", "user", "assistant")
BLOCK_KINDS = ("text", "thinking", "tool_use", "tool_result", "system", "compaction_summary")
MEDIA_TYPES = ("image/png", "application/pdf")

# ----------------------------------------------------------------------------
# hypothesis
# ----------------------------------------------------------------------------

texts = st.one_of(
    st.text(alphabet=st.sampled_from(ALPHABET), max_size=16),
    st.text(st.characters(codec="utf-8"), max_size=8),
)


def parts() -> st.SearchStrategy[dict]:
    text_part = st.builds(lambda t: {"type": "text", "text": t}, texts)
    media_part = st.builds(lambda m: {"type": "media", "media_type": m, "data": "AAAA"}, st.sampled_from(MEDIA_TYPES))
    return st.one_of(text_part, media_part)


@st.composite
def blocks(draw, kind: str | None = None) -> dict:
    """One canonical content block (of ``kind``, or any kind)."""
    kind = kind or draw(st.sampled_from(BLOCK_KINDS))
    if kind == "tool_use":
        return {"type": kind, "id": "t", "name": draw(st.sampled_from(["bash", "read"])), "input": draw(texts)}
    if kind == "tool_result":
        return {"type": kind, "tool_use_id": "t", "parts": draw(st.lists(parts(), max_size=3))}
    if kind == "system":
        return {"type": kind, "text": draw(texts), "mode": draw(st.sampled_from(["append", "replace"]))}
    return {"type": kind, "text": draw(texts)}


def counters() -> st.SearchStrategy[int | None]:
    """A usage counter: small, zero, up to the UInt32 maximum, or null (read as 0)."""
    return st.one_of(st.integers(0, 3000), st.just(0), st.integers(0, MAX_USAGE), st.none())


@st.composite
def usages(draw) -> dict:
    """A usage object: some keys (a missing or null key is 0), possibly all zero, possibly huge."""
    keys = draw(st.lists(st.sampled_from(USAGE_KEYS), unique=True, max_size=4))
    return {k: draw(counters()) for k in keys}


@st.composite
def messages(draw, role: str | None = None, kinds: tuple[str, ...] | None = None) -> dict:
    """A message of ``role`` whose blocks are of ``kinds`` (any role, any blocks when omitted)."""
    role = role or draw(st.sampled_from(ROLES))
    kind = st.sampled_from(kinds or BLOCK_KINDS)
    content = draw(st.lists(kind.flatmap(blocks), min_size=0 if kinds is None else 1, max_size=3))
    return {"role": role, "content": content}


# Agent-shaped pieces.
prompts = messages("user", ("text",))
answers = messages("assistant", ("text", "thinking"))
tool_calls = messages("assistant", ("thinking", "tool_use"))
tool_results = messages("user", ("tool_result",))


@st.composite
def turn(draw) -> list[dict]:
    """A user prompt (or a run of them), tool rounds, a final answer (sometimes missing)."""
    out = draw(st.lists(prompts, min_size=1, max_size=2))
    for _ in range(draw(st.integers(0, 2))):
        out += [draw(tool_calls), draw(tool_results)]
    if draw(st.integers(0, 5)):
        out.append(draw(answers))
    return out


@st.composite
def noise(draw) -> list[dict]:
    """Structural frames and chaos: system messages, summaries under any role, any message."""
    kind = draw(st.sampled_from(["system", "summary", "any"]))
    if kind == "system":
        return [draw(messages("system", ("system",)))]
    if kind == "summary":
        return [draw(messages(draw(st.sampled_from(ROLES)), ("compaction_summary",)))]
    return [draw(messages())]


USAGE_MODES = ("none", "cumulative", "cumulative_noisy", "random", "zero")


def apply_usage(msgs: list[dict], mode: str, draw_int, draw_bool) -> list[dict]:
    """Attach usage to ``msgs`` by ``mode`` (``draw_int(lo, hi)``/``draw_bool()`` supply randomness).

    ``cumulative``: assistants report a growing context, as providers do;
    ``cumulative_noisy``: the same with drops, gaps and usage on other roles;
    ``random``: any message, any counters; ``zero``: all-zero usage everywhere;
    ``none``: no usage at all.
    """
    total = 0
    out = []
    for m in msgs:
        m = dict(m)
        if mode == "zero":
            m["usage"] = {k: 0 for k in USAGE_KEYS}
        elif mode == "random":
            if draw_bool():
                m["usage"] = {k: draw_int(0, 5000) for k in USAGE_KEYS if draw_bool()}
        elif mode.startswith("cumulative") and m["role"] == "assistant":
            total += draw_int(0, 3000)
            if mode == "cumulative_noisy" and draw_bool() and draw_bool():
                total = draw_int(0, total)  # non-monotone: the context shrank
            if mode == "cumulative" or draw_bool() or draw_bool():  # noisy: some assistants without usage
                cache_read = draw_int(0, total)
                output = draw_int(0, min(total - cache_read, 500))
                m["usage"] = {"input": total - cache_read - output, "cache_read": cache_read, "output": output}
        elif mode == "cumulative_noisy" and draw_bool() and draw_bool() and draw_bool():
            m["usage"] = {k: draw_int(0, 200) for k in USAGE_KEYS if draw_bool()}
        out.append(m)
    return out


@st.composite
def conversations(draw, max_pieces: int = 12) -> list[dict]:
    """One session's messages: agent-shaped turns with noise, or pure chaos."""
    if draw(st.integers(0, 4)) == 0:
        msgs = draw(st.lists(messages(), max_size=15))
    else:
        pieces = draw(st.lists(st.one_of(turn(), turn(), noise()), max_size=max_pieces))
        msgs = [m for piece in pieces for m in piece]
    mode = draw(st.sampled_from(USAGE_MODES))
    msgs = apply_usage(msgs, mode, lambda lo, hi: draw(st.integers(lo, hi)), lambda: draw(st.booleans()))
    if draw(st.integers(0, 5)) == 0:  # now and then huge explicit usage
        i = draw(st.integers(0, max(len(msgs) - 1, 0)))
        if msgs:
            msgs[i] = {**msgs[i], "usage": draw(usages())}
    return msgs


@st.composite
def long_conversations(draw) -> list[dict]:
    """A session around libpanto's 4096-turn cap: a few drawn turns, repeated."""
    # Each template ends with an answer, so it is exactly one turn: n lands
    # right at the cap (4096) as often as around it.
    templates = [t if t[-1]["role"] == "assistant" else t + [draw(answers)]
                 for t in draw(st.lists(turn(), min_size=1, max_size=3))]
    n = draw(st.one_of(st.sampled_from([4095, 4096, 4097]), st.integers(4090, 4105)))
    at = draw(st.sampled_from([3, 50, -1]))  # where to put noise (a summary, say), if anywhere
    extra = draw(noise())
    msgs = draw(noise()) if draw(st.booleans()) else []
    for k in range(n):
        msgs += templates[k % len(templates)]
        if k == at:
            msgs += extra
    mode = draw(st.sampled_from(USAGE_MODES))
    rnd = random.Random(draw(st.integers(0, 2**32)))  # thousands of draws: a seeded stream, not hypothesis's
    return apply_usage(msgs, mode, rnd.randint, lambda: rnd.random() < 0.5)


def budgets() -> st.SearchStrategy[list[int]]:
    """Token budgets: 0, small, large, and the u64 maximum."""
    return st.lists(st.one_of(st.just(0), st.integers(0, 3000), st.integers(0, 10**7), st.integers(0, U64_MAX),
                              st.just(U64_MAX)), min_size=1, max_size=6)


def boundary_budgets(suffix_sums: list[int]) -> list[int]:
    """Budgets right at and right below each suffix sum of turn costs: where a split moves."""
    return sorted({b for s in suffix_sums for b in (s, s - 1, s + 1) if 0 <= b <= U64_MAX})


# ----------------------------------------------------------------------------
# seeded random, for fixed batches
# ----------------------------------------------------------------------------

def random_text(rng: random.Random) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 16)))


def random_block(rng: random.Random, kind: str) -> dict:
    if kind == "tool_use":
        return {"type": kind, "id": "t", "name": "bash", "input": random_text(rng)}
    if kind == "tool_result":
        return {"type": kind, "tool_use_id": "t", "parts": [
            {"type": "text", "text": random_text(rng)} if rng.random() < 0.7
            else {"type": "media", "media_type": rng.choice(MEDIA_TYPES), "data": ""}
            for _ in range(rng.randint(0, 3))]}
    if kind == "system":
        return {"type": kind, "text": random_text(rng), "mode": rng.choice(["append", "replace"])}
    return {"type": kind, "text": random_text(rng)}


def random_message(rng: random.Random, role: str | None = None, kinds: tuple[str, ...] = BLOCK_KINDS) -> dict:
    role = role or rng.choice(ROLES)
    n = rng.randint(1 if kinds is not BLOCK_KINDS else 0, 3)
    return {"role": role, "content": [random_block(rng, rng.choice(kinds)) for _ in range(n)]}


def random_conversation(rng: random.Random, n_pieces: int | None = None, noise: float = 0.28) -> list[dict]:
    """A seeded session shaped like :func:`conversations`: ``n_pieces`` agent turns or, with
    probability ``noise``, system messages, summaries and stray messages."""
    msgs: list[dict] = []
    for _ in range(rng.randint(0, 12) if n_pieces is None else n_pieces):
        r = rng.random() / max(noise, 1e-9) * 0.28  # r < 0.28: noise
        if r < 0.12:
            msgs.append(random_message(rng, "system", ("system",)))
        elif r < 0.2:
            msgs.append(random_message(rng, rng.choice(ROLES), ("compaction_summary",)))
        elif r < 0.28:
            msgs.append(random_message(rng))
        else:
            msgs += [random_message(rng, "user", ("text",)) for _ in range(rng.choice([1, 1, 1, 2]))]
            for _ in range(rng.choice([0, 0, 1, 2])):
                msgs += [random_message(rng, "assistant", ("thinking", "tool_use")),
                         random_message(rng, "user", ("tool_result",))]
            if rng.random() < 0.85:
                msgs.append(random_message(rng, "assistant", ("text", "thinking")))
    return apply_usage(msgs, rng.choice(USAGE_MODES), rng.randint, lambda: rng.random() < 0.5)
