"""The one read of a Parquet manifest, for the cache (``ingest/cache``) and the dataset (``dataset/store.py``).

Both keep one row per source file in a ``manifest.parquet``; each keeps its
own policy for a missing or bad one (the cache: None and ``BadEntry``, the
bad manifest deleted and counted; the dataset: an empty table and a one-line
``InputError``). This module reads; the caller says what "bad" raises
(``bad``, given the message) and how the columns are checked (``exact``: each
named column of exactly its type, extra columns ignored; otherwise the named
columns selected and cast to their types).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO, cast

import polars as pl

__all__ = ["check_shape", "read_parquet_manifest"]


def read_parquet_manifest(source: Path | BinaryIO, bad: Callable[[str], Exception], *, what: str = "manifest",
                  columns: Sequence[str] | None = None, schema: Mapping[str, pl.DataType] | None = None,
                  exact: bool = True) -> pl.DataFrame | None:
    """The manifest at ``source`` (a path, or a file open for reading); None if the path does not exist.

    Parameters
    ----------
    source
        The manifest's path, or the manifest already open (read from its start).
    bad
        Makes the exception raised for a manifest that cannot be read, or of
        another shape, from a one-line message (``"unreadable manifest: ..."``).
    what
        What the messages call it (``"manifest"``, ``"dataset manifest"``).
    columns
        The columns to read (all if None).
    schema
        The columns' expected types: checked exactly (``exact``, see
        :func:`check_shape`), or selected and cast to (``exact=False``).

    Examples
    --------
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "manifest.parquet"
    >>> read_parquet_manifest(path, ValueError) is None
    True
    >>> pl.DataFrame({"path": ["a"], "rows": [4]}).write_parquet(path)
    >>> read_parquet_manifest(path, ValueError, schema={"rows": pl.Int64()}).row(0)
    ('a', 4)
    >>> read_parquet_manifest(path, ValueError, schema={"rows": pl.UInt32()}, exact=False).rows()
    [(4,)]
    >>> read_parquet_manifest(path, ValueError, schema={"rows": pl.String()})
    Traceback (most recent call last):
    ...
    ValueError: manifest of another shape
    """
    if isinstance(source, Path) and not source.exists():
        return None
    try:
        if not isinstance(source, Path):
            source.seek(0)
        frame = pl.read_parquet(source, columns=list(columns) if columns is not None else None)
        if schema is not None and not exact:
            frame = frame.select(list(schema)).cast(cast("dict[Any, pl.DataType]", dict(schema)))
    except Exception as e:  # noqa: BLE001 - any unreadable manifest is one line of bad input
        raise bad(f"unreadable {what}: {e}") from None
    if schema is not None and exact:
        check_shape(frame.schema, schema, bad, what=what)
    return frame


def check_shape(found: Mapping[str, pl.DataType], schema: Mapping[str, pl.DataType],
                bad: Callable[[str], Exception], *, what: str = "manifest") -> None:
    """Raise ``bad`` unless every column of ``schema`` is in ``found`` with exactly its type (extra columns are fine).

    >>> check_shape({"a": pl.Int64(), "b": pl.String()}, {"a": pl.Int64()}, ValueError)
    >>> check_shape({"a": pl.Int32()}, {"a": pl.Int64()}, ValueError)
    Traceback (most recent call last):
    ...
    ValueError: manifest of another shape
    """
    if any(found.get(name) != dtype for name, dtype in schema.items()):
        raise bad(f"{what} of another shape")
