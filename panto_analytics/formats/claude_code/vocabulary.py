"""Claude Code's vocabulary, and the small rules its two readers (:mod:`.fast`, :mod:`.reader`) and the
detection share: the format's name, the record types only it writes, the markers, a summary's or a queued
prompt's text, and the project folder of a transcript that records no ``cwd``."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from ..record_fields import Invalid

__all__ = ["NAME", "PRESERVED_MARK", "RESTORED_ATTACHMENTS", "SYNTHETIC_MODEL", "TOOL_USE_BLOCKS", "USAGE_KEYS",
           "project_folder", "restored_file", "sniff", "text_of"]

NAME = "claude-code"

#: ``message.model`` of the messages Claude Code writes itself (API errors, ...).
SYNTHETIC_MODEL = "<synthetic>"

#: Record types only Claude Code writes (besides ``user``/``assistant``/``system``).
_OWN_TYPES = frozenset({
    "summary", "file-history-snapshot", "queue-operation", "ai-title", "custom-title",
    "last-prompt", "permission-mode", "attachment", "progress", "agent-name", "pr-link",
})
#: Record types that carry a uuid in the conversation tree.
_TREE_TYPES = frozenset({"user", "assistant", "system", "attachment", "progress"})

#: How Anthropic usage counters map onto libpanto's.
USAGE_KEYS = (("input", "input_tokens"), ("output", "output_tokens"),
               ("cache_read", "cache_read_input_tokens"), ("cache_write", "cache_creation_input_tokens"))

#: Assistant block types that are a tool call (their ``input`` is counted as its compact JSON).
TOOL_USE_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")

PRESERVED_MARK = b"preservedSegment"


def sniff(record: Any) -> bool:
    """A Claude Code record: a tree record (``uuid`` and ``parentUuid``) or a type only it writes."""
    if not isinstance(record, dict):
        return False
    kind = record.get("type")
    if kind in _TREE_TYPES and "uuid" in record and "parentUuid" in record:
        return True
    if kind == "summary":
        return "leafUuid" in record
    return kind in _OWN_TYPES and ("sessionId" in record or "messageId" in record or "operation" in record
                                   or "aiTitle" in record or "lastPrompt" in record or "permissionMode" in record)


def text_of(content: Any) -> str:
    """A compact summary's or a queued prompt's text: the string, or a list's text blocks (objects, or Structs
    decoded typed) joined by newlines.

    >>> text_of([{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}])
    'a\\nb'
    """
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        blocks = (msgspec.structs.asdict(b) if isinstance(b, msgspec.Struct) else b for b in content)
        return "\n".join(b["text"] for b in blocks
                         if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    raise Invalid(f"message.content must be a string or a list, got {type(content).__name__}")


def project_folder(path: Path, is_subagent: bool) -> str:
    """The project folder a transcript lies in (``projects/<project>/<session>.jsonl``; a subagent's lies in
    ``<project>/<session>/subagents/``), for transcripts that record no ``cwd``.

    >>> project_folder(Path("p/-home-me-app/s.jsonl"), False), project_folder(Path("p/-home-me-app/s/subagents/a.jsonl"), True)
    ('-home-me-app', '-home-me-app')
    """
    parents = path.parents
    return (parents[2] if is_subagent and parents[0].name == "subagents" and len(parents) > 2 else parents[0]).name


#: The attachments Claude Code writes for the files it re-attaches after a compaction
#: (``createPostCompactFileAttachments``): ``file`` (the content; ``truncated``: cut short) and
#: ``compact_file_reference`` (a file over the per-file cap: its name only).
RESTORED_ATTACHMENTS = frozenset({"file", "compact_file_reference"})


def restored_file(compaction: dict[str, Any], kind: str, filename: Any, truncated: Any) -> None:
    """Record on a compaction (its :class:`..base.SessionMeta` dict) what one attachment after it shows:
    ``restored_files`` lists the files re-attached whole; a truncated file or a name only is not restored, but
    says that the recording shows the restoration (the list exists, maybe empty).

    >>> c = {}
    >>> restored_file(c, "file", "/r/a.py", None); restored_file(c, "compact_file_reference", "/r/big.py", None)
    >>> restored_file(c, "file", "/r/long.py", True); c
    {'restored_files': ['/r/a.py']}
    """
    files = compaction.setdefault("restored_files", [])
    if kind == "file" and truncated is not True and isinstance(filename, str) and filename:
        files.append(filename)
