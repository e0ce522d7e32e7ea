"""The progress bar: only on a terminal, files/MB/rate, erased when done."""
from __future__ import annotations

import io

from panto_analytics.ingest.progress import Progress


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_nothing_is_drawn_when_the_stream_is_not_a_terminal():
    out = io.StringIO()
    with Progress(2, 2_000_000, stream=out, delay=0) as p:
        p.advance(1_000_000)
        p.advance(1_000_000)
    assert out.getvalue() == ""


def test_a_terminal_gets_files_megabytes_and_rate_then_a_clean_line():
    out = FakeTTY()
    with Progress(4, 8_000_000, stream=out, delay=0) as p:
        p.advance(2_000_000, files=2, cached=True)
        drawn = out.getvalue()
        assert "2/4 files" in drawn and "2.0/8.0 MB" in drawn and "MB/s" in drawn and "2 from cache" in drawn
    assert out.getvalue().endswith("\r\x1b[K")  # erased: what follows starts on a clean line


def test_disabled_draws_nothing_even_on_a_terminal():
    out = FakeTTY()
    with Progress(1, 10, stream=out, enabled=False, delay=0) as p:
        p.advance(10)
    assert out.getvalue() == ""


def test_short_reads_never_show_a_bar():
    out = FakeTTY()
    with Progress(1, 10, stream=out, delay=60) as p:
        p.advance(10)
    assert out.getvalue() == ""


def test_cli_quiet_and_piped_stderr_show_no_bar(tmp_path):
    """Through read_sessions: progress=True on a non-terminal stderr writes nothing."""
    import contextlib
    import json

    import panto_analytics as pa

    f = tmp_path / "s.jsonl"
    f.write_text(json.dumps({"type": "message", "role": "user", "content": []}) + "\n")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        pa.read_sessions(f, progress=True)
    assert err.getvalue() == ""
