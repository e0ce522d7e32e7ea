"""The canonical session JSONL format, one file at a time: each line decoded into the declared record shapes.

See ``docs/formats.md``. Every line is validated; the first problem on a
line is reported with its file and line number. Lines are decoded by msgspec
into the record shapes of :mod:`.shapes` (whole chunks of lines at once where
each line provably holds one record, :class:`~..typed.TypedLines`); decoding
is the validation. A line of another shape (an unknown record, block or part
type, a field of another type, a role or system mode not listed, a usage
counter out of range, a numeric timestamp) is read as plain JSON by the
checks below, which name the file's own fields in their errors, so a file
reads the same either way: its messages, skips and errors are those of the
line-by-line reader this replaced, ``reference/canonical_lines.py``, the
oracle of ``tests/formats/test_canonical_differential.py`` (a message's
blocks hold their own fields only, the frame the same).

:mod:`.fast` reads many clean files at once and leaves the others to
:func:`parse`.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import msgspec

from ...frame.schema import ROLES, USAGE_COLUMNS
from ..contract import Message, SourceFile
from ..jsonl import require_string
from ..record_fields import BAD_RECORD, Invalid, bad_record, parse_timestamp, timestamp_field, usage_counter
from ..typed import TypedLines
from .shapes import Header, MessageRecord, Record

__all__ = ["NAME", "SYSTEM_MODES", "header", "parse", "record_compactions", "sniff"]

NAME = "canonical"

_TEXT_BLOCKS = ("text", "thinking", "compaction_summary")
SYSTEM_MODES = ("append", "replace")

_RECORDS = msgspec.json.Decoder(Record)


def sniff(record: Any) -> bool:
    """A canonical file starts with a ``session`` or ``message`` record.

    pi uses the same two type names: its header has ``cwd`` and ``version``,
    its message entries wrap a ``message`` object; neither is canonical.

    >>> sniff({"type": "session", "id": "s"}), sniff({"type": "session", "id": "s", "cwd": "/"})
    (True, False)
    """
    if not isinstance(record, dict):
        return False
    kind = record.get("type")
    if kind == "session":
        return "cwd" not in record and "version" not in record
    return kind == "message" and "message" not in record and ("role" in record or "id" in record)


def parse(src: SourceFile) -> Iterator[Message]:
    """Yield the messages of one canonical session file.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "s.jsonl"
    >>> _ = p.write_text('{"type":"message","role":"user","content":[{"type":"text","text":"hi","x":1}]}\\n')
    >>> [(m.role, m.content, m.line) for m in parse(SourceFile(p, NAME))]
    [('user', [{'type': 'text', 'text': 'hi'}], 1)]
    """
    n_messages = 0
    first = True
    for lineno, rec in TypedLines(src, _RECORDS):
        try:
            shape = type(rec)
            if shape is MessageRecord:
                message = _typed_message(cast("MessageRecord[str]", rec), lineno)
            elif shape is Header:
                if not first:
                    raise Invalid("a session record may only be the first line")
                header(src, cast(Header, rec).as_dict())
                message = None
            else:  # a line of another shape, read plain
                message = _plain_record(src, cast("dict[str, Any]", rec), lineno, first)
            if message is not None:
                if any(b["type"] == "compaction_summary" for b in message.content):
                    record_compactions(src, [n_messages])
                n_messages += 1
                yield message
        except BAD_RECORD as e:
            src.invalid(lineno, bad_record(e))
        first = False
    # No record at all (an empty or blank file, or only lines skipped): nothing to read, not a session.
    src.holds_nothing = first


def record_compactions(src: SourceFile, anchor_indices: list[int]) -> None:
    """Each summary message is a compaction event; the canonical format records nothing more about it (what it
    kept is read from the timestamps once the frame is built: :mod:`.compactions`)."""
    src.meta.compactions.extend(
        {"anchor_index": i, "trigger": None, "tokens_before": None, "first_kept_index": None} for i in anchor_indices)


def header(src: SourceFile, rec: dict[str, Any]) -> None:
    """The session header's fields into ``src.meta``, or :class:`Invalid` naming the field that is wrong."""
    sid = rec.get("id")
    if sid is not None:
        src.meta.session_id = require_string(sid, "session.id")
    model = rec.get("model")
    src.meta.model = None if model is None else require_string(model, "session.model")
    cw = rec.get("context_window")
    if cw is not None:
        if isinstance(cw, bool) or not isinstance(cw, int) or cw < 0:
            raise Invalid(f"session.context_window must be a non-negative integer, got {cw!r}")
        src.meta.context_window = cw
    created = rec.get("created_at")
    if created is not None:
        src.meta.created_at = parse_timestamp(created)
        if src.meta.created_at is None:
            raise Invalid(f"session.created_at is not an ISO-8601 timestamp: {created!r}")


