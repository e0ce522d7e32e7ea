"""The Claude Code columnar fast path against the line-by-line reference reader (``reference/claude_code_lines.py``)
and the package's one-file reader (``formats/claude_code/reader.py``).

The fast path may decline any file (the one-file reader then reads it), but
what it returns for a file it takes must be exactly the reference's: the
frame, the session metadata (message ids included) and the report's counts of
ignored records. It must never take a file the reference refuses.
"""
from __future__ import annotations

import json
import random
import tempfile
import types
from pathlib import Path

import msgspec
import orjson
import pytest
from adapter_checks import assert_fast_path_agrees, reference_frame
from conftest import FIXTURES, SHARED, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutations import MUTATIONS, mutate
from test_columnar import ODD_TIMESTAMPS

from benchmarks.synth_claude_code import generate_session, write_corpus
from panto_analytics.errors import InputError
from panto_analytics.formats.claude_code import fast
from reference import claude_code_lines as lines

REAL = SHARED / "realdata" / "claude-code"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason=f"{REAL} is absent")


def assert_agrees(paths: list[Path]) -> list[bool]:
    """Read ``paths`` in one fast-path batch, check each file it takes; return which ones it took."""
    return assert_fast_path_agrees(paths, lines.NAME, fast, oracle=lines)


def has_compaction(path: Path) -> bool:
    return b'"compact_boundary"' in path.read_bytes() or b'"isCompactSummary":true' in path.read_bytes()


# -- what it takes, it reads as the reference does ------------------------------------

def test_synthetic_transcripts_are_all_taken(tmp_path):
    paths = write_corpus(tmp_path / "short", 24, seed=3) + write_corpus(tmp_path / "long", 6, seed=3, median_turns=80)
    assert all(assert_agrees(paths))
    assert sum(has_compaction(p) for p in paths) >= 3   # long sessions compact near the window


def test_fixtures_agree():
    paths = sorted(p for p in (FIXTURES / "claude_code").rglob("*.jsonl"))
    taken = dict(zip(paths, assert_agrees(paths)))
    assert taken[FIXTURES / "claude_code" / "streaming.jsonl"]
    # A server tool's result and a sidechain record in a main transcript: left to the reference.
    assert not taken[FIXTURES / "claude_code" / "blocks.jsonl"]
    assert not taken[FIXTURES / "claude_code" / "malformed.jsonl"]
    assert not taken[FIXTURES / "claude_code" / "preserved.jsonl"]
    # Files re-attached after a compaction: the reader records them on the compaction.
    assert not taken[FIXTURES / "claude_code" / "restored.jsonl"]


@needs_real
def test_real_recordings_agree():
    paths = sorted(REAL.rglob("*.jsonl"))
    taken = assert_agrees(paths)
    assert all(t for p, t in zip(paths, taken) if b"preservedSegment" not in p.read_bytes())
    assert sum(taken) >= len(paths) // 2


# -- one feature each --------------------------------------------------------------

def _write(path: Path, *records: dict, raw: bytes = b"", separators: tuple[str, str] = (",", ":")) -> Path:
    """Records as Claude Code writes them (compact JSON, unless ``separators`` say otherwise)."""
    path.write_bytes(b"".join(json.dumps(r, ensure_ascii=False, separators=separators).encode() + b"\n"
                              for r in records) + raw)
    return path


def _user(uid: str, content, **extra) -> dict:
    return {"type": "user", "uuid": uid, "parentUuid": None, "sessionId": "s", "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": content}, **extra}


def _asst(uid: str, mid: str, blocks: list, usage: dict | None = None, **extra) -> dict:
    message = {"id": mid, "role": "assistant", "model": extra.pop("model", "claude-x"), "content": blocks}
    if usage is not None:
        message["usage"] = usage
    return {"type": "assistant", "uuid": uid, "parentUuid": None, "sessionId": "s", "requestId": extra.pop("rid", "r-" + mid),
            "timestamp": "2026-01-01T00:00:01.000Z", "message": message, **extra}


def _use(tid: str, inp: object) -> dict:
    return {"type": "tool_use", "id": tid, "name": "Bash", "input": inp}


def _result(tid: str, content) -> dict:
    return {"tool_use_id": tid, "type": "tool_result", "content": content}


