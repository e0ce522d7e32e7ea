"""The columnar fast path against the line-by-line reference reader (``reference/canonical_lines.py``).

The fast path may decline any file (the reference then reads it), but a frame
it returns must be exactly the reference's, and it must never accept a file
the reference refuses.
"""
from __future__ import annotations

import json
import random

import polars as pl
import pytest
from adapter_checks import reference_frame
from conftest import REPO, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import conversations, random_conversation
from test_columnar import ODD_TIMESTAMPS

from panto_analytics.errors import InputError
from panto_analytics.formats import columnar
from panto_analytics.formats.canonical import fast as canonical_fast
from panto_analytics.formats.contract import SourceFile
from reference import canonical_lines


def reference(path) -> tuple[pl.DataFrame, SourceFile] | InputError:
    return reference_frame(path, canonical_lines.NAME, canonical_lines)


def fast(paths) -> list[tuple[pl.DataFrame | None, SourceFile]]:
    sources = [SourceFile(p, "canonical") for p in paths]
    return list(zip(canonical_fast.read_frames(sources), sources))


def assert_agrees(paths) -> list[bool]:
    """Check every file; return which ones the fast path took."""
    taken = []
    for path, (frame, src) in zip(paths, fast(paths)):
        ref = reference(path)
        if frame is None:
            taken.append(False)
            continue
        assert not isinstance(ref, InputError), f"fast path accepted a file the reference refuses: {ref}"
        ref_frame, ref_src = ref
        assert frame.equals(ref_frame), path
        assert src.meta == ref_src.meta
        taken.append(True)
    return taken


# Lines that break a file in one way each; the reference refuses all of them.
BREAKAGES = [
    '{"type":"message","role":"user","content":[{"type":"text","text":5}]}',
    '{"type":"message","role":"user","content":[{"type":"compaction_summary","text":0}]}',  # one byte, not two quotes
    '{"type":"message","role":"assistant","content":[{"type":"compaction_summary","text":7}]}',
    '{"type":"message","role":"user","content":[{"type":"text"}]}',
    '{"type":"message","role":"user","content":null}',
    '{"type":"message","role":"assistant","content":[],"usage":{"input":1.5}}',
    '{"type":"message","role":"assistant","content":[],"usage":{"input":1.0}}',
    '{"type":"message","role":"assistant","content":[],"usage":{"output":true}}',
    '{"type":"message","role":"assistant","content":[],"usage":{"output":-3}}',
    '{"type":"message","role":"assistant","content":[],"usage":{"output":4294967296}}',
    '{"type":"message","role":"robot","content":[]}',
    '{"type":"message","role":"user","content":[null]}',
    '{"type":"message","role":"user","content":[{"type":"tool_result","tool_use_id":"t","parts":[{"type":"text"}]}]}',
    '{"type":"message","role":"user","content":[{"type":"tool_result","tool_use_id":"t","parts":[{"type":"gif"}]}]}',
    '{"type":"message","role":"user","content":[{"type":"tool_result","tool_use_id":"t"}]}',
    '{"type":"message","role":"system","content":[{"type":"system","text":"s","mode":"prepend"}]}',
    '{"type":"message","role":"system","content":[{"type":"system","text":"s","mode":null}]}',
    '{"type":"message","role":"user","content":[{"type":"tool_use","id":"i","name":"n","input":{"a":1}}]}',
    '{"type":"note"}',
    '{"type":"session","id":"late"}',
    '[1, 2]',
    '{"type":"message","role":"user","content":[],"x":1e400}',
    '{"type":"message","role":"assistant","content":[],"usage":{"input":1,"other":-2E+308}}',
    '{"type":"message","role":"user"',
]


def write(path, records, extra_lines=()):
    lines = [json.dumps(r if "type" in r else {"type": "message", **r}) for r in records] + list(extra_lines)
    path.write_text("".join(line + "\n" for line in lines))
    return path


@pytest.mark.slow
@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(sessions=st.lists(conversations(), min_size=1, max_size=4), data=st.data())
def test_fast_path_equals_reference_on_random_files(tmp_path_factory, sessions, data):
    d = tmp_path_factory.mktemp("fast")
    paths = []
    for i, msgs in enumerate(sessions):
        extra = [data.draw(st.sampled_from(BREAKAGES))] if data.draw(st.booleans()) else []
        header = [{"type": "session", "id": f"s{i}", "model": "m"}] if data.draw(st.booleans()) else []
        paths.append(write(d / f"f{i}.jsonl", header + msgs, extra))
    assert_agrees(paths)


