"""``FrameBuilder`` (blocks counted in batches, in Arrow) against its oracle ``reference/frame_rows.py`` (each
message counted with ``message_words`` and ``transcript.serialized_bytes``): the same frame, on random messages
(blocks carrying keys of other types too) and on every fixture and real recording of every format."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from conftest import FIXTURES, REALDATA, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from strategies import conversations, texts

from panto_analytics.errors import IngestReport, InputError
from panto_analytics.formats import adapter, detect_format
from panto_analytics.formats.contract import Message, SourceFile
from panto_analytics.formats.frame_builder import FrameBuilder
from reference import frame_rows

#: Keys a line-by-line reader may pass through beside a block's own fields (the canonical format keeps them);
#: values of another type only on blocks that are not tool blocks (the oracle's refs read every key of those).
STRAY = {"text": texts, "input": texts, "parts": st.just([{"type": "text", "text": "a b"}]), "name": texts,
         "id": texts, "tool_use_id": texts}
ODD = {"id": st.just(7), "name": st.none(), "tool_use_id": st.just(["x"]), "input": st.just({"a": 1})}

ZONES = st.sampled_from([UTC, timezone(timedelta(hours=2)), timezone(-timedelta(hours=5, minutes=30))])


@st.composite
def sessions(draw) -> list[tuple[str | None, list[Message]]]:
    out = []
    for _ in range(draw(st.integers(1, 3))):
        msgs = []
        for i, m in enumerate(draw(conversations(max_pieces=6))):
            content = [dict(b) for b in m["content"]]
            for block in content:
                if draw(st.integers(0, 5)) == 0:
                    stray = STRAY if block["type"] in ("tool_use", "tool_result") else draw(st.sampled_from([STRAY, ODD]))
                    key = draw(st.sampled_from(sorted(stray)))
                    if key not in block:
                        block[key] = draw(stray[key])
            usage = m.get("usage")
            usage = None if usage is None else {k: v or 0 for k, v in usage.items()}
            ts = draw(st.none() | st.datetimes(datetime(1, 1, 2), datetime(9999, 12, 30), timezones=ZONES))
            msgs.append(Message(m["role"], content, usage, i + 1, ts, draw(st.sampled_from([None, "m1", "m2"])),
                                draw(st.none() | st.floats(0, 5, width=32)), draw(st.booleans())))
        out.append((draw(st.sampled_from([None, "/repo", "C:\\w"])), msgs))
    return out


def _both(files: list[tuple[SourceFile, list[Message]]], flush: int = FrameBuilder.FLUSH_BLOCKS):
    new, old = FrameBuilder(), frame_rows.FrameBuilder()
    new.FLUSH_BLOCKS = flush   # counted per session, or all at once
    for src, msgs in files:
        assert new.add_session(src, iter(msgs)) == old.add_session(src, iter(msgs))
    return new.finish(), old.finish()


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drawn=sessions(), flush=st.sampled_from([1, 4, 1 << 15]))
def test_random_messages(drawn, flush, tmp_path_factory):
    d = tmp_path_factory.mktemp("s")
    files = []
    for k, (cwd, msgs) in enumerate(drawn):
        src = SourceFile(d / f"s{k}.jsonl", "canonical")
        src.meta.project = cwd
        src.meta.model = "session-model" if k % 2 else None
        files.append((src, msgs))
    got, want = _both(files, flush)
    assert_frame_equal(got, want)


def test_no_messages():
    got, want = _both([])
    assert_frame_equal(got, want)


FILES = sorted(p for p in FIXTURES.rglob("*.jsonl*")) + (sorted(REALDATA.rglob("*.jsonl")) if REALDATA.is_dir()
                                                          else [])


def _parsed(path: Path) -> tuple[SourceFile, list[Message]] | None:
    try:
        fmt = detect_format(path)
        src = SourceFile(path, fmt, skip_invalid=True, report=IngestReport())
        return src, list(adapter(fmt).parse(src))
    except InputError:
        return None


@pytest.mark.parametrize("fmt", ["canonical", "claude-code", "codex", "pi"])
def test_every_file(fmt):
    """Every fixture and real recording of a format, in one builder (so rows and sessions are counted across files)."""
    files = [f for f in map(_parsed, FILES) if f is not None and f[0].source_format == fmt]
    got, want = _both(files)
    assert got.height > 0
    assert_frame_equal(got, want)
