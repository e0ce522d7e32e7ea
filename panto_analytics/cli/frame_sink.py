"""A table written piece by piece: rows that come task by task (a dataset's buckets) go to their file as they come.

:func:`write_frame` writes a whole frame; :class:`FrameSink` writes the
same file from pieces, without holding them: ``.csv`` (one header),
``.ndjson``/``.jsonl`` (lines appended), ``.json`` (one array), ``.parquet``
(one row group or more per piece, every piece cast to the first one's
schema), or a device (``/dev/null``, a pipe) in ``--output-format``. The
pieces concatenated make the file ``write_frame`` would write of their
concatenation. A file is written under a temporary name in its folder and
renamed when it is finished; on an error it is removed, so a failed command
leaves no file (as ``write_frame``, which writes nothing when the work fails).
Like every command module, it imports nothing heavy at its top.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click

from ._output import FORMAT_KEY, WRITERS, csv_ready, is_device

if TYPE_CHECKING:
    import polars as pl

__all__ = ["FrameSink"]

#: The kind of file each suffix writes: the suffixes ``write_frame`` writes (``write_ndjson`` -> ``ndjson``).
_KINDS = {suffix: writer.removeprefix("write_") for suffix, writer in WRITERS.items()}


class FrameSink:
    """Call it with each piece, in order; :meth:`close` finishes the file and says how many rows it holds.

    ``categorical``: columns that come as plain strings but are Categorical in the frame ``write_frame`` would
    write (a dataset's session ids: plain strings are not interned for the life of the process); a Parquet
    file holds them dictionary-encoded, as Polars writes a Categorical, so it reads back the same.

    >>> import tempfile, pathlib, polars as pl
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "rows.csv"
    >>> with FrameSink(path) as sink:
    ...     sink(pl.DataFrame({"a": [1, 2]})); sink(pl.DataFrame({"a": [3]}))
    >>> path.read_text()
    'a\\n1\\n2\\n3\\n'

    A piece that fails leaves no file:

    >>> try:
    ...     with FrameSink(path.with_name("half.csv")) as sink:
    ...         sink(pl.DataFrame({"a": [1]})); raise RuntimeError("a task failed")
    ... except RuntimeError:
    ...     pass
    >>> sorted(p.name for p in path.parent.iterdir())
    ['rows.csv']
    """

    def __init__(self, output: Path, *, categorical: Sequence[str] = ()):
        ctx = click.get_current_context(silent=True)
        fmt = (ctx.meta.get(FORMAT_KEY) if ctx is not None else None) or "csv"
        self.output = output
        self.kind = fmt if is_device(output) else _KINDS[output.suffix.lower()]
        self._partial: Path | None = None  # the temporary name a file is written under, renamed when finished
        if not is_device(output):
            output.parent.mkdir(parents=True, exist_ok=True)
            self._partial = output.with_name(f".{output.name}.{os.getpid()}.partial")
        self.rows = 0
        self._file: IO[bytes] = open(self._partial or output, "wb")  # noqa: SIM115 (closed by close())
        self._schema: Any = None
        self._parquet: Any = None
        self._categorical = tuple(categorical)

    def __enter__(self) -> FrameSink:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.close()
        else:
            self.discard()

    def discard(self) -> None:
        """Close the file unfinished and remove it (a device is only closed)."""
        writer, self._parquet = self._parquet, None
        if writer is not None:
            try:
                writer.close()
            except Exception:  # noqa: S110 (its file goes anyway)
                pass
        self._file.close()
        if self._partial is not None:
            self._partial.unlink(missing_ok=True)

    def __call__(self, frame: pl.DataFrame) -> None:
        first = self._schema is None
        if first:
            self._schema = frame.schema
        else:
            frame = frame.cast(dict(self._schema))
        self.rows += frame.height
        if self.kind == "csv":
            csv_ready(frame).write_csv(self._file, include_header=first)
        elif self.kind == "ndjson":
            frame.write_ndjson(self._file)
        elif self.kind == "json":
            if frame.height:
                self._file.write(b"[" if self.rows == frame.height else b",")
                self._file.write(frame.write_json().encode()[1:-1])
        elif frame.height:
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = self._arrow(frame)
            if self._parquet is None:
                self._parquet = pq.ParquetWriter(self._file, table.schema, compression="zstd")
            self._parquet.write_table(table)
            pa.default_memory_pool().release_unused()  # the piece's encoding buffers: not kept for the next piece

    def _arrow(self, frame: pl.DataFrame) -> Any:
        """``frame`` as the Arrow table its Parquet file holds: the ``categorical`` columns dictionary-encoded."""
        import pyarrow as pa

        table = frame.to_arrow()
        for name in self._categorical:  # plain strings here, Categorical in memory: the same Parquet column
            i = table.schema.get_field_index(name)
            if i >= 0 and not pa.types.is_dictionary(table.schema.field(i).type):
                column = table.column(i).dictionary_encode()
                table = table.set_column(i, name, column.cast(pa.dictionary(pa.uint32(), column.type.value_type)))
        return table

    def close(self) -> None:
        """Finish the file (an empty table has its header, ``[]`` or its schema), give it its name and say what
        was written; if finishing it fails, remove it."""
        try:
            if self.kind == "json":
                self._file.write(b"]" if self.rows else b"[]")
            if self.kind == "parquet":
                if self._parquet is None:   # no rows: the schema alone, its categorical columns encoded as ever
                    import polars as pl
                    import pyarrow.parquet as pq

                    pq.write_table(self._arrow(pl.DataFrame(schema=self._schema)), self._file, compression="zstd")
                else:
                    self._parquet.close()
            self._file.close()
            if self._partial is not None:
                self._partial.replace(self.output)
        except BaseException:
            self.discard()
            raise
        click.echo(f"wrote {self.rows} rows to {self.output}", err=True)
