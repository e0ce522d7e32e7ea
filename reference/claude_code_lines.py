"""Claude Code transcripts (``~/.claude/projects/<project>/<session>.jsonl``), read line by line.

The frozen oracle of the package's readers (``panto_analytics/formats/claude_code``: ``reader.py`` decodes
each line into the declared record shapes of ``shapes.py``, ``fast.py`` many files at once), which it was
(``formats/claude_code/lines.py``) until the typed reader replaced it; ``tests/formats/test_claude_code_reader.py``
compares them. Detection (``sniff``) and the rule across files (a resumed session) are the package's own,
``formats/claude_code/vocabulary.py`` and ``resume.py``.

Claude Code appends one JSON record per line: ``user`` and ``assistant``
records carry an Anthropic API message each, many other record types carry
bookkeeping (titles, file snapshots, queue operations, progress, ...). One API
call is streamed as several ``assistant`` lines, one content block each,
sharing ``message.id`` and ``requestId``; tool results may be written between
those lines while the call still streams. This module turns a transcript into
libpanto messages; every rule is listed in ``docs/formats.md`` (Claude Code).

>>> import tempfile, pathlib
>>> from panto_analytics.formats.contract import SourceFile
>>> p = pathlib.Path(tempfile.mkdtemp()) / "s.jsonl"
>>> _ = p.write_text(
...     '{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"hi"}}\\n'
...     '{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","requestId":"r1",'
...     '"message":{"id":"m1","model":"claude-x","content":[{"type":"text","text":"hello"}],'
...     '"usage":{"input_tokens":5,"output_tokens":1}}}\\n'
...     '{"type":"assistant","uuid":"a2","parentUuid":"a1","sessionId":"s","requestId":"r1",'
...     '"message":{"id":"m1","model":"claude-x","content":[{"type":"text","text":"there"}],'
...     '"usage":{"input_tokens":5,"output_tokens":7}}}\\n')
>>> src = SourceFile(p, NAME)
>>> [(m.role, len(m.content), m.usage) for m in parse(src)]
[('user', 1, None), ('assistant', 2, {'input': 5, 'output': 7, 'cache_read': 0, 'cache_write': 0, 'cache_write_1h': 0})]
>>> src.meta.api_calls, src.meta.model
(1, 'claude-x')
"""
from __future__ import annotations

import mmap
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from panto_analytics.formats.contract import Message, SourceFile
from panto_analytics.formats.jsonl import records, require_string
from panto_analytics.formats.record_fields import BAD_RECORD, Invalid, bad_record, parse_timestamp, usage_counter
from panto_analytics.formats.session_files import session_stem
from panto_analytics.frame.schema import MAX_USAGE

__all__ = ["NAME", "SYNTHETIC_MODEL", "PRESERVED_MARK", "TOOL_USE_BLOCKS", "USAGE_KEYS",
           "parse", "project_folder", "text_of"]

NAME = "claude-code"

#: ``message.model`` of the messages Claude Code writes itself (API errors, ...).
SYNTHETIC_MODEL = "<synthetic>"

#: How Anthropic usage counters map onto libpanto's.
USAGE_KEYS = (("input", "input_tokens"), ("output", "output_tokens"),
               ("cache_read", "cache_read_input_tokens"), ("cache_write", "cache_creation_input_tokens"))

#: Assistant block types that are a tool call (their ``input`` is counted as its compact JSON).
TOOL_USE_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")

PRESERVED_MARK = b"preservedSegment"


def parse(src: SourceFile) -> Iterator[Message]:
    """Yield the messages of one Claude Code transcript, in the order the agent had them (once the file is read:
    a call's usage is known only at its last line, which may come after other messages)."""
    state = _Transcript(src, _preserved_heads(src))
    for lineno, rec in records(src):
        try:
            state.record(rec, lineno)
        except BAD_RECORD as e:
            src.invalid(lineno, bad_record(e))
    state.finish()
    yield from state.drain()


# ---------------------------------------------------------------------------
# The transcript state machine
# ---------------------------------------------------------------------------

@dataclass
class _Call:
    """An assistant message still streaming: later lines of its API call extend it."""

    msg: Message
    key: tuple[Any, ...] | None
    uid: str | None
    #: Tool-result user messages written while the call streamed: they follow it.
    results: list[tuple[Message, str | None]] = field(default_factory=list)


