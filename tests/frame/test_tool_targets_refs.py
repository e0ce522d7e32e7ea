"""``refs_column`` against a plain statement of it: each message's tool calls, one at a time, in block order."""
from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from panto_analytics.formats.blocks import BLOCK
from panto_analytics.frame.schema import REF_STRUCT
from panto_analytics.frame.tool_targets import key_of, refs_column, targets
from panto_analytics.frame.words import MEDIA_PART_WORDS, count_words

#: The agents' own file tools, written out (what ``is_file_tool`` says yes to).
FILE_TOOLS = {"read", "read_file", "view", "view_file", "open_file", "cat", "edit", "write", "multiedit", "notebookedit",
              "write_file", "edit_file", "create_file", "str_replace_editor", "str_replace_based_edit_tool", "replace",
              "insert"}

_NAMES = ["read", "Read", "bash", "Edit", "Grep", "TodoWrite", "apply_patch", "shell", "", None]
_INPUTS = [json.dumps({"path": "a.py"}), json.dumps({"file_path": "../b.py"}), json.dumps({"command": "cat a && ls"}),
           json.dumps({"command": ["bash", "-lc", "sed -n 1,5p x"], "workdir": "sub"}), json.dumps({"todos": []}),
           "*** Begin Patch\n*** Add File: n.py\n+x\n*** End Patch\n", "{not json", "", None]
_IDS = ["c1", "c2", "c3", "", None]
_CWDS = ["/r", "/r/s", "D:\\w", None]


@st.composite
def _blocks(draw, names: list[str | None], inputs: list[str | None]) -> dict:
    kind = draw(st.sampled_from(["tool_use", "tool_use", "tool_result", "tool_result", "text"]))
    block = dict.fromkeys(("type", "text", "id", "name", "input", "tool_use_id", "parts"))
    block["type"] = kind
    if kind == "tool_use":
        block.update(id=draw(st.sampled_from(_IDS)), name=draw(st.sampled_from(names)), input=draw(st.sampled_from(inputs)))
    elif kind == "tool_result":
        parts = draw(st.lists(st.one_of(st.builds(lambda t: {"type": "text", "text": t, "media_type": None},
                                                  st.sampled_from(["", "a b", "one two three", " x "])),
                                        st.just({"type": "media", "text": None, "media_type": "image/png"})), max_size=3))
        block.update(tool_use_id=draw(st.sampled_from(_IDS)), parts=parts)
    else:
        block["text"] = "a b"
    return block


def _plain_refs(blocks: list[dict], owner: list[int], n: int, scope: list[int], cwds: list[str | None],
                result_words: list[int] | None) -> list[list[dict] | None]:
    """Each message's refs: its calls in block order, numbered from 0, each with the tokens of the first result of
    the ``n`` messages with its id in its scope (``ceil(words * 1.3)``)."""
    answered: dict[tuple[int, str], int] = {}
    results = iter(result_words or [])
    for block, o in zip(blocks, owner):
        if o < n and block["type"] == "tool_result":
            words = next(results) if result_words is not None else sum(
                MEDIA_PART_WORDS if p["type"] == "media" else count_words(p["text"] or "") for p in block["parts"])
            if block["tool_use_id"] is not None:
                answered.setdefault((scope[o], block["tool_use_id"]), words)
    out: list[list[dict] | None] = [None] * n
    calls: dict[int, int] = {}
    for block, o in zip(blocks, owner):
        if o >= n or block["type"] != "tool_use":
            continue
        call = calls.get(o, 0)
        calls[o] = call + 1
        words = answered.get((scope[o], block["id"])) if block["id"] is not None else None
        tokens = None if words is None else math.ceil(words * 1.3)
        for kind, target in targets(block["name"] or "", block["input"], cwds[scope[o]]):
            out[o] = (out[o] or []) + [{"call": call, "key": key_of(target), "kind": kind,
                                        "file": target.startswith("file:"),
                                        "file_tool": (block["name"] or "").lower() in FILE_TOOLS, "tokens": tokens}]
    return out


