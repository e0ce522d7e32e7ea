"""Canonical content blocks held in Arrow arrays, and what each message's blocks add up to, counted at once.

Every reader ends here: the columnar fast paths map their sources' blocks
onto :data:`BLOCK` themselves, and :class:`~.frame_builder.FrameBuilder` converts the
line-by-line readers' block dicts into it (:func:`block_array`). Per message,
:func:`words_and_flags` gives libpanto's word count
(:func:`~panto_analytics.frame.words.message_words`) and whether it holds a tool
result or a summary, and :func:`serialized_bytes` what it adds to a summarizer
request (:func:`~panto_analytics.transcript.serialized_bytes`), each over the
whole array in a few Arrow and NumPy calls. Both read only the fields a block's
type has (a ``text`` key on a tool call counts nothing), as their Python
references do.

>>> blocks = block_array([{"type": "text", "text": "a b"}, {"type": "tool_use", "id": "c", "name": "ls",
...                        "input": "{}", "text": "not counted"}])
>>> words, has_result, has_summary = words_and_flags(blocks, np.array([0, 1]), 2)
>>> words.tolist(), serialized_bytes(pa.array(["user", "assistant"]), blocks, np.array([0, 1]), 2).tolist()
([2, 1], [13, 35])
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..frame.words import MEDIA_PART_WORDS, count_words_arrow
from ..transcript import BLOCK_FIELDS, MEDIA_NOTE_BYTES, SEPARATOR, label_bytes

__all__ = ["BLOCK", "PART", "block_array", "block_words", "byte_lengths", "per_owner", "serialized_bytes", "words_and_flags"]

#: A canonical tool-result part, as the fast paths hold it.
PART = pa.struct([("type", pa.string()), ("text", pa.large_string()), ("media_type", pa.string())])
#: A canonical content block, as the fast paths hold it (fields a block type has not are null).
BLOCK = pa.struct([
    ("type", pa.string()), ("text", pa.large_string()), ("id", pa.string()), ("name", pa.string()),
    ("input", pa.large_string()), ("tool_use_id", pa.string()), ("parts", pa.list_(PART)),
])

#: Block types whose ``text`` is counted (:data:`panto_analytics.frame.words._TEXT_BLOCKS`).
_TEXT_KINDS = ("text", "thinking", "system", "compaction_summary")


def block_array(blocks: list[dict[str, Any]]) -> pa.StructArray:
    """Canonical block dicts as one :data:`BLOCK` array.

    Converted in one Arrow call; where a block carries a key of another type
    beside its own fields (the canonical format passes blocks through as
    written), the blocks are first reduced to their own fields, which the
    adapters checked.

    >>> block_array([{"type": "tool_result", "tool_use_id": "c", "parts": [{"type": "media", "media_type": "x",
    ...               "text": 5}]}]).field("parts").to_pylist()
    [[{'type': 'media', 'text': None, 'media_type': 'x'}]]
    """
    try:
        return pa.array(blocks, type=BLOCK)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return pa.array([_own_fields(b) for b in blocks], type=BLOCK)


def _own_fields(block: dict[str, Any]) -> dict[str, Any]:
    kind = block["type"]
    if kind == "tool_use":
        return {"type": kind, "id": block["id"], "name": block["name"], "input": block["input"]}
    if kind == "tool_result":
        return {"type": kind, "tool_use_id": block["tool_use_id"],
                "parts": [{"type": "text", "text": p["text"]} if p["type"] == "text"
                          else {"type": p["type"], "media_type": p.get("media_type")} for p in block["parts"]]}
    return {"type": kind, "text": block.get("text")}


def per_owner(bad: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    """Whether each of ``n`` owners has a bad child."""
    return np.bincount(owner, weights=bad, minlength=n) > 0


def _is(values: pa.Array, value: str) -> np.ndarray:
    return np.asarray(pc.fill_null(pc.equal(values, value), False))


def _is_any(values: pa.Array, options: tuple[str, ...]) -> np.ndarray:
    return np.asarray(pc.fill_null(pc.is_in(values, pa.array(options, values.type)), False))


def block_words(blocks: pa.StructArray) -> np.ndarray:
    """libpanto's words of each block (:func:`panto_analytics.frame.words.block_words`): a text block's text, a tool
    call's input, a tool result's parts (media at :data:`~panto_analytics.frame.words.MEDIA_PART_WORDS` each)."""
    kinds = blocks.field("type")
    words = np.where(_is_any(kinds, _TEXT_KINDS), count_words_arrow(blocks.field("text")), 0)
    words += np.where(_is(kinds, "tool_use"), count_words_arrow(blocks.field("input")), 0)
    parts_list = blocks.field("parts")
    parts = parts_list.flatten()
    if len(parts):
        is_text = _is(parts.field("type"), "text")
        part_words = np.where(is_text, count_words_arrow(parts.field("text")), MEDIA_PART_WORDS)
        part_owner = pc.list_parent_indices(parts_list).to_numpy()
        words += np.where(_is(kinds, "tool_result"), np.bincount(part_owner, weights=part_words,
                                                                 minlength=len(blocks)).astype(np.int64), 0)
    return words


def words_and_flags(blocks: pa.StructArray, owner: np.ndarray, n: int,
                    words: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per message: libpanto's word count, and whether it holds a tool result / a summary.

    ``words``: each block's :func:`block_words`, where the caller counted them already.
    """
    kinds = blocks.field("type")
    per_block = block_words(blocks) if words is None else words
    per_message = np.bincount(owner, weights=per_block, minlength=n).astype(np.int64)
    return per_message, per_owner(_is(kinds, "tool_result"), owner, n), per_owner(_is(kinds, "compaction_summary"), owner, n)


