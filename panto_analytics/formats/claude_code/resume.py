"""Claude Code across files: a session resumed into another file is one session (``docs/formats.md``, Claude Code).

Runs after every file is read (the fast path's frames and the one-file
reader's alike): :func:`postprocess` folds each resumed session into the file
it continues in.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace

import polars as pl

from ...errors import IngestReport
from ...frame.expressions import is_api_call
from ..contract import ParsedFile, SessionMeta
from .vocabulary import NAME

__all__ = ["postprocess"]


def postprocess(files: list[ParsedFile], report: IngestReport) -> list[ParsedFile]:
    """Fold each session into the file it was resumed into, so nothing is counted twice.

    A resumed (or forked) session starts a new file that first copies the
    conversation it continues, record by record with the same uuids. File B
    continues file A when B's first message is a copy of A's message ``k``
    and A's last message is in B too: A's first ``k`` messages (what B did
    not copy, e.g. the part before a compaction) are put in front of B's,
    B keeps its session id, and A is dropped. Subagent transcripts never take
    part: a forked subagent copies its parent's messages but is a context of
    its own. A continued :class:`ParsedFile` is updated in place, and the files kept are returned in their order.
    """
    mains = [p for p in files if _session(p).parent_session_id is None and _session(p).message_ids]
    if not _any_first_shared(mains):
        return files   # no file starts with a message another file holds: none continues another
    holders: dict[str, set[int]] = {}
    by_id = {id(p): p for p in mains}
    for p in mains:
        for mid in _ids(p):
            if mid is not None:
                holders.setdefault(mid, set()).add(id(p))
    dropped: set[int] = set()
    changed = True
    while changed:
        changed = False
        for succ in mains:
            if id(succ) in dropped:
                continue
            pred = _predecessor(succ, holders, by_id, dropped)
            if pred is None:
                continue
            for mid in _ids(pred):
                if mid is not None:
                    holders[mid].discard(id(pred))
            _fold(pred, succ, report)
            # succ now holds pred's messages before the copy point, not the ones after it that it
            # lacks (a copy with other lines skipped): holders names only files that hold the id.
            for mid in _ids(succ):
                if mid is not None:
                    holders.setdefault(mid, set()).add(id(succ))
            dropped.add(id(pred))
            changed = True
    return [p for p in files if id(p) not in dropped]


def _any_first_shared(mains: list[ParsedFile]) -> bool:
    """Whether some file's first message id is held by another file too (what :func:`_predecessor` looks for
    first); counted in C, one set of ids per file, so that a read with no resumed session costs little."""
    held: Counter[str | None] = Counter()
    for p in mains:
        held.update(set(_ids(p)))
    firsts = (next((m for m in _ids(p) if m is not None), None) for p in mains)
    return any(first is not None and held[first] > 1 for first in firsts)


def _session(p: ParsedFile) -> SessionMeta:
    """The session of a file in :func:`postprocess` (files skipped whole never get there)."""
    assert p.session is not None
    return p.session


def _ids(p: ParsedFile) -> list[str | None]:
    """The message ids of a main file in :func:`postprocess` (only files with ids take part)."""
    ids = _session(p).message_ids
    assert ids is not None
    return ids


def _predecessor(succ: ParsedFile, holders: dict[str, set[int]], by_id: dict[int, ParsedFile],
                 dropped: set[int]) -> ParsedFile | None:
    """The file ``succ`` continues, or None."""
    ids = _ids(succ)
    first = next((m for m in ids if m is not None), None)
    if first is None:
        return None
    mine: set[str | None] | None = None
    for key in sorted(holders.get(first, ()), key=lambda k: by_id[k].path):
        pred = by_id[key]
        if pred is succ or key in dropped:
            continue
        mine = set(ids) if mine is None else mine
        last = _ids(pred)[-1]
        if last is not None and last in mine and \
                _same_message(pred, _ids(pred).index(first), succ, ids.index(first)):
            return pred
    return None


def _same_message(a: ParsedFile, i: int, b: ParsedFile, j: int) -> bool:
    """Row ``i`` of ``a`` and row ``j`` of ``b`` look like one record copied: same role and timestamp."""
    ra = a.messages.row(i, named=True)
    rb = b.messages.row(j, named=True)
    return bool(ra["role"] == rb["role"] and ra["timestamp"] == rb["timestamp"])


def _fold(pred: ParsedFile, succ: ParsedFile, report: IngestReport) -> None:
    """Put ``pred``'s messages before the copy that ``succ`` starts with in front of ``succ``'s."""
    pids, sids = _ids(pred), _ids(succ)
    k = pids.index(next(m for m in sids if m is not None))
    copied = set(sids)
    lost = sum(1 for m in pids[k:] if m not in copied)
    if lost:
        # In pred after the copy point but not copied: an abandoned branch, not the resumed context.
        report.ignore(NAME, "message not copied into its resumed session", lost)
    head = pred.messages.head(k)
    frame = pl.concat([head, succ.messages], how="vertical").with_columns(
        seq=pl.int_range(pl.len(), dtype=pl.UInt32),
        session_id=pl.lit(_session(succ).session_id, dtype=succ.messages.schema["session_id"]))
    head_calls = head.filter(is_api_call()).height
    pmeta, smeta = _session(pred), _session(succ)
    compactions = [c for c in pmeta.compactions if c["anchor_index"] < k] + [
        {**c, **{key: None if c.get(key) is None else c[key] + k
                 for key in ("anchor_index", "first_kept_index", "trigger_index", "kept_end_index")}}
        for c in smeta.compactions]
    report.ignore(NAME, "session resumed in another file")
    report.sessions -= 1
    report.messages -= pred.messages.height - k
    report.api_calls -= (pmeta.api_calls or 0) - head_calls
    succ.messages = frame
    succ.session = replace(smeta, compactions=compactions, message_ids=list(pids[:k]) + list(sids),
                           api_calls=(smeta.api_calls or 0) + head_calls,
                           created_at=pmeta.created_at or smeta.created_at, model=smeta.model or pmeta.model)

