"""Rows that come task by task, written to Parquet in a temporary folder and read back lazily: :class:`Spill`.

A dataset's replay gives rows per (policy, session, budget) and per event,
task by task; its tables need every row (a median over all sessions), but
not all at once: each figure reads a column or two
(:func:`~panto_analytics.outcomes.group_tables.grouped` with
``column_at_a_time``). So the rows go to disk as they come, one Parquet file
per kind of row (a row group per task, each piece cast to the first piece's
schema), and the tables scan them back: memory holds one task's rows and one
column of the rows, not the rows. The folder is removed on :meth:`Spill.close`
(or at the end of a ``with`` block), whatever happened.

>>> import polars as pl
>>> with Spill() as spill:
...     spill.append("rows", pl.DataFrame({"a": [1, 2]})); spill.append("rows", pl.DataFrame({"a": [3]}))
...     spill.scan("rows").select(pl.col("a").sum()).collect().item()
6
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["Spill"]


class Spill:
    """Frames appended by name (:meth:`append`), each name's pieces one Parquet file; :meth:`scan` reads it.

    ``where``: the folder the temporary folder goes in (None: the system's).
    """

    def __init__(self, where: str | Path | None = None):
        self._dir = tempfile.TemporaryDirectory(prefix="panto-spill-", dir=where)
        self._writers: dict[str, pq.ParquetWriter] = {}
        self._schemas: dict[str, Any] = {}

    def __enter__(self) -> Spill:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _path(self, name: str) -> Path:
        return Path(self._dir.name) / f"{name}.parquet"

    def append(self, name: str, frame: pl.DataFrame) -> None:
        """Add ``frame``'s rows to ``name``'s (cast to the first piece's schema)."""
        if name not in self._schemas:
            self._schemas[name] = frame.schema
        else:
            frame = frame.cast(dict(self._schemas[name]))
        if not frame.height:
            return
        table = frame.to_arrow()
        writer = self._writers.get(name)
        if writer is None:
            writer = self._writers[name] = pq.ParquetWriter(self._path(name), table.schema, compression="lz4")
        writer.write_table(table)
        pa.default_memory_pool().release_unused()  # the piece's encoding buffers: not kept for the next piece

    def names(self) -> list[str]:
        """The names appended to, in the order they first came."""
        return list(self._schemas)

    def scan(self, name: str) -> pl.LazyFrame:
        """The rows appended to ``name``, lazily (none, with the schema of its first piece, when every piece was
        empty); appending ends for that name."""
        writer = self._writers.pop(name, None)
        if writer is not None:
            writer.close()
        path = self._path(name)
        if not path.exists():
            return pl.LazyFrame(schema=self._schemas[name])
        return pl.scan_parquet(path)

    def close(self) -> None:
        """Close the files and remove the folder."""
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()
        self._dir.cleanup()
