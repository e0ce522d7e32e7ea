"""The typed canonical readers against their oracle, the line-by-line reader ``reference/canonical_lines.py``.

The batch path (``formats/canonical/fast.py``, the Structs of ``shapes.py``): on mutated bundled files, on
files of every shape a line can take, and over many files read in groups, a file it takes reads exactly as
the reference reads it, and it never takes a file the reference refuses. The one-file reader
(``formats/canonical/reader.py``, which reads every file the batch path declines): on the same files, strict
and under ``skip_invalid``, the same frame, session metadata, skips and ignores, or the same error (line and
reason).
"""
from __future__ import annotations

import gc
import json
import random
import typing
from pathlib import Path

import pytest
from adapter_checks import reference_frame
from conftest import DATA, REALDATA, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutations import mutated_file
from strategies import random_conversation
from test_canonical_fast import BREAKAGES, assert_agrees, fast, reference

from panto_analytics.errors import InputError
from panto_analytics.formats.canonical import fast as canonical_fast
from panto_analytics.formats.canonical import reader, shapes
from panto_analytics.frame.schema import ROLES
from reference import canonical_lines

SOURCES = sorted(DATA.glob("*.jsonl"))[:3]


def conversation(rng: random.Random) -> str:
    """A random clean canonical file's text, of one message or more."""
    messages = []
    while not messages:
        messages = random_conversation(rng)
    return "".join(json.dumps({"type": "message", **m}) + "\n" for m in messages)


def outcome(path: Path, module, skip_invalid: bool) -> tuple:
    """What ``module.parse`` makes of ``path``: its frame, metadata, skips and ignores, or its error."""
    got = reference_frame(path, reader.NAME, module, skip_invalid=skip_invalid)
    if isinstance(got, InputError):
        return ("error", got.line, got.reason)
    frame, src = got
    return ("read", frame.to_dict(as_series=False), src.meta, src.holds_nothing, dict(src.report.skipped),
            dict(src.report.ignored))


def assert_reads_as_the_oracle(path: Path) -> tuple:
    """The package's one-file reader on ``path``, strict and under ``skip_invalid``, against the oracle's."""
    for skip_invalid in (True, False):
        want = outcome(path, canonical_lines, skip_invalid)
        assert outcome(path, reader, skip_invalid) == want, (path, skip_invalid)
    return want


REAL_FILES = sorted(REALDATA.glob("canonical*/**/*.jsonl")) if REALDATA.is_dir() else []


@pytest.mark.parametrize("path", sorted(DATA.glob("*.jsonl")) + REAL_FILES, ids=lambda p: p.name)
def test_the_reader_reads_every_bundled_file_as_the_oracle(path):
    assert assert_reads_as_the_oracle(path)[0] == "read"


@pytest.mark.slow
@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_file(data):
    """A mutated bundled file: taken only when clean, and then read exactly as the reference reads it; the
    one-file reader reads it as the reference does, whatever it holds."""
    source = data.draw(st.sampled_from(SOURCES), label="source")
    with mutated_file(source, data) as f:
        clean = f.parent / "clean.jsonl"
        clean.write_bytes(source.read_bytes())
        assert assert_agrees([clean, f])[0]
        assert_reads_as_the_oracle(f)


