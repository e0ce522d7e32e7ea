"""The Codex line reader (``formats/codex/reader.py``) against its oracle, the line-by-line reader
``reference/codex_lines.py``: the same messages, session metadata, skips, ignores and errors on every fixture,
every real recording present, hand-made lines at the edges of the fast path's declared shapes (its own test,
``test_codex_fast.py``, reads them too) and hypothesis-mutated files.

Each file is read twice: with the package's chunk size, and with chunks of a few lines
(:data:`.jsonl.CHUNK` lowered)."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES
from differential import gzipped, outcome, recording_id, recordings
from mutations import mutation_test

from panto_analytics.formats import codex, jsonl
from reference import codex_lines

FIXTURE_FILES, REAL_FILES = recordings("codex", "codex")

#: Chunk sizes read with: the package's, and a few hundred bytes (a chunk of one to three lines).
CHUNKS = (jsonl.CHUNK, 300)


def _agree(path: Path) -> None:
    for skip_invalid in (False, True):
        want = outcome(codex_lines, path, "codex", skip_invalid)
        for chunk in CHUNKS:
            saved, jsonl.CHUNK = jsonl.CHUNK, chunk
            try:
                got = outcome(codex, path, "codex", skip_invalid)
            finally:
                jsonl.CHUNK = saved
            assert got == want, (path, skip_invalid, chunk)


@pytest.mark.parametrize("path", FIXTURE_FILES + REAL_FILES, ids=recording_id)
def test_a_recording(path):
    """Every bundled file and every real recording present."""
    _agree(path)


@pytest.mark.parametrize("cut", [None, 40, 400])
def test_compressed(tmp_path, cut):
    """A ``.gz`` rollout, whole or cut short (read up to its last whole line, the damage counted or raised)."""
    _agree(gzipped(FIXTURES / "codex" / "calls.jsonl", tmp_path, cut))


CALLS = (FIXTURES / "codex" / "calls.jsonl").read_bytes().splitlines()


def _envelope(kind: str, payload: str) -> bytes:
    return b'{"timestamp":"2026-01-02T10:00:01.500Z","type":"' + kind.encode() + b'","payload":' + payload.encode() + b"}"


def _item(body: str) -> bytes:
    return _envelope("response_item", "{" + body + "}")


_IMAGE = '"type":"custom_tool_call_output","call_id":"call_2","output":[{"type":"input_image","image_url":%s}]'

#: Lines at the edges of what the typed rules read themselves: each replaces one line of ``calls.jsonl``.
EDGES = {
    # image URLs: only their media type is read, from the raw bytes
    **{f"image {i}": _item(_IMAGE % url) for i, url in enumerate([
        '"data:image/png;base64,iVBO"', '"data:image\\/png;base64,x"', '"\\u0064ata:image/png;x"', '"data:"',
        '"data:,x"', '"data:image/png"', '"data:' + "x" * 300 + ';y"', "null", "5", '{"url":"x"}',
        '"data:imag\u00e9/png;x"', '"https://x/y.png"', '"dat\\u0061:image/gif,x"', '"data:image/jpeg,x\\"y"'])},
    # content parts
    "refusal": _item('"type":"message","role":"assistant","content":[{"type":"refusal","refusal":"no"}]'),
    "refusal without it": _item('"type":"message","role":"assistant","content":[{"type":"refusal","text":"no"}]'),
    "text null": _item('"type":"message","role":"user","content":[{"type":"input_text","text":null}]'),
    "text missing": _item('"type":"message","role":"user","content":[{"type":"input_text"}]'),
    "part without type": _item('"type":"message","role":"user","content":[{"text":"x"},{"type":7}]'),
    "image in user message": _item('"type":"message","role":"user","content":[{"type":"input_image","image_url":"x"}]'),
    "bad role": _item('"type":"message","role":"tool","content":[{"type":"input_image"},{"type":"input_text","text":"x"}]'),
    "role missing": _item('"type":"message","content":[]'),
    "content null": _item('"type":"message","role":"user","content":null'),
    "content missing": _item('"type":"message","role":"user"'),
    "content a string": _item('"type":"message","role":"user","content":"hi"'),
    # reasoning
    "summary missing": _item('"type":"reasoning","content":[{"type":"reasoning_text","text":"t"}]'),
    "summary null": _item('"type":"reasoning","summary":null'),
    "summary a string": _item('"type":"reasoning","summary":"auto"'),
    "reasoning image": _item('"type":"reasoning","summary":[{"type":"input_image"},{"type":"x"}],"content":[{"type":"output_image"}]'),
    "agent message image": _item('"type":"agent_message","content":[{"type":"input_image"},{"type":"text","text":"t"}]'),
    "message image, role empty": _item('"type":"message","role":"","content":[{"type":"input_image"}]'),
    "reasoning content empty": _item('"type":"reasoning","summary":[],"content":[]'),
    # tool calls and outputs
    "arguments an object": _item('"type":"function_call","name":"f","arguments":{"a":1.50},"call_id":"c"'),
    "arguments missing": _item('"type":"function_call","name":"f","call_id":"c"'),
    "arguments escaped": _item('"type":"function_call","name":"f","arguments":"{\\"a\\":\\"\\u00e9\\\\/\\"}","call_id":"c"'),
    "name missing": _item('"type":"custom_tool_call","call_id":"c","input":"x"'),
    "call id null": _item('"type":"custom_tool_call","call_id":null,"name":"n","input":"x"'),
    "tool search": _item('"type":"tool_search_call","call_id":"c","arguments":{"q":1e2,"r":[1.50]}'),
    "web search": _item('"type":"web_search_call","id":"w","action":{"query":"x y"}'),
    "local shell": _item('"type":"local_shell_call","call_id":"c","action":{"command":["ls"]}'),
    "old output": _item('"type":"function_call_output","call_id":"call_1","output":{"content":"1 failed","success":false}'),
    "old output, parts": _item('"type":"function_call_output","call_id":"call_1","output":{"content":[{"type":"input_text","text":"x"}]}'),
    "old output, nested": _item('"type":"function_call_output","call_id":"call_1","output":{"content":{"content":"x"}}'),
    "old output, no content": _item('"type":"function_call_output","call_id":"call_1","output":{"success":true}'),
    "output null": _item('"type":"function_call_output","call_id":"call_1","output":null'),
    "output missing": _item('"type":"function_call_output","call_id":"call_1"'),
    "output a number": _item('"type":"function_call_output","call_id":"call_1","output":5'),
    "agent message": _item('"type":"agent_message","content":[{"type":"text","text":"hi"}]'),
    "agent message, no content": _item('"type":"agent_message"'),
    "agent message, null content": _item('"type":"agent_message","content":null'),
    "summary item": _item('"type":"compaction_summary","encrypted_content":"x"'),
    "item without type": _item('"role":"user"'),
    "unknown item": _item('"type":"ghost_snapshot"'),
    # envelopes
    "payload null": _envelope("response_item", "null"),
    "payload missing": b'{"timestamp":"t","type":"event_msg"}',
    "payload a list": _envelope("turn_context", "[]"),
    "event without type": _envelope("event_msg", '{"x":1}'),
    "unknown envelope": b'{"type":"world_state","full":true}',
    "unknown envelope with a payload": _envelope("world_state", '{"type":"token_count","info":null}'),
    "compaction without a payload": b'{"timestamp":"t","type":"compacted"}',
    "type null": b'{"type":null,"id":"x","timestamp":"t"}',
    "legacy item": b'{"type":"message","role":"user","content":[{"type":"input_text","text":"old"}]}',
    "turn context model null": _envelope("turn_context", '{"model":null,"summary":"auto"}'),
    "turn context model a number": _envelope("turn_context", '{"model":5}'),
    **{f"timestamp {t}": b'{"timestamp":' + t.encode() + b',"type":"response_item","payload":{"type":"message",'
       b'"role":"user","content":[{"type":"input_text","text":"x"}]}}'
       for t in ("1767348001500", "1e30", "true", '"not a date"', "[1]", "18446744073709551616")},
    # events and counts
    **{f"context window {w}": _envelope("event_msg", '{"type":"task_started","model_context_window":' + w + "}")
       for w in ("9223372036854775807", "9223372036854775808", "18446744073709551615", "18446744073709551616",
                 "-1", "true", "1.5", "null")},
    "count info a list": _envelope("event_msg", '{"type":"token_count","info":[]}'),
    "count without last": _envelope("event_msg", '{"type":"token_count","info":{"total_token_usage":'
                                    '{"input_tokens":5000,"output_tokens":9,"cached_input_tokens":1}}}'),
    "a number beyond a double in an unread field": _item('"type":"message","big":[1e400],"role":"user",'
                                                         '"content":[{"type":"input_text","text":"x"}]'),
    "an integer beyond a double in an unread field": _envelope("event_msg", '{"type":"token_count","n":' + "9" * 310
                                                               + ',"info":null}'),
    "count beyond a double": _envelope("event_msg", '{"type":"token_count","info":{"total_token_usage":'
                                       '{"input_tokens":1e400}}}'),
    **{f"count {name}": _envelope("event_msg", '{"type":"token_count","info":{"total_token_usage":' + parts[0]
                                  + ',"last_token_usage":' + parts[1] + ',"model_context_window":' + parts[2] + "}}")
       for name, parts in {
           "repeated": ('{"input_tokens":1000,"cached_input_tokens":600,"output_tokens":50,"reasoning_output_tokens":20,'
                        '"total_tokens":1050}', '{"input_tokens":1,"output_tokens":1}', "5"),
           "cached above input": ('{"input_tokens":9}', '{"input_tokens":1,"cached_input_tokens":2,"output_tokens":1}',
                                  "5"),
           "last null": ('{"input_tokens":9,"output_tokens":1}', "null", "5"),
           "input null": ("null", '{"input_tokens":null,"cached_input_tokens":null,"output_tokens":null}', "null"),
           "output missing": ("7", '{"input_tokens":3}', "5"),
           "counter a string": ("7", '{"input_tokens":"3","output_tokens":1}', "5"),
           "counter above u32": ("7", '{"input_tokens":4294967296,"output_tokens":1}', "5"),
           "counter negative": ("7", '{"input_tokens":-1,"output_tokens":1}', "5"),
           "window huge": ("7", '{"input_tokens":3,"output_tokens":1}', "99999999999999999999"),
           "total a list": ("[1]", '{"input_tokens":3,"output_tokens":1}', "true"),
       }.items()},
    "count huge": _envelope("event_msg", '{"type":"token_count","info":{"last_token_usage":'
                            '{"input_tokens":99999999999999999999999,"output_tokens":1}}}'),
    "duplicate keys": _item('"type":"message","type":"reasoning","summary":[]'),
    "spaces": b'{ "timestamp" : "2026-01-02T10:00:01.500Z" , "type" : "event_msg" , "payload" : { "type" : "x" } } ',
    "not utf-8": _item('"type":"ghost_snapshot","x":"?"').replace(b"?", b"\xff"),
    "not utf-8 in a text": _item('"type":"message","role":"user","content":[{"type":"input_text","text":"?"}]')
    .replace(b"?", b"\xe9"),
    "lone surrogate": _item('"type":"ghost_snapshot","x":"\\ud800"'),
    "blank": b"",
    "crlf": _item('"type":"ghost_snapshot"') + b"\r",
    "two values": _item('"type":"ghost_snapshot"') + b" " + _item('"type":"ghost_snapshot"'),
    "an array": b"[1]",
}


@pytest.mark.parametrize("at", [6, 14])
@pytest.mark.parametrize("name", sorted(EDGES))
def test_edge(tmp_path, name, at):
    line = EDGES[name]
    lines = [*CALLS[:at], line, *CALLS[at + 1:]]
    for ending in (b"\n", b""):  # the line last but one, or the file's last line without a line break
        f = tmp_path / "edge.jsonl"
        f.write_bytes(b"\n".join(lines) + ending)
        _agree(f)
        f.write_bytes(b"\n".join(CALLS[:at] + [line]))
        _agree(f)


SOURCES = FIXTURE_FILES + [p for p in REAL_FILES if p.stat().st_size < 1 << 20][:2]


test_mutated_file = mutation_test(SOURCES, _agree)
