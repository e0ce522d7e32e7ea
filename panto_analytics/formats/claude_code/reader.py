"""Claude Code transcripts, one file at a time: each line decoded into the declared record shapes (:mod:`.shapes`).

Reads every transcript the fast path (:mod:`.fast`) declines. A line of another shape is read as plain JSON
into the same Structs, each field as the line holds it (:func:`_plain`), so one set of checks judges both. A
typed record that lacks what is needed (a server tool's result, a queued prompt, ``compactMetadata``: values
whose numbers must read as orjson reads them) is read again plain; a line is decoded typed only where orjson reads
it too (:func:`.typed.plain`), so that second read cannot fail. A file reads as the line-by-line reader this
replaced (``reference/claude_code_lines.py``) reads it.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "s.jsonl"
>>> _ = p.write_text('{"type":"user","uuid":"u1","sessionId":"s","message":{"content":"hi"}}\\n'
...     '{"type":"assistant","uuid":"a1","message":{"id":"m","model":"claude-x","usage":{"output_tokens":7},'
...     '"content":[{"type":"web_search_tool_result","content":[]}]}}\\n')
>>> src = SourceFile(p, NAME)
>>> [(m.role, m.content, m.usage and m.usage["output"]) for m in parse(src)], src.meta.api_calls
([('user', [{'type': 'text', 'text': 'hi'}], None), ('assistant', [{'type': 'text', 'text': '[]'}], 7)], 1)
"""
from __future__ import annotations

import mmap
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar, cast

import msgspec
import orjson

from ..contract import Message, SourceFile
from ..jsonl import require_string
from ..record_fields import BAD_RECORD, Invalid, bad_record, parse_timestamp, usage_counter
from ..session_files import session_stem
from ..typed import TypedLines, raw_json
from .shapes import DECODER, Attachment, Block, CacheSplit, Iteration, MediaSource, Part, Record, Usage, counted_usage
from .shapes import Message as Said
from .vocabulary import (
    NAME,
    PRESERVED_MARK,
    RESTORED_ATTACHMENTS,
    SYNTHETIC_MODEL,
    TOOL_USE_BLOCKS,
    USAGE_KEYS,
    project_folder,
    restored_file,
    text_of,
)

__all__ = ["NAME", "parse"]

_S = TypeVar("_S", bound=msgspec.Struct)


class _Plain(Exception):
    """A typed record lacks what the reader needs here: its line is read again as plain JSON."""


def parse(src: SourceFile) -> Iterator[Message]:
    """Yield the messages of one Claude Code transcript, in the order the agent had them.

    They come once the whole file is read: a call's later lines may come after other messages, and its final
    usage goes to its first message (billed once)."""
    state = _Transcript(src, _preserved_heads(src))
    lines = TypedLines(src, DECODER)
    for lineno, rec in lines:
        try:
            if rec.__class__ is Record:
                try:
                    state.record(rec, lineno, typed=True)
                except _Plain:   # read the line again, plain (orjson reads every line decoded typed: typed.plain)
                    state.record(_plain(orjson.loads(lines.raw(lineno))), lineno, typed=False)
            else:
                state.record(_plain(cast("dict[str, Any]", rec)), lineno, typed=False)
        except BAD_RECORD as e:
            src.invalid(lineno, bad_record(e))
    state.finish()
    yield from state.out


def _plain(rec: dict[str, Any]) -> Record:
    """A record read as plain JSON, in the declared shapes: each field as the line holds it, whatever its type (the
    checks judge it), except these objects, made the Structs the checks read:

    - ``attachment`` and ``message``: an :class:`Attachment` and a :class:`Said` (anything else there: None);
    - ``message.content``: each object in a list a :class:`Block`, and each object in a ``tool_result`` block's
      ``content`` list a :class:`Part` (items that are not objects kept as they are, for the checks to refuse);
    - ``message.usage``: a :class:`Usage` (anything else kept as it is, for the checks to refuse), its
      ``cache_creation`` a :class:`CacheSplit` (anything else there: None), and each object in its
      ``iterations`` list an :class:`Iteration` (with its own ``cache_creation`` so).

    Every other field keeps the line's value: a ``Part``'s ``source`` stays a dict, a server tool result's
    ``content`` and ``compactMetadata`` stay as orjson read them."""
    out, att, msg = _fields(Record, rec), rec.get("attachment"), rec.get("message")
    out.attachment = _fields(Attachment, att) if isinstance(att, dict) else None
    out.message = message = _fields(Said, msg) if isinstance(msg, dict) else None
    if message is not None:
        if isinstance(message.content, list):
            message.content = [_block(b) if isinstance(b, dict) else b for b in message.content]
        if isinstance(message.usage, dict):
            message.usage = usage = _fields(Usage, message.usage)
            usage.cache_creation = _split(usage.cache_creation)
            if isinstance(usage.iterations, list):
                usage.iterations = [_iteration(i) if isinstance(i, dict) else i for i in usage.iterations]
    return out


