"""The frame schemas: every column panto_analytics produces is declared here, once.

The *message frame* has one row per message, ordered by ``(session_id, seq)``.
It keeps counts, flags and usage only, never raw text, so that a corpus of
millions of messages fits in a few dozen bytes per message.

>>> import polars as pl
>>> empty_messages().schema["role"]
Enum(categories=['system', 'user', 'assistant'])
"""
from __future__ import annotations

import polars as pl

from ..defaults import SOURCE_FORMATS

__all__ = [
    "AGENT_VERSION", "COMPACTIONS_SCHEMA", "SESSION", "MAX_USAGE", "MESSAGE_SCHEMA", "REFERENCE_SCHEMA", "REF_KINDS", "REF_STRUCT", "ROLES",
    "BUDGET", "ROLE", "RefKind", "Role", "SEQ", "SESSIONS_SCHEMA", "SESSION_META_SCHEMA",
    "SOURCE_FORMATS", "SPLIT_SCHEMA", "SourceFormat", "TURN_SCHEMA", "TokenSource", "USAGE_COLUMNS", "empty_messages",
]

#: The column every frame is keyed by: one session (the frames' own name for it, written once).
SESSION = "session_id"
#: The message order within a session (0, 1, ...), the role of a message, and the context budget of a split or
#: replay: the columns named most often after the session.
SEQ = "seq"
ROLE = "role"
BUDGET = "budget"
#: An optional message-frame column: the agent version that recorded the message (a string; Claude Code's
#: ``version`` field), read back from the recordings on demand (``ingest.versions``) for a policy whose rule
#: changed between versions. Not in :data:`MESSAGE_SCHEMA`: a frame without it has every version unknown.
AGENT_VERSION = "agent_version"

#: Message roles, in libpanto's order (``conversation.Role``).
ROLES = ("system", "user", "assistant")
Role = pl.Enum(list(ROLES))

SourceFormat = pl.Enum(list(SOURCE_FORMATS))

#: libpanto's ``Usage`` counters, in the harness' wire order.
USAGE_COLUMNS = ("input", "output", "cache_read", "cache_write")

#: Largest usage counter accepted. Token counts are stored as UInt32 to keep
#: the frame small; every sum is done in UInt64, where libpanto's u64
#: arithmetic cannot overflow for any session that fits in memory.
MAX_USAGE = 2**32 - 1

#: Where the turn cost came from (see :func:`panto_analytics.policy.turns`).
TokenSource = pl.Enum(["usage", "words"])

#: What a tool call does to its target (see :mod:`panto_analytics.frame.tool_targets`).
REF_KINDS = ("read", "write", "run", "fetch", "other")
RefKind = pl.Enum(list(REF_KINDS))

#: One target of one tool call, on the message that made the call: the call's position among the
#: message's tool calls, the 64-bit hash of the normalized target, its kind, whether the target is a file (not a
#: listing, a search, a command, a URL), whether the call is one of the agent's own file tools (Read, Edit, Write,
#: ...; not a shell command: what Claude Code restores after a compaction), the result's tokens (null: none).
REF_STRUCT = pl.Struct({"call": pl.UInt16(), "key": pl.UInt64(), "kind": RefKind, "file": pl.Boolean(),
                        "file_tool": pl.Boolean(), "tokens": pl.UInt32()})

MESSAGE_SCHEMA: dict[str, pl.DataType] = {
    SESSION: pl.Categorical(),
    SEQ: pl.UInt32(),
    ROLE: Role,
    "words": pl.UInt32(),
    #: What the message adds to a summarizer request, in bytes (see :mod:`panto_analytics.transcript`).
    "serialized_bytes": pl.UInt32(),
    "has_tool_result": pl.Boolean(),
    "has_summary": pl.Boolean(),
    #: pi's ``bashExecution`` (the user's ``!command`` run, given as a user message with its output): libpanto
    #: reads it as a user message; only ``pi-whole-turn`` tells it apart (no turn start). False in every other
    #: format. One bit per message.
    "bash_execution": pl.Boolean(),
    **{name: pl.UInt32() for name in USAGE_COLUMNS},
    #: Of ``cache_write``, the tokens written to the 1-hour cache (Claude Code's
    #: ``cache_creation.ephemeral_1h_input_tokens``); 0 where the format records no lifetime (a 5-minute
    #: write); null without usage, like the counters.
    "cache_write_1h": pl.UInt32(),
    #: The call's cost as the agent recorded it, in US dollars (pi's ``usage.cost.total``); null elsewhere.
    #: Float32 (7 significant digits, 4 bytes) keeps the frame under 64 bytes per message.
    "recorded_cost": pl.Float32(),
    "source_format": SourceFormat,
    "model": pl.Categorical(),
    "timestamp": pl.Datetime("ms", "UTC"),
    "file": pl.Categorical(),
    "line": pl.UInt32(),
    #: The targets of the message's tool calls (null: none); hashes only, no text.
    "refs": pl.List(REF_STRUCT),
}

