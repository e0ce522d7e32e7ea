"""Synthetic agent sessions in the canonical JSONL format, deterministic from a seed.

The sessions are shaped like real coding-agent recordings, so that the bundled
corpus in ``data/`` and the benchmark exercise what real corpora hold: a
session header; a system prompt; user prompts, now and then two in a row;
assistant calls with thinking, text and tool calls; tool results with long
code-ish or log-ish output, now and then a screenshot (a media part); and
provider usage that is *cumulative*, as providers report it: every call's
prompt (``input + cache_read + cache_write``) is the whole conversation so
far, most of it read from the prompt cache, with a little written to it, plus
the call's own ``output``. Usage is absent for a whole session now and then,
and for the odd call; it dips where the provider stops resending old thinking
or misreports a call. Long sessions get compacted: a ``compaction_summary``
user message is placed at the split, the turns kept verbatim follow it, and
the next call's prompt is small again.

All text is synthetic: words drawn from a small vocabulary, and code and log
lines built from templates. Nothing is copied from a real recording.

A session depends only on ``(seed, index)``, so a corpus of ``n + 1``
sessions starts with the ``n`` sessions of the smaller one.

>>> import random
>>> recs = generate_session(random.Random(7), "s")
>>> recs[0]["type"], recs[1]["role"], recs[2]["role"]
('session', 'system', 'user')
>>> recs == generate_session(random.Random(7), "s")
True

Command line (writes ``N`` files into ``DIR``; with ``--dataset``, a Parquet
dataset of their message frame, built without JSON: :mod:`benchmarks.synth_dataset`)::

    python -m benchmarks.synth DIR --sessions N --seed S [--dataset]
"""
from __future__ import annotations

import argparse
import base64
import math
import random
import string
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

from .synth_shape import MODELS, NO_USAGE_SHARE

_EPOCH = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)

_PROSE = (
    "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore "
    "et dolore magna aliqua enim ad minim veniam quis nostrud exercitation ullamco laboris nisi aliquip "
    "ex ea commodo consequat duis aute irure in reprehenderit voluptate velit esse cillum fugiat nulla "
    "pariatur excepteur sint occaecat cupidatat non proident sunt culpa qui officia deserunt mollit anim "
    "id est laborum the a to of and is that it for this with we should then check test fix build run "
    "file function value error case because so now next first also but not only when if caf\u00e9 na\u00efve \u2192"
).split()
_IDENTS = (
    "buf alloc parser token index count len items node tree entry cache state ctx config reader writer "
    "stream offset result err msg usage turn budget split prefix suffix window session frame block part "
    "start end total running kept active anchor summary list map key val iter gpa arena io path line"
).split()
_TYPES = ("u8", "u32", "u64", "usize", "bool", "[]const u8", "Allocator", "Message", "?Usage", "Split", "Self")
_DIRS = ("src", "src/core", "src/io", "lib", "tests", "tools", "docs")
_EXTS = (".zig", ".py", ".ts", ".rs", ".md", ".json")
_TOOLS = ("read_file", "bash", "grep", "edit_file", "list_dir", "web_fetch", "screenshot")
_TOOL_WEIGHTS = (0.34, 0.26, 0.14, 0.14, 0.05, 0.04, 0.03)

_CODE = (
    "const {a} = try {b}.{c}({d}, {e});",
    "var {a}: {T} = {n};",
    "if ({a}.{b} == {c}) {{",
    "while ({a} < {b}.len) : ({a} += 1) {{",
    "for ({a}.items) |{b}| {{",
    "}}",
    "}}",
    "}}",
    "return {a};",
    "return .{{ .{a} = {b}, .{c} = {n} }};",
    "// {p}",
    "/// {p}",
    "pub fn {a}{B}(self: *Self, {b}: {T}) !{T} {{",
    "try {a}.append({b}, {c});",
    "defer {a}.deinit({b});",
    "{a} += {b}.{c}({n});",
    "std.debug.assert({a} <= {b});",
    "",
)
_LOG = (
    "[{n}/{m}] compile {f}",
    "test {a}.{b} ... ok",
    "test {a}.{b} ... FAIL ({p})",
    "error: {p} '{a}'",
    "    at {f}:{n}:{m}",
    "warning: unused {a} '{b}'",
    "{f}: {n} lines, {m} bytes",
    "ok {n} passed; {m} skipped; 0 failed",
    "{p}",
)