# Lines the reference reads (T) or refuses (F) that a Struct could read otherwise: each alone after a clean line.
EDGES = [
    ('{"type":"message","role":"user","content":[{"type":"text","text":"a","text":"b c"}]}', True),
    ('{"type":"message","role":"user","type":"message","content":[]}', True),
    ('{"type":"message","role":"user","content":[{"type":"text","type":"thinking","text":"x"}]}', True),
    ('{"type":"message","role":"assistant","content":[],"usage":{"input":null,"output":3}}', True),
    ('{"type":"message","role":"assistant","content":[],"usage":{}}', True),
    ('{"type":"message","role":"assistant","content":[],"usage":null}', True),
    ('{"type":"message","role":"assistant","content":[],"usage":{"input":4294967295}}', True),
    ('{"type":"message","role":"assistant","content":[],"usage":[]}', False),
    ('{"type":"message","role":"user"}', True),
    ('{"type":"message","role":"system","content":[{"type":"system","text":"s"}]}', True),
    ('{"type":"message","role":"user","content":[{"type":"tool_result","tool_use_id":"t","parts":[]}]}', True),
    ('{"type":"message","role":"user","content":[{"type":"tool_result","tool_use_id":"t","parts":'
     '[{"type":"media","media_type":"image/png","text":5}]}]}', True),
    ('{"type":"message","role":"user","content":[{"type":"text","text":"a"}],"timestamp":"2025-01-01T00:00:00Z"}', True),
    ('{"type":"message","role":"user","content":[],"timestamp":1735689600000}', True),
    ('{"type":"message","role":"user","content":[],"timestamp":"yesterday"}', False),
    ('{"type":"message","role":"user","content":[]} {"type":"message","role":"user","content":[]}', False),
    ('{"type":"message","role":"user",\n"content":[]}', False),
    ('{"type":"message","role":"user","content":[]},{"type":"message","role":"user","content":[]}', False),
    # a record over two lines (the break between two blocks), then two records on a line: as many records as lines
    ('{"type":"message","role":"user","content":[{"type":"text","text":"a"}\n{"type":"text","text":"b"}]}\n'
     '{"type":"message","role":"user","content":[]},{"type":"message","role":"user","content":[]}', False),
    ('{"type":"message","role":"user","content":[],"x":"caf\\u00e9 \\ud83d\\ude00"}', True),
    ('{"type":"message","role":"user","content":[],"x":"\\ud800"}', False),
    ('{"type":"message","role":"user","content":[],"x":[' + "[" * 1100 + "]" * 1100 + "]}", False),
    ('{"type":"message","role":"user","content":[],"x":99999999999999999999999999999}', True),
    ('{"type":"message","role":"user","content":[{"type":"text","text":"a\\tb\\u0020c\\u000bd"}]}', True),
    ('\t{"type":"message","role":"user","content":[]}\r', True),
]


@pytest.mark.parametrize(("line", "read"), EDGES, ids=range(len(EDGES)))
def test_every_shape_of_a_line_reads_as_the_reference_reads_it(tmp_path, line, read):
    rng = random.Random(11)
    clean = tmp_path / "clean.jsonl"
    clean.write_text(conversation(rng))
    f = tmp_path / "edge.jsonl"
    f.write_text(clean.read_text() + line + "\n")
    assert isinstance(reference(f), InputError) != read, "the case is what it says"
    assert assert_agrees([clean, f, clean])[0::2] == [True, True]
    assert assert_reads_as_the_oracle(f)[0] == ("read" if read else "error")