#: The references table (:func:`panto_analytics.frame.tool_targets.references`): one row per
#: (session, message, tool call, target); ``call`` numbers the session's tool calls from 0.
REFERENCE_SCHEMA: dict[str, pl.DataType] = {
    SESSION: pl.Categorical(),
    SEQ: pl.UInt32(),
    "call": pl.UInt32(),
    "key": pl.UInt64(),
    "kind": RefKind,
    "file": pl.Boolean(),
    "file_tool": pl.Boolean(),
    "tokens": pl.UInt32(),
}

TURN_SCHEMA: dict[str, pl.DataType] = {
    SESSION: pl.Categorical(),
    "turn": pl.UInt32(),
    "start_seq": pl.UInt32(),
    "end_seq": pl.UInt32(),
    "n_messages": pl.UInt32(),
    "tokens": pl.UInt64(),
    "token_source": TokenSource,
}

SPLIT_SCHEMA: dict[str, pl.DataType] = {
    SESSION: pl.Categorical(),
    BUDGET: pl.UInt64(),
    "prefix_end": pl.UInt32(),
    "kept_turns": pl.UInt32(),
    "kept_tokens": pl.UInt64(),
    "summarized_tokens": pl.UInt64(),
    "active_tokens": pl.UInt64(),
    "n_turns": pl.UInt32(),
    "n_messages": pl.UInt32(),
    "noop": pl.Boolean(),
    "capped": pl.Boolean(),
    #: UTF-8 bytes of the summarizer request libpanto sends for the split; null for a no-op.
    "request_bytes": pl.UInt64(),
}

#: What a file says about its session (the file-level part of :data:`SESSIONS_SCHEMA`).
SESSION_META_SCHEMA: dict[str, pl.DataType] = {
    SESSION: pl.Categorical(),
    "file": pl.String(),
    "source_format": SourceFormat,
    "model": pl.String(),
    "context_window": pl.UInt64(),
    "parent_session_id": pl.String(),
    "created_at": pl.Datetime("ms", "UTC"),
    "project": pl.String(),
    "is_subagent": pl.Boolean(),
}


#: The sessions table (:func:`panto_analytics.ingest.sessions`): one row per session.
SESSIONS_SCHEMA: dict[str, pl.DataType] = {
    SESSION: pl.Categorical(),
    "file": pl.String(),
    "source_format": SourceFormat,
    #: The model, normalized for grouping (``claude-opus-4-5-20251101`` is ``claude-opus-4-5``).
    "model": pl.String(),
    #: The model as recorded.
    "model_raw": pl.String(),
    #: The recorded working directory (Claude Code without one: its project folder).
    "project": pl.String(),
    "is_subagent": pl.Boolean(),
    "context_window": pl.UInt64(),
    "first_timestamp": pl.Datetime("ms", "UTC"),
    "last_timestamp": pl.Datetime("ms", "UTC"),
    "messages": pl.UInt32(),
    "api_calls": pl.UInt32(),
    "final_context": pl.UInt64(),
    "compactions": pl.UInt32(),
    "parent_session_id": pl.String(),
}

#: The recorded compactions table (:func:`panto_analytics.ingest.compactions`).
COMPACTIONS_SCHEMA: dict[str, pl.DataType] = {
    SESSION: pl.Categorical(),
    "anchor_seq": pl.UInt32(),
    "trigger": pl.String(),
    "tokens_before": pl.UInt64(),
    "first_kept_seq": pl.UInt32(),
    #: One past the last message of the conversation the agent compacted: rows ``seq < anchor_seq`` and
    #: ``anchor_seq < seq < trigger_seq`` (pi, and Claude Code's preserved segment, record what they keep
    #: before the compaction); ``anchor_seq`` elsewhere.
    "trigger_seq": pl.UInt32(),
    #: One past the last message the agent kept verbatim (``first_kept_seq`` up to it); null when none.
    "kept_end_seq": pl.UInt32(),
    #: The keys of the files the recording shows re-attached whole after the compaction (Claude Code's ``file``
    #: attachments; a truncated file or a name only is not restored); null where the recording does not show it.
    "restored_keys": pl.List(pl.UInt64()),
}


def empty_messages() -> pl.DataFrame:
    """A message frame with no rows and the full schema."""
    return pl.DataFrame(schema=MESSAGE_SCHEMA)
