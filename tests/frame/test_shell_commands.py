"""Shell commands read as a shell reads them (issue 28): the probes the issue lists, any command built from
readers, writers, operands and quoting against a literal model of it, every shell command of the real recordings
parsed, and a hand-checked sample of them with their targets written out (``data/shell_targets_sample.txt``)."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from functools import cache
from pathlib import Path

import pytest
from conftest import REALDATA, examples
from hypothesis import given, settings
from hypothesis import strategies as st

from panto_analytics.formats import adapter, detect_format
from panto_analytics.formats.contract import SourceFile
from panto_analytics.frame.shell_commands import command_targets, parse_errors
from panto_analytics.frame.tool_targets import key_of, normalize_path, targets

CWD = "/r"


def run(command: str, cwd: str = CWD) -> tuple[str, str]:
    return ("run", f"run:{cwd}$ " + " ".join(command.split()))


def f(path: str, kind: str = "read") -> tuple[str, str]:
    return (kind, "file:" + normalize_path(path, CWD))


# -- the probes of the issue, and the shell's own rules ----------------------------------------------------------

PROBES = [
    ("cat 'a;b'", [f("a;b")]),
    ('cat "a|b"', [f("a|b")]),
    ("sed -n '$p' a", [f("a")]),
    ("awk '{print $1}' a", [f("a")]),
    ("sed -i 's|x|y|g' f", [f("f", "write")]),
    ('python -c "a; b" > out', [f("out", "write"), run('python -c "a; b" > out')]),
    ("wc -l a", [f("a")]),
    ("wc -l a b", [f("a"), f("b")]),
    ("wc -c a", [f("a")]),
    ("cat -n a", [f("a")]),
    ("cat -A a", [f("a")]),
    ("tail -f a", [f("a")]),
    ("cat a &", [f("a")]),
    ("cat $(echo a)", [run("cat $(echo a)")]),
    ("cat a # x", [f("a")]),
    ("stat -f '%z' a", [f("a")]),
    ("jq '.x | .y' a.json", [f("a.json")]),
    ("wc -l < FILE", [f("FILE")]),
    ("< FILE wc -l", [f("FILE")]),
    ("sed -i '' 's/main-new/main/g' f", [f("f", "write")]),
    # more of what a shell does
    ("cd pkg && head -n 5 a.ts b.ts | tail -2", [f("pkg/a.ts"), f("pkg/b.ts")]),
    ("(cd sub && cat a) && cat b", [f("sub/a"), f("b")]),
    ("cat > x.py <<'EOF'\nimport os; rm -rf /\nEOF\ncat x.py", [f("x.py", "write"), f("x.py")]),
    ("cat <<< 'a; b' | wc -l", [run("cat <<< 'a; b' | wc -l")]),
    ("cat a 2>/dev/null >> log && cat b 2>&1", [f("a"), f("log", "write"), f("b")]),
    ("diff <(sort a) b", [f("a"), f("b")]),
    ("cat x\\ y \"q r\" 's t'", [f("x y"), f("q r"), f("s t")]),
    ("FOO=1 sudo cat /etc/x", [("read", "file:/etc/x")]),
    ("$EDITOR a", [run("$EDITOR a")]),
    ("eval 'cat a'", [run("eval 'cat a'")]),
    ("cat src/*.py", [run("cat src/*.py")]),
    ("head -20 a; tail -n +3 b", [f("a"), f("b")]),
    ("grep -n TODO a.py b.py | head", [f("a.py"), f("b.py")]),
    ("grep -rn 'TO DO' src --include='*.py'", [("read", "search:grep:TO DO@/r/src")]),
    ("rg -n 'a|b' src lib", [("read", "search:rg:a|b@/r/src"), ("read", "search:rg:a|b@/r/lib")]),
    ("rg --files src", [("read", "dir:/r/src")]),
    ("ls -la src && tree -L 2 lib && find . -name '*.md'", [("read", "dir:/r/src"), ("read", "dir:/r/lib"),
                                                             ("read", "dir:/r")]),
    ("find . -name x -delete", [("read", "dir:/r"), run("find . -name x -delete")]),
    ("cp a b/c && mv d e && rm -f g && touch h && mkdir -p i/j",
     [f("b/c", "write"), f("d", "write"), f("e", "write"), f("g", "write"), f("h", "write"),
      ("write", "dir:/r/i/j")]),
    ("echo x | tee -a log other", [f("log", "write"), f("other", "write")]),
    ("jq -r --arg k v '.[$k]' f.json", [f("f.json")]),
    ("sed -e 's/a/b/' -e 's/c/d/' f g", [f("f"), f("g")]),
    ("sed -Ei.bak 's/a/b/' f", [f("f", "write")]),
    ("test -f a && cat a || [ -d b ]", [f("a")]),
    ("echo hi", [run("echo hi")]),
    ("cat 'a", [run("cat 'a")]),
    ("pytest -q  tests  2>&1 | tail -5", [run("pytest -q tests 2>&1 | tail -5")]),
]


@pytest.mark.parametrize(("command", "expected"), PROBES, ids=[p[0][:40] for p in PROBES])
def test_the_probes_are_read_as_a_shell_reads_them(command, expected):
    assert command_targets(command, CWD) == expected


def test_powershell_under_a_windows_folder():
    assert command_targets("Get-Content -Path src\\a.md -TotalCount 5", "D:\\w") == [("read", "file:D:/w/src/a.md")]
    assert command_targets("Set-Content -Path a.txt -Value 'x'", "D:\\w") == [("write", "file:D:/w/a.txt")]
    assert command_targets("Get-ChildItem -Force | Select-Object Name", "D:\\w") == [("read", "dir:D:/w")]
    assert command_targets("type a.txt", "D:\\w") == [("read", "file:D:/w/a.txt")]
    assert command_targets("type python", "/r") == [run("type python")]          # bash's type names a command
    script = ("$latest = Get-ChildItem -Recurse C:\\s -Filter *.jsonl | Select-Object -First 1; if ($latest) { "
              "Copy-Item $latest.FullName -Destination out.jsonl > $null } else { Write-Output 'none' }")
    assert command_targets(script, "D:\\w") == [("read", "dir:C:/s"), ("write", "file:D:/w/out.jsonl"), run(script, "D:\\w")]
    assert command_targets("if (Test-Path a.md) { Get-Content a.md | Select-String -Pattern x }", "D:\\w") == [
        ("read", "file:D:/w/a.md")]


# -- any command against a literal model --------------------------------------------------------------------------

#: The model's programs: what they do, their flags, their options with a value (and values to draw), whether a
#: script or a pattern comes first (and scripts to draw).
SCRIPTS = ["'s|x|y|g'", "'$p'", "'1,80p'", "'{print $1}'", "'.a | .b'", '"x;y"', "'a&&b'", "'#c'"]
DIGITS = ["5", "20", "+3"]
MODEL = {
    "cat": ("read", ["-n", "-A", "-v"], {}, False),
    "head": ("read", ["-q"], {"-n": DIGITS[:2], "-c": DIGITS[:2]}, False),
    "tail": ("read", ["-f", "-q"], {"-n": DIGITS}, False),
    "wc": ("read", ["-l", "-c", "-w"], {}, False),
    "nl": ("read", [], {"-b": ["a", "t"], "-w": DIGITS[:2]}, False),
    "less": ("read", ["-N", "-R"], {}, False),
    "sed": ("read", ["-n", "-E"], {}, True),
    "awk": ("read", [], {"-F": ["','", "':'"], "-v": ["n=1"]}, True),
    "grep": ("read", ["-n", "-i", "-l"], {"-A": DIGITS[:2], "-m": DIGITS[:2]}, True),
    "jq": ("read", ["-r", "-c"], {"--indent": DIGITS[:2]}, True),
    "diff": ("read", ["-u", "-q"], {}, False),
    "tee": ("write", ["-a"], {}, False),
    "rm": ("write", ["-f", "-r"], {}, False),
    "touch": ("write", ["-c"], {}, False),
    "sed -i": ("write", ["-E"], {}, True),
    "sed -i ''": ("write", [], {}, True),
    "mkdir": ("make", ["-p"], {}, False),
    "ls": ("list", ["-l", "-a"], {}, False),
}
NAME_CHARS = "ab.z_/ ;|&$#()*\"'<>!{},~-"


def quoted(name: str, how: int) -> str:
    """``name`` written so that a shell reads it back as is: bare, in single quotes, in double quotes, or each
    character that is not a letter escaped."""
    if how == 0 and re.fullmatch(r"[A-Za-z0-9._/][A-Za-z0-9._/-]*", name):
        return name
    if how <= 1 and "'" not in name:
        return f"'{name}'"
    if how == 2:
        return '"' + re.sub(r'([$`"\\])', r"\\\1", name) + '"'
    return "".join(c if c.isalnum() or c in "._/" else "\\" + c for c in name)


names = st.text(st.sampled_from(NAME_CHARS), min_size=1, max_size=8).filter(
    lambda n: n.strip() not in ("", ".", "..") and not n.startswith(("-", "~")) and "//" not in n
    and not n.strip().startswith("-"))


@st.composite
def segments(draw):
    """One simple command: (text, targets, runs something else)."""
    if draw(st.integers(0, 5)) == 0:
        command = draw(st.sampled_from(["pytest -q", "git status", "make", "npm run build", "python x.py"]))
        return command, [], True
    program = draw(st.sampled_from(sorted(MODEL)))
    does, flags, valued, script = MODEL[program]
    words = [program]
    for flag in draw(st.lists(st.sampled_from(flags), max_size=2)) if flags else []:
        words.append(flag)
    for option in draw(st.lists(st.sampled_from(sorted(valued)), max_size=2)) if valued else []:
        words += [option, draw(st.sampled_from(valued[option]))]
    if script:
        words.append(draw(st.sampled_from(SCRIPTS)))
    operands = draw(st.lists(st.tuples(names, st.integers(0, 3)), min_size=1, max_size=3))
    words += [quoted(name, how) for name, how in operands]
    kind, prefix = {"read": ("read", "file:"), "write": ("write", "file:"), "make": ("write", "dir:"),
                    "list": ("read", "dir:")}[does]
    return " ".join(words), [(kind, prefix + name) for name, _ in operands], False


@st.composite
def commands(draw):
    """A command of segments joined as a shell joins them, with redirections, a comment, a ``cd`` first: its text
    and what the literal model says it touches."""
    text, found, other = "", [], False
    folder = None
    if draw(st.booleans()):
        folder = draw(names.filter(lambda n: n.strip() == n))
        text = f"cd {quoted(folder, draw(st.integers(0, 3)))} && "
    for k in range(draw(st.integers(1, 4))):
        segment, touched, runs = draw(segments())
        other |= runs
        found += touched
        redirect = draw(st.sampled_from(["", ">", ">>", "2>", "<", "&>"]))
        if redirect:
            target = draw(names)
            segment += f" {redirect} {quoted(target, draw(st.integers(0, 3)))}"
            found.append(("read" if redirect == "<" else "write", "file:" + target))
        if draw(st.booleans()):
            segment += draw(st.sampled_from([" 2>&1", " 2>/dev/null", " >/dev/null"]))
        if k:
            text += draw(st.sampled_from([" && ", " || ", "; ", "\n", " | ", " & "]))
        text += segment
    if draw(st.booleans()):
        text += draw(st.sampled_from([" &", " # a; b | c > d", "\n# done"]))
    return text, folder, found, other


def literal_model(folder, found, other, text, cwd):
    """The targets the model's command touches: each name joined to the folder ``cd`` moved to, in order, without
    repeats; a run of the whole command when a segment runs something else or nothing is touched."""
    base = normalize_path(folder, cwd) if folder is not None else cwd
    out = []
    for kind, target in found:
        prefix, name = target.split(":", 1)
        pair = (kind, f"{prefix}:{normalize_path(name, base)}")
        if pair not in out:
            out.append(pair)
    return out + [run(text, cwd)] if other or not out else out


@settings(max_examples=examples(400), deadline=None)
@given(commands())
def test_any_command_gives_the_targets_of_the_literal_model(command):
    text, folder, found, other = command
    assert not parse_errors(text), text
    assert command_targets(text, CWD) == literal_model(folder, found, other, text, CWD), text


# -- the real recordings ----------------------------------------------------------------------------------------

SHELL_TOOLS = {"bash", "shell", "shell_command", "exec_command", "local_shell"}


@cache
def real_calls() -> dict[tuple[str, str], tuple[str, str, str | None]]:
    """Every tool call of ``../shared/realdata`` that runs a shell command: (file, call id) -> (name, input, its
    working directory), read with the package's adapters (the files that are not JSONL left out)."""
    calls = {}
    for path in sorted(REALDATA.rglob("*.jsonl")):
        try:
            fmt = detect_format(path)
        except Exception:   # noqa: BLE001 - the pretty-printed Codex files: not recordings of shell commands here
            continue
        src = SourceFile(path, fmt, skip_invalid=True)
        messages = list(adapter(fmt).parse(src))
        for msg in messages:
            for block in msg.content:
                name = (block.get("name") or "").lower()
                shell = name in SHELL_TOOLS or (name == "exec" and "tools.exec_command(" in (block.get("input") or ""))
                if block["type"] == "tool_use" and shell:
                    calls[str(path.relative_to(REALDATA)), block["id"]] = (block["name"], block["input"],
                                                                          msg.cwd or src.meta.project)
    return calls


