"""The bootstrap's memory benchmark, at a tiny size: one fresh process per pass size (no timing asserts)."""
from __future__ import annotations

from benchmarks import bootstrap_memory


def test_the_benchmark_measures_each_pass_size(data_dataset, capsys):
    rows = bootstrap_memory.main([str(data_dataset), "--budget", "5k", "--rows-per-pass", "1000", "7",
                                  "--resamples", "10"])
    assert [r["rows_per_pass"] for r in rows] == [1000, 7]
    assert all(r["rows"] > 0 and r["peak_mib"] >= r["before_mib"] > 0 for r in rows)
    assert capsys.readouterr().out.count("\n| ") == len(rows)  # a row of the table each
