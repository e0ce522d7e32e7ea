"""The pi fast path (``formats/pi/fast.py``) against the line reader (``formats/pi/reader.py``) and its oracle.

The fast path may decline any file (:func:`.pi.parse` then reads it), but what
it returns for a file it takes must be exactly what the line reader gives:
the frame, the session metadata (compactions included) and the report's
counts of ignored records; it must never take a file the reader refuses. The
line reader itself agrees with the oracle ``reference/pi_lines.py``
(``test_pi_differential.py``); here the frame of every file taken is also
checked against the oracle's.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import msgspec
import orjson
import pytest
from adapter_checks import assert_fast_path_agrees
from conftest import FIXTURES, examples
from differential import recordings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutations import mutation_test

from panto_analytics.errors import IngestReport, InputError
from panto_analytics.formats import pi
from panto_analytics.formats.pi import fast as pi_fast
from panto_analytics.ingest import read_sessions
from reference import pi_lines

FIXTURE_FILES, REAL_FILES = recordings("pi", "pi")


def assert_agrees(paths: list[Path]) -> list[bool]:
    """Read ``paths`` in one fast-path batch, check each file it takes; return which ones it took."""
    return assert_fast_path_agrees(paths, pi.NAME, pi_fast, pi_lines)


def _write(path: Path, *records: object, raw: bytes = b"") -> Path:
    path.write_bytes(b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in records) + raw)
    return path


def test_fixtures_agree():
    taken = dict(zip(FIXTURE_FILES, assert_agrees(FIXTURE_FILES)))
    assert taken[FIXTURES / "pi" / "v3_branching.jsonl"]      # a tree, a branch summary, a compaction
    assert not taken[FIXTURES / "pi" / "v1.jsonl"]             # a blank line: the line reader's


@pytest.mark.skipif(not REAL_FILES, reason="../shared/realdata/pi is absent")
def test_real_recordings_are_taken_and_agree():
    """The fast path takes every real file whose lines each hold one JSON object, and declines the rest whole
    (xcsh-session.jsonl:440 holds two): the line reader's, with the same result (assert_agrees)."""
    taken = dict(zip(REAL_FILES, assert_agrees(REAL_FILES)))
    assert {p for p, took in taken.items() if not took} == {p for p in REAL_FILES if not _one_object_a_line(p)}


def _one_object_a_line(path: Path) -> bool:
    try:
        return all(isinstance(orjson.loads(line), dict) for line in path.read_bytes().splitlines() if line.strip())
    except orjson.JSONDecodeError:
        return False


def test_all_of_the_files_in_one_batch_agree():
    """Files read together keep apart: sessions, models, tool calls (refs are resolved within a file)."""
    paths = FIXTURE_FILES + REAL_FILES[:2]
    assert assert_agrees(paths + paths[::-1])


HEADER = {"type": "session", "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w", "modelId": "m0"}


def _msg(role: str, ts: object = "2026-01-01T00:00:01.000Z", **fields: object) -> dict:
    return {"type": "message", "timestamp": ts, "message": {"role": role, **fields}}


