"""Synthetic Claude Code transcripts, deterministic from a seed: the benchmark's second corpus.

Files shaped like those Claude Code writes to
``~/.claude/projects/<project>/<session id>.jsonl``, so that ingest is
measured on what :mod:`panto_analytics.formats.claude_code` meets in real
corpora:

- ``user`` and ``assistant`` records in a ``parentUuid`` chain, each with the
  envelope Claude Code repeats on every line (``cwd``, ``sessionId``,
  ``version``, ``gitBranch``, ...);
- one API call streamed as several ``assistant`` lines, one content block each
  (thinking with its signature, text, tool_use), sharing ``message.id`` and
  ``requestId``. Every line carries usage: the call's final usage (2.x
  sessions), or on all but the last line a partial ``output_tokens`` (1.0.x);
- usage that is cumulative, as Anthropic reports it: each call's prompt is the
  system prompt and tools plus the conversation so far, most of it read from
  the prompt cache, the new part written to it;
- one ``user`` record per ``tool_result``, with the tool's output a second
  time in ``toolUseResult`` (as Claude Code stores it); now and then a
  screenshot part; the results of parallel tool calls now and then written
  between the call's lines, while it still streams;
- bookkeeping the adapter skips: ``file-history-snapshot``,
  ``queue-operation``, ``ai-title``, ``last-prompt``, ``permission-mode``,
  ``attachment``, ``progress``, ``system`` (``turn_duration``,
  ``stop_hook_summary``, ``api_error``); now and then a prompt typed while
  the agent worked (a ``queued_command`` attachment) and an API error Claude
  Code writes itself (``model: "<synthetic>"``);
- compaction near the window: a ``system/compact_boundary`` record and the
  ``isCompactSummary`` user record after it; the next prompt is small again.

No subagent files and no resumed sessions: every file is one session.
Text comes from :mod:`benchmarks.synth`'s vocabulary and templates;
nothing is copied from a real transcript. A session depends only on
``(seed, index)``, so a corpus of ``n + 1`` sessions starts with the ``n``
sessions of the smaller one.

>>> import random
>>> recs = generate_session(random.Random(7), "s")
>>> recs == generate_session(random.Random(7), "s")
True
>>> sorted({r["type"] for r in recs} & {"user", "assistant", "file-history-snapshot"})
['assistant', 'file-history-snapshot', 'user']

Command line (writes ``N`` files into ``DIR``)::

    python -m benchmarks.synth_claude_code DIR --sessions N --seed S
"""
from __future__ import annotations

import base64
import math
import random
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from .synth import (
    _CODE_FACTOR,
    _DIRS,
    _IDENTS,
    _JSON_FACTOR,
    _PROSE_FACTOR,
    _code,
    _iso,
    _log,
    _lognormal_int,
    _path,
    _pick,
    _prose,
    _tokens,
    corpus_main,
    random_uuid,
    write_sessions,
)

#: (model, weight). Fictional names.
MODELS = (("claude-synth-opus", 0.45), ("claude-synth-sonnet", 0.45), ("claude-synth-haiku", 0.10))

#: (Claude Code version, weight); 1.0.x sessions stream partial usage.
VERSIONS = (("1.0.44", 0.15), ("2.0.31", 0.25), ("2.1.90", 0.60))

#: The model's window, in tokens: sessions compact near it.
WINDOW = 200_000

#: ``message.model`` of an API error Claude Code writes itself.
SYNTHETIC_MODEL = "<synthetic>"

_TOOLS = ("Read", "Bash", "Grep", "Edit", "Glob", "Write", "TodoWrite", "WebFetch", "Task")
_TOOL_WEIGHTS = (0.30, 0.24, 0.12, 0.12, 0.06, 0.05, 0.05, 0.03, 0.03)
_ID_CHARS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
# Claude Code's own system prompt and tool definitions: in every prompt, never in the file.
_SYSTEM_TOKENS = (12_000, 26_000)
# Claude Code asks for an hour-long prompt cache.
_CACHE_TTL_MS = 3_600_000