@pytest.mark.parametrize("breakage", BREAKAGES)
def test_fast_path_declines_every_broken_file_but_keeps_its_clean_neighbours(tmp_path, breakage):
    rng = random.Random(7)
    clean = [write(tmp_path / f"clean{i}.jsonl", random_conversation(rng)) for i in range(3)]
    broken = write(tmp_path / "broken.jsonl", random_conversation(rng), [breakage])
    taken = assert_agrees([clean[0], broken, clean[1], clean[2]])
    assert taken == [True, False, True, True]


def test_fast_path_takes_the_bundled_corpus(tmp_path):
    paths = sorted((REPO / "data").glob("*.jsonl"))
    assert paths, "data/ holds the bundled corpus"
    assert all(assert_agrees(paths))


def test_blank_lines_send_only_their_file_to_the_reference(tmp_path):
    rng = random.Random(3)
    clean = [write(tmp_path / f"clean{i}.jsonl", random_conversation(rng)) for i in range(2)]
    blank = tmp_path / "blank.jsonl"
    msgs = random_conversation(rng)
    blank.write_text("\n".join(json.dumps({"type": "message", **m}) for m in msgs) + "\n\n  \n")
    # Arrow skips blank lines, so its rows would not be line numbers: the file is declined ...
    assert assert_agrees([clean[0], blank, clean[1]]) == [True, False, True]
    # ... and read by the reference, line numbers intact.
    frame, _ = reference(blank)
    assert frame["line"].to_list() == list(range(1, len(msgs) + 1))


@pytest.mark.parametrize("timestamp", ODD_TIMESTAMPS)
def test_a_timestamp_python_reads_otherwise_is_declined_or_read_alike(tmp_path, timestamp):
    rng = random.Random(4)
    clean = write(tmp_path / "clean.jsonl", random_conversation(rng))
    msgs = random_conversation(rng)
    msgs[len(msgs) // 2] = {**msgs[len(msgs) // 2], "timestamp": timestamp}
    odd = write(tmp_path / "odd.jsonl", msgs)
    assert assert_agrees([clean, odd])[0]


def test_very_large_files_stream_through_the_reference(tmp_path, monkeypatch):
    path = write(tmp_path / "big.jsonl", random_conversation(random.Random(5)))
    monkeypatch.setattr(columnar, "MAX_FILE_BYTES", path.stat().st_size - 1)
    assert fast([path])[0][0] is None


@pytest.mark.parametrize("bad_bytes", [b"\xff\xfe", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80"],
                         ids=["invalid", "surrogate", "overlong", "beyond-unicode"])
def test_invalid_utf8_is_declined_like_the_reference_refuses_it(tmp_path, bad_bytes):
    clean = write(tmp_path / "clean.jsonl", random_conversation(random.Random(9)))
    bad = tmp_path / "bad.jsonl"
    # In an ignored field too: orjson checks the whole line.
    bad.write_bytes(clean.read_bytes() + b'{"type":"message","role":"user","content":[],"note":"' + bad_bytes + b'"}\n')
    assert isinstance(reference(bad), InputError)
    assert assert_agrees([clean, bad]) == [True, False]


@pytest.mark.parametrize("size", [1, 40, 2000], ids=["lines", "kilobytes", "past-a-scan-block"])
def test_one_scan_of_the_buffer_declines_exactly_the_files_beyond_double_flags(size):
    """decode_files checks every file of its buffer in one scan (typed.beyond_double_spans): the same files as
    beyond_double of each file alone, a number beyond a double at a file's first or last byte included."""
    from panto_analytics.formats.canonical.shapes import decode_files
    from panto_analytics.formats.typed import beyond_double

    rng = random.Random(size)
    plain = '{"type":"message","role":"user","content":[{"type":"text","text":"1e400 3e456 %s"}]}'
    odd = ['{"x":1e400,"type":"message","role":"user","content":[]}', '{"type":"message","role":"user","content":[],"x":-2E+308}',
           '{"type":"message","role":"user","content":[],"x":%s}' % ("9" * 210)]
    files = []
    for k in range(12):
        lines = [plain % ("w" * rng.randrange(size * 8)) for _ in range(rng.randrange(1, 6))]
        if k % 3 == 1:
            lines.insert(rng.choice([0, len(lines)]), rng.choice(odd))
        files.append("".join(line + "\n" for line in lines).encode())
    data = bytearray(b"".join(files))
    spans, at = [], 0
    for f in files:
        spans.append((at, at + len(f)))
        at += len(f)
    taken = [records is not None for records in decode_files(data, [*spans, None])]
    assert taken == [not beyond_double(data, *span) for span in spans] + [False]
    assert taken.count(False) == 5

