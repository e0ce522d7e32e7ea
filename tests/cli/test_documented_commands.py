"""Every ``panto-analytics`` command shown in README.md and docs/*.md runs as written and exits 0.

A documented example that stops working is a bug a user meets first, so each
one is a test case: the commands are read from the documents themselves (code
blocks, and inline code that names no placeholder such as PATH or LIST), run
in a temporary folder where ``data/`` is the bundled corpus, outputs land in
that folder, and ``~`` is a temporary home whose agent folders hold copies of
the test fixtures of each format (so the no-PATH form reads them too).

What cannot run as written is mapped, and only that, in :data:`SUBSTITUTE`
(a filter value or id that exists in the copies) or left out in :data:`NOT_RUN`
(with the reason). :data:`EXPECTED_FAILURES` lists the commands another open
issue is fixing, with that reason; when it lands, its entry is removed.
"""
from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import DATA, FIXTURES, REPO

from panto_analytics.cli import main

DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

#: Arguments written for a user's own recordings, mapped to what the fixture copies hold.
SUBSTITUTE = {
    "2026-11-01": "2026-01-01",       # --since: the Claude Code fixtures are from 2026-01 to 2026-07
    "gpt-5": "gpt-5.5",               # --model: the Codex fixtures' model
    "5f1c...": "s-blocks",            # request --session: an id the Claude Code copies hold
    "../shared/realdata": "data/",    # the real recordings, when present, are another test's (docs/replay.md)
    "logs/": "logs/",                 # (made below: a folder with a malformed file, for --skip-invalid)
}

#: Commands not run here, by the start of their argument list, and why.
NOT_RUN = {
    "bench": "the benchmark times minutes of work; tests/benchmarks/test_bench.py runs it",
    "recommend ../shared/realdata": "a measurement on the real recordings (docs/replay.md), run on them by "
                                    "tests/analysis/test_choose_from_replay.py; data/ reaches no 128k trigger",
    "recommend ~/.claude/projects": "without --window it replays under the window the sessions' models imply "
                                    "(issue 30): the fixture copies in ~ are a few calls each and reach no 1M "
                                    "trigger, so it exits 1 saying so, as "
                                    "test_recommend_on_a_home_too_small_for_its_window_says_why checks",
}

#: Commands another open issue is fixing (the reason names it); each is run and must fail until then.
EXPECTED_FAILURES: dict[str, str] = {}

_PLACEHOLDER = re.compile(r"\b[A-Z]{2,}\b|\.\.\.(?!\w)|\[|\\\|")


def documented_commands() -> list[str]:
    """The argument strings (after ``panto-analytics``) of every command the documents show, in order, once."""
    found: list[str] = []
    for doc in DOCUMENTS:
        text = doc.read_text()
        blocks = re.findall(r"```[^\n]*\n(.*?)```", text, re.S)
        for block in blocks:
            for line in block.splitlines():
                m = re.search(r"(?:^\s*(?:\$\s*)?|&&\s*|\.venv/bin/)panto-analytics\s+(\S.*)$", line)
                if m and not line.lstrip().startswith("Usage:"):
                    found.append(m.group(1))
        prose = re.sub(r"```.*?```", "", text, flags=re.S)
        for span in re.findall(r"`([^`]*)`", prose):
            span = " ".join(span.split())
            if span.startswith("panto-analytics ") and len(span.split()) > 2 and not _PLACEHOLDER.search(span):
                found.append(span.removeprefix("panto-analytics "))
    commands = []
    for args in found:
        args = re.split(r"\s\|\s|\s&&\s", args)[0]      # a pipe or a next command: only ours is run
        args = " ".join(shlex.split(args, comments=True))
        if args.split(" ", 1)[0] in main.commands and args not in commands:
            commands.append(args)
    return commands


COMMANDS = documented_commands()


def _cases():
    for args in COMMANDS:
        marks = []
        if "--engine ray" in args:
            marks.append(pytest.mark.ray)
        reason = EXPECTED_FAILURES.get(args)
        if reason:
            marks.append(pytest.mark.xfail(reason=reason, strict=True))
        skip = next((why for start, why in NOT_RUN.items() if args.startswith(start)), None)
        if skip:
            marks.append(pytest.mark.skip(reason=skip))
        yield pytest.param(args, id=args, marks=marks)