def shell_commands(name: str, text: str) -> list[tuple[str, str | None]]:
    """The shell commands a call runs, each with its own ``workdir``: the call's, or each ``tools.exec_command`` a
    Codex code-mode ``exec`` makes."""
    if name.lower() != "exec":
        args = json.loads(text)
        command = args.get("command", args.get("cmd"))
        if isinstance(command, list):
            command = command[2] if len(command) == 3 and command[1] in ("-c", "-lc") else " ".join(command)
        return [(command, args.get("workdir"))]
    out = []
    for match in re.finditer(r"tools\.exec_command\((?=\{)", text):   # an object literal (not a variable)
        try:
            args, _ = json.JSONDecoder().raw_decode(text[match.end():])
        except ValueError:
            continue    # a JavaScript object that is not JSON ({...common, cmd: `...${p}`}): not read, as the package
        out.append((args["cmd"], args.get("workdir")))
    return out


@pytest.mark.skipif(not REALDATA.exists(), reason="../shared/realdata absent")
def test_every_real_shell_command_parses():
    """Every shell command of the recordings parses: bash by tree-sitter-bash; under a Windows folder, where Codex runs
    PowerShell, by tree-sitter-powershell (or, for a command that is also bash, tree-sitter-bash)."""
    commands = [(command, normalize_path(workdir, cwd) if workdir else cwd) for name, text, cwd in real_calls().values()
                for command, workdir in shell_commands(name, text)]
    assert len(commands) > 800
    assert sum(bool(re.match(r"[A-Za-z]:", cwd or "")) for _, cwd in commands) > 40      # PowerShell among them
    assert [c for c, cwd in commands if parse_errors(c, cwd)] == []