def test_each_call_is_read_in_its_own_record_s_working_directory(tmp_path):
    """The Bash tool moves Claude Code's cwd; a call's relative paths are joined to its own record's cwd, by the fast
    path and the line-by-line reader alike (issue 28, item 2)."""
    import panto_analytics as pa
    from panto_analytics.frame.tool_targets import key_of

    path = _write(tmp_path / "s.jsonl",
                  _user("u1", "go", cwd="/a"),
                  _asst("a1", "m1", [_use("t1", {"command": "cat x"})], {"input_tokens": 1, "output_tokens": 1}, cwd="/a"),
                  _user("u2", [_result("t1", "x")], cwd="/a"),
                  _asst("a2", "m2", [_use("t2", {"command": "cat x"})], {"input_tokens": 1, "output_tokens": 1},
                        cwd="/a/b"),
                  _user("u3", [_result("t2", "x")], cwd="/a/b"))
    assert assert_agrees([path]) == [True]
    refs = pa.outcomes.references(pa.read_sessions([path])).collect()
    assert refs["key"].to_list() == [key_of("file:/a/x"), key_of("file:/a/b/x")]


FEATURES = {
    "streamed call, results written while it streams": [
        _user("u1", "run it"),
        _asst("a1", "m1", [{"type": "thinking", "thinking": "hm", "signature": "x"}], {"input_tokens": 5, "output_tokens": 1}),
        _asst("a2", "m1", [_use("t1", {"cmd": "ls -la", "n": 1.5})], {"input_tokens": 5, "output_tokens": 2}),
        _user("u2", [_result("t1", "a b\tc")]),
        _asst("a3", "m1", [_use("t2", {})], {"input_tokens": 5, "output_tokens": 9}),
        _user("u3", [_result("t2", [{"type": "text", "text": "x y"}, {"type": "image", "source": {"media_type": "image/png"}}])]),
        {"type": "progress", "uuid": "p1", "parentUuid": "u3", "sessionId": "s", "data": {"message": {"type": "user"}}},
        _asst("a4", "m2", [{"type": "text", "text": "done"}], {"input_tokens": 7, "output_tokens": 3,
                                                                "cache_read_input_tokens": 100}),
    ],
    "duplicate records and a repeated call": [
        _user("u1", "hi"),
        _asst("a1", "m1", [{"type": "text", "text": "one"}], {"input_tokens": 1, "output_tokens": 1}),
        _asst("a1", "m1", [{"type": "text", "text": "one"}], {"input_tokens": 1, "output_tokens": 1}),
        _user("u2", "again"),
        _asst("a2", "m1", [{"type": "text", "text": "late line"}], {"input_tokens": 1, "output_tokens": 4}),
        _asst("a3", "m1", [{"type": "text", "text": "later"}], {"input_tokens": 1, "output_tokens": 6}),
    ],
    "synthetic error, unknown blocks, redacted thinking, transcript-only": [
        _user("u1", [{"type": "text", "text": "look"}, {"type": "image", "source": {}}]),
        _asst("a1", "m1", [{"type": "redacted_thinking", "data": "zz"}, {"type": "mystery"}], {"input_tokens": 3}),
        _asst("a2", "m2", [{"type": "text", "text": "API Error"}], {"input_tokens": 0}, model="<synthetic>"),
        _user("u2", "shown only", isVisibleInTranscriptOnly=True),
        {"type": "system", "subtype": "turn_duration", "uuid": "y1", "parentUuid": None, "sessionId": "s"},
        {"type": "system", "uuid": "y2", "parentUuid": None, "sessionId": "s"},
        {"type": "attachment", "uuid": "t1", "parentUuid": None, "sessionId": "s", "attachment": {"type": "skill_listing"}},
        {"type": "attachment", "uuid": "t2", "parentUuid": None, "sessionId": "s", "attachment": {}},
        {"type": "ai-title", "aiTitle": "x", "sessionId": "s2"},
    ],
    "queued prompts, string and list": [
        _user("u1", "go"),
        _asst("a1", "m1", [_use("t1", {"a": [1, "é"]})], {"input_tokens": 2, "output_tokens": 2}),
        {"type": "attachment", "uuid": "q1", "parentUuid": None, "sessionId": "s", "timestamp": "2026-01-01T00:00:02Z",
         "attachment": {"type": "queued_command", "prompt": "also this"}},
        _user("u2", [_result("t1", "ok")]),
        {"type": "attachment", "uuid": "q2", "parentUuid": None, "sessionId": "s",
         "attachment": {"type": "queued_command", "prompt": [{"type": "text", "text": "a"}, {"type": "image"}, "x",
                                                               {"type": "text", "text": "b"}]}},
        {"type": "attachment", "uuid": "q3", "parentUuid": None, "sessionId": "s", "attachment": {"type": "queued_command"}},
    ],
    "usage with missing and null counters, no usage, null model": [
        _user("u1", ""),
        _asst("a1", "m1", [], {"output_tokens": 3, "input_tokens": None}),
        _asst("a2", "m2", [{"type": "text", "text": ""}], None, model=None),
        _user("u2", []),
    ],
    "compactions: a boundary and its summary, a lone boundary, a lone summary": [
        _user("u1", "go"),
        _asst("a1", "m1", [_use("t1", {})], {"input_tokens": 2, "output_tokens": 2}),
        {"type": "system", "subtype": "compact_boundary", "uuid": "b1", "parentUuid": None, "sessionId": "s",
         "timestamp": "2026-01-01T00:00:03Z", "compactMetadata": {"trigger": "auto", "preTokens": 170000}},
        {"type": "progress", "uuid": "p1", "parentUuid": None, "sessionId": "s"},
        _user("s1", [{"type": "text", "text": "This session is being continued."}, {"type": "image"},
                     {"type": "text", "text": "Summary: a b"}], isCompactSummary=True, isVisibleInTranscriptOnly=True),
        _user("u2", [_result("t1", "late result")]),
        {"type": "system", "subtype": "compact_boundary", "uuid": "b2", "parentUuid": None, "sessionId": "s",
         "compactMetadata": {"trigger": 5, "preTokens": True}},
        _user("u3", "next"),
        _user("s2", "Older summary form", isCompactSummary=True),
        _asst("a2", "m2", [{"type": "text", "text": "ok"}], {"input_tokens": 2, "output_tokens": 2}),
        {"type": "system", "subtype": "compact_boundary", "uuid": None, "parentUuid": None, "sessionId": "s",
         "compactMetadata": "none"},
        _user("s3", "joined to a boundary without a uuid", isCompactSummary=True),
    ],
    "a call split by a meta record and a queued prompt: billed once, its final usage on its first message": [
        _user("u1", "read the pdf"),
        _asst("a1", "m1", [_use("t1", {"file_path": "p.pdf"})], {"input_tokens": 3, "output_tokens": 1,
                                                                   "cache_read_input_tokens": 900}),
        _user("u2", [_result("t1", "PDF file read")]),
        _user("u3", [{"type": "document", "source": {"type": "base64", "media_type": "application/pdf"}}], isMeta=True),
        {"type": "attachment", "uuid": "q1", "parentUuid": None, "sessionId": "s",
         "attachment": {"type": "queued_command", "prompt": "and then"}},
        _asst("a2", "m1", [{"type": "text", "text": "it says"}], {"input_tokens": 3, "output_tokens": 40,
                                                                  "cache_read_input_tokens": 900}),
        _asst("a3", "m1", [{"type": "text", "text": "more"}], None),
        _user("u4", "ok"),
        _asst("a4", "m2", [{"type": "text", "text": "bye"}], {"input_tokens": 1, "output_tokens": 1}),
    ],
    "usage.iterations under an all-zero top level (Claude Code 2.1.18x), and beside a real one": [
        _user("u1", "go on"),
        _asst("a1", "m1", [{"type": "text", "text": "resumed"}], {
            "input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
            "iterations": [{"input_tokens": 3, "output_tokens": 50, "cache_read_input_tokens": 0,
                            "cache_creation_input_tokens": 30_000, "type": "message",
                            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 30_000}},
                           {"input_tokens": 1, "output_tokens": 7, "cache_read_input_tokens": 30_000,
                            "cache_creation_input_tokens": 10}]}),
        _asst("a2", "m2", [{"type": "text", "text": "x"}], {"input_tokens": 2, "output_tokens": 5, "iterations": [
            {"input_tokens": 2, "output_tokens": 5}]}),
        _asst("a3", "m3", [{"type": "text", "text": "y"}], {"input_tokens": 0, "iterations": []}),
        _asst("a4", "m4", [{"type": "text", "text": "z"}], {"input_tokens": 0, "iterations": None}),
    ],
    "a subagent transcript": [
        _user("u1", "task", isSidechain=True, agentId="abc", cwd="/home/me/app"),
        _asst("a1", "m1", [{"type": "text", "text": "ok"}], {"input_tokens": 1}, isSidechain=True, agentId="abc"),
    ],
    "no id on the calls": [
        _user("u1", "x", cwd=""),
        {**_asst("a1", "m1", [{"type": "text", "text": "a"}]), "message": {"role": "assistant", "content": [], "model": "m"}},
        {**_asst("a2", "m1", [{"type": "text", "text": "b"}], rid=None)},
        {**_asst("a3", "m1", [{"type": "text", "text": "c"}], rid=None)},
    ],
}