def serialized_bytes(roles: pa.Array, blocks: pa.StructArray, owner: np.ndarray, n: int) -> np.ndarray:
    """Per message: what it adds to a summarizer request (:func:`panto_analytics.transcript.serialized_bytes`)."""
    kinds = blocks.field("type")
    block_roles = roles.take(pa.array(owner, pa.int64())) if len(blocks) else pa.array([], pa.string())
    # Each block's label (by its type, -1 for none of BLOCK_FIELDS', and whether an assistant wrote it), then
    # the bytes of each field its type renders, each field's lengths taken once.
    code = np.asarray(pc.fill_null(pc.index_in(kinds, value_set=_KIND_ARRAY), -1))
    size = _LABELS[code, _is(block_roles, "assistant").astype(np.intp)]
    for name, renders in _RENDERED.items():
        if renders[code].any():
            size += np.where(renders[code], byte_lengths(blocks.field(name)), 0)
    parts_list = blocks.field("parts")
    parts = parts_list.flatten()
    if len(parts):
        is_text = _is(parts.field("type"), "text")
        part_size = np.where(is_text, byte_lengths(parts.field("text")),
                             MEDIA_NOTE_BYTES + byte_lengths(parts.field("media_type")))
        part_owner = pc.list_parent_indices(parts_list).to_numpy()
        size += np.where(_is(kinds, "tool_result"),
                         np.bincount(part_owner, weights=part_size, minlength=len(blocks)).astype(np.int64), 0)
    per_message = np.bincount(owner, weights=size + len(SEPARATOR), minlength=n).astype(np.int64)
    per_message[_is(roles, "system")] = 0
    # A message holding a summary contributes its (first) summary's text instead.
    is_summary = _is(kinds, "compaction_summary")
    first = np.flatnonzero(is_summary)
    owners, at = np.unique(owner[first], return_index=True)
    per_message[owners] = byte_lengths(blocks.field("text"))[first[at]]
    return per_message


#: The canonical types :func:`serialized_bytes` renders, the label bytes of each (a row; its columns: as a user's,
#: an assistant's block; the last row: no such type) and, for each field, whether each type renders it.
_KIND_ARRAY = pa.array(list(BLOCK_FIELDS), pa.string())
_LABELS = np.array([[label_bytes("user", kind), label_bytes("assistant", kind)] for kind in BLOCK_FIELDS] + [[0, 0]],
                   dtype=np.int64)
_RENDERED = {name: np.array([name in fields for fields in BLOCK_FIELDS.values()] + [False])
             for name in dict.fromkeys(name for fields in BLOCK_FIELDS.values() for name in fields)}


def byte_lengths(values: pa.Array) -> np.ndarray:
    """UTF-8 byte length of each string, 0 for null."""
    return np.asarray(pc.fill_null(pc.binary_length(values), 0)).astype(np.int64)
