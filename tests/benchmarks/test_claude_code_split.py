"""The Claude Code split benchmark times every step of a read that gives the frames the reader gives."""
from __future__ import annotations

import pytest
from conftest import REALDATA

from benchmarks import claude_code_split
from benchmarks.real_formats import write_copies
from panto_analytics.formats.claude_code import fast


@pytest.mark.skipif(not (REALDATA / "claude-code").is_dir(), reason="../shared/realdata/claude-code is absent")
def test_every_step_is_timed_and_the_reader_is_left_as_it_was(tmp_path):
    paths = write_copies(REALDATA / "claude-code", 1, tmp_path)
    before = {name: getattr(fast, name) for name, _ in claude_code_split.STEPS}
    got = claude_code_split.split(paths, rounds=1)
    assert {name: getattr(fast, name) for name in before} == before
    seconds = got["seconds"]
    assert set(seconds) == {"total", *before}
    assert seconds["total"] >= seconds["_assemble"] >= seconds["refs_column"] > 0
    assert got["messages"] > 0 and got["declined"] < len(paths)