FEATURES: dict[str, list[object]] = {
    "every role and entry kind": [
        HEADER,
        _msg("user", content=[{"type": "text", "text": "a b"}, {"type": "image", "data": "x"}, {"type": "odd"}]),
        _msg("assistant", content=[{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "c"},
                                   {"type": "toolCall", "id": "t1", "name": "read", "arguments": {"path": "a.py"}},
                                   {"type": "other"}],
             model="m1", usage={"input": 3, "output": 2, "cacheRead": 1, "cacheWrite": 0, "cost": {"total": 0.25}}),
        _msg("toolResult", toolCallId="t1", content=[{"type": "text", "text": "x y z"},
                                                     {"type": "image", "mimeType": "image/png"}, {"type": "odd"}]),
        _msg("toolResult", toolCallId="t2", content="plain"),
        _msg("bashExecution", command="ls", output="a\nb"),
        _msg("bashExecution", command="ls", excludeFromContext=True),
        _msg("bashExecution", command="pwd"),
        _msg("custom", content="note"),
        _msg("hookMessage", content=[{"type": "text", "text": "hook"}]),
        _msg("branchSummary", summary="went elsewhere"),
        _msg("somethingNew", content="?"),
        {"type": "custom_message", "timestamp": "2026-01-01T00:00:02Z", "content": "ext"},
        {"type": "branch_summary", "timestamp": "2026-01-01T00:00:02Z", "summary": ""},
        {"type": "model_change", "timestamp": "2026-01-01T00:00:02Z", "modelId": "m2"},
        _msg("user", content="after the change"),
        _msg("assistant", content=[], model="m1", usage={"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}),
        _msg("assistant", content=[{"type": "text", "text": "no cost"}], usage={"input": 1, "cost": {"total": -1}}),
        {"type": "thinking_level_change", "timestamp": "2026-01-01T00:00:02Z", "thinkingLevel": "high"},
        {"type": "label", "timestamp": "2026-01-01T00:00:02Z"},
    ],
    "v1 compactions, by index and by a compaction summary message": [
        HEADER,
        _msg("user", content="one"),
        _msg("assistant", content=[{"type": "text", "text": "two"}], model="m1", usage={"input": 9}),
        _msg("user", content="three"),
        {"type": "compaction", "timestamp": "2026-01-01T00:00:05.000Z", "summary": "S", "firstKeptEntryIndex": 3,
         "tokensBefore": 99},
        _msg("user", content="four"),
        _msg("compactionSummary", summary="T", tokensBefore=5),
        {"type": "compaction", "timestamp": 1767225600000, "summary": "U", "firstKeptEntryIndex": 42},
    ],
    "a v3 tree with abandoned branches and a compaction keeping an entry": [
        {**HEADER, "version": 3, "parentSession": "/x/2026-01-01T00-00-00_parent-id.jsonl"},
        {**_msg("user", content="a"), "id": "a", "parentId": None},
        {**_msg("assistant", content=[{"type": "text", "text": "b"}], model="m1"), "id": "b", "parentId": "a"},
        {**_msg("user", content="dropped"), "id": "c", "parentId": "b"},
        {**_msg("user", content="kept"), "id": "d", "parentId": "b"},
        {"type": "compaction", "id": "k", "parentId": "d", "timestamp": "2026-01-01T00:00:09.000Z", "summary": "S",
         "firstKeptEntryId": "d"},
        {**_msg("user", content="e"), "id": "e", "parentId": "k"},
    ],
    "timestamps other than ISO UTC: offsets, epoch milliseconds, none, no time": [
        HEADER,
        _msg("user", ts="2026-01-01T01:00:00.123456+01:00", content="x"),
        _msg("user", ts=None, content="y", timestamp=1767225600123),
        _msg("user", ts="2026-02-30T00:00:00Z", content="z", timestamp="2026-01-01T00:00:00Z"),
        _msg("user", ts="not a time", content="w"),
        _msg("user", ts=1767225600999, content="v"),
        _msg("user", ts="2026-01-01T00:00:60Z", content="u"),
    ],
    "a v3 chain without a compaction: every entry on the branch, in file order": [
        {**HEADER, "version": 3},
        {**_msg("user", content="a"), "id": "a", "parentId": None},
        {**_msg("assistant", content=[{"type": "text", "text": "b"}], model="m1"), "id": "b", "parentId": "a"},
        {"type": "model_change", "id": "c", "parentId": "b", "timestamp": "2026-01-01T00:00:02Z", "modelId": "m2"},
        {**_msg("user", content="d"), "id": "d", "parentId": "c"},
    ],
    "a v3 file that starts a second root: the chain broken, the first root off the branch": [
        {**HEADER, "version": 3},
        {**_msg("user", content="a"), "id": "a", "parentId": None},
        {**_msg("user", content="b"), "id": "b", "parentId": "a"},
        {**_msg("user", content="c"), "id": "c", "parentId": None},
        {**_msg("user", content="d"), "id": "d", "parentId": "c"},
    ],
    "a v2 header alone": [{**HEADER, "version": 2}],
    "no header": [_msg("user", content="x"), _msg("assistant", content=[{"type": "text", "text": "y"}])],
    "only a header": [HEADER],
}


@pytest.mark.parametrize("name", FEATURES)
def test_feature_is_taken_and_agrees(tmp_path, name):
    path = _write(tmp_path / "s.jsonl", *FEATURES[name])
    assert assert_agrees([path]) == [True]


DECLINED: dict[str, tuple[list[object], bytes]] = {
    "a blank line": ([HEADER, _msg("user", content="x")], b"\n"),
    "a truncated last line": ([HEADER], b'{"type":"message"'),
    "a header that is not first": ([_msg("user", content="x"), HEADER], b""),
    "a bad version": ([{**HEADER, "version": 0}], b""),
    "a dangling parent": ([{**HEADER, "version": 2}, {**_msg("user", content="x"), "id": "a", "parentId": "z"}], b""),
    "an id used twice": ([{**HEADER, "version": 2}, {**_msg("user", content="x"), "id": "a"},
                          {**_msg("user", content="y"), "id": "a"}], b""),
    "an id used twice in what reads as a chain": ([{**HEADER, "version": 2}, {**_msg("user", content="x"), "id": "a"},
                                                   {**_msg("user", content="y"), "id": "b", "parentId": "a"},
                                                   {**_msg("user", content="z"), "id": "b", "parentId": "b"}], b""),
    "a v2 entry without an id in a chain": ([{**HEADER, "version": 2}, {**_msg("user", content="x"), "id": "a"},
                                            {**_msg("user", content="y"), "parentId": "a"}], b""),
    "a header that is not first, after a v2 header": ([{**HEADER, "version": 2}, {**HEADER, "version": 2}], b""),
    "a message without content": ([HEADER, _msg("user")], b""),
    "a tool call without an id": ([HEADER, _msg("assistant", content=[{"type": "toolCall", "name": "x"}])], b""),
    "a counter out of range": ([HEADER, _msg("assistant", content=[], usage={"input": 2**32})], b""),
    "a message entry without a message": ([HEADER, {"type": "message"}], b""),
    "a compaction without a summary": ([HEADER, {"type": "compaction", "firstKeptEntryIndex": 1}], b""),
    # orjson reads an integer beyond 64 bits as a float, which the version check refuses.
    "a version beyond orjson's integers": ([{**HEADER, "version": 2**64}], b""),
    # A number beyond a double: orjson refuses the line (malformed JSON) where msgspec skips or keeps it raw.
    "a number beyond a double in a compaction's unread field": (
        [HEADER, _msg("user", content="x")], b'{"type":"compaction","summary":"S","firstKeptEntryIndex":1,"x":1e400}\n'),
    "a number beyond a double in an unread field of a message line": (
        [HEADER], b'{"type":"message","big":1e400,"message":{"role":"user","content":"x"}}\n'),
    "a number beyond a double in an unread field of a tool result": (
        [HEADER], b'{"type":"message","message":{"role":"toolResult","toolCallId":"t","content":"x",'
                  b'"details":{"n":[-2E+308]}}}\n'),
    "an integer beyond a double in the header's cwd": ([], b'{"type":"session","id":"s","cwd":' + b"9" * 310 + b"}\n"),
    "a number beyond a double in tool arguments": (
        [HEADER], b'{"type":"message","message":{"role":"assistant","content":'
                  b'[{"type":"toolCall","id":"t","name":"r","arguments":{"x":1e400}}]}}\n'),
}


@pytest.mark.parametrize("name", DECLINED)
def test_what_the_line_reader_judges_is_declined(tmp_path, name):
    records, raw = DECLINED[name]
    path = _write(tmp_path / "s.jsonl", *records, raw=raw)
    assert assert_agrees([path]) == [False]


def _calls(*arguments: bytes) -> bytes:
    """An assistant message line whose tool calls have ``arguments`` written as these bytes."""
    calls = b",".join(b'{"type":"toolCall","id":"t%d","name":"read","arguments":%s}' % (k, a)
                      for k, a in enumerate(arguments))
    return b'{"type":"message","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"assistant","content":[' \
        + calls + b']}}\n'


def _deep(depth: int) -> bytes:
    """A JSON value ``depth`` levels deep (an object around nested arrays)."""
    return b'{"x":' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"


TOOL_ARGUMENTS: dict[str, list[bytes]] = {
    # Every call's arguments compact (ASCII, or not): each is its own bytes.
    "compact": [b'{"path":"a.py","n":[1,2.5,null,true]}', b'{}', b'"s"', b'[]'],
    "compact, not ASCII": [b'{"path":"caf\xc3\xa9.py"}', b'{"q":"\xe2\x9c\x93 \\u00e9"}'],
    # One call's arguments not as orjson writes them: every call's are re-serialized.
    "spaces, 1.50, an escaped slash, a key twice": [b'{"path":"a.py"}', b'{ "a" : 1.50, "b":"x\\/y", "a": 2 }'],
    # As deep as orjson writes: alone they are, inside the array of a file's arguments they are not.
    "nested as deep as orjson writes": [_deep(254), b'{"path":"a.py"}'],
}


@pytest.mark.parametrize("name", TOOL_ARGUMENTS)
def test_tool_arguments_are_their_compact_json(tmp_path, name):
    path = _write(tmp_path / "s.jsonl", HEADER, raw=_calls(*TOOL_ARGUMENTS[name]))
    assert assert_agrees([path]) == [True]
    arguments = TOOL_ARGUMENTS[name]
    assert pi_fast._compact([msgspec.Raw(a) for a in arguments]) == [orjson.dumps(orjson.loads(a)).decode()
                                                                     for a in arguments]


def test_tool_arguments_orjson_cannot_write_are_declined(tmp_path):
    path = _write(tmp_path / "s.jsonl", HEADER, raw=_calls(b'{"path":"a.py"}', _deep(255)))
    assert assert_agrees([path]) == [False]


def test_a_declined_file_leaves_the_others_of_its_batch_alone(tmp_path):
    good = _write(tmp_path / "a.jsonl", *FEATURES["every role and entry kind"])
    bad = _write(tmp_path / "b.jsonl", HEADER, _msg("user"))
    assert assert_agrees([good, bad, good]) == [True, False, True]


def test_ingest_reads_the_same_frames_with_and_without_it(tmp_path, monkeypatch):
    paths = [_write(tmp_path / f"{name[:8]}.jsonl", *records) for name, records in FEATURES.items()]
    paths += [*FIXTURE_FILES, *REAL_FILES[:1]]
    fast = read_sessions(paths, format="pi", skip_invalid=True, jobs=1)
    monkeypatch.setattr(pi, "read_frames", None)
    assert fast.equals(read_sessions(paths, format="pi", skip_invalid=True, jobs=1))


@pytest.mark.parametrize("keep", [1.0, 0.5, 0.3])
def test_a_compressed_file_cut_short_reads_as_without_it(tmp_path, monkeypatch, keep):
    """The fast path reads a .gz as the line reader does: whole, or its whole lines before the cut (counted
    as skipped), or one error naming the file."""
    plain = _write(tmp_path / "s.jsonl", HEADER, *FEATURES["every role and entry kind"][1:] * 40).read_bytes()
    packed = gzip.compress(plain)
    f = tmp_path / "s.jsonl.gz"
    f.write_bytes(packed[:int(len(packed) * keep)])

    def read() -> tuple:
        try:
            read_sessions([f], jobs=1)
            strict = None
        except InputError as e:
            strict = str(e)
        report = IngestReport()
        frame = read_sessions([f], skip_invalid=True, report=report, jobs=1)
        return strict, frame, dict(report.skipped), dict(report.ignored)

    fast = read()
    monkeypatch.setattr(pi, "read_frames", None)
    line = read()
    assert fast[0] == line[0] and fast[2:] == line[2:]
    assert fast[1].equals(line[1]) and fast[1].height > 0
    if keep == 1.0:
        assert assert_agrees([f]) == [True]


SOURCES = FIXTURE_FILES + REAL_FILES[:1]


test_mutated_file = mutation_test(SOURCES, lambda f: assert_agrees([f]))


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                          HealthCheck.function_scoped_fixture])
@given(n=st.integers(0, 8), version=st.sampled_from([None, 1, 2, 3, 3, 3]),
       compaction=st.sampled_from([False, False, True]),
       changes=st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7),
                                  st.sampled_from(["root", "earlier", "later", "dangling", "self", "reused", "missing"])),
                        max_size=2))
