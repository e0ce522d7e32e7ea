"""The typed-reader benchmark runs and both readers read the same messages."""
from __future__ import annotations

import pytest
from conftest import REALDATA

from benchmarks import typed_readers


@pytest.mark.skipif(not (REALDATA / "pi").is_dir(), reason="../shared/realdata/pi is absent")
def test_both_readers_are_timed_on_the_same_messages(capsys):
    rows = typed_readers.main(["--copies", "1", "--rounds", "1"])
    assert [r["reader"] for r in rows] == list(typed_readers.READERS)
    assert rows[0]["messages"] == rows[1]["messages"] > 0
    assert all(r["ingest_s"] > 0 and r["floor_s"] > 0 for r in rows)