# -- the typed path: a decoded record already passed every check a Struct states -------------------------------


def _typed_message(rec: MessageRecord[str], lineno: int) -> Message:
    usage = rec.usage
    return Message(rec.role, msgspec.to_builtins(rec.content),
                   None if usage is None else {key: getattr(usage, key) or 0 for key in USAGE_COLUMNS}, lineno,
                   timestamp=timestamp_field(rec.timestamp, "message.timestamp"))


# -- the plain checks: a line of another shape, every field checked by hand and named in the error ------------


def _plain_record(src: SourceFile, rec: dict[str, Any], lineno: int, first: bool) -> Message | None:
    kind = rec.get("type")
    if kind == "message":
        return _message(rec, lineno)
    if kind == "session":
        if not first:
            raise Invalid("a session record may only be the first line")
        header(src, rec)
        return None
    raise Invalid(f"unknown record type {kind!r} (expected 'session' or 'message')")


def _message(rec: dict[str, Any], lineno: int) -> Message:
    role = rec.get("role")
    if role not in ROLES:
        raise Invalid(f"message.role must be one of {', '.join(ROLES)}, got {role!r}")
    content = rec.get("content", [])
    if not isinstance(content, list):
        raise Invalid(f"message.content must be a list, got {type(content).__name__}")
    for i, block in enumerate(content):
        _block(block, f"content[{i}]")
    return Message(role, content, _usage(rec.get("usage")), lineno,
                   timestamp=timestamp_field(rec.get("timestamp"), "message.timestamp"))


def _usage(usage: Any) -> dict[str, int] | None:
    if usage is None:
        return None
    if not isinstance(usage, dict):
        raise Invalid(f"message.usage must be an object or null, got {type(usage).__name__}")
    return {key: usage_counter(usage.get(key), f"usage.{key}") for key in USAGE_COLUMNS}


def _block(block: Any, where: str) -> None:
    if not isinstance(block, dict):
        raise Invalid(f"{where} must be an object")
    kind = block.get("type")
    if kind in _TEXT_BLOCKS:
        require_string(block.get("text"), f"{where}.text")
    elif kind == "tool_use":
        require_string(block.get("id"), f"{where}.id")
        require_string(block.get("name"), f"{where}.name")
        require_string(block.get("input"), f"{where}.input")
    elif kind == "tool_result":
        require_string(block.get("tool_use_id"), f"{where}.tool_use_id")
        parts = block.get("parts")
        if not isinstance(parts, list):
            raise Invalid(f"{where}.parts must be a list")
        for j, part in enumerate(parts):
            _part(part, f"{where}.parts[{j}]")
    elif kind == "system":
        require_string(block.get("text"), f"{where}.text")
        if block.get("mode", "append") not in SYSTEM_MODES:
            raise Invalid(f"{where}.mode must be 'append' or 'replace', got {block.get('mode')!r}")
    else:
        raise Invalid(f"{where}: unknown block type {kind!r}")


def _part(part: Any, where: str) -> None:
    if not isinstance(part, dict):
        raise Invalid(f"{where} must be an object")
    kind = part.get("type")
    if kind == "text":
        require_string(part.get("text"), f"{where}.text")
    elif kind == "media":
        require_string(part.get("media_type"), f"{where}.media_type")
    else:
        raise Invalid(f"{where}: unknown part type {kind!r} (expected 'text' or 'media')")