def test_trees_near_a_chain(tmp_path_factory, n, version, compaction, changes):
    """Entries linked as one chain (the tree skipped when no compaction is recorded), or one or two links
    off it (a second root, a parent further back or ahead, unknown, itself; an id reused or missing): the
    line reader's result, or declined where it refuses the file."""
    entries = [{**_msg("user", content=f"m{k}"), "id": f"e{k}", "parentId": f"e{k - 1}" if k else None}
               for k in range(n)]
    if compaction and n:
        entries[-1] = {"type": "compaction", "id": f"e{n - 1}", "parentId": entries[-1]["parentId"],
                       "timestamp": "2026-01-01T00:00:05.000Z", "summary": "S", "firstKeptEntryId": "e0"}
    for at, other, change in changes:
        if not entries:
            break
        entry, other_id = entries[at % n], f"e{other % n}"
        if change == "reused":
            entry["id"] = other_id
        elif change == "missing":
            entry.pop("id", None)
        else:
            entry["parentId"] = {"root": None, "dangling": "nowhere", "self": entry.get("id")}.get(change, other_id)
    header = HEADER if version is None else {**HEADER, "version": version}
    taken = assert_agrees([_write(tmp_path_factory.mktemp("tree") / "s.jsonl", header, *entries)])
    assert taken == [True] or changes   # an unchanged chain is the fast path's