@pytest.mark.parametrize("name", sorted(FEATURES))
def test_each_feature_is_taken_and_agrees(tmp_path, name):
    path = _write(tmp_path / "s.jsonl", *FEATURES[name])
    assert assert_agrees([path]) == [True]


@pytest.mark.parametrize("timestamp", ODD_TIMESTAMPS)
def test_a_timestamp_python_reads_otherwise_is_declined_or_read_alike(tmp_path, timestamp):
    records = [dict(r) for r in FEATURES["streamed call, results written while it streams"]]
    records[3] = {**records[3], "timestamp": timestamp}
    clean = _write(tmp_path / "clean.jsonl", *FEATURES["queued prompts, string and list"])
    odd = _write(tmp_path / "odd.jsonl", *records)
    assert assert_agrees([clean, odd])[0]


def test_spaced_json_is_taken_too(tmp_path):
    path = _write(tmp_path / "s.jsonl", *FEATURES["streamed call, results written while it streams"], separators=(", ", ": "))
    assert assert_agrees([path]) == [True]


def test_blank_lines_a_bom_and_a_missing_final_newline_keep_line_numbers(tmp_path):
    body = _write(tmp_path / "x.jsonl", *FEATURES["streamed call, results written while it streams"]).read_bytes()
    lines = body.splitlines()
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + lines[0] + b"\n\n" + b"\n".join(lines[1:]))
    assert assert_agrees([path]) == [True]


