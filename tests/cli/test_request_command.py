"""``panto-analytics request``: the exact summarizer request of one session at one budget."""
from __future__ import annotations

from click.testing import CliRunner
from conftest import DATA

import panto_analytics as pa
from panto_analytics.cli import main

FILE = sorted(DATA.glob("*.jsonl"))[0]


def run(*args: str):
    return CliRunner().invoke(main, ["request", *args, "--no-cache"])


def test_prints_the_request_of_the_only_session():
    out = run(str(FILE), "--budget", "20k")
    assert out.exit_code == 0, out.output
    frame = pa.read_sessions(FILE)
    want = pa.analysis.summary_request(frame, frame["session_id"][0], 20_000)
    assert want is not None and out.stdout_bytes == want.encode()
    size = pa.splits(frame, [20_000])["request_bytes"][0]
    assert len(want.encode()) == size


def test_writes_to_a_file(tmp_path):
    target = tmp_path / "request.txt"
    out = run(str(FILE), "-b", "0", "-o", str(target))
    assert out.exit_code == 0, out.output
    frame = pa.read_sessions(FILE)
    assert target.read_text(encoding="utf-8") == pa.analysis.summary_request(frame, frame["session_id"][0], 0)


def test_a_folder_needs_a_session():
    out = run(str(DATA), "-b", "20k")
    assert out.exit_code == 2 and "--session" in out.output
    sid = pa.read_sessions(FILE)["session_id"][0]
    named = run(str(DATA), "-b", "20k", "--session", sid)
    assert named.exit_code == 0 and named.stdout.startswith("The conversation")


def test_an_unknown_session_is_a_usage_error():
    out = run(str(DATA), "-b", "20k", "--session", "nope")
    assert out.exit_code == 2 and "no session 'nope'" in out.output


def test_a_no_op_budget_sends_nothing():
    out = run(str(FILE), "-b", "1M")
    assert out.exit_code == 0 and out.stdout == "" and "no request" in out.stderr


def test_stdout_and_a_file_get_the_exact_request_bytes_escapes_included(tmp_path):
    # A tool's coloured output (ANSI escapes) and no final newline: the bytes are the request's, to stdout as to a
    # file (issue 32: stdout lost the escape and gained a newline, 2 bytes off request_bytes).
    session = tmp_path / "s.jsonl"
    turn = ('{"type":"message","role":"user","content":[{"type":"text","text":"run it \\u001b[31mred\\u001b[0m"}]}\n'
            '{"type":"message","role":"assistant","content":[{"type":"text","text":"done \\u001b[1mbold"}]}\n')
    session.write_text(turn * 4)
    frame = pa.read_sessions(session)
    want = pa.analysis.summary_request(frame, frame["session_id"][0], 0)
    assert want is not None and "\x1b[31m" in want
    size = pa.splits(frame, [0])["request_bytes"][0]
    out = run(str(session), "-b", "0")
    assert out.exit_code == 0 and out.stdout_bytes == want.encode() and len(out.stdout_bytes) == size
    assert run(str(session), "-b", "0", "-o", str(tmp_path / "r.txt")).exit_code == 0
    assert (tmp_path / "r.txt").read_bytes() == out.stdout_bytes


def test_a_unique_prefix_names_a_session_and_a_shared_one_is_a_usage_error():
    sid = pa.read_sessions(FILE)["session_id"][0]
    whole = run(str(DATA), "-b", "20k", "--session", sid)
    for prefix in (sid[:8], sid[:8] + "…"):   # as typed, and as a terminal table shortens it
        out = run(str(DATA), "-b", "20k", "--session", prefix)
        assert out.exit_code == 0 and out.stdout_bytes == whole.stdout_bytes, out.output
    shared = run(str(DATA), "-b", "20k", "--session", "")
    assert shared.exit_code == 2 and "no session" in shared.output
    ids = sorted(pa.read_sessions(DATA)["session_id"].unique())
    first = next(a[:1] for a, b in zip(ids, ids[1:]) if a[:1] == b[:1])
    several = run(str(DATA), "-b", "20k", "--session", first)
    assert several.exit_code == 2 and "give more of it" in several.output
