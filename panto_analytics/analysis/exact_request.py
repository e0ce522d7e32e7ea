"""The exact summarizer request of one session at one budget, re-read from the session's files.

The message frame keeps sizes, not text. :func:`summary_request` goes back
to the files the frame names: it parses them again with their adapters,
takes the session's messages by file and line, in frame order, and builds the
request libpanto sends for the split of ``budget``:
``buildRequestBody(serializeTranscript(messages[active_start:prefix_end]),
latestSummaryText(messages))`` (see :mod:`panto_analytics.transcript`).

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "s.jsonl").write_text(
...     '{"type":"message","role":"user","content":[{"type":"text","text":"q1"}]}\\n'
...     '{"type":"message","role":"assistant","content":[{"type":"text","text":"a1"}]}\\n'
...     '{"type":"message","role":"user","content":[{"type":"text","text":"q2"}]}\\n')
>>> from panto_analytics import read_sessions
>>> print(summary_request(read_sessions(d), "s", 3))  # keeps the last turn (2 tokens), summarizes the first
The conversation to summarize:
<BLANKLINE>
<transcript>
[User]: q1
<BLANKLINE>
[Assistant]: a1
</transcript>
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from ..errors import InputError
from ..formats import adapter, detect_format
from ..formats.contract import Message, SourceFile
from ..frame.schema import SESSION
from ..policy import splits
from ..transcript import RoleBlocks, build_request_body, latest_summary_text, serialize_transcript, serialized_bytes

__all__ = ["session_messages", "summary_request"]


def summary_request(messages: pl.DataFrame, session_id: str, budget: int) -> str | None:
    """The request libpanto sends to its summarizer for ``session_id`` at ``budget``; None for a no-op split.

    Parameters
    ----------
    messages
        A message frame holding the session (as :func:`~panto_analytics.read_sessions` returns it).
    session_id
        The session.
    budget
        ``keep_verbatim``, in tokens.

    Returns
    -------
    str or None
        The request body, whose UTF-8 length is the split's ``request_bytes``;
        None where the split summarizes nothing (no request is sent).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import panto_analytics as pa
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "s.jsonl").write_text("".join(
    ...     '{"type":"message","role":"%s","content":[{"type":"text","text":"%s"}]}\\n' % (r, t)
    ...     for r, t in [("user", "fix the bug"), ("assistant", "done"), ("user", "thanks")]))
    >>> m = pa.read_sessions(d)
    >>> body = summary_request(m, "s", 0)
    >>> len(body.encode()) == pa.splits(m, 0)["request_bytes"][0]
    True
    """
    session = messages.filter(pl.col(SESSION).cast(pl.String) == session_id)
    if session.is_empty():
        raise ValueError(f"no session {session_id!r} in the message frame")
    split = splits(session, [budget]).row(0, named=True)
    if split["noop"]:
        return None
    rows = session_messages(session)
    anchor = session.with_row_index("_i").filter("has_summary").select(pl.col("_i").last()).item()
    active_start = 0 if anchor is None else anchor + 1
    return build_request_body(serialize_transcript(rows[active_start:split["prefix_end"]]), latest_summary_text(rows))


def session_messages(session: pl.DataFrame) -> list[RoleBlocks]:
    """``(role, content blocks)`` of each row of one session's frame, parsed again from its files.

    Raises :class:`InputError` when a file no longer holds the message its row
    names (it changed since it was read).
    """
    found: list[RoleBlocks | None] = [None] * session.height
    rows = session.select(pl.col("file").cast(pl.String), "line", "serialized_bytes").with_row_index("_i")
    for (file,), wanted in rows.group_by("file", maintain_order=True):
        parsed = _parse(Path(str(file)), session["source_format"][0])
        _match(parsed, wanted.rows(named=True), found)
    if any(m is None for m in found):
        missing = rows.row(next(i for i, m in enumerate(found) if m is None), named=True)
        raise InputError(Path(missing["file"]), missing["line"], "this message is no longer in the file: read it again")
    return [m for m in found if m is not None]


def _parse(path: Path, source_format: str | None) -> list[Message]:
    if not path.is_file():
        raise InputError(path, None, "the session's file is gone (moved or deleted since it was read): read it again")
    fmt = source_format or detect_format(path)
    return list(adapter(fmt).parse(SourceFile(path, fmt, skip_invalid=True)))


def _match(parsed: Sequence[Message], wanted: list[dict[str, int]], found: list[RoleBlocks | None]) -> None:
    """Fill ``found`` with the parsed messages of ``wanted`` rows, matched in order by line and size."""
    it = iter(parsed)
    for row in wanted:
        for msg in it:
            if msg.line == row["line"] and serialized_bytes(msg.role, msg.content) == row["serialized_bytes"]:
                found[row["_i"]] = (msg.role, msg.content)
                break
