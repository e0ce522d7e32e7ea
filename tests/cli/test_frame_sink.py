"""FrameSink: a table written piece by piece is the file write_frame writes of the whole."""
from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from panto_analytics.cli._output import write_frame
from panto_analytics.cli.frame_sink import FrameSink

WHOLE = pl.DataFrame({"a": [1, 2, 3, 4], "b": ["x", None, "z", "w"], "c": [0.5, 1.5, None, 2.0]})


@pytest.mark.parametrize("suffix", [".csv", ".json", ".ndjson", ".parquet"])
@pytest.mark.parametrize("bounds", [[0, 4], [0, 0, 4], [0, 1, 1, 3, 4], [0, 0]])
def test_pieces_make_the_file_of_the_whole(tmp_path, suffix, bounds):
    whole = WHOLE.head(bounds[-1])
    write_frame(whole, tmp_path / f"whole{suffix}")
    with FrameSink(tmp_path / f"pieces{suffix}") as sink:
        for a, b in zip(bounds, bounds[1:]):
            sink(whole.slice(a, b - a))
    if suffix == ".parquet":
        assert_frame_equal(pl.read_parquet(tmp_path / f"pieces{suffix}"), pl.read_parquet(tmp_path / f"whole{suffix}"))
    else:
        assert (tmp_path / f"pieces{suffix}").read_bytes() == (tmp_path / f"whole{suffix}").read_bytes()
    assert sink.rows == whole.height


@pytest.mark.parametrize("suffix", [".csv", ".json", ".ndjson", ".parquet"])
def test_a_failure_leaves_no_file(tmp_path, suffix):
    """An error while the pieces come (a task that fails) leaves no file, not a truncated one that reads as whole
    (in memory the work fails before write_frame writes anything)."""
    target = tmp_path / f"rows{suffix}"
    with pytest.raises(RuntimeError, match="task failed"), FrameSink(target) as sink:
        sink(WHOLE.head(2))
        assert list(tmp_path.iterdir()) != []  # written as it goes, under another name
        assert not target.exists()
        raise RuntimeError("task failed")
    assert list(tmp_path.iterdir()) == []


def test_the_file_gets_its_name_when_finished(tmp_path):
    target = tmp_path / "rows.csv"
    target.write_text("an earlier run\n")
    with FrameSink(target) as sink:
        sink(WHOLE)
        assert target.read_text() == "an earlier run\n"
    assert target.read_bytes() == WHOLE.write_csv().encode()
    assert [p.name for p in tmp_path.iterdir()] == ["rows.csv"]


@pytest.mark.parametrize("suffix", [".csv", ".ndjson", ".parquet"])
def test_plain_string_pieces_of_a_categorical_column_make_its_file(tmp_path, suffix):
    """A dataset's replay sends session ids as plain strings (not interned for the life of the process); the file
    is the one write_frame writes of the Categorical column (Parquet: dictionary-encoded, read back Categorical)."""
    whole = WHOLE.with_columns(pl.col("b").cast(pl.Categorical))
    write_frame(whole, tmp_path / f"whole{suffix}")
    with FrameSink(tmp_path / f"pieces{suffix}", categorical=("b",)) as sink:
        sink(WHOLE.head(1))
        sink(WHOLE.tail(3))
    if suffix == ".parquet":
        got = pl.read_parquet(tmp_path / f"pieces{suffix}")
        assert got.schema["b"] == pl.Categorical
        assert_frame_equal(got, pl.read_parquet(tmp_path / f"whole{suffix}"))
    else:
        assert (tmp_path / f"pieces{suffix}").read_bytes() == (tmp_path / f"whole{suffix}").read_bytes()


@pytest.mark.parametrize("pieces", [1, 3])
def test_no_rows_of_a_categorical_column_make_its_empty_file(tmp_path, pieces):
    """Only empty pieces (a dataset's replay where nothing compacts): the Parquet file still holds the column
    dictionary-encoded."""
    whole = WHOLE.head(0).with_columns(pl.col("b").cast(pl.Categorical))
    write_frame(whole, tmp_path / "whole.parquet")
    with FrameSink(tmp_path / "pieces.parquet", categorical=("b",)) as sink:
        for _ in range(pieces):
            sink(WHOLE.head(0))
    got = pl.read_parquet(tmp_path / "pieces.parquet")
    assert got.schema["b"] == pl.Categorical
    assert_frame_equal(got, pl.read_parquet(tmp_path / "whole.parquet"))
