"""A table written piece by piece: rows that come task by task (a dataset's buckets) go to their file as they come.

:func:`write_frame` writes a whole frame; :class:`FrameSink` writes the
same file from pieces, without holding them: ``.csv`` (one header),
``.ndjson``/``.jsonl`` (lines appended), ``.json`` (one array), ``.parquet``
(one row group or more per piece, every piece cast to the first one's
schema), or a device (``/dev/null``, a pipe) in ``--output-format``. The
pieces concatenated make the file ``write_frame`` would write of their
concatenation. Like every command module, it imports nothing heavy at its top.
"""
from __future__ import annotations

from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click

from .options import _FORMAT_KEY, _csv_ready, is_device

if TYPE_CHECKING:
    import polars as pl

__all__ = ["FrameSink"]

_KINDS = {".csv": "csv", ".json": "json", ".ndjson": "ndjson", ".jsonl": "ndjson", ".parquet": "parquet"}


class FrameSink:
    """Call it with each piece, in order; :meth:`close` finishes the file and says how many rows it holds.

    >>> import tempfile, pathlib, polars as pl
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "rows.csv"
    >>> with FrameSink(path) as sink:
    ...     sink(pl.DataFrame({"a": [1, 2]})); sink(pl.DataFrame({"a": [3]}))
    >>> path.read_text()
    'a\\n1\\n2\\n3\\n'
    """

    def __init__(self, output: Path):
        ctx = click.get_current_context(silent=True)
        fmt = (ctx.meta.get(_FORMAT_KEY) if ctx is not None else None) or "csv"
        self.output = output
        self.kind = fmt if is_device(output) else _KINDS[output.suffix.lower()]
        if not is_device(output):
            output.parent.mkdir(parents=True, exist_ok=True)
        self.rows = 0
        self._file: IO[bytes] = open(output, "wb")  # noqa: SIM115 (closed by close())
        self._schema: Any = None
        self._parquet: Any = None

    def __enter__(self) -> FrameSink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(quiet=exc[0] is not None)

    def __call__(self, frame: pl.DataFrame) -> None:
        first = self._schema is None
        if first:
            self._schema = frame.schema
        else:
            frame = frame.cast(dict(self._schema))
        self.rows += frame.height
        if self.kind == "csv":
            _csv_ready(frame).write_csv(self._file, include_header=first)
        elif self.kind == "ndjson":
            frame.write_ndjson(self._file)
        elif self.kind == "json":
            if frame.height:
                self._file.write(b"[" if self.rows == frame.height else b",")
                self._file.write(frame.write_json().encode()[1:-1])
        elif frame.height:
            import pyarrow.parquet as pq

            table = frame.to_arrow()
            if self._parquet is None:
                self._parquet = pq.ParquetWriter(self._file, table.schema, compression="zstd")
            self._parquet.write_table(table)

    def close(self, *, quiet: bool = False) -> None:
        """Finish the file (an empty table has its header, ``[]`` or its schema) and say what was written."""
        if self.kind == "json":
            self._file.write(b"]" if self.rows else b"[]")
        if self.kind == "parquet":
            if self._parquet is None:
                import polars as pl

                pl.DataFrame(schema=self._schema).write_parquet(self._file)
            else:
                self._parquet.close()
        self._file.close()
        if not quiet:
            click.echo(f"wrote {self.rows} rows to {self.output}", err=True)