def _split(obj: Any) -> CacheSplit | None:
    return _fields(CacheSplit, obj) if isinstance(obj, dict) else None


def _iteration(obj: dict[str, Any]) -> Iteration:
    step = _fields(Iteration, obj)
    step.cache_creation = _split(step.cache_creation)
    return step


def _block(obj: dict[str, Any]) -> Block:
    block = _fields(Block, obj)   # a tool result's parts as Parts (a server tool's result keeps its content)
    if block.type == "tool_result" and isinstance(block.content, list):
        block.content = [_fields(Part, p) if isinstance(p, dict) else p for p in block.content]
    return block


def _fields(shape: type[_S], obj: dict[str, Any]) -> _S:
    """``shape`` (a Struct) holding ``obj``'s fields of its names, as they are (a Struct does not check them)."""
    return shape(**{name: obj.get(name) for name in shape.__struct_fields__})


@dataclass
class _Call:
    """An assistant message still streaming: later lines of its API call extend it."""

    msg: Message
    key: tuple[Any, ...] | None
    uid: str | None
    billed: Message   # the message that carries the call's usage: ``msg``, or the call's first message
    results: list[tuple[Message, str | None]] = field(default_factory=list)   # tool results written meanwhile


@dataclass
class _Compaction:
    """A compact boundary waiting for its summary record."""

    msg: Message
    uid: str | None
    trigger: str | None
    tokens_before: int | None


