"""References: each format's tool calls mapped to (kind, normalized target), hashed at ingest, cached with the frame."""
from __future__ import annotations

import json
import posixpath
import re

import polars as pl
import pytest
from conftest import REALDATA, examples
from hypothesis import given, settings
from hypothesis import strategies as st

import panto_analytics as pa
from panto_analytics.frame import tool_targets
from panto_analytics.frame.schema import REFERENCE_SCHEMA
from panto_analytics.frame.tool_targets import key_of, normalize_path, references, shell_targets, targets
from panto_analytics.ingest.cache import Cache

CWD = "/repo"


@pytest.mark.parametrize(("name", "args", "expected"), [
    # Claude Code
    ("Read", {"file_path": "/repo/a.py", "offset": 10, "limit": 5}, [("read", "file:/repo/a.py")]),
    ("Edit", {"file_path": "/repo/a.py", "old_string": "x", "new_string": "y"}, [("write", "file:/repo/a.py")]),
    ("Write", {"file_path": "b/c.py", "content": "x"}, [("write", "file:/repo/b/c.py")]),
    ("MultiEdit", {"file_path": "/repo/a.py", "edits": []}, [("write", "file:/repo/a.py")]),
    ("NotebookEdit", {"notebook_path": "/repo/n.ipynb", "new_source": "x"}, [("write", "file:/repo/n.ipynb")]),
    ("Grep", {"pattern": "TODO", "path": "src", "glob": "*.py"}, [("read", "search:grep:TODO glob=*.py@/repo/src")]),
    ("Glob", {"pattern": "**/*.json"}, [("read", "dir:/repo")]),
    ("Glob", {"pattern": "*.ts", "path": "src"}, [("read", "dir:/repo/src")]),
    ("LS", {"path": "/repo/src/"}, [("read", "dir:/repo/src")]),
    ("Bash", {"command": "git status", "description": "x"}, [("run", "run:/repo$ git status")]),
    ("WebFetch", {"url": "https://x.org/a", "prompt": "p"}, [("fetch", "url:https://x.org/a")]),
    ("WebSearch", {"query": "polars  asof"}, [("fetch", "web:polars asof")]),
    ("TodoWrite", {"todos": []}, [("other", "tool:todowrite")]),
    ("Task", {"prompt": "go"}, [("other", "tool:task")]),
    # pi
    ("read", {"path": "docs/a.md"}, [("read", "file:/repo/docs/a.md")]),
    ("edit", {"path": "a.ts", "oldText": "x", "newText": "y"}, [("write", "file:/repo/a.ts")]),
    ("write", {"path": "t/a.ts", "content": "x"}, [("write", "file:/repo/t/a.ts")]),
    ("bash", {"command": "grep -n x src/a.ts | head -30"}, [("read", "file:/repo/src/a.ts")]),
    ("find", {"pattern": "*.ts", "path": "src"}, [("read", "dir:/repo/src")]),
    ("bash", {"command": "cat src/a.ts"}, [("read", "file:/repo/src/a.ts")]),
    # Codex
    ("shell_command", {"command": "Get-Content src\\a.md", "workdir": "D:\\web\\app"}, [("read", "file:D:/web/app/src/a.md")]),
    ("exec_command", {"cmd": "sed -n '1,20p' tmp/p.md", "workdir": "/w"}, [("read", "file:/w/tmp/p.md")]),
    ("shell", {"command": ["bash", "-lc", "nl -ba a.py"], "workdir": "/w"}, [("read", "file:/w/a.py")]),
    ("local_shell", {"type": "exec", "command": ["cat", "x y.txt"], "working_directory": "/w"},
     [("read", "file:/w/x y.txt")]),
    ("web_search", {"type": "search", "query": "x402"}, [("fetch", "web:x402")]),
    ("request_user_input", {"questions": []}, [("other", "tool:request_user_input")]),
])
def test_each_tool_maps_to_its_targets(name, args, expected):
    assert targets(name, json.dumps(args), CWD) == expected


