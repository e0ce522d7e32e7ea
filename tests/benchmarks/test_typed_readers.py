"""The typed-reader benchmark runs and both readers read the same messages, for each format."""
from __future__ import annotations

import pytest
from conftest import REALDATA

from benchmarks import typed_readers


@pytest.mark.parametrize("fmt", sorted(typed_readers.ORACLES))
def test_both_readers_are_timed_on_the_same_messages(capsys, fmt):
    if not (REALDATA / fmt).is_dir():
        pytest.skip(f"../shared/realdata/{fmt} is absent")
    rows = typed_readers.main(["--format", fmt, "--copies", "1", "--rounds", "1"])
    assert [r["reader"] for r in rows] == list(typed_readers.READERS)
    assert {r["format"] for r in rows} == {fmt}
    assert rows[0]["messages"] == rows[1]["messages"] > 0
    assert all(r[f"{name}{kind}_s"] > 0 for r in rows for name in ("ingest", "parse", "floor") for kind in ("", "_cpu"))