# -- what it must leave to the reference ------------------------------------------------

REFUSED_OR_LEFT = {
    "not JSON": b'{"type":"user",\n',
    "not an object": b"[1, 2]\n",
    "no type": b'{"uuid":"z1","parentUuid":null}\n',
    "message not an object": json.dumps({**_user("z1", "x"), "message": "hi"}).encode() + b"\n",
    "assistant content a string": json.dumps(_asst("z1", "mz", "text")).encode() + b"\n",
    "user content null": json.dumps(_user("z1", None)).encode() + b"\n",
    "text block without text": json.dumps(_user("z1", [{"type": "text"}])).encode() + b"\n",
    "tool result without id": json.dumps(_user("z1", [{"type": "tool_result", "content": "x"}])).encode() + b"\n",
    "a part without text": json.dumps(_user("z1", [_result("t", [{"type": "text"}])])).encode() + b"\n",
    "a null block": json.dumps(_user("z1", [None])).encode() + b"\n",
    "negative usage": json.dumps(_asst("z1", "mz", [], {"input_tokens": -1})).encode() + b"\n",
    "fractional usage": json.dumps(_asst("z1", "mz", [], {"input_tokens": 1.5})).encode() + b"\n",
    "usage beyond u32": json.dumps(_asst("z1", "mz", [], {"input_tokens": 2**32})).encode() + b"\n",
    "a compact summary of another type": json.dumps(_user("z1", 5, isCompactSummary=True)).encode() + b"\n",
    "a sidechain record in a main transcript": json.dumps(_user("z1", "x", isSidechain=True)).encode() + b"\n",
    "a server tool result": json.dumps(_asst("z1", "mz", [{"type": "web_search_tool_result", "content": []}])).encode() + b"\n",
    "a prompt of another type": json.dumps({"type": "attachment", "uuid": "z1", "parentUuid": None,
                                            "attachment": {"type": "queued_command", "prompt": 5}}).encode() + b"\n",
    "an odd timestamp": json.dumps(_user("z1", "x", timestamp="yesterday")).encode() + b"\n",
    "a lone surrogate": b'{"type":"user","uuid":"z1","parentUuid":null,"message":{"role":"user","content":"\\ud800"}}\n',
    "invalid UTF-8": b'{"type":"ai-title","aiTitle":"\xff"}\n',
    "leading whitespace": b'  {"type":"ai-title"}\n',
    "a number beyond a double in a field no shape declares": json.dumps(_user("z1", "x", toolUseResult={"n": 1})).replace(
        '{"n": 1}', '{"n": [-2E+308]}').encode() + b"\n",
    # as many records as non-blank lines, each line starting with "{": a record over two lines, two on one line
    "a record over two lines and two on one": (json.dumps(_user("z1", "x"), separators=(",", ":")).replace(
        '"message":', '"message":\n') + "\n" + json.dumps(_user("z2", "y")) + json.dumps(_user("z3", "z")) + "\n").encode(),
}


