"""What the adapter tests share: parsing one file, and comparing splits with libpanto's oracle."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
from conftest import oracle_module

import panto_analytics as pa
from panto_analytics.errors import IngestReport, InputError
from panto_analytics.formats import adapter, detect_format
from panto_analytics.formats.contract import Message, SessionMeta, SourceFile
from panto_analytics.formats.frame_builder import FrameBuilder

#: Budgets for oracle comparisons: zero, small, around real turn sizes, past every session.
BUDGETS = [0, 1, 100, 1_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 10**9, 2**64 - 1]


def parse(path: Path, *, format: str | None = None, skip_invalid: bool = False
          ) -> tuple[list[Message], SessionMeta, IngestReport]:
    """The messages an adapter yields for one file, its session metadata and the report."""
    report = IngestReport()
    fmt = format or detect_format(path)
    src = SourceFile(path, fmt, skip_invalid=skip_invalid, report=report)
    messages = list(adapter(fmt).parse(src))
    return messages, src.meta, report


def reference_frame(path: Path, fmt: str, reader: Any = None, *, skip_invalid: bool = False
                    ) -> tuple[pl.DataFrame, SourceFile] | InputError:
    """The frame the format's line-by-line adapter (or ``reader``, a module with its ``parse``) gives one file,
    and its source (metadata, report); or its error.

    What a columnar fast path must equal for every file it takes.
    """
    src = SourceFile(path, fmt, skip_invalid=skip_invalid, report=IngestReport())
    builder = FrameBuilder()
    try:
        builder.add_session(src, (reader or adapter(fmt)).parse(src))
    except InputError as e:
        return e
    return builder.finish(), src


def assert_fast_path_agrees(paths: list[Path], fmt: str, fast: Any, oracle: Any = None) -> list[bool]:
    """Read ``paths`` in one batch of ``fast`` (a module with ``read_frames``) and check each file it takes
    against the format's line reader (frame, schema, metadata, ignored records) and, given ``oracle`` (a frozen
    reader module), the oracle's frame; return which files it took.

    The fast path may decline any file, but must leave a declined file's report alone and never take a file
    the line reader refuses.
    """
    sources = [SourceFile(p, fmt, report=IngestReport()) for p in paths]
    taken = []
    for path, src, frame in zip(paths, sources, fast.read_frames(sources)):
        taken.append(frame is not None)
        if frame is None:
            assert not src.report.ignored, f"{path}: a declined file must leave its report alone"
            continue
        ref = reference_frame(path, fmt)
        assert not isinstance(ref, InputError), f"the fast path took a file the reader refuses: {ref}"
        ref_frame, ref_src = ref
        assert frame.schema == ref_frame.schema
        assert frame.equals(ref_frame), f"{path}: frames differ"
        if oracle is not None:
            by_oracle = reference_frame(path, fmt, oracle)
            assert not isinstance(by_oracle, InputError) and frame.equals(by_oracle[0]), \
                f"{path}: frame differs from the oracle's"
        assert src.meta == ref_src.meta, path
        assert src.report.ignored == ref_src.report.ignored, path
    return taken


def canonical(messages: list[Message]) -> list[dict]:
    """Messages as the oracle's canonical records."""
    return [{"type": "message", "role": m.role, "content": m.content, "usage": m.usage} for m in messages]


def blocks(message: Message) -> list[str]:
    return [b["type"] for b in message.content]


def assert_splits_match_oracle(paths: list[Path]) -> int:
    """``pa.splits`` over ``paths`` equals libpanto's computeSplit on the adapters' messages.

    Sessions without messages are compared too (computeSplit gives them (0, 0)).
    Returns how many sessions were compared.
    """
    oracle = oracle_module()
    sessions = {}
    for path in paths:
        messages, meta, _ = parse(path)
        sessions[meta.session_id] = canonical(messages)
    # The request of a no-op split is never sent: its request_bytes is null.
    want = {(sid, b): (pe, kt, size) for sid, row in zip(sessions, oracle.oracle_requests(list(sessions.values()), BUDGETS))
            for b, (pe, kt, size, _) in zip(BUDGETS, row, strict=True)}
    corpus = pa.ingest.read_corpus(paths)
    rows = pa.splits(corpus.messages, BUDGETS, sessions=corpus.sessions).to_dicts()
    got = {(r["session_id"], r["budget"]): (r["prefix_end"], r["kept_turns"], r["request_bytes"]) for r in rows}
    noop = {(r["session_id"], r["budget"]) for r in rows if r["noop"]}
    assert got == {k: (pe, kt, None if k in noop else size) for k, (pe, kt, size) in want.items()}
    return len(sessions)


def first_line_is_json(path: Path) -> bool:
    """Whether a file's first line is a JSON document (a real recording may be pretty-printed JSON instead)."""
    with open(path) as f:
        try:
            json.loads(f.readline())
        except ValueError:
            return False
    return True
