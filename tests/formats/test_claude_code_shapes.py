"""The declared record shapes of Claude Code (``formats/claude_code/shapes.py``): what they decode, and why a line
does not fit (the line and the JSON path, in the file's own field names)."""
from __future__ import annotations

import orjson
import pytest
from conftest import FIXTURES, SHARED

from panto_analytics.formats.claude_code.shapes import Block, Record, decode_file

REAL = sorted((SHARED / "realdata" / "claude-code").rglob("*.jsonl"))


def test_only_the_declared_fields_are_read():
    line = (b'{"type":"assistant","uuid":"a1","extra":{"deep":[1,2,{"x":null}]},"requestId":"r",'
            b'"message":{"id":"m","model":"claude-x","role":"assistant","stop_reason":null,'
            b'"content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"ls -la"}}],'
            b'"usage":{"input_tokens":3,"output_tokens":4,"service_tier":"standard",'
            b'"cache_creation":{"ephemeral_5m_input_tokens":1,"ephemeral_1h_input_tokens":2}}}}\n')
    [rec] = decode_file(line)
    assert isinstance(rec, Record) and rec.type == "assistant" and rec.requestId == "r"
    assert rec.message is not None and rec.message.usage is not None
    assert (rec.message.usage.input_tokens, rec.message.usage.cache_creation.ephemeral_1h_input_tokens) == (3, 2)
    [block] = rec.message.content
    assert isinstance(block, Block) and bytes(block.input) == b'{"command":"ls -la"}'


def test_a_missing_input_is_null_as_the_line_by_line_reader_serializes_it():
    [rec] = decode_file(b'{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"x"}]}}\n')
    assert bytes(rec.message.content[0].input) == orjson.dumps(None)


@pytest.mark.parametrize(("data", "reason"), [
    (b'{"type":"user"}\n{"type":"assistant","message":{"usage":{"output_tokens":4294967296}}}\n',
     "line 2: Expected `int` <= 4294967295 - at `$.message.usage.output_tokens`"),
    (b'{"type":"user","message":{"content":[{"type":"text","text":5}]}}\n',
     "line 1: Expected `str | null`, got `int` - at `$.message.content[0].text`"),
    (b'{"type":"user","message":{"content":[null]}}\n',
     "line 1: Expected `object`, got `null` - at `$.message.content[0]`"),
    (b'{"type":"user","isSidechain":"yes"}\n', "line 1: Expected `bool | null`, got `str` - at `$.isSidechain`"),
    (b"[1, 2]\n", "line 1: Expected `object`, got `array` - at `$`"),
])
def test_a_line_that_does_not_fit_names_its_line_and_json_path(data, reason):
    assert decode_file(data) == reason


@pytest.mark.parametrize("data", [b'{"type":"user",\n', b'{"type":"x","a":"\\ud800"}\n', b'{"a":' + b"[" * 1100 + b"]" * 1100 + b"}\n"])
def test_what_orjson_refuses_does_not_fit(data):
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(data)
    assert isinstance(decode_file(data), str)


@pytest.mark.parametrize("path", sorted((FIXTURES / "claude_code").rglob("*.jsonl")) + REAL, ids=lambda p: p.name)
def test_the_tool_inputs_raw_bytes_are_the_json_orjson_reads(path):
    """Each tool call's raw ``input`` bytes parse to the value orjson reads from the whole line."""
    records = decode_file(path.read_bytes())
    if isinstance(records, str):
        pytest.skip(f"{path.name} does not fit the shapes: {records}")
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    assert len(lines) == len(records)
    for rec, plain in zip(records, lines):
        if rec.message is None or not isinstance(rec.message.content, list):
            continue
        for block, raw in zip(rec.message.content, plain["message"]["content"]):
            if block.type == "tool_use":
                assert orjson.loads(bytes(block.input)) == raw.get("input")


def test_a_number_beyond_a_double_in_a_tool_input_leaves_its_file_to_the_one_file_reader(tmp_path):
    """msgspec skips ``1e400`` (it only keeps the input's bytes), orjson refuses it: the fast path declines that file
    (:func:`.typed.beyond_double`) and takes the other, and the one-file reader refuses the line as the line-by-line
    reference does."""
    from panto_analytics.errors import InputError
    from panto_analytics.formats.claude_code import fast, reader
    from panto_analytics.formats.contract import SourceFile
    from reference import claude_code_lines

    good = (b'{"type":"user","uuid":"u1","sessionId":"s","timestamp":"2026-01-01T00:00:00Z",'
            b'"message":{"role":"user","content":"hi"}}\n')
    bad = (b'{"type":"assistant","uuid":"a1","sessionId":"s","timestamp":"2026-01-01T00:00:01Z","requestId":"r",'
           b'"message":{"id":"m","model":"x","content":[{"type":"tool_use","id":"t","name":"Bash","input":{"n":1e400}}]}}\n')
    (tmp_path / "a.jsonl").write_bytes(good)
    (tmp_path / "b.jsonl").write_bytes(good + bad)
    assert not isinstance(decode_file(good + bad), str)
    sources = [SourceFile(tmp_path / name, reader.NAME) for name in ("a.jsonl", "b.jsonl")]
    taken, declined = fast.read_frames(sources)
    assert taken is not None and taken.height == 1 and declined is None
    refusals = []
    for module in (reader, claude_code_lines):
        with pytest.raises(InputError) as refused:
            list(module.parse(SourceFile(tmp_path / "b.jsonl", reader.NAME)))
        refusals.append((refused.value.line, refused.value.reason))
    assert refusals[0] == refusals[1] and refusals[0][0] == 2