# Tokens per word by kind of text: prose tokenizes near libpanto's 1.3,
# code and JSON well above it.
_PROSE_FACTOR, _CODE_FACTOR, _JSON_FACTOR = 1.35, 2.3, 2.0
_MESSAGE_OVERHEAD = 4
_MEDIA_TOKENS = 1_500
# Prompt caches expire after a few minutes without a call.
_CACHE_TTL_MS = 300_000


@dataclass
class _Turn:
    start: int  # index of the turn's first record
    tokens: int = 0  # tokens it adds to the prompt
    thinking: int = 0  # of which thinking, dropped later by some providers


@dataclass
class _Session:
    """A session being written: records, and the prompt the provider would see."""

    rng: random.Random
    window: int
    usage: bool
    style: str  # "cache-write" (Anthropic-like) or "cache-read-only" (OpenAI-like)
    strip_thinking: bool
    clock: int  # ms since _EPOCH
    records: list[dict] = field(default_factory=list)
    frame_tokens: int = 0  # tokens before the first turn: system prompt, summary
    summary_tokens: int = 0  # of which the latest compaction summary
    turns: list[_Turn] = field(default_factory=list)
    cached: int = 0  # prompt prefix in the provider cache
    last_call: int = -(10**12)

    def prompt(self) -> int:
        return self.frame_tokens + sum(t.tokens for t in self.turns)

    def add(self, role: str, content: list[dict], tokens: int, *, usage: dict | None | bool = False,
            delay_ms: int = 0) -> None:
        self.clock += delay_ms
        rec: dict = {"type": "message", "role": role, "content": content}
        if usage is not False:
            rec["usage"] = usage
        rec["timestamp"] = _iso(self.clock)
        self.records.append(rec)
        if self.turns:
            self.turns[-1].tokens += tokens
        else:
            self.frame_tokens += tokens


def _iso(ms: int) -> str:
    return (_EPOCH + timedelta(milliseconds=ms)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _lognormal_int(rng: random.Random, median: float, sigma: float, lo: int, hi: int) -> int:
    return max(lo, min(hi, int(rng.lognormvariate(math.log(median), sigma))))


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(_PROSE, k=n))


def _prose(rng: random.Random, n: int) -> str:
    """``n`` words of sentences and short paragraphs."""
    out, left = [], n
    while left > 0:
        k = min(left, rng.randint(4, 18))
        out.append(_words(rng, k).capitalize() + ".")
        left -= k
        if left > 0 and rng.random() < 0.15:
            out.append("\n\n")
    return " ".join(out).replace(" \n\n ", "\n\n")


def _pick(rng: random.Random, seq):
    # rng.choice() draws through a Python-level loop; one float is much cheaper.
    return seq[int(rng.random() * len(seq))]


def _path(rng: random.Random) -> str:
    return f"{_pick(rng, _DIRS)}/{_pick(rng, _IDENTS)}_{_pick(rng, _IDENTS)}{_pick(rng, _EXTS)}"


_FIELD = {
    **{k: lambda rng: _pick(rng, _IDENTS) for k in "abcde"},
    "B": lambda rng: _pick(rng, _IDENTS).capitalize(),
    "T": lambda rng: _pick(rng, _TYPES),
    "n": lambda rng: int(rng.random() * 4096),
    "m": lambda rng: int(rng.random() * 1000),
    "p": lambda rng: _words(rng, 2 + int(rng.random() * 7)),
    "f": _path,
}
# The fields each template uses, so that only those are drawn.
_FIELDS = {t: tuple(dict.fromkeys(f for _, f, _, _ in string.Formatter().parse(t) if f))
           for t in _CODE + _LOG}