@dataclass
class _Compaction:
    """A compact boundary waiting for its summary record."""

    msg: Message
    uid: str | None
    trigger: str | None
    tokens_before: int | None


class _Transcript:
    """Turns records into messages; :meth:`drain` hands over those that are final."""

    def __init__(self, src: SourceFile, preserved: dict[str, str]):
        self.src = src
        self.out: list[Message] = []
        self.ids: list[str | None] = []
        self.call: _Call | None = None
        self.compaction: _Compaction | None = None
        #: head uuid -> uuid of the boundary that keeps the segment from there on.
        self.preserved = preserved
        #: Messages of a preserved segment, held until their boundary's summary is out.
        self.kept: list[tuple[Message, str | None]] | None = None
        self.kept_for: str | None = None
        self.seen: set[str] = set()
        #: Blocks of the current record that have no libpanto equivalent, counted once it is valid.
        self.dropped: list[str] = []
        self.keys: set[tuple[Any, ...]] = set()
        #: Each keyed call's messages (more than one where other messages came between its lines) and the last
        #: usage any of its lines recorded: at the end, the first message gets it and the others none.
        self.pieces: dict[tuple[Any, ...], list[Message]] = {}
        self.last_usage: dict[tuple[Any, ...], dict[str, int]] = {}
        self.models: Counter[str] = Counter()
        self.api_calls = 0
        self.emitted = 0
        self.sidechain: bool | None = None   # decided by the first user/assistant record
        self.session_id: str | None = None
        self.agent_id: str | None = None
        self.created_at: datetime | None = None
        self.restoring: dict[str, Any] | None = None   # the compaction just recorded, until the next assistant record

    # -- output ------------------------------------------------------------

    def drain(self) -> list[Message]:
        out, self.out = self.out, []
        return out

    def _emit(self, msg: Message, uid: str | None) -> None:
        if self.kept is not None:
            self.kept.append((msg, uid))
        else:
            self._final(msg, uid)

    def _final(self, msg: Message, uid: str | None) -> None:
        self.out.append(msg)
        self.ids.append(uid)
        self.emitted += 1

    def _flush(self) -> None:
        """Emit what waits: the streaming call and the results written during it, or a lone boundary."""
        if self.call is not None:
            call, self.call = self.call, None
            self._emit(call.msg, call.uid)
            for msg, uid in call.results:
                self._emit(msg, uid)
        if self.compaction is not None:
            self._emit_compaction(None, None)

    def _release_kept(self) -> None:
        if self.kept is not None:
            kept, self.kept, self.kept_for = self.kept, None, None
            for msg, uid in kept:
                self._final(msg, uid)

    def _emit_compaction(self, text: str | None, summary_uid: str | None) -> None:
        comp, self.compaction = self.compaction, None
        assert comp is not None  # callers emit only a compaction that waits
        if text is not None:
            comp.msg.content[0]["text"] = text
        boundary_keeps = self.kept is not None and self.kept_for == comp.uid and comp.uid is not None
        if self.kept is not None and not boundary_keeps:
            self._release_kept()
        anchor = self.emitted
        self._final(comp.msg, comp.uid if comp.uid is not None else summary_uid)
        first_kept = None
        if boundary_keeps:
            first_kept = self.emitted if self.kept else None
            self._release_kept()
        # The preserved segment was written before the boundary: the conversation compacted ends after it.
        end = self.emitted if first_kept is not None else None
        self.src.meta.compactions.append({"anchor_index": anchor, "trigger": comp.trigger,
                                          "tokens_before": comp.tokens_before, "first_kept_index": first_kept,
                                          "trigger_index": anchor if end is None else end, "kept_end_index": end})
        if self.restoring is not None and "restored_files" in self.restoring:
            self.src.meta.compactions[-1]["restored_files"] = self.restoring["restored_files"]
        self.restoring = self.src.meta.compactions[-1]

    def finish(self) -> None:
        self._flush()
        self._release_kept()
        for key, (first, *later) in self.pieces.items():   # each call billed once, with its final usage
            first.usage = self.last_usage.get(key)
            for piece in later:
                piece.usage = None
        meta = self.src.meta
        stem = session_stem(self.src.path)
        if self.sidechain and self.session_id is not None:
            agent = self.agent_id or stem.removeprefix("agent-")
            meta.parent_session_id = self.session_id
            meta.is_subagent = True
            meta.session_id = f"{self.session_id}/agent-{agent}"
        elif self.session_id is not None:
            meta.session_id = self.session_id
        if meta.project is None:
            meta.project = project_folder(self.src.path, meta.is_subagent)
        meta.api_calls = self.api_calls
        meta.model = self.models.most_common(1)[0][0] if self.models else None   # the model of most calls
        meta.created_at = self.created_at
        meta.message_ids = self.ids

    # -- records -----------------------------------------------------------

    def record(self, rec: dict[str, Any], lineno: int) -> None:
        kind = rec.get("type")
        if not isinstance(kind, str):
            raise Invalid("record has no 'type' string")
        uid = rec.get("uuid")
        if uid is not None and not isinstance(uid, str):
            raise Invalid(f"uuid must be a string, got {type(uid).__name__}")
        if uid in self.seen:
            # Claude Code sometimes writes a record twice; its uuid says so.
            self.src.ignore(f"{kind} (duplicate uuid)")
            return
        self.dropped.clear()
        if kind == "user":
            self._user(rec, lineno, uid)
        elif kind == "assistant":
            self._assistant(rec, lineno, uid)
        elif kind == "system":
            subtype = rec.get("subtype")
            if subtype == "compact_boundary":
                self._boundary(rec, lineno, uid)
            else:
                self.src.ignore(f"system/{subtype}")
        elif kind == "attachment":
            self._attachment(rec, lineno, uid)
        else:
            self.src.ignore(kind)
        for what in self.dropped:
            self.src.ignore(what)
        if uid is not None:
            self.seen.add(uid)
        sid = rec.get("sessionId")
        if isinstance(sid, str):
            self.session_id = sid

    def _foreign(self, rec: dict[str, Any], kind: str) -> bool:
        """A sidechain record inside a main transcript (older versions wrote subagents inline): counted, skipped."""
        if self.sidechain is False and rec.get("isSidechain") is True:
            self.src.ignore(f"{kind} (sidechain in a main transcript)")
            return True
        return False

    def _conversation(self, rec: dict[str, Any], uid: str | None, joins_call: bool = False) -> None:
        """Bookkeeping for a record that becomes (part of) a message; the first one says whose transcript it is.

        ``joins_call``: the record continues the call streaming now (one of its
        lines, or a tool result written while it streams).
        """
        if self.sidechain is None:
            self.sidechain = rec.get("isSidechain") is True
        agent = rec.get("agentId")
        if isinstance(agent, str):
            self.agent_id = agent
        if self.created_at is None:
            self.created_at = parse_timestamp(rec.get("timestamp"))
        if self.src.meta.project is None and isinstance(rec.get("cwd"), str) and rec["cwd"]:
            self.src.meta.project = rec["cwd"]
        if uid is not None and uid in self.preserved and self.kept is None:
            # The first message a later compaction keeps verbatim: hold messages from here on
            # (with the call streaming now, if this record is part of it) until that
            # compaction's summary is out.
            if not joins_call:
                self._flush()
            self.kept, self.kept_for = [], self.preserved[uid]

    def _user(self, rec: dict[str, Any], lineno: int, uid: str | None) -> None:
        message = _message(rec, "user")
        content = message.get("content")
        if rec.get("isCompactSummary") is True:
            text = text_of(content)
            if self._foreign(rec, "user"):
                return
            self._conversation(rec, uid, joins_call=True)
            if self.compaction is None:
                # A summary without a boundary record (older versions): it is its own boundary.
                if self.call is not None:
                    self._flush()
                self.compaction = _Compaction(_summary_message(lineno, rec), uid, None, None)
                self.restoring = {}   # what is attached from here on is this compaction's
            self._emit_compaction(text, uid)
            return
        if rec.get("isVisibleInTranscriptOnly") is True:
            self.src.ignore("user (transcript only)")
            return
        if self._foreign(rec, "user"):
            return
        blocks = self._user_blocks(content)
        during_call = self.call is not None and any(b["type"] == "tool_result" for b in blocks)
        self._conversation(rec, uid, joins_call=during_call)
        msg = Message("user", blocks, None, lineno, parse_timestamp(rec.get("timestamp")))
        if during_call:
            assert self.call is not None  # during_call says a call streams
            self.call.results.append((msg, uid))
            return
        self._flush()
        self._emit(msg, uid)

    def _assistant(self, rec: dict[str, Any], lineno: int, uid: str | None) -> None:
        message = _message(rec, "assistant")
        content = message.get("content")
        if not isinstance(content, list):
            raise Invalid(f"assistant message.content must be a list, got {type(content).__name__}")
        blocks = self._assistant_blocks(content)
        model = message.get("model")
        model = model if isinstance(model, str) else None
        synthetic = model == SYNTHETIC_MODEL
        usage = None if synthetic else _usage(message.get("usage"))
        if self._foreign(rec, "assistant"):
            self.dropped.clear()
            return
        self.restoring = None
        mid, rid = message.get("id"), rec.get("requestId")
        key = (mid, rid if isinstance(rid, str) else None) if isinstance(mid, str) else None
        call = self.call
        same_call = key is not None and call is not None and call.key == key
        self._conversation(rec, uid, joins_call=same_call)
        if key is not None and usage is not None:
            self.last_usage[key] = usage
        if same_call:
            assert call is not None  # same_call says there is one
            call.msg.content.extend(blocks)
            if usage is not None:
                call.msg.usage = usage      # the call's final line has its final usage
            return
        self._flush()
        if key is not None and key in self.keys:
            # More lines of a call already emitted (another message came between):
            # a message of its own, but not another API call (finish gives the call's usage to its first message).
            pass
        else:
            if key is not None:
                self.keys.add(key)
            if not synthetic:
                self.api_calls += 1
                if model is not None:
                    self.models[model] += 1
        cwd = rec.get("cwd")
        msg = Message("assistant", blocks, usage, lineno, parse_timestamp(rec.get("timestamp")), model,
                      cwd=cwd if isinstance(cwd, str) and cwd else None)
        if key is not None:
            self.pieces.setdefault(key, []).append(msg)
        self.call = _Call(msg, key, uid)

    def _boundary(self, rec: dict[str, Any], lineno: int, uid: str | None) -> None:
        meta = rec.get("compactMetadata")
        meta = meta if isinstance(meta, dict) else {}
        trigger = meta.get("trigger")
        tokens = meta.get("preTokens")
        self._flush()
        self.restoring = {}   # files attached between the boundary and its summary are this compaction's too
        self.compaction = _Compaction(
            _summary_message(lineno, rec), uid,
            trigger if isinstance(trigger, str) else None,
            tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None)

    def _attachment(self, rec: dict[str, Any], lineno: int, uid: str | None) -> None:
        att = rec.get("attachment")
        kind = att.get("type") if isinstance(att, dict) else None
        if kind == "queued_command" and isinstance(att, dict) and att.get("prompt") is not None:
            # A prompt the user typed while the agent worked, handed to the model mid-turn.
            text = text_of(att["prompt"])
            if self._foreign(rec, "attachment"):
                return
            self._conversation(rec, uid)
            self._flush()
            self._emit(Message("user", [{"type": "text", "text": text}], None, lineno,
                               parse_timestamp(rec.get("timestamp"))), uid)
            return
        # A file Claude Code re-attached after the compaction just recorded: whole (restored), truncated or a
        # name only (compact_file_reference: not restored); either way the recording shows the restoration.
        if kind in ("file", "compact_file_reference") and self.restoring is not None \
                and not (self.sidechain is False and rec.get("isSidechain") is True):
            files = self.restoring.setdefault("restored_files", [])
            name = att.get("filename") if isinstance(att, dict) else None
            if kind == "file" and att.get("truncated") is not True and isinstance(name, str) and name:
                files.append(name)
        self.src.ignore(f"attachment/{kind}")

    # -- content blocks ----------------------------------------------------

    def _user_blocks(self, content: Any) -> list[dict[str, Any]]:
        if isinstance(content, str):
            return [{"type": "text", "text": content}]
        if not isinstance(content, list):
            raise Invalid(f"user message.content must be a string or a list, got {type(content).__name__}")
        blocks: list[dict[str, Any]] = []
        for i, block in enumerate(content):
            kind = _block_type(block, i)
            if kind == "text":
                blocks.append({"type": "text", "text": require_string(block.get("text"), f"content[{i}].text")})
            elif kind == "tool_result":
                blocks.append({"type": "tool_result",
                               "tool_use_id": require_string(block.get("tool_use_id"), f"content[{i}].tool_use_id"),
                               "parts": self._result_parts(block.get("content"), i)})
            else:
                # Images and documents outside a tool result have no libpanto block.
                self.dropped.append(f"user block/{kind}")
        return blocks

    def _result_parts(self, content: Any, i: int) -> list[dict[str, Any]]:
        if content is None:
            return []
        if isinstance(content, str):
            return [{"type": "text", "text": content}]
        if not isinstance(content, list):
            raise Invalid(f"content[{i}].content must be a string or a list, got {type(content).__name__}")
        parts = []
        for j, part in enumerate(content):
            kind = _block_type(part, j, f"content[{i}].content")
            if kind == "text":
                parts.append({"type": "text", "text": require_string(part.get("text"), f"content[{i}].content[{j}].text")})
            elif kind in ("image", "document"):
                source = part.get("source")
                media = source.get("media_type") if isinstance(source, dict) else None
                parts.append({"type": "media", "media_type": media if isinstance(media, str) else kind})
            else:
                self.dropped.append(f"tool_result part/{kind}")
        return parts

    def _assistant_blocks(self, content: list[Any]) -> list[dict[str, Any]]:
        blocks = []
        for i, block in enumerate(content):
            kind = _block_type(block, i)
            if kind == "text":
                blocks.append({"type": "text", "text": require_string(block.get("text"), f"content[{i}].text")})
            elif kind == "thinking":
                blocks.append({"type": "thinking", "text": require_string(block.get("thinking"), f"content[{i}].thinking")})
            elif kind == "redacted_thinking":
                blocks.append({"type": "thinking", "text": ""})
            elif kind in TOOL_USE_BLOCKS:
                blocks.append({"type": "tool_use", "id": require_string(block.get("id"), f"content[{i}].id"),
                               "name": require_string(block.get("name"), f"content[{i}].name"),
                               "input": orjson.dumps(block.get("input")).decode()})
            elif kind.endswith("_tool_result"):
                # A server tool's result sits in the assistant message itself; it is context all the same.
                blocks.append({"type": "text", "text": orjson.dumps(block.get("content")).decode()})
            else:
                self.dropped.append(f"assistant block/{kind}")
        return blocks