class _Transcript:
    """Turns records into messages; ``out`` holds those that are final."""

    def __init__(self, src: SourceFile, preserved: dict[str, str]):
        self.src = src
        self.out: list[Message] = []
        self.ids: list[str | None] = []
        self.call: _Call | None = None
        self.compaction: _Compaction | None = None
        #: The compaction just recorded, until the next assistant record: the files attached after it are its.
        self.restoring: dict[str, Any] | None = None
        self.preserved = preserved   # head uuid -> the boundary that keeps the segment from there on
        self.kept: list[tuple[Message, str | None]] | None = None
        self.kept_for: str | None = None
        self.seen: set[str] = set()
        self.dropped: list[str] = []   # the record's blocks libpanto has none of, counted once it is valid
        self.calls: dict[tuple[Any, ...], Message] = {}   # each call's key -> its first message (it is billed)
        self.models: Counter[str] = Counter()
        self.api_calls = 0
        self.sidechain: bool | None = None   # decided by the first user/assistant record
        self.session_id: str | None = None
        self.agent_id: str | None = None
        self.created_at: datetime | None = None
        self.typed = False   # the record read now was decoded typed

    def _emit(self, msg: Message, uid: str | None) -> None:
        if self.kept is not None:
            self.kept.append((msg, uid))
        else:
            self._final(msg, uid)

    def _final(self, msg: Message, uid: str | None) -> None:
        self.out.append(msg)
        self.ids.append(uid)

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
        anchor = len(self.ids)
        self._final(comp.msg, comp.uid if comp.uid is not None else summary_uid)
        first_kept = None
        if boundary_keeps:
            first_kept = len(self.ids) if self.kept else None
            self._release_kept()
        # The preserved segment was written before the boundary: the conversation compacted ends after it.
        end = len(self.ids) if first_kept is not None else None
        self.src.meta.compactions.append({"anchor_index": anchor, "trigger": comp.trigger,
                                          "tokens_before": comp.tokens_before, "first_kept_index": first_kept,
                                          "trigger_index": anchor if end is None else end, "kept_end_index": end})
        if self.restoring is not None and "restored_files" in self.restoring:
            self.src.meta.compactions[-1]["restored_files"] = self.restoring["restored_files"]
        self.restoring = self.src.meta.compactions[-1]

    def finish(self) -> None:
        self._flush()
        self._release_kept()
        meta = self.src.meta
        if self.sidechain and self.session_id is not None:
            agent = self.agent_id or session_stem(self.src.path).removeprefix("agent-")
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

    def record(self, rec: Record, lineno: int, typed: bool) -> None:
        self.typed = typed
        kind = rec.type
        if not isinstance(kind, str):
            raise Invalid("record has no 'type' string")
        uid = rec.uuid
        if uid is not None and not isinstance(uid, str):
            raise Invalid(f"uuid must be a string, got {type(uid).__name__}")
        if uid in self.seen:   # Claude Code sometimes writes a record twice; its uuid says so
            self.src.ignore(f"{kind} (duplicate uuid)")
            return
        self.dropped.clear()
        if kind == "user":
            self._user(rec, lineno, uid)
        elif kind == "assistant":
            self._assistant(rec, lineno, uid)
        elif kind == "system" and rec.subtype == "compact_boundary":
            self._boundary(rec, lineno, uid)
        elif kind == "system":
            self.src.ignore(f"system/{rec.subtype}")
        elif kind == "attachment":
            self._attachment(rec, lineno, uid)
        else:
            self.src.ignore(kind)
        for what in self.dropped:
            self.src.ignore(what)
        if uid is not None:
            self.seen.add(uid)
        if isinstance(rec.sessionId, str):
            self.session_id = rec.sessionId

    def _foreign(self, rec: Record, kind: str) -> bool:
        """A sidechain record inside a main transcript (older versions wrote subagents inline): counted, skipped."""
        if self.sidechain is False and rec.isSidechain is True:
            self.src.ignore(f"{kind} (sidechain in a main transcript)")
            return True
        return False

    def _conversation(self, rec: Record, uid: str | None, joins_call: bool = False) -> None:
        """Bookkeeping for a record that becomes (part of) a message (``joins_call``: of the call streaming now); the
        first one says whose transcript it is."""
        if self.sidechain is None:
            self.sidechain = rec.isSidechain is True
        if isinstance(rec.agentId, str):
            self.agent_id = rec.agentId
        if self.created_at is None:
            self.created_at = parse_timestamp(rec.timestamp)
        if self.src.meta.project is None and isinstance(rec.cwd, str) and rec.cwd:
            self.src.meta.project = rec.cwd
        if uid is not None and uid in self.preserved and self.kept is None:
            # The first message a later compaction keeps verbatim: hold messages from here on (with the call
            # streaming now, if this record is part of it) until that compaction's summary is out.
            if not joins_call:
                self._flush()
            self.kept, self.kept_for = [], self.preserved[uid]

    def _user(self, rec: Record, lineno: int, uid: str | None) -> None:
        message = rec.message
        if message is None:
            raise Invalid("user record has no 'message' object")
        content = message.content
        if rec.isCompactSummary is True:
            text = text_of(content)
            if self._foreign(rec, "user"):
                return
            self._conversation(rec, uid, joins_call=True)
            if self.compaction is None:
                # A summary without a boundary record (older versions): it is its own boundary.
                if self.call is not None:
                    self._flush()
                self.compaction = _Compaction(_summary(lineno, rec), uid, None, None)
                self.restoring = {}   # what is attached from here on is this compaction's
            self._emit_compaction(text, uid)
            return
        if rec.isVisibleInTranscriptOnly is True:
            self.src.ignore("user (transcript only)")
            return
        if self._foreign(rec, "user"):
            return
        blocks = self._user_blocks(content)
        during_call = self.call is not None and any(b["type"] == "tool_result" for b in blocks)
        self._conversation(rec, uid, joins_call=during_call)
        msg = Message("user", blocks, None, lineno, parse_timestamp(rec.timestamp))
        if during_call:
            assert self.call is not None  # during_call says a call streams
            self.call.results.append((msg, uid))
            return
        self._flush()
        self._emit(msg, uid)

    def _assistant(self, rec: Record, lineno: int, uid: str | None) -> None:
        message = rec.message
        if message is None:
            raise Invalid("assistant record has no 'message' object")
        content = message.content
        if not isinstance(content, list):
            raise Invalid(f"assistant message.content must be a list, got {type(content).__name__}")
        blocks = self._assistant_blocks(content)
        model = message.model if isinstance(message.model, str) else None
        synthetic = model == SYNTHETIC_MODEL
        usage = None if synthetic else _usage(message.usage)
        if self._foreign(rec, "assistant"):
            self.dropped.clear()
            return
        self.restoring = None
        mid, rid = message.id, rec.requestId
        key = (mid, rid if isinstance(rid, str) else None) if isinstance(mid, str) else None
        call = self.call
        same_call = key is not None and call is not None and call.key == key
        self._conversation(rec, uid, joins_call=same_call)
        if same_call:
            assert call is not None  # same_call says there is one
            call.msg.content.extend(blocks)
            if usage is not None:
                call.billed.usage = usage      # the call's final line has its final usage
            return
        self._flush()
        first = self.calls.get(key) if key is not None else None
        if first is not None:
            # More lines of a call emitted already (another message came between): a message of its own, but
            # not another call; the call's first message keeps its final usage (billed once).
            if usage is not None:
                first.usage = usage
            usage = None
        elif not synthetic:
            self.api_calls += 1
            if model is not None:
                self.models[model] += 1
        msg = Message("assistant", blocks, usage, lineno, parse_timestamp(rec.timestamp), model,
                      cwd=rec.cwd if isinstance(rec.cwd, str) and rec.cwd else None)
        if key is not None and first is None:
            self.calls[key] = msg
        self.call = _Call(msg, key, uid, msg if first is None else first)

    def _boundary(self, rec: Record, lineno: int, uid: str | None) -> None:
        if self.typed:
            raise _Plain   # compactMetadata: its numbers as orjson reads them
        meta = rec.compactMetadata if isinstance(rec.compactMetadata, dict) else {}
        trigger, tokens = meta.get("trigger"), meta.get("preTokens")
        self._flush()
        self.restoring = {}   # files attached between the boundary and its summary are this compaction's too
        self.compaction = _Compaction(
            _summary(lineno, rec), uid,
            trigger if isinstance(trigger, str) else None,
            tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None)

    def _attachment(self, rec: Record, lineno: int, uid: str | None) -> None:
        att = rec.attachment
        kind = None if att is None else att.type
        if kind == "queued_command" and att is not None and att.prompt is not None:
            if self.typed:
                raise _Plain   # the prompt: its numbers as orjson reads them
            # A prompt the user typed while the agent worked, handed to the model mid-turn.
            text = text_of(att.prompt)
            if self._foreign(rec, "attachment"):
                return
            self._conversation(rec, uid)
            self._flush()
            self._emit(Message("user", [{"type": "text", "text": text}], None, lineno,
                               parse_timestamp(rec.timestamp)), uid)
            return
        # A type of another kind (a list, an object) is no restoration: counted as ignored, as the oracle does.
        if isinstance(kind, str) and kind in RESTORED_ATTACHMENTS and self.restoring is not None and att is not None \
                and not (self.sidechain is False and rec.isSidechain is True):
            restored_file(self.restoring, kind, att.filename, att.truncated)
        self.src.ignore(f"attachment/{kind}")

    def _user_blocks(self, content: Any) -> list[dict[str, Any]]:
        if isinstance(content, str):
            return [{"type": "text", "text": content}]
        if not isinstance(content, list):
            raise Invalid(f"user message.content must be a string or a list, got {type(content).__name__}")
        blocks: list[dict[str, Any]] = []
        for i, block in enumerate(content):
            kind = _block_type(block, i)
            if kind == "text":
                blocks.append({"type": "text", "text": require_string(block.text, f"content[{i}].text")})
            elif kind == "tool_result":
                blocks.append({"type": "tool_result",
                               "tool_use_id": require_string(block.tool_use_id, f"content[{i}].tool_use_id"),
                               "parts": self._result_parts(block.content, i)})
            else:   # images and documents outside a tool result have no libpanto block
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
                parts.append({"type": "text", "text": require_string(part.text, f"content[{i}].content[{j}].text")})
            elif kind in ("image", "document"):
                source = part.source   # decoded typed: a MediaSource; read plain: as the line holds it
                media = source.media_type if isinstance(source, MediaSource) else source.get("media_type") \
                    if isinstance(source, dict) else None
                parts.append({"type": "media", "media_type": media if isinstance(media, str) else kind})
            else:
                self.dropped.append(f"tool_result part/{kind}")
        return parts

    def _assistant_blocks(self, content: list[Any]) -> list[dict[str, Any]]:
        blocks = []
        for i, block in enumerate(content):
            kind = _block_type(block, i)
            if kind == "text":
                blocks.append({"type": "text", "text": require_string(block.text, f"content[{i}].text")})
            elif kind == "thinking":
                blocks.append({"type": "thinking", "text": require_string(block.thinking, f"content[{i}].thinking")})
            elif kind == "redacted_thinking":
                blocks.append({"type": "thinking", "text": ""})
            elif kind in TOOL_USE_BLOCKS:
                # id and name first, as the oracle checks them: an input nested past orjson's writer raises TypeError
                tool_id = require_string(block.id, f"content[{i}].id")
                name = require_string(block.name, f"content[{i}].name")
                text = raw_json(block.input) if self.typed else orjson.dumps(block.input).decode()   # typed: its bytes
                blocks.append({"type": "tool_use", "id": tool_id, "name": name, "input": text})
            elif kind.endswith("_tool_result"):   # a server tool's result, in the message itself: context all the same
                if self.typed:
                    raise _Plain   # its content, whole
                blocks.append({"type": "text", "text": orjson.dumps(block.content).decode()})
            else:
                self.dropped.append(f"assistant block/{kind}")
        return blocks