@settings(max_examples=examples(300), deadline=None)
@given(st.data())
def test_refs_column_equals_its_plain_statement(data):
    n = data.draw(st.integers(0, 6))
    # A few names and inputs each time, so that one call is often made again, in another message or directory.
    names = data.draw(st.lists(st.sampled_from(_NAMES), min_size=1, max_size=3))
    inputs = data.draw(st.lists(st.sampled_from(_INPUTS), min_size=1, max_size=3))
    blocks = data.draw(st.lists(_blocks(names, inputs), max_size=14))
    # Owners in any order; n or more: a block of no message (dropped).
    owner = data.draw(st.lists(st.integers(0, n + 1), min_size=len(blocks), max_size=len(blocks)))
    cwds = data.draw(st.lists(st.sampled_from(_CWDS), min_size=1, max_size=3))
    scope = data.draw(st.lists(st.integers(0, len(cwds) - 1), min_size=n + 2, max_size=n + 2))
    counted = data.draw(st.booleans())
    result_words = [data.draw(st.integers(0, 10**6)) for b, o in zip(blocks, owner)
                    if o < n and b["type"] == "tool_result"] if counted else None
    column = refs_column(pa.array(blocks, type=BLOCK), np.array(owner, dtype=np.int64), n, np.array(scope),
                         cwds, None if result_words is None else np.array(result_words, dtype=np.int64))
    assert column.dtype == pl.List(REF_STRUCT) and column.name == "refs" and len(column) == n
    assert column.to_list() == _plain_refs(blocks, owner, n, scope, cwds, result_words)


def test_one_call_in_two_directories_is_two_targets():
    # Resolved once per distinct (name, input, directory): the same call in another session's directory is not the same.
    call = dict.fromkeys(("type", "text", "id", "name", "input", "tool_use_id", "parts"))
    call.update(type="tool_use", id="c1", name="read", input=json.dumps({"path": "a.py"}))
    result = dict.fromkeys(("type", "text", "id", "name", "input", "tool_use_id", "parts"))
    result.update(type="tool_result", tool_use_id="c1", parts=[{"type": "text", "text": "x y", "media_type": None}])
    blocks = [call, call, result, call]
    owner, scope, cwds = [0, 1, 2, 3], [0, 1, 1, 0], ["/r", "/s"]
    column = refs_column(pa.array(blocks, type=BLOCK), np.array(owner), 4, np.array(scope), cwds)
    assert column.to_list() == _plain_refs(blocks, owner, 4, scope, cwds, None)
    assert [refs[0]["key"] for refs in column.to_list() if refs] == [key_of("file:/r/a.py"), key_of("file:/s/a.py"),
                                                                     key_of("file:/r/a.py")]
    assert [refs[0]["tokens"] for refs in column.to_list() if refs] == [None, 3, None]


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint32])
def test_a_narrow_scope_does_not_wrap_into_another_scopes_answer(dtype):
    # Two scopes and 65,536 distinct ids: scope x ids codes pass 2**32, which 32-bit arithmetic would wrap,
    # answering a call with the result of the same id in the other scope (review of f027e04).
    results = [{"type": "tool_result", "tool_use_id": "Z", "parts": [{"type": "text", "text": "x y z"}]}]
    results += [{"type": "tool_result", "tool_use_id": f"f{i}", "parts": []} for i in range(65534)]
    calls = [{"type": "tool_use", "id": i, "name": "read", "input": '{"path": "a.py"}'} for i in ("Z", "A")]
    blocks = pa.array(results + calls, type=BLOCK)
    owner = np.array([0] * len(results) + [1, 1])
    refs = refs_column(blocks, owner, 2, np.array([1, 65536], dtype=dtype), ["/r"] * 65537)
    assert [ref["tokens"] for ref in refs[1]] == [None, None]
