"""The frame-step split benchmark times every part of the frame of a read that gives the frames the reader gives."""
from __future__ import annotations

import pytest
from conftest import REALDATA

from benchmarks import frame_split
from benchmarks.real_formats import write_copies
from panto_analytics.formats import fast_columns


@pytest.mark.parametrize("fmt", sorted(frame_split.FORMATS))
def test_every_part_is_timed_and_the_step_is_left_as_it_was(tmp_path, fmt):
    source = REALDATA / frame_split.FORMATS[fmt][0]
    if not source.is_dir():
        pytest.skip(f"{source} is absent")
    paths = write_copies(source, 1, tmp_path)
    before = (dict(vars(fast_columns)), dict(vars(fast_columns.Columns)))
    got = frame_split.split(fmt, paths, rounds=1)
    assert (dict(vars(fast_columns)), dict(vars(fast_columns.Columns))) == before
    seconds = got["seconds"]
    assert set(seconds) == {"total", *(name for _, name, _ in frame_split.STEPS)}
    assert seconds["total"] >= seconds["_frame"] >= seconds["refs_column"] > 0
    assert got["messages"] > 0 and got["declined"] < len(paths)