def _copy(files: list[Path], folder: Path) -> None:
    """Copies of fixture files into ``folder``, each at its path below its format's fixture folder."""
    for f in files:
        target = folder.joinpath(*f.relative_to(FIXTURES).parts[1:])
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, target)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """The folder commands run in: data/, docs/synth-prices.json, logs/, a home with the agents' folders, a dataset,
    a cache."""
    root = tmp_path_factory.mktemp("docs")
    (root / "data").symlink_to(DATA, target_is_directory=True)
    (root / "tests").symlink_to(REPO / "tests", target_is_directory=True)  # the fixtures some figures were read from
    (root / "docs").mkdir()
    shutil.copy(REPO / "docs" / "synth-prices.json", root / "docs")  # the price file of data/'s fictional models
    home = root / "home"
    cc, pi, codex = FIXTURES / "claude_code", FIXTURES / "pi", FIXTURES / "codex"
    _copy([cc / "blocks.jsonl", cc / "compaction.jsonl", cc / "preserved.jsonl", cc / "streaming.jsonl",
           cc / "resume" / "a.jsonl", cc / "resume" / "b.jsonl", cc / "subagent" / "parent-1.jsonl",
           cc / "subagent" / "parent-1" / "subagents" / "agent-abc123.jsonl"], home / ".claude" / "projects" / "my-app")
    _copy([pi / "v1.jsonl", pi / "v3_branching.jsonl"], home / ".pi" / "agent" / "sessions")
    _copy([codex / "calls.jsonl", codex / "compacted.jsonl", codex / "legacy.jsonl"], home / ".codex" / "sessions")
    (root / "logs").mkdir()
    shutil.copy(cc / "malformed.jsonl", root / "logs")
    return root


def _invoke(workdir: Path, args: str, monkeypatch):
    monkeypatch.chdir(workdir)
    argv = [SUBSTITUTE.get(a, a) for a in shlex.split(args)]
    if "--dataset" in argv:  # each writes its own, beside the corpus.ds/ the reading commands share
        i = argv.index("--dataset") + 1
        argv[i] = f"written-{abs(hash(args))}.ds"
    argv = [str(workdir / "home" / a[2:]) if a.startswith("~/") else a for a in argv]
    env = {"HOME": str(workdir / "home"), "PANTO_ANALYTICS_CACHE": str(workdir / "cache"),
           "CLAUDE_CONFIG_DIR": None, "CODEX_HOME": None, "COLUMNS": "100"}
    return CliRunner().invoke(main, argv, env=env)


@pytest.fixture(scope="module")
def dataset(workdir):
    """corpus.ds/, as the documents make it, for the commands that read it."""
    result = CliRunner().invoke(main, ["ingest", str(DATA), "--dataset", str(workdir / "corpus.ds"), "--no-cache"])
    assert result.exit_code == 0, result.output
    return workdir / "corpus.ds"


def test_the_documents_show_commands():
    # The reader above finds them: each command family is shown at least once.
    shown = {args.split()[0] for args in COMMANDS}
    assert {"splits", "sweep", "report", "recommend", "ingest", "replay", "compactions", "policy-cuts", "request",
            "sessions"} <= shown
    assert all(key in COMMANDS for key in EXPECTED_FAILURES), "an expected failure no document shows any more"


@pytest.mark.slow
@pytest.mark.parametrize("args", list(_cases()))
def test_documented_command_exits_0(args, workdir, monkeypatch, request):
    if "corpus.ds" in args and "--dataset" not in args:
        request.getfixturevalue("dataset")
    result = _invoke(workdir, args, monkeypatch)
    assert result.exit_code == 0, f"panto-analytics {args}\n{result.output}{result.exception!r}"


def test_recommend_on_a_home_too_small_for_its_window_says_why(workdir, monkeypatch):
    """The guide's `recommend ~/.claude/projects -k 3 -p 95%` on the fixture copies: the models name a 1M window,
    no session reaches its trigger, and the command says which window it used and that nothing could be chosen."""
    args = next(a for a in COMMANDS if a.startswith("recommend ~/.claude/projects"))
    result = _invoke(workdir, args, monkeypatch)
    assert result.exit_code == 1, result.output
    assert "the context window of" in result.output and "window 1M" in result.output
    assert "no proposable budget meets the rule" in result.output
    assert "Traceback" not in result.output