def test_apply_patch_writes_every_file_it_names():
    patch = "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y\n*** Add File: b.py\n+z\n" \
            "*** Update File: c.py\n*** Move to: d.py\n*** Delete File: e.py\n*** End Patch\n"
    expected = [("write", f"file:/repo/{f}") for f in ("src/a.py", "b.py", "c.py", "d.py", "e.py")]
    assert targets("apply_patch", patch, CWD) == expected
    assert targets("exec_command", json.dumps({"cmd": f"apply_patch <<'EOF'\n{patch}EOF"}), CWD) == expected


def test_codex_code_mode_calls_are_mapped_as_the_tools_they_call():
    code = ('const r = await tools.exec_command({"cmd":"sed -n \'1,260p\' /u/SKILL.md","workdir":"/w"});\n'
            'const s = await tools.web__run({"open":[{"ref_id":"https://x.org/l"}]}); text(r);')
    assert targets("exec", code, CWD) == [("read", "file:/u/SKILL.md"), ("fetch", "url:https://x.org/l")]
    clicks = 'await tools.web__run({"click":[{"ref_id":"turn3view0","id":18}],"find":[{"ref_id":"turn7view0"}]});'
    assert targets("exec", clicks, CWD) == [("fetch", "url:turn3view0#18"), ("fetch", "url:turn7view0")]
    patch = 'const patch = `*** Begin Patch\n*** Add File: src/m.rs\n+x\n*** End Patch`;\nawait tools.apply_patch(patch);'
    assert targets("exec", patch, CWD) == [("write", "file:/repo/src/m.rs")]


@pytest.mark.parametrize(("command", "expected"), [
    ("cd pkg && cat a.ts b.ts", [("read", "file:/repo/pkg/a.ts"), ("read", "file:/repo/pkg/b.ts")]),
    ("head -n 40 a.py", [("read", "file:/repo/a.py")]),
    ("tail -5 /var/log/x", [("read", "file:/var/log/x")]),
    ("echo x | tee out.txt", [("write", "file:/repo/out.txt")]),
    ("sed -i 's/a/b/' a.py", [("write", "file:/repo/a.py")]),
    ("pytest -q 2>&1 > /dev/null", [("run", "run:/repo$ pytest -q 2>&1 > /dev/null")]),
    ("make && cat log.txt", [("read", "file:/repo/log.txt"), ("run", "run:/repo$ make && cat log.txt")]),
    ("echo 'unterminated", [("run", "run:/repo$ echo 'unterminated")]),
    ("cat > x.py <<'EOF'\nimport os; rm -rf /\nEOF\ncat x.py", [("write", "file:/repo/x.py"), ("read", "file:/repo/x.py")]),
])
def test_shell_commands_read_write_or_run(command, expected):
    assert shell_targets(command, CWD) == expected


def test_paths_are_absolute_and_normalized():
    assert normalize_path("a/./b/../c//d/", "/r") == "/r/a/c/d"
    assert normalize_path("/x/y", "/r") == "/x/y"
    assert normalize_path("~/x", "/r") == "~/x"
    assert normalize_path("a", None) == "a"
    assert normalize_path("C:\\u\\x.md", None) == "C:/u/x.md"


def test_one_target_two_spellings_one_key():
    read = targets("Read", json.dumps({"file_path": "/repo/src/a.py"}), CWD)
    cat = targets("bash", json.dumps({"command": "cat ./src/../src/a.py"}), CWD)
    assert [key_of(t) for _, t in read] == [key_of(t) for _, t in cat]