def _api_id(rng: random.Random, prefix: str, n: int) -> str:
    return prefix + "".join(rng.choices(_ID_CHARS, k=n))


def _weighted(rng: random.Random, table: tuple) -> str:
    return rng.choices([v for v, _ in table], weights=[w for _, w in table])[0]


@dataclass
class _Transcript:
    """A transcript being written: its records, and the prompt the API would see."""

    rng: random.Random
    session_id: str
    #: Fields Claude Code writes on every conversation record.
    env: dict
    model: str
    partial_usage: bool
    clock: int  # ms since synth's epoch
    records: list[dict] = field(default_factory=list)
    parent: str | None = None
    #: Tokens of the next call's prompt: system prompt, then the conversation since the last compaction.
    context: int = 0
    cached: int = 0
    last_call: int = -(10**12)
    prompt_id: str | None = None

    def tree(self, kind: str, fields: dict, delay_ms: int = 0) -> dict:
        """Append a record of the ``parentUuid`` chain; returns it."""
        self.clock += delay_ms
        uid = random_uuid(self.rng)
        rec = {"parentUuid": self.parent, "isSidechain": False, **fields, "type": kind, "uuid": uid,
               "timestamp": _iso(self.clock), **self.env}
        self.records.append(rec)
        self.parent = uid
        return rec

    def note(self, rec: dict) -> None:
        """Append a bookkeeping record outside the chain."""
        self.records.append(rec)


# -- tools ------------------------------------------------------------------------

def _numbered(text: str) -> str:
    """``cat -n`` style, as Claude Code's Read returns a file."""
    return "\n".join(f"{i:>6}\t{line}" for i, line in enumerate(text.split("\n"), 1))