@pytest.mark.parametrize("name", sorted(REFUSED_OR_LEFT))
def test_a_file_it_cannot_judge_is_declined_and_the_rest_of_the_batch_taken(tmp_path, name):
    clean = [_write(tmp_path / f"c{k}.jsonl", *FEATURES[f]) for k, f in enumerate(sorted(FEATURES)[:3])]
    broken = _write(tmp_path / "broken.jsonl", *FEATURES["duplicate records and a repeated call"], raw=REFUSED_OR_LEFT[name])
    assert assert_agrees([clean[0], broken, clean[1], clean[2]]) == [True, False, True, True]


@pytest.mark.parametrize("blank", [b"\n", b"\n\n\n", b""])
def test_a_file_of_blank_lines_is_left_to_the_reference_alone_or_in_a_batch(tmp_path, blank):
    clean = _write(tmp_path / "clean.jsonl", *FEATURES["duplicate records and a repeated call"])
    empty = [tmp_path / "e1.jsonl", tmp_path / "e2.jsonl"]
    for path in empty:
        path.write_bytes(blank)
    assert assert_agrees(empty) == [False, False]
    assert assert_agrees([empty[0], clean, empty[1]]) == [False, True, False]


# -- random breakage -------------------------------------------------------------------

EXTRA = ["duplicate", "swap", "cut"]   # "cut": the file ends before this line, as one caught mid-write


@st.composite
def mutated_transcripts(draw: st.DrawFn) -> bytes:
    """A synthetic or feature transcript with one to three lines broken, repeated, swapped or cut off."""
    source = draw(st.sampled_from(["synthetic", *sorted(FEATURES)]), label="source")
    records = (generate_session(random.Random(draw(st.integers(0, 2**16), label="seed")), "s", median_turns=2, max_turns=4)
               if source == "synthetic" else FEATURES[source])
    lines = [json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode() for r in records]
    data = draw(st.data())
    for _ in range(draw(st.integers(1, 3), label="mutations")):
        if not lines:
            break
        at = draw(st.integers(0, len(lines) - 1), label="line")
        how = draw(st.sampled_from(MUTATIONS + EXTRA), label="how")
        if how == "duplicate":
            lines.insert(at, lines[at])
        elif how == "swap":
            lines[at], lines[-1 - at] = lines[-1 - at], lines[at]
        elif how == "cut":
            del lines[at:]
        else:
            lines[at] = mutate(lines[at], how, data)
    return b"\n".join(lines) + b"\n"


def _agrees_on(contents: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as d:
        paths = [Path(d) / f"s{k}.jsonl" for k in range(len(contents))]
        for path, content in zip(paths, contents):
            path.write_bytes(content)
        assert_agrees(paths)


@pytest.mark.slow
@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(content=mutated_transcripts())
def test_a_mutated_transcript_is_declined_or_read_as_the_reference_reads_it(content):
    _agrees_on([content])


@pytest.mark.slow
@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contents=st.lists(mutated_transcripts(), min_size=2, max_size=4))
def test_a_batch_of_mutated_transcripts_is_halved_to_the_files_arrow_refuses(contents):
    # One batch: the files Arrow refuses are found by halving, the others read together.
    _agrees_on(contents)


# orjson (so the reference) reads a JSON integer in [-(2**63), 2**64 - 1] as an int, any other as a float.
@pytest.mark.parametrize("pre_tokens", [2**64, 2**64 - 1, 2**63, 2**63 - 1, 166, 0, -1, -(2**63), -(2**63) - 1, 10**30],
                         ids=str)