def _block_type(block: Any, i: int, where: str = "content") -> str:
    if not isinstance(block, Block | Part):
        raise Invalid(f"{where}[{i}] must be an object")
    kind = block.type
    if not isinstance(kind, str):
        raise Invalid(f"{where}[{i}] has no 'type' string")
    return kind


def _usage(usage: Any) -> dict[str, int] | None:
    """Anthropic ``usage`` as libpanto's counters (``cache_write_1h``: ``cache_creation.ephemeral_1h_input_tokens``);
    where the four counters are all zero, the sum of ``usage.iterations`` (:func:`.shapes.counted_usage`), each
    iteration's counters checked first."""
    if usage is None:
        return None
    if not isinstance(usage, Usage):
        raise Invalid(f"message.usage must be an object, got {type(usage).__name__}")
    out = _counters(usage, "message.usage")
    if usage.iterations is not None and not any(out[name] for name, _ in USAGE_KEYS):
        steps = usage.iterations
        if not isinstance(steps, list):
            raise Invalid(f"message.usage.iterations must be a list, got {type(steps).__name__}")
        for i, step in enumerate(steps):
            if not isinstance(step, Iteration):
                raise Invalid(f"message.usage.iterations[{i}] must be an object")
            _counters(step, f"message.usage.iterations[{i}]")
        out = _counters(counted_usage(usage), "message.usage.iterations (their sum)")
    return out