SAMPLE = Path(__file__).parent / "data" / "shell_targets_sample.txt"
_KINDS = {"r": ("read", "file:"), "w": ("write", "file:"), "d": ("read", "dir:"), "md": ("write", "dir:")}


def expected_targets(spec: str, command: str, base: str) -> list[tuple[str, str]]:
    """The targets a line of the sample writes out, made absolute against the call's folder."""
    out = []
    for item in spec.split(" ; "):
        code, _, rest = item.partition(" ")
        if code == "run":
            out.append(run(command, base))
        elif code == "s":
            pattern, _, where = rest.rpartition("@")
            out.append(("read", f"search:{pattern}@{normalize_path(where, base)}"))
        else:
            kind, prefix = _KINDS[code]
            out.append((kind, prefix + normalize_path(rest, base)))
    return out


def sample() -> list[tuple[str, str, str]]:
    lines = [line for line in SAMPLE.read_text().splitlines() if line and not line.startswith("#")]
    return [(file, call, spec) for file, call, _, spec in (line.split(" ", 3) for line in lines)]


def test_the_sample_is_large_and_has_no_call_twice():
    calls = [(file, call) for file, call, _ in sample()]
    assert len(calls) >= 200 and len(set(calls)) == len(calls)


@pytest.mark.skipif(not REALDATA.exists(), reason="../shared/realdata absent")
def test_a_hand_checked_sample_of_real_commands():
    calls = real_calls()
    wrong = []
    for file, call, spec in sample():
        name, text, cwd = calls[file, call]
        [(command, workdir)] = shell_commands(name, text)
        base = normalize_path(workdir, cwd) if workdir else cwd
        want = expected_targets(spec, command, base)
        if targets(name, text, cwd) != want:
            wrong.append((file, call, command, targets(name, text, cwd), want))
    assert wrong == []