def canonical_session(tmp_path, name="s", cwd_calls=()):
    """A canonical session: a read of a.py (result of 3 words), an edit of it, a search, a todo list."""
    def use(i, tool, args):
        return {"type": "tool_use", "id": f"c{i}", "name": tool, "input": json.dumps(args)}

    def result(i, text):
        return {"type": "tool_result", "tool_use_id": f"c{i}", "parts": [{"type": "text", "text": text}]}

    lines = [
        {"type": "session", "id": name},
        {"type": "message", "role": "user", "content": [{"type": "text", "text": "go"}]},
        {"type": "message", "role": "assistant", "content": [use(1, "Read", {"file_path": "/r/a.py"}),
                                                             use(2, "Grep", {"pattern": "x", "path": "/r"})]},
        {"type": "message", "role": "user", "content": [result(1, "one two three"), result(2, "x")]},
        {"type": "message", "role": "assistant", "content": [use(3, "Edit", {"file_path": "/r/a.py"})]},
        {"type": "message", "role": "user", "content": [result(3, "ok")]},
        {"type": "message", "role": "assistant", "content": [use(4, "TodoWrite", {"todos": []})]},
    ]
    path = tmp_path / f"{name}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_ingest_fills_the_references_table(tmp_path):
    path = canonical_session(tmp_path)
    refs = references(pa.read_sessions([path])).collect()
    assert refs.schema == pl.Schema(REFERENCE_SCHEMA)
    assert refs.select("seq", "call", "kind", "file", "tokens").rows() == [
        (1, 0, "read", True, 4), (1, 1, "read", False, 2), (3, 2, "write", True, 2), (5, 3, "other", False, None)]
    assert refs["key"][0] == refs["key"][2] == key_of("file:/r/a.py")


def test_the_fast_path_and_the_line_by_line_reader_give_the_same_references(tmp_path):
    from panto_analytics.formats import canonical
    from panto_analytics.formats.canonical.fast import read_frames
    from panto_analytics.formats.contract import SourceFile
    from panto_analytics.formats.frame_builder import FrameBuilder

    paths = [canonical_session(tmp_path, f"s{i}") for i in range(3)]
    fast = read_frames([SourceFile(p, "canonical") for p in paths])
    for path, frame in zip(paths, fast):
        builder = FrameBuilder()
        src = SourceFile(path, "canonical")
        builder.add_session(src, canonical.parse(src))
        assert frame is not None
        assert frame["refs"].to_list() == builder.finish()["refs"].to_list()


def test_references_are_cached_with_the_frame(tmp_path):
    path = canonical_session(tmp_path)
    cache = Cache(tmp_path / "cache")
    cold = pa.read_sessions([path], cache=cache)
    warm = pa.read_sessions([path], cache=cache)
    assert cache.stats.hits >= 1
    assert warm["refs"].to_list() == cold["refs"].to_list()
    assert references(warm).collect().height == 4


@pytest.mark.skipif(not REALDATA.exists(), reason="../shared/realdata absent")
def test_real_recordings_have_references_on_every_tool_call():
    frame = pa.read_sessions([REALDATA / "claude-code", REALDATA / "pi", REALDATA / "codex" / "x402"])
    refs = references(frame).collect()
    calls = refs.select("session_id", "call").unique().height
    assert calls > 500
    # every tool call is in the table, and most have a result tied to them
    assert refs["tokens"].is_not_null().mean() > 0.9  # type: ignore[operator]
    assert set(refs["kind"].unique().to_list()) == {"read", "write", "run", "fetch", "other"}


@settings(max_examples=examples(200))
@given(st.lists(st.sampled_from(["a", "b", ".", "..", "", "c d"]), min_size=1, max_size=6),
       st.sampled_from(["/r", "/r/s/", "/"]))
def test_a_path_is_one_target_however_it_is_spelled(parts, cwd):
    relative = "/".join(parts)
    once = normalize_path(relative, cwd)
    assert normalize_path(once, cwd) == once                      # normalizing twice changes nothing
    assert normalize_path(posixpath.join(cwd, relative), None) == once   # relative to cwd = absolute
    assert once.startswith("/") and "//" not in once and (once == "/" or not once.endswith("/"))


def test_collapsing_whitespace_by_str_split_is_the_regular_expression_s():
    # Every code point: ``\s`` (str patterns) and str.isspace (str.split, str.strip) are one class, so
    # " ".join(t.split()) is re.sub(r"\s+", " ", t.strip()) for every text.
    space = re.compile(r"\s")
    assert [c for c in map(chr, range(0x110000)) if space.fullmatch(c)] == [c for c in map(chr, range(0x110000))
                                                                             if c.isspace()]
    text = " a\t\x1c b\u3000\u2003c\x85\n "
    assert tool_targets._collapsed(text) == re.sub(r"\s+", " ", text.strip()) == "a b c"