def _fill(rng: random.Random, template: str) -> str:
    return template.format(**{f: _FIELD[f](rng) for f in _FIELDS[template]})


def _code(rng: random.Random, lines: int) -> str:
    out, depth = [], 0
    for template in rng.choices(_CODE, k=lines):
        text = _fill(rng, template)
        if text == "}":
            depth = max(0, depth - 1)
        out.append("    " * depth + text)
        if text.endswith("{"):
            depth = min(depth + 1, 5)
    return "\n".join(out)


def _log(rng: random.Random, lines: int) -> str:
    return "\n".join(_fill(rng, t) for t in rng.choices(_LOG, k=lines))


def _tokens(text: str, factor: float) -> int:
    return math.ceil(len(text.split()) * factor)


def _tool_id(rng: random.Random) -> str:
    return "call_" + "".join(rng.choices("0123456789abcdefghijklmnopqrstuvwxyz", k=20))


def _tool_call(rng: random.Random) -> tuple[dict, list[dict], int, int]:
    """A tool_use block, the parts of its result, and their token sizes."""
    name = rng.choices(_TOOLS, weights=_TOOL_WEIGHTS)[0]
    lines = _lognormal_int(rng, 40, 1.1, 0, 1_500)
    if name == "read_file":
        args = {"path": _path(rng)}
        parts = [{"type": "text", "text": _code(rng, lines)}]
    elif name == "bash":
        args = {"command": f"zig build test --summary all -Dfilter={rng.choice(_IDENTS)}"}
        body = _log(rng, lines // 2)
        parts = [{"type": "text", "text": body}] if body or rng.random() < 0.5 else []
    elif name == "grep":
        args = {"pattern": rng.choice(_IDENTS), "path": rng.choice(_DIRS)}
        parts = [{"type": "text", "text": "\n".join(f"{_path(rng)}:{rng.randint(1, 900)}: {_code(rng, 1).strip()}"
                                                    for _ in range(lines // 3))}]
    elif name == "edit_file":
        args = {"path": _path(rng), "old": _code(rng, rng.randint(1, 12)), "new": _code(rng, rng.randint(1, 20))}
        parts = [{"type": "text", "text": f"Edited {args['path']}: {rng.randint(1, 40)} lines changed."}]
    elif name == "list_dir":
        args = {"path": rng.choice(_DIRS)}
        parts = [{"type": "text", "text": "\n".join(_path(rng) for _ in range(lines // 4 + 1))}]
    elif name == "web_fetch":
        args = {"url": f"https://example.invalid/{rng.choice(_IDENTS)}/{rng.choice(_IDENTS)}"}
        parts = [{"type": "text", "text": _prose(rng, lines * 6)}]
    else:  # screenshot: a caption and an image
        args = {"url": f"http://localhost:{rng.randint(3000, 9000)}/{rng.choice(_IDENTS)}"}
        data = base64.b64encode(rng.randbytes(rng.randint(48, 240))).decode()
        parts = [{"type": "text", "text": "Screenshot captured."},
                 {"type": "media", "media_type": "image/png", "data": data}]
    use = {"type": "tool_use", "id": _tool_id(rng), "name": name,
           "input": orjson.dumps(args).decode()}
    use_tokens = _tokens(use["input"], _JSON_FACTOR) + 8
    result_tokens = 6 + sum(_MEDIA_TOKENS if p["type"] == "media" else _tokens(p["text"], _CODE_FACTOR)
                            for p in parts)
    return use, parts, use_tokens, result_tokens


def _usage(s: _Session, output: int) -> dict | None:
    """The usage a provider reports for a call on the current prompt, and the cache it leaves."""
    rng = s.rng
    prompt = s.prompt()
    hit = s.clock - s.last_call < _CACHE_TTL_MS and rng.random() > 0.02
    cached = min(s.cached, prompt) if hit else 0
    s.cached, s.last_call = prompt, s.clock
    if not s.usage or rng.random() < 0.02:  # no usage for this call (an API error, a gap in the log)
        return None
    if rng.random() < 0.004:  # a misreported call: only the uncached tail and the output
        return {"input": rng.randint(1, 40), "output": output, "cache_read": 0, "cache_write": 0}
    if s.style == "cache-read-only":  # cached prefix counted in 128-token blocks, nothing written
        cache_read = cached // 128 * 128
        return {"input": prompt - cache_read, "output": output, "cache_read": cache_read, "cache_write": 0}
    fresh = prompt - cached
    uncached = min(fresh, rng.randint(1, 12))
    return {"input": uncached, "output": output, "cache_read": cached, "cache_write": fresh - uncached}


def _assistant(s: _Session, *, final: bool, n_calls: int) -> list[tuple[dict, list[dict], int]]:
    """One assistant call; returns its tool calls (tool_use, result parts, result tokens)."""
    rng = s.rng
    content, tokens, thinking, calls = [], _MESSAGE_OVERHEAD, 0, []
    if rng.random() < 0.6:
        text = _prose(rng, _lognormal_int(rng, 45, 0.8, 3, 900))
        content.append({"type": "thinking", "text": text})
        thinking = _tokens(text, _PROSE_FACTOR)
    if final or rng.random() < 0.45:
        text = _prose(rng, _lognormal_int(rng, 60 if final else 20, 0.9, 1, 1_200))
        if final and rng.random() < 0.3:
            text += "\n\n```\n" + _code(rng, rng.randint(3, 30)) + "\n```"
        content.append({"type": "text", "text": text})
        tokens += _tokens(text, _PROSE_FACTOR)
    for _ in range(0 if final else n_calls):
        use, parts, use_tokens, result_tokens = _tool_call(rng)
        content.append(use)
        tokens += use_tokens
        calls.append((use, parts, result_tokens))
    tokens += thinking
    delay = rng.randint(1_500, 40_000) + 15 * tokens
    s.clock += delay
    usage = _usage(s, tokens)
    # Usage is absent (no key) in some logs and null in others.
    s.add("assistant", content, tokens, usage=usage if usage is not None or rng.random() < 0.5 else False)
    if s.turns:
        s.turns[-1].thinking += thinking
    return calls


def _tool_results(s: _Session, calls: list[tuple[dict, list[dict], int]]) -> None:
    rng = s.rng
    results = [({"type": "tool_result", "tool_use_id": use["id"], "parts": parts}, toks)
               for use, parts, toks in calls]
    if s.style == "cache-write":  # all results of a round in one user message
        content = [block for block, _ in results]
        if rng.random() < 0.03:  # the user typed while the tools ran
            content.append({"type": "text", "text": _prose(rng, rng.randint(3, 30))})
        s.add("user", content, sum(t for _, t in results), delay_ms=rng.randint(50, 20_000))
    else:  # one user message per result
        for block, toks in results:
            s.add("user", [block], toks, delay_ms=rng.randint(50, 20_000))


def _user_prompt(s: _Session) -> None:
    rng = s.rng
    if s.strip_thinking:  # the provider stops resending the thinking of earlier turns
        for t in s.turns:
            t.tokens, t.thinking = t.tokens - t.thinking, 0
    s.turns.append(_Turn(start=len(s.records)))
    gap = int(rng.lognormvariate(math.log(40_000), 1.3))
    for _ in range(2 if rng.random() < 0.05 else 1):  # now and then two prompts in a row
        text = _prose(rng, _lognormal_int(rng, 25, 1.0, 1, 600))
        if rng.random() < 0.15:
            text += "\n\n" + _code(rng, rng.randint(2, 25))
        s.add("user", [{"type": "text", "text": text}], _MESSAGE_OVERHEAD + _tokens(text, _PROSE_FACTOR),
              delay_ms=gap)
        gap = rng.randint(1_000, 30_000)


def _system(s: _Session, words: int, delay_ms: int = 0) -> None:
    text = _prose(s.rng, words)
    s.add("system", [{"type": "system", "text": text, "mode": "append"}],
          _MESSAGE_OVERHEAD + _tokens(text, _PROSE_FACTOR), delay_ms=delay_ms)


def _compact(s: _Session) -> None:
    """Summarize all but a recent suffix of whole turns, as an agent does near its window.

    The summary goes where libpanto puts it, at the split: the kept turns
    follow it. It carries the time of the compaction, later than theirs.
    """
    rng = s.rng
    keep = int(s.window * rng.uniform(0.08, 0.3))
    kept, total = 0, 0
    for t in reversed(s.turns):
        if total + t.tokens > keep:
            break
        total, kept = total + t.tokens, kept + 1
    kept_turns = s.turns[len(s.turns) - kept:]
    anchor = kept_turns[0].start if kept_turns else len(s.records)
    text = _prose(rng, _lognormal_int(rng, 250, 0.5, 60, 1_200))
    s.clock += rng.randint(10_000, 60_000)
    s.records.insert(anchor, {"type": "message", "role": "user",
                              "content": [{"type": "compaction_summary", "text": text}],
                              "timestamp": _iso(s.clock)})
    for t in kept_turns:
        t.start += 1
    summary = _MESSAGE_OVERHEAD + _tokens(text, _PROSE_FACTOR)
    s.frame_tokens += summary - s.summary_tokens
    s.summary_tokens = summary
    s.turns = kept_turns
    s.cached = 0  # a new prompt prefix: nothing of it is cached


def generate_session(rng: random.Random, session_id: str, *, median_turns: float = 10,
                     max_turns: int = 300) -> list[dict]:
    """The records of one synthetic session: a header line, then one per message.

    Parameters
    ----------
    rng
        The only source of randomness: the same state gives the same records.
    session_id
        The header's ``id``.
    median_turns, max_turns
        Turns (user prompts) per session are log-normal around the median,
        from 1 up to ``max_turns``.
    """
    model, window, _ = rng.choices(MODELS, weights=[m[2] for m in MODELS])[0]
    s = _Session(rng=rng, window=window, usage=rng.random() >= NO_USAGE_SHARE,
                 style=rng.choice(("cache-write", "cache-read-only")),
                 strip_thinking=rng.random() < 0.15, clock=rng.randint(0, 180 * 86_400_000))
    s.records.append({"type": "session", "id": session_id, "model": model, "context_window": window,
                      "created_at": _iso(s.clock)})
    _system(s, _lognormal_int(rng, 500, 0.6, 40, 4_000))
    compact_at = window * rng.uniform(0.7, 0.9)
    tool_rounds = rng.uniform(0.5, 6)
    n_turns = _lognormal_int(rng, median_turns, 1.1, 1, max_turns)
    for turn in range(n_turns):
        if s.prompt() > compact_at:
            _compact(s)
        _user_prompt(s)
        if turn == n_turns - 1 and rng.random() < 0.1:
            break  # the recording ends on an unanswered prompt
        for _ in range(_lognormal_int(rng, tool_rounds, 1.0, 0, 80) if rng.random() > 0.15 else 0):
            n_calls = 1 if rng.random() < 0.8 else rng.randint(2, 4)
            _tool_results(s, _assistant(s, final=False, n_calls=n_calls))
            if rng.random() < 0.01:  # a mid-session system reminder
                _system(s, rng.randint(10, 80), delay_ms=rng.randint(10, 1_000))
            if s.prompt() > 0.92 * window:
                break  # the agent wraps up before the window is full
        if rng.random() < 0.97:  # else the user interrupted: no final answer
            _assistant(s, final=True, n_calls=0)
    return s.records


def random_uuid(rng: random.Random) -> str:
    """A UUID4-shaped string drawn from ``rng`` (session ids and record ids)."""
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def session_rng(seed: int, index: int, namespace: str = "panto-synth") -> random.Random:
    """The generator of session ``index`` in the corpus of ``seed`` (independent of the others)."""
    return random.Random(f"{namespace}:{seed}:{index}")


def to_jsonl(records: list[dict]) -> bytes:
    """Records as JSONL bytes, one compact JSON object per line."""
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def write_corpus(directory: str | Path, n_sessions: int, seed: int = 0, **shape) -> list[Path]:
    """Write ``n_sessions`` session files into ``directory``; returns their paths in order.

    Files are named ``<session id>.jsonl``. ``shape`` goes to
    :func:`generate_session`. The bytes depend only on the arguments.

    >>> import tempfile
    >>> paths = write_corpus(tempfile.mkdtemp(), 3, seed=1)
    >>> len(paths), paths[0].suffix
    (3, '.jsonl')
    """
    return write_sessions(directory, n_sessions, seed, lambda rng, sid: generate_session(rng, sid, **shape))


def write_sessions(directory: str | Path, n_sessions: int, seed: int, generate, namespace: str = "panto-synth") -> list[Path]:
    """Write ``generate(rng, session_id)``'s records for each session as ``<session id>.jsonl``.

    Each session has its own generator (:func:`session_rng`), so a corpus
    is a prefix of any larger one with the same seed.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n_sessions):
        rng = session_rng(seed, i, namespace)
        sid = random_uuid(rng)
        path = directory / f"{sid}.jsonl"
        path.write_bytes(to_jsonl(generate(rng, sid)))
        paths.append(path)
    return paths


def corpus_main(prog: str, description: str, write, argv: list[str] | None = None, write_dataset=None) -> None:
    """The command line of a corpus writer: ``python -m PROG DIR --sessions N --seed S``; with ``write_dataset``,
    ``--dataset`` writes a Parquet dataset into DIR instead of files (``write_dataset(DIR, N, seed=S, ...)``)."""
    ap = argparse.ArgumentParser(prog=prog, description=description)
    ap.add_argument("directory", type=Path)
    ap.add_argument("--sessions", type=int, default=40, help="number of sessions (default 40)")
    ap.add_argument("--seed", type=int, default=0, help="corpus seed (default 0)")
    ap.add_argument("--median-turns", type=float, default=10, help="median user prompts per session (default 10)")
    ap.add_argument("--max-turns", type=int, default=300, help="most user prompts in a session (default 300)")
    if write_dataset is not None:
        ap.add_argument("--dataset", action="store_true",
                        help="write the message frame straight to a Parquet dataset in DIR (no JSON step)")
        ap.add_argument("--buckets", type=int, default=None, help="buckets of the dataset (default 256)")
    a = ap.parse_args(argv)
    if getattr(a, "dataset", False):
        update = write_dataset(a.directory, a.sessions, seed=a.seed, buckets=a.buckets, median_turns=a.median_turns,
                               max_turns=a.max_turns)
        print(f"wrote {update.sessions:,} sessions, {update.messages:,} messages, as a dataset in {a.directory}")
        return
    paths = write(a.directory, a.sessions, a.seed, median_turns=a.median_turns, max_turns=a.max_turns)
    size = sum(p.stat().st_size for p in paths)
    print(f"wrote {len(paths)} sessions, {size / 1e6:.2f} MB, to {a.directory}")


def main(argv: list[str] | None = None) -> None:
    from .synth_dataset import write_synthetic_dataset

    corpus_main("python -m benchmarks.synth",
                "Write a deterministic synthetic corpus of canonical session JSONL files (or, with --dataset, "
                "a Parquet dataset of their message frame).", write_corpus, argv, write_dataset=write_synthetic_dataset)


if __name__ == "__main__":
    main()