@pytest.mark.parametrize("breakage", BREAKAGES)
@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_a_broken_line_is_the_same_error_or_skip_as_the_oracle_s(tmp_path, breakage, where):
    lines = conversation(random.Random(13)).splitlines(keepends=True)
    at = {"first": 0, "middle": len(lines) // 2, "last": len(lines)}[where]
    f = tmp_path / "broken.jsonl"
    f.write_text("".join(lines[:at]) + breakage + "\n" + "".join(lines[at:]))
    late_header = breakage.startswith('{"type":"session"') and where == "first"  # a header, where one goes
    assert assert_reads_as_the_oracle(f)[0] == ("read" if late_header else "error")


def test_a_header_is_checked_as_the_reference_checks_it(tmp_path):
    good = {"type": "session", "id": "h1", "model": "m", "context_window": 5, "created_at": "2025-01-01T00:00:00Z"}
    bad = [{**good, "context_window": 1.0}, {**good, "context_window": -1}, {**good, "id": 5},
           {**good, "created_at": "soon"}, {**good, "model": ["m"]}]
    msg = json.dumps({"type": "message", "role": "user", "content": []})
    paths = []
    for i, header in enumerate([good, {"type": "session"}, *bad]):
        paths.append(tmp_path / f"h{i}.jsonl")
        paths[-1].write_text(json.dumps(header) + "\n" + msg + "\n")
    assert assert_agrees(paths) == [True, True] + [False] * len(bad)
    assert [assert_reads_as_the_oracle(p)[0] for p in paths] == ["read", "read"] + ["error"] * len(bad)


def test_many_files_in_many_groups_read_as_one_by_one(tmp_path, monkeypatch):
    rng = random.Random(5)
    paths = []
    for i in range(12):
        p = tmp_path / f"f{i:02d}.jsonl"
        header = [json.dumps({"type": "session", "id": f"s{i}", "model": "m"})] if i % 2 else []
        p.write_text("".join(line + "\n" for line in header) + conversation(rng))
        paths.append(p)
    (tmp_path / "f05.jsonl").write_text((tmp_path / "f05.jsonl").read_text() + '{"type":"note"}\n')
    monkeypatch.setattr(canonical_fast, "GROUP_BYTES", 3 * paths[0].stat().st_size)
    assert assert_agrees(paths) == [i != 5 for i in range(12)]
    alone = [frame for frame, _ in fast(paths[:1])]
    assert alone[0] is not None and alone[0].equals(fast(paths)[0][0])


@pytest.mark.parametrize("enabled", [True, False])
def test_the_garbage_collector_is_left_as_it_was(tmp_path, enabled):
    path = tmp_path / "s.jsonl"
    path.write_text(conversation(random.Random(2)))
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        assert fast([path])[0][0] is not None
        assert gc.isenabled() == enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_the_shapes_name_what_the_reference_accepts():
    message = typing.get_type_hints(shapes.MessageRecord)
    system = typing.get_type_hints(shapes.SystemBlock)
    assert set(typing.get_args(message["role"])) == set(ROLES)
    assert typing.get_args(system["mode"]) == canonical_lines.SYSTEM_MODES
    assert {shapes.TYPE_OF[typing.get_origin(b) or b] for b in typing.get_args(shapes.Block)} == {
        "text", "thinking", "compaction_summary", "system", "tool_use", "tool_result"}


# orjson (so the oracle) reads a JSON integer in [-(2**63), 2**64 - 1] as an int, any other as a float.
BIG_INTEGERS = [2**64, 2**64 - 1, 2**63, 2**63 - 1, -(2**63), -(2**63) - 1, 10**30]


@pytest.mark.parametrize("field", ["context_window", "created_at"])
@pytest.mark.parametrize("value", BIG_INTEGERS, ids=str)
def test_a_header_integer_beyond_a_machine_word_reads_as_the_oracle_reads_it(tmp_path, field, value):
    from click.testing import CliRunner

    from panto_analytics.cli import main
    from panto_analytics.ingest.corpus import read_corpus

    f = tmp_path / "h.jsonl"
    f.write_text(json.dumps({"type": "session", "id": "h", field: value}) + "\n"
                 + json.dumps({"type": "message", "role": "user", "content": []}) + "\n")
    want = assert_reads_as_the_oracle(f)  # the reader: the oracle's frame, or its error word for word
    assert assert_agrees([f]) in ([True], [False])  # the fast path: taken only as the oracle reads it
    if want[0] == "error":
        assert want[1] == 1 and f"session.{field}" in want[2]
        with pytest.raises(InputError) as e:
            read_corpus([str(f)], cache=False, jobs=1)
        assert (e.value.line, e.value.reason) == (1, want[2])
        result = CliRunner().invoke(main, ["ingest", str(f), "--no-cache", "-q", "-j", "1"])
        lines = result.output.strip().splitlines()
        assert result.exit_code == 1 and len(lines) == 1 and lines[0].startswith(f"error: {f}:1: {want[2]}")