def _tool(rng: random.Random) -> tuple[str, dict, str | list, dict, int]:
    """One tool call: name, input, result content, ``toolUseResult``, result tokens."""
    name = rng.choices(_TOOLS, weights=_TOOL_WEIGHTS)[0]
    lines = _lognormal_int(rng, 40, 1.1, 1, 1_500)
    if name == "Read":
        path = "/home/synth/" + _path(rng)
        if rng.random() < 0.03:  # a screenshot: an image part, no text
            data = base64.b64encode(rng.randbytes(rng.randint(48, 400))).decode()
            content = [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}]
            extra = {"type": "image", "file": {"base64": data, "type": "image/png"}}
            return name, {"file_path": path}, content, extra, 1_500
        code = _code(rng, lines)
        content = _numbered(code)
        extra = {"type": "text", "file": {"filePath": path, "content": code, "numLines": lines, "startLine": 1,
                                          "totalLines": lines}}
        return name, {"file_path": path}, content, extra, _tokens(content, _CODE_FACTOR)
    if name == "Bash":
        command = f"zig build test --summary all -Dfilter={_pick(rng, _IDENTS)}"
        out = _log(rng, max(1, lines // 2))
        extra = {"stdout": out, "stderr": "", "interrupted": False, "isImage": False}
        return name, {"command": command, "description": _prose(rng, 6)}, out, extra, _tokens(out, _CODE_FACTOR)
    if name == "Grep":
        hits = [f"/home/synth/{_path(rng)}:{rng.randint(1, 900)}:{_code(rng, 1).strip()}"
                for _ in range(lines // 3 + 1)]
        out = "\n".join(hits)
        extra = {"mode": "content", "numFiles": len(hits), "filenames": [], "content": out, "numLines": len(hits)}
        return (name, {"pattern": _pick(rng, _IDENTS), "path": _pick(rng, _DIRS), "output_mode": "content"}, out,
                extra, _tokens(out, _CODE_FACTOR))
    if name in ("Edit", "Write"):
        path = "/home/synth/" + _path(rng)
        new = _code(rng, rng.randint(1, 20) if name == "Edit" else lines)
        if name == "Edit":
            old = _code(rng, rng.randint(1, 12))
            args = {"file_path": path, "old_string": old, "new_string": new}
            patch = {"oldStart": 1, "oldLines": old.count("\n") + 1, "newStart": 1, "newLines": new.count("\n") + 1,
                     "lines": ["-" + s for s in old.split("\n")] + ["+" + s for s in new.split("\n")]}
            extra = {"filePath": path, "oldString": old, "newString": new, "originalFile": _code(rng, lines),
                     "structuredPatch": [patch], "userModified": False, "replaceAll": False}
            out = f"The file {path} has been updated successfully."
        else:
            args = {"file_path": path, "content": new}
            extra = {"type": "create", "filePath": path, "content": new, "structuredPatch": []}
            out = f"File created successfully at: {path}"
        return name, args, out, extra, _tokens(out, _PROSE_FACTOR)
    if name == "Glob":
        files = ["/home/synth/" + _path(rng) for _ in range(lines // 4 + 1)]
        out = "\n".join(files)
        extra = {"filenames": files, "durationMs": rng.randint(2, 400), "numFiles": len(files), "truncated": False}
        return name, {"pattern": f"**/*{_pick(rng, ('.zig', '.py', '.ts'))}"}, out, extra, _tokens(out, _CODE_FACTOR)
    if name == "TodoWrite":
        todos = [{"content": _prose(rng, rng.randint(3, 12)),
                  "status": _pick(rng, ("pending", "in_progress", "completed")),
                  "activeForm": _prose(rng, rng.randint(3, 8))} for _ in range(rng.randint(1, 8))]
        out = "Todos have been modified successfully."
        return name, {"todos": todos}, out, {"oldTodos": [], "newTodos": todos}, _tokens(out, _PROSE_FACTOR)
    if name == "WebFetch":
        url = f"https://example.invalid/{_pick(rng, _IDENTS)}/{_pick(rng, _IDENTS)}"
        out = _prose(rng, lines * 6)
        extra = {"bytes": len(out) * 3, "code": 200, "codeText": "OK", "result": out,
                 "durationMs": rng.randint(200, 9_000), "url": url}
        return name, {"url": url, "prompt": _prose(rng, 12)}, out, extra, _tokens(out, _PROSE_FACTOR)
    # Task: a subagent's report, as a list of text parts
    out = _prose(rng, lines * 4)
    content = [{"type": "text", "text": out}]
    extra = {"status": "completed", "content": content, "totalDurationMs": rng.randint(5_000, 300_000),
             "totalTokens": rng.randint(5_000, 90_000), "totalToolUseCount": rng.randint(1, 40)}
    return (name, {"description": _prose(rng, 4), "prompt": _prose(rng, rng.randint(20, 200)),
                   "subagent_type": "general-purpose"}, content, extra, _tokens(out, _PROSE_FACTOR))


# -- calls ------------------------------------------------------------------------

def _usage(t: _Transcript, output: int) -> dict:
    """Anthropic usage of a call on the current prompt, and the cache it leaves."""
    rng = t.rng
    prompt = t.context
    hit = t.clock - t.last_call < _CACHE_TTL_MS and rng.random() > 0.02
    cached = min(t.cached, prompt) if hit else 0
    t.cached, t.last_call = prompt, t.clock
    fresh = prompt - cached
    uncached = min(fresh, rng.randint(1, 12))
    usage = {"input_tokens": uncached, "cache_creation_input_tokens": fresh - uncached,
             "cache_read_input_tokens": cached, "output_tokens": output}
    if t.partial_usage:
        usage["service_tier"] = "standard"
    else:
        usage |= {"server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0}, "service_tier": "standard",
                  "cache_creation": {"ephemeral_1h_input_tokens": fresh - uncached, "ephemeral_5m_input_tokens": 0}}
    return usage


def _result(t: _Transcript, use: dict, line_uid: str, tool: tuple) -> None:
    """The ``user`` record of one tool result."""
    rng = t.rng
    _, _, content, extra, tokens = tool
    if use["name"] == "Bash" and rng.random() < 0.2:
        t.tree("progress", {"data": {"type": "bash_progress", "output": "", "fullOutput": "",
                                     "elapsedTimeSeconds": rng.randint(2, 60), "totalLines": 0},
                            "toolUseID": f"bash-progress-{rng.randint(0, 9)}", "parentToolUseID": use["id"]},
               delay_ms=rng.randint(500, 5_000))
    block = {"tool_use_id": use["id"], "type": "tool_result", "content": content, "is_error": rng.random() < 0.04}
    t.tree("user", {"promptId": t.prompt_id, "message": {"role": "user", "content": [block]},
                    "toolUseResult": extra, "sourceToolAssistantUUID": line_uid},
           delay_ms=rng.randint(50, 20_000))
    t.context += tokens + 6


def _call(t: _Transcript, *, final: bool, n_tools: int) -> None:
    """One API call, streamed one block per line, and the results of its tool calls."""
    rng = t.rng
    blocks, output = [], 4
    if rng.random() < 0.6:
        text = _prose(rng, _lognormal_int(rng, 45, 0.8, 3, 900))
        sig = base64.b64encode(rng.randbytes(rng.randint(120, 900))).decode()
        blocks.append({"type": "thinking", "thinking": text, "signature": sig})
        output += _tokens(text, _PROSE_FACTOR)
    if final or rng.random() < 0.4:
        text = _prose(rng, _lognormal_int(rng, 60 if final else 20, 0.9, 1, 1_200))
        if final and rng.random() < 0.3:
            text += "\n\n```\n" + _code(rng, rng.randint(3, 30)) + "\n```"
        blocks.append({"type": "text", "text": text})
        output += _tokens(text, _PROSE_FACTOR)
    tools = []
    for _ in range(0 if final else n_tools):
        tool = _tool(rng)
        use = {"type": "tool_use", "id": _api_id(rng, "toolu_01", 22), "name": tool[0], "input": tool[1]}
        blocks.append(use)
        output += _tokens(orjson.dumps(tool[1]).decode(), _JSON_FACTOR) + 8
        tools.append((use, tool))
    if not blocks:
        blocks.append({"type": "text", "text": _prose(rng, rng.randint(1, 12))})
    t.clock += rng.randint(1_500, 40_000) + 15 * output
    usage = _usage(t, output)
    message_id, request_id = _api_id(rng, "msg_01", 24), _api_id(rng, "req_011C", 20)
    # Results of parallel tool calls are now and then written while the call still streams.
    interleave = len(tools) > 1 and rng.random() < 0.3
    done = []
    for i, block in enumerate(blocks):
        last = i == len(blocks) - 1
        line_usage = usage if last or not t.partial_usage else {**usage, "output_tokens": rng.randint(1, 12)}
        message = {"model": t.model, "id": message_id, "type": "message", "role": "assistant", "content": [block],
                   "stop_reason": ("end_turn" if final else "tool_use") if last else None, "stop_sequence": None,
                   "usage": line_usage}
        rec = t.tree("assistant", {"message": message, "requestId": request_id}, delay_ms=rng.randint(5, 400))
        if block["type"] == "tool_use":
            done.append((block, rec["uuid"]))
            if interleave and not last:
                use, tool = tools[len(done) - 1]
                _result(t, use, rec["uuid"], tool)
    t.context += output
    for k, (use, tool) in enumerate(tools):
        if not (interleave and k < len(tools) - 1):
            _result(t, use, done[k][1], tool)


def _api_error(t: _Transcript) -> None:
    """An API call that failed after retries: Claude Code's retry notes, then its own error message."""
    rng = t.rng
    for attempt in range(1, rng.randint(1, 4) + 1):
        t.tree("system", {"subtype": "api_error", "level": "error",
                          "error": {"cause": {"code": "ConnectionRefused", "errno": 0}},
                          "retryInMs": 500.0 * 2 ** attempt, "retryAttempt": attempt, "maxRetries": 10},
               delay_ms=rng.randint(500, 40_000))
    usage = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    t.tree("assistant", {"message": {"id": random_uuid(rng), "model": SYNTHETIC_MODEL, "role": "assistant",
                                     "stop_reason": "stop_sequence", "stop_sequence": "", "type": "message",
                                     "usage": usage, "content": [{"type": "text", "text":
                                                                  "API Error: 500 synthetic server error"}]},
                         "requestId": _api_id(rng, "req_011C", 20), "error": "server_error",
                         "isApiErrorMessage": True}, delay_ms=rng.randint(100, 2_000))


# -- turns ------------------------------------------------------------------------

def _prompt(t: _Transcript, first: bool) -> None:
    """A user prompt and the bookkeeping around it."""
    rng = t.rng
    text = _prose(rng, _lognormal_int(rng, 25, 1.0, 1, 600))
    if rng.random() < 0.15:
        text += "\n\n" + _code(rng, rng.randint(2, 25))
    t.clock += int(rng.lognormvariate(math.log(40_000), 1.3))
    if rng.random() < 0.15:  # typed while the agent was busy: queued, then handed over
        stamp = _iso(t.clock)
        t.note({"type": "queue-operation", "operation": "enqueue", "timestamp": stamp, "sessionId": t.session_id,
                "content": text})
        t.note({"type": "queue-operation", "operation": "dequeue", "timestamp": stamp, "sessionId": t.session_id})
    t.prompt_id = random_uuid(rng)
    content = text if rng.random() < 0.5 else [{"type": "text", "text": text}]
    fields = {"promptId": t.prompt_id, "message": {"role": "user", "content": content}}
    if first:
        fields["permissionMode"] = "default"
    rec = t.tree("user", fields)
    t.context += 4 + _tokens(text, _PROSE_FACTOR)
    if first:
        t.tree("attachment", {"attachment": {"type": "skill_listing", "content": _prose(rng, rng.randint(40, 300))}})
        t.note({"type": "ai-title", "aiTitle": _prose(rng, rng.randint(3, 8)).rstrip("."), "sessionId": t.session_id})
    elif rng.random() < 0.2:
        t.tree("attachment", {"attachment": {"type": "todo_reminder", "content": [], "itemCount": 0}})
    backups = {"/home/synth/" + _path(rng): {"backupFileName": f"{random_uuid(rng)[:16]}@v{rng.randint(1, 9)}",
                                             "version": rng.randint(1, 9), "backupTime": _iso(t.clock)}
               for _ in range(rng.randint(0, 4))}
    t.note({"type": "file-history-snapshot", "messageId": rec["uuid"],
            "snapshot": {"messageId": rec["uuid"], "trackedFileBackups": backups, "timestamp": _iso(t.clock)},
            "isSnapshotUpdate": False})


def _compact(t: _Transcript, system_tokens: int) -> None:
    """Claude Code's auto-compaction: a boundary, then the summary; the prompt starts over from it."""
    rng = t.rng
    boundary = t.tree("system", {"subtype": "compact_boundary", "content": "Conversation compacted",
                                 "isMeta": False, "level": "info",
                                 "compactMetadata": {"trigger": "auto", "preTokens": t.context}},
                      delay_ms=rng.randint(10_000, 60_000))
    boundary["logicalParentUuid"], boundary["parentUuid"] = boundary["parentUuid"], None
    text = ("This session is being continued from a previous conversation that ran out of context. "
            "The conversation is summarized below:\n" + _prose(rng, _lognormal_int(rng, 400, 0.5, 80, 2_000)))
    t.tree("user", {"message": {"role": "user", "content": text}, "isVisibleInTranscriptOnly": True,
                    "isCompactSummary": True})
    t.context, t.cached = system_tokens + 4 + _tokens(text, _PROSE_FACTOR), 0


def generate_session(rng: random.Random, session_id: str, *, median_turns: float = 10,
                     max_turns: int = 300) -> list[dict]:
    """The records of one synthetic Claude Code transcript, whose every record has ``session_id`` as its
    ``sessionId``; the other parameters as :func:`benchmarks.synth.generate_session` takes them."""
    version = _weighted(rng, VERSIONS)
    project = f"{_pick(rng, _IDENTS)}-{_pick(rng, _IDENTS)}"
    env = {"userType": "external", "entrypoint": _pick(rng, ("cli", "claude-vscode")), "cwd": f"/home/synth/{project}",
           "sessionId": session_id, "version": version, "gitBranch": _pick(rng, ("main", "dev", f"fix-{project}"))}
    t = _Transcript(rng=rng, session_id=session_id, env=env, model=_weighted(rng, MODELS),
                    partial_usage=version.startswith("1.0."), clock=rng.randint(0, 180 * 86_400_000))
    system_tokens = rng.randint(*_SYSTEM_TOKENS)
    t.context = system_tokens
    compact_at = WINDOW * rng.uniform(0.75, 0.92)
    tool_rounds = rng.uniform(0.5, 6)
    n_turns = _lognormal_int(rng, median_turns, 1.1, 1, max_turns)
    for turn in range(n_turns):
        if t.context > compact_at:
            _compact(t, system_tokens)
        _prompt(t, first=turn == 0)
        if turn == n_turns - 1 and rng.random() < 0.1:
            break  # the transcript ends on an unanswered prompt
        failed = False
        for _ in range(_lognormal_int(rng, tool_rounds, 1.0, 0, 80) if rng.random() > 0.15 else 0):
            if rng.random() < 0.004:
                _api_error(t)
                failed = True
                break
            _call(t, final=False, n_tools=1 if rng.random() < 0.8 else rng.randint(2, 4))
            if rng.random() < 0.01:  # the user typed while the tools ran
                text = _prose(rng, rng.randint(3, 30))
                t.tree("attachment", {"attachment": {"type": "queued_command", "prompt": text}})
                t.context += 4 + _tokens(text, _PROSE_FACTOR)
            if t.context > 0.95 * WINDOW:
                break  # the agent wraps up before the window is full
        if not failed and rng.random() < 0.97:  # else the user interrupted: no final answer
            _call(t, final=True, n_tools=0)
        if rng.random() < 0.3:
            t.tree("system", {"subtype": "turn_duration", "durationMs": rng.randint(2_000, 600_000), "isMeta": False})
        if rng.random() < 0.3:
            t.note({"type": "last-prompt", "lastPrompt": _prose(rng, 8), "leafUuid": t.parent,
                    "sessionId": session_id})
    if rng.random() < 0.1:
        t.note({"type": "permission-mode", "permissionMode": "acceptEdits", "sessionId": session_id})
    return t.records


_NAMESPACE = "panto-synth-claude-code"


def write_corpus(directory: str | Path, n_sessions: int, seed: int = 0, **shape) -> list[Path]:
    """Write ``n_sessions`` transcripts into ``directory``; returns their paths in order.

    Files are named ``<session id>.jsonl``, as Claude Code names them.
    ``shape`` goes to :func:`generate_session`. The bytes depend only on the
    arguments.

    >>> import tempfile
    >>> paths = write_corpus(tempfile.mkdtemp(), 2, seed=1)
    >>> len(paths), paths[0].suffix
    (2, '.jsonl')
    """
    return write_sessions(directory, n_sessions, seed,
                          lambda rng, sid: generate_session(rng, sid, **shape), _NAMESPACE)


def main(argv: list[str] | None = None) -> None:
    corpus_main("python -m benchmarks.synth_claude_code",
                "Write a deterministic synthetic corpus of Claude Code transcripts.", write_corpus, argv)


if __name__ == "__main__":
    main()