def test_a_key_checked_by_hand_as_docs_loss_md_says():
    """docs/loss.md states the text each key hashes and one key computed by hand with hashlib; the package agrees."""
    import hashlib

    from conftest import REPO

    doc = (REPO / "docs" / "loss.md").read_text()
    by_hand = re.search(r'hashlib\.blake2b\(b"(file:[^"]+)", digest_size=8\)\.digest\(\), "little"\)\)\'`\s+prints `(\d+)`', doc)
    assert by_hand is not None
    text, key = by_hand.group(1), int(by_hand.group(2))
    assert key == int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little") == key_of(text)
    for name, args in [("Read", {"file_path": "/r/src/a.py"}), ("bash", {"command": "cat src/a.py"}),
                       ("bash", {"command": "cd src && sed -n '1,5p' ./a.py"})]:
        assert targets(name, json.dumps(args), "/r") == [("read", text)]


def test_code_points_that_crashed_tree_sitter_bash_are_parsed_as_stand_ins():
    # tree-sitter-bash 0.25.1 read out of bounds on "{" or "${" followed by a code point of plane 4 up (a segfault
    # in a reading thread, found by the replay's hypothesis test: 'º-{\U000ea9b1~k\x1a'). In a process of its own,
    # in threads as the canonical reader parses, so that a crash is this test failing, not the whole run ending.
    script = textwrap.dedent("""
        from concurrent.futures import ThreadPoolExecutor
        from panto_analytics.frame.shell_commands import command_targets, parse_errors
        odd = ["\\U00080000", "\\U000ea9b1", "\\U000e0100", "\\U000f0000", "\\U0010ffff"]
        commands = [c for o in odd for c in ("{" + o, "cat {" + o + "}.txt", "echo ${" + o + "}", "\\u00ba-{" + o + "~k\\x1a")]

        def parse_all(_):
            return [(command_targets(c, "/r"), parse_errors(c)) for c in commands]

        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(parse_all, range(8)))
        assert all(r == results[0] for r in results)
        targets = dict(zip(commands, (t for t, _ in results[0])))
        assert targets["cat {\\U000ea9b1}.txt"] == [("read", "file:/r/{\\U000ea9b1}.txt")], targets
        assert all(o in " ".join(t for _, t in targets[c]) for o in odd for c in commands if o in c), "a stand-in leaked"
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == "ok", (done.returncode, done.stderr[-2000:])