def _counters(usage: Usage | Iteration, where: str) -> dict[str, int]:
    """The counters of a usage or an iteration, each checked (:func:`.record_fields.usage_counter`)."""
    out = {name: usage_counter(getattr(usage, key), f"{where}.{key}") for name, key in USAGE_KEYS}
    split = usage.cache_creation
    out["cache_write_1h"] = usage_counter(None if split is None else split.ephemeral_1h_input_tokens,
                                          f"{where}.cache_creation.ephemeral_1h_input_tokens")
    return out


def _summary(lineno: int, rec: Record) -> Message:
    return Message("user", [{"type": "compaction_summary", "text": ""}], None, lineno, parse_timestamp(rec.timestamp))


def _preserved_heads(src: SourceFile) -> dict[str, str]:
    """``{head uuid: boundary uuid}`` of compactions that kept a segment verbatim (held back until their summary
    is out); a file without the marker in its bytes (nearly all) costs one memchr-speed scan."""
    try:
        if os.path.getsize(src.path) == 0:
            return {}
        with src.open() as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            if mm.find(PRESERVED_MARK) < 0:
                return {}
    except (OSError, ValueError):
        pass    # no mmap here (a pipe, an odd file system): the line scan below decides
    heads: dict[str, str] = {}
    with src.open() as f:
        for raw in f:
            try:
                rec = orjson.loads(raw) if PRESERVED_MARK in raw else {}
            except orjson.JSONDecodeError:
                continue   # reported by the main pass
            meta = rec.get("compactMetadata") if isinstance(rec, dict) and rec.get("subtype") == "compact_boundary" else None
            seg = meta.get("preservedSegment") if isinstance(meta, dict) else None
            if isinstance(seg, dict) and isinstance(seg.get("headUuid"), str) and isinstance(rec.get("uuid"), str):
                heads[seg["headUuid"]] = rec["uuid"]
    return heads
