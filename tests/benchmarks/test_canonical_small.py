"""The small-file benchmark runs each reader in its own process, and they read the same messages."""
from __future__ import annotations

from conftest import REPO

from benchmarks import canonical_small


def test_every_reader_is_timed_on_the_same_messages(tmp_path, capsys):
    rows = canonical_small.main(["--files", "3", "--rounds", "1", "--repeat", "1", "--readers", "typed,one-by-one,line-by-line",
                                 "--before", str(REPO), "--corpus", str(tmp_path / "small")])
    assert [r["reader"] for r in rows] == ["typed", "one-by-one", "line-by-line", "before"]
    assert rows[0]["messages"] == rows[1]["messages"] == rows[2]["messages"] == rows[3]["messages"] > 0
    assert all(r["ingest_s"] > 0 and r["floor_s"] > 0 and r["cpu_s"] > 0 for r in rows)
    assert "the floor" in capsys.readouterr().out


def test_concatenated_files_hold_the_same_messages(tmp_path, capsys):
    args = ["--files", "3", "--rounds", "1", "--repeat", "1", "--readers", "typed", "--corpus", str(tmp_path / "small")]
    alone = canonical_small.main(args)
    together = canonical_small.main([*args, "--concat", "2"])
    assert together[0]["messages"] == alone[0]["messages"] > 0
    assert "2 files" in capsys.readouterr().err
