"""Source-format adapters, one folder per format (each satisfies :class:`.contract.Adapter`), and format detection.

>>> sorted(ADAPTERS)
['canonical', 'claude-code', 'codex', 'pi']
"""
from __future__ import annotations

import os
from pathlib import Path

import orjson

from ..errors import FORCE_FORMAT, InputError, UnknownFormatError
from . import canonical, claude_code, codex, jsonl, pi
from .contract import Adapter
from .record_fields import BAD_RECORD
from .session_files import BOM, COMPRESSED_SUFFIXES, DamagedFileError, open_session_file

__all__ = ["ADAPTERS", "Adapter", "adapter", "detect_format"]

#: Tried in this order when detecting. pi and Codex come first: their legacy
#: records also look canonical (a "message" with a role).
_DETECTION_ORDER: tuple[Adapter, ...] = (pi, codex, canonical, claude_code)

#: Adapters by format name, in detection order.
ADAPTERS: dict[str, Adapter] = {a.NAME: a for a in _DETECTION_ORDER}

_SNIFF_LINES = 20

#: Formats whose files start with a record of their own: a file whose first
#: record is foreign (say, a sanitized export's ``sanitization_notice``) is
#: not theirs, whatever follows.
_FIRST_RECORD_ONLY = frozenset({canonical.NAME})

#: Bytes read at first from a plain file: most files are known by their first record, and it is shorter.
_HEAD_BYTES = 1 << 13


def detect_format(path: str | Path) -> str:
    """The format of ``path``, judged from its first JSON records.

    An empty (or blank) file is canonical: a session with no messages.
    Raises :class:`~panto_analytics.errors.UnknownFormatError` when no adapter recognises the file (or it is
    one JSON document, not lines), :class:`InputError` when its first line is not JSON.
    """
    known = _known_from_head(path)
    if known is not None:
        return known
    seen = 0
    damage: list[str] = []
    with open_session_file(path, on_damage=damage.append) as f:
        for lineno, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                record = orjson.loads(raw)
            except orjson.JSONDecodeError as e:
                if not raw.endswith(b"\n"):
                    break  # the last line, still being written: judged by what came before it
                if not seen:
                    why = jsonl.malformed(raw, e)
                    if raw.strip() in (b"{", b"["):   # a JSON document, not a session's lines
                        raise UnknownFormatError(path, lineno, jsonl.NOT_JSONL) from None
                    hint = (why if not why.startswith("malformed JSON: ")
                            else f"the first line is not valid JSON: {e.msg}")
                    raise InputError(path, lineno, hint) from None
                break
            # Most files are known by their first record; read on only while none claims it.
            for name, candidate in ADAPTERS.items():
                if _claims(candidate, record) and (seen == 0 or name not in _FIRST_RECORD_ONLY):
                    return name
            seen += 1
            if seen >= _SNIFF_LINES:
                break
    if damage and not seen:  # a damaged compressed file with nothing whole before the damage
        raise DamagedFileError(path, damage[0])
    if not seen:
        return canonical.NAME
    raise UnknownFormatError(path, None, f"unknown session format (known: {', '.join(ADAPTERS)}); {FORCE_FORMAT}")


def _known_from_head(path: str | Path) -> str | None:
    """The format of a plain file its first :data:`_HEAD_BYTES` settle (one read), judged as :func:`detect_format`
    judges lines; None where they do not (compressed, a long first record, not JSON): then the lines decide."""
    if os.fspath(path).endswith(COMPRESSED_SUFFIXES):
        return None
    try:
        with open(path, "rb", buffering=0) as f:  # no buffer: one read of the head
            head = f.read(_HEAD_BYTES)
    except (OSError, ValueError):
        return None
    start = 3 if head.startswith(BOM) else 0
    seen = 0
    while (end := head.find(b"\n", start)) >= 0:
        raw, start = head[start:end + 1], end + 1
        if not raw.strip():
            continue
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return None
        for format_name, candidate in ADAPTERS.items():
            if _claims(candidate, record) and (seen == 0 or format_name not in _FIRST_RECORD_ONLY):
                return format_name
        seen += 1
        if seen >= _SNIFF_LINES:
            return None
    return None


def _claims(candidate: Adapter, record: object) -> bool:
    """Whether an adapter claims a record; one of an unexpected shape (a list where a string is usual) is not its."""
    try:
        return candidate.sniff(record)
    except BAD_RECORD:
        return False


def adapter(name: str) -> Adapter:
    """The adapter of format ``name``; ValueError naming the known formats otherwise."""
    try:
        return ADAPTERS[name]
    except KeyError:
        raise ValueError(f"unknown format {name!r} (known: {', '.join(ADAPTERS)})") from None