# ---------------------------------------------------------------------------
# Small validators and mappers
# ---------------------------------------------------------------------------

def _message(rec: dict[str, Any], role: str) -> dict[str, Any]:
    message = rec.get("message")
    if not isinstance(message, dict):
        raise Invalid(f"{role} record has no 'message' object")
    return message


def _block_type(block: Any, i: int, where: str = "content") -> str:
    if not isinstance(block, dict):
        raise Invalid(f"{where}[{i}] must be an object")
    kind = block.get("type")
    if not isinstance(kind, str):
        raise Invalid(f"{where}[{i}] has no 'type' string")
    return kind




def _usage(usage: Any) -> dict[str, int] | None:
    """Anthropic ``usage`` as libpanto's counters; None when the line has none.

    ``cache_write_1h`` is ``cache_creation.ephemeral_1h_input_tokens``, the part of the writes made to the
    1-hour cache; 0 where the usage has no split (a 5-minute write).

    >>> _usage({"input_tokens": 3, "cache_read_input_tokens": 10, "cache_creation_input_tokens": 2,
    ...         "output_tokens": 5, "service_tier": "standard"})
    {'input': 3, 'output': 5, 'cache_read': 10, 'cache_write': 2, 'cache_write_1h': 0}
    >>> _usage({"input_tokens": 3, "output_tokens": 5, "cache_creation_input_tokens": 9,
    ...         "cache_creation": {"ephemeral_5m_input_tokens": 4, "ephemeral_1h_input_tokens": 5}})["cache_write_1h"]
    5
    """
    if usage is None:
        return None
    if not isinstance(usage, dict):
        raise Invalid(f"message.usage must be an object, got {type(usage).__name__}")
    out = {}
    for name, key in USAGE_KEYS:
        value = usage.get(key)
        # Fast path for the usual case; usage_counter says what is wrong otherwise.
        out[name] = (value if type(value) is int and 0 <= value <= MAX_USAGE
                     else usage_counter(value, f"message.usage.{key}"))
    split = usage.get("cache_creation")
    one_hour = split.get("ephemeral_1h_input_tokens") if isinstance(split, dict) else None
    out["cache_write_1h"] = usage_counter(one_hour, "message.usage.cache_creation.ephemeral_1h_input_tokens")
    steps = usage.get("iterations")
    if steps is None or out["input"] or out["output"] or out["cache_read"] or out["cache_write"]:
        return out
    # Claude Code 2.1.18x: the top level all zero, the real counts in the iterations; their sum counts.
    if not isinstance(steps, list):
        raise Invalid(f"message.usage.iterations must be a list, got {type(steps).__name__}")
    if not steps:
        return out
    total = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0, "cache_write_1h": 0}
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            raise Invalid(f"message.usage.iterations[{i}] must be an object")
        for name, key in USAGE_KEYS:
            total[name] += usage_counter(step.get(key), f"message.usage.iterations[{i}].{key}")
        split = step.get("cache_creation")
        one_hour = split.get("ephemeral_1h_input_tokens") if isinstance(split, dict) else None
        total["cache_write_1h"] += usage_counter(
            one_hour, f"message.usage.iterations[{i}].cache_creation.ephemeral_1h_input_tokens")
    for name, key in USAGE_KEYS:
        usage_counter(total[name], f"message.usage.iterations (their sum).{key}")
    usage_counter(total["cache_write_1h"], "message.usage.iterations (their sum).cache_creation.ephemeral_1h_input_tokens")
    return total