def test_a_boundary_s_pre_tokens_beyond_a_machine_word_read_as_the_reference_reads_them(tmp_path, pre_tokens):
    raw = (FIXTURES / "claude_code" / "compaction.jsonl").read_text()
    assert '"preTokens":166' in raw
    f = tmp_path / "big.jsonl"
    f.write_text(raw.replace('"preTokens":166', f'"preTokens":{pre_tokens}'))
    taken = assert_agrees([f, FIXTURES / "claude_code" / "compaction.jsonl"])
    assert taken[1] and taken[0] == (not 2**63 <= pre_tokens < 2**64)   # a word Int64 cannot hold: left to reader.py
    ref = reference_frame(f, lines.NAME, lines)
    assert not isinstance(ref, InputError)
    want = pre_tokens if -(2**63) <= pre_tokens < 2**64 else None   # beyond: orjson's float, no count
    assert [c["tokens_before"] for c in ref[1].meta.compactions] == [want]


# -- tool-call inputs: the raw bytes where they are their compact JSON, serialized again where not ------------

#: Inputs as raw JSON text that orjson's compact form writes otherwise (spaces, escapes it does not write, numbers
#: in another form, a repeated key), and ones it writes as they are.
ODD_INPUTS = [b'{"cmd": "ls"}', b'{"p":"a\\/b"}', b'{"s":"\\u00e9\\u0041"}', b'{"n":1e5}', b'{"n":1.50}', b'{"n":-0}',
              b'{"n":18446744073709551616}', b'{"k":1,"k":2}', b'[ 1 ,2]', b'{"s":"\\u001F"}', b'{"s":"\\u0008"}']
COMPACT_INPUTS = [b'{"cmd":"ls -la"}', b'{"s":"a\\"b\\\\c\\n\\t\\u001f\\b"}', b'{"n":1.5,"m":-3,"z":0}', b'[]',
                  b'{"a":[1,{"b":null,"c":true}]}', '{"s":"é ☃"}'.encode()]


def _raw_line(uid: str, tid: str, raw_input: bytes) -> bytes:
    """An assistant line whose one tool call's input is ``raw_input``, byte for byte."""
    head = json.dumps(_asst(uid, "m-" + uid, [_use(tid, "INPUT")], {"input_tokens": 1}), separators=(",", ":")).encode()
    return head.replace(b'"INPUT"', raw_input)


@pytest.mark.parametrize("odd", [None, *ODD_INPUTS], ids=lambda o: "compact" if o is None else o.decode())
def test_tool_inputs_count_as_their_compact_json_raw_or_serialized_again(tmp_path, odd):
    # A batch with one odd input among compact ones: every input is serialized again; without: the raw bytes.
    inputs = [*COMPACT_INPUTS, *([odd] if odd is not None else [])]
    lines = [json.dumps(_user("u0", "go"), separators=(",", ":")).encode()]
    lines += [_raw_line(f"a{k}", f"t{k}", raw) for k, raw in enumerate(inputs)]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    other = _write(tmp_path / "other.jsonl", *FEATURES["queued prompts, string and list"])
    assert assert_agrees([path, other]) == [True, True]


@st.composite
def raw_inputs(draw: st.DrawFn) -> list[bytes]:
    """Tool inputs as raw JSON text, each compact (orjson's form) or written with spaces or ASCII escapes."""
    leaves = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False) | st.text()
    values = st.lists(st.recursive(leaves, lambda inner: st.lists(inner, max_size=3)
                                   | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=8), max_size=6)
    out = []
    for value in draw(values):
        style = draw(st.sampled_from(["orjson", "spaced", "ascii"]))
        if style == "orjson":
            try:
                out.append(orjson.dumps(value))
            except orjson.JSONEncodeError:   # an integer beyond 64 bits
                out.append(json.dumps(value).encode())
        else:
            out.append(json.dumps(value, ensure_ascii=style == "ascii",
                                  separators=(", ", ": ") if style == "spaced" else (",", ":")).encode())
    return out


@settings(max_examples=examples(100), deadline=None)
@given(raw=raw_inputs())
def test_the_inputs_column_is_each_input_serialized_again(raw):
    # The column is what serializing each parsed input again gives (as lines.py does), whichever way it is built.
    columns = types.SimpleNamespace(failed=False)
    calls = [2 * k + 1 for k in range(len(raw))]
    got = fast._Columns._inputs(columns, 2 * len(raw) + 1, calls, [msgspec.Raw(r) for r in raw])
    try:
        want = [orjson.dumps(orjson.loads(r)).decode() for r in raw]
    except orjson.JSONEncodeError:
        assert columns.failed
        return
    assert not columns.failed
    assert got.to_pylist() == [None if k % 2 == 0 else want[k // 2] for k in range(2 * len(raw) + 1)]
