"""summary_request: the exact text libpanto sends, re-read from the files, against libpanto's own code."""
from __future__ import annotations

import zlib
from pathlib import Path

import pytest
from adapter_checks import canonical, first_line_is_json, parse
from conftest import DATA, REALDATA, oracle_module

import panto_analytics as pa
from panto_analytics.errors import InputError

BUDGETS = [0, 1_000, 5_000, 20_000, 100_000, 10**9]


def assert_requests_match_oracle(paths: list[Path], budgets: list[int] = BUDGETS) -> int:
    """Every split's request text (crc32 and length) equals libpanto's; returns how many were compared."""
    oracle = oracle_module()
    sessions = {}
    for path in paths:
        messages, meta, _ = parse(path, skip_invalid=True)  # a real bad line (xcsh-session.jsonl:440) is skipped
        sessions[meta.session_id] = canonical(messages)
    want = {(sid, b): (size, crc) for sid, row in zip(sessions, oracle.oracle_requests(list(sessions.values()), budgets))
            for b, (_, _, size, crc) in zip(budgets, row, strict=True)}
    frame = pa.read_sessions(paths, skip_invalid=True)
    rows = pa.splits(frame, budgets).select("session_id", "budget", "noop", "request_bytes").rows()
    compared = 0
    for sid, budget, noop, size in rows:
        text = pa.analysis.summary_request(frame, sid, budget)
        if noop:
            assert text is None and size is None
            continue
        body = text.encode()
        assert (len(body), zlib.crc32(body)) == want[sid, budget] and len(body) == size, (sid, budget)
        compared += 1
    return compared


def test_the_bundled_corpus():
    assert assert_requests_match_oracle(sorted(DATA.glob("*.jsonl"))) > 100


REAL = {name: [p for p in sorted((REALDATA / name).rglob("*.jsonl")) if first_line_is_json(p)]
        for name in ("pi", "pi-compactions", "claude-code", "codex")}


@pytest.mark.slow
@pytest.mark.parametrize("source", sorted(REAL))
def test_every_real_recording(source):
    if not REAL[source]:
        pytest.skip(f"real {source} recordings are absent ({REALDATA / source})")
    # Claude Code files that continue one another are folded into one session: read them together.
    assert assert_requests_match_oracle(REAL[source], [0, 20_000, 100_000]) > 0


def test_a_no_op_split_sends_nothing():
    frame = pa.read_sessions(DATA)
    sid = frame["session_id"][0]
    assert pa.analysis.summary_request(frame, sid, 2**64 - 1) is None


def test_an_unknown_session_is_refused():
    with pytest.raises(ValueError, match="no session 'nope'"):
        pa.analysis.summary_request(pa.read_sessions(DATA), "nope", 0)


def test_a_file_changed_since_it_was_read_is_named(tmp_path):
    path = tmp_path / "s.jsonl"
    lines = [f'{{"type":"message","role":"{r}","content":[{{"type":"text","text":"t{i}"}}]}}\n'
             for i, r in enumerate(["user", "assistant", "user", "assistant"])]
    path.write_text("".join(lines))
    frame = pa.read_sessions(path)
    path.write_text("".join(lines).replace("t1", "a much longer answer"))
    with pytest.raises(InputError, match="no longer in the file") as e:
        pa.analysis.summary_request(frame, "s", 0)
    assert e.value.path == str(path) and e.value.line == 2


def test_a_file_gone_since_it_was_read_is_named(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text('{"type":"message","role":"user","content":[{"type":"text","text":"a b c"}]}\n'
                    '{"type":"message","role":"assistant","content":[{"type":"text","text":"d e"}]}\n')
    frame = pa.read_sessions(path)
    path.unlink()
    with pytest.raises(InputError, match="file is gone") as e:
        pa.analysis.summary_request(frame, "s", 0)
    assert e.value.path == str(path)