def text_of(content: Any) -> str:
    """A compact summary's or a queued prompt's text: the string, or a list's text blocks joined by newlines.

    >>> text_of([{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}])
    'a\\nb'
    """
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content
                         if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    raise Invalid(f"message.content must be a string or a list, got {type(content).__name__}")


def _summary_message(lineno: int, rec: dict[str, Any]) -> Message:
    return Message("user", [{"type": "compaction_summary", "text": ""}], None, lineno,
                   parse_timestamp(rec.get("timestamp")))


def _preserved_heads(src: SourceFile) -> dict[str, str]:
    """``{head uuid: boundary uuid}`` of compactions that kept a segment verbatim.

    Such a boundary (``compactMetadata.preservedSegment``) comes *after* the
    messages it keeps; they are held back and emitted after the summary. The
    marker is searched in the raw bytes first, so files without it (nearly
    all) cost one memchr-speed scan.
    """
    try:
        if os.path.getsize(src.path) == 0:
            return {}
        with src.open() as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            if mm.find(PRESERVED_MARK) < 0:
                return {}
    except (OSError, ValueError):
        pass    # no mmap here (a pipe, an odd file system): the line scan below decides
    heads = {}
    with src.open() as f:
        for raw in f:
            if PRESERVED_MARK not in raw:
                continue
            try:
                rec = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue   # reported by the main pass
            if not isinstance(rec, dict) or rec.get("subtype") != "compact_boundary":
                continue
            meta = rec.get("compactMetadata")   # not an object: no segment (lines.py raised AttributeError here)
            seg = meta.get("preservedSegment") if isinstance(meta, dict) else None
            if isinstance(seg, dict) and isinstance(seg.get("headUuid"), str) and isinstance(rec.get("uuid"), str):
                heads[seg["headUuid"]] = rec["uuid"]
    return heads


def project_folder(path: Path, is_subagent: bool) -> str:
    """The project folder a transcript lies in (``projects/<project>/<session>.jsonl``; a subagent's lies in
    ``<project>/<session>/subagents/``), for transcripts that record no ``cwd``.

    >>> project_folder(Path("p/-home-me-app/s.jsonl"), False), project_folder(Path("p/-home-me-app/s/subagents/a.jsonl"), True)
    ('-home-me-app', '-home-me-app')
    """
    parents = path.parents
    return (parents[2] if is_subagent and parents[0].name == "subagents" and len(parents) > 2 else parents[0]).name

