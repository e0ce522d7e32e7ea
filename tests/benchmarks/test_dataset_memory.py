"""The dataset memory benchmark, at a tiny size: every command runs on the dataset it writes (no timing asserts)."""
from __future__ import annotations

import polars as pl

from benchmarks import dataset_memory


def test_the_benchmark_measures_every_command(tmp_path, capsys):
    rows = dataset_memory.main(["--sessions", "40", "--workdir", str(tmp_path), "--chunk", "15", "--median-turns", "6"])
    assert [r["command"] for r in rows] == ["write", *dataset_memory.COMMANDS]
    assert all(r["sessions"] == 40 and r["messages"] > 40 and r["peak_rss_mib"] > 0 for r in rows)
    assert all(r["tree_rss_mib"] > 0 and r["own_rss_mib"] > 0 for r in rows)  # sampled from /proc
    table = capsys.readouterr().out
    assert table.count("\n| 40 |") == len(rows)
    # The per-session outputs were written: the replay's rows and the loss command's cuts.
    assert pl.read_parquet(tmp_path / "out-40" / "sessions.parquet").height == 40
    assert pl.read_parquet(tmp_path / "out-40" / "cuts.parquet").height > 0
    # The report over the dataset, bucket by bucket: its splits, one row per session at its one budget.
    assert pl.read_parquet(tmp_path / "out-40" / "report" / "splits.parquet").height == 40
    # A second run reuses the dataset: no write row.
    again = dataset_memory.main(["--sessions", "40", "--workdir", str(tmp_path), "--commands", "cost",
                                 "--median-turns", "6"])
    assert [r["command"] for r in again] == ["cost"]
