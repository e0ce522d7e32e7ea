"""The dataset on disk: its layout, its manifest, and how to read it back (:func:`scan_dataset`).

A dataset is a folder of Parquet files partitioned by a stable hash of
``session_id`` (:mod:`.buckets`), in hive layout::

    DIR/dataset.json                              buckets, sessions, messages, files, parser version
    DIR/manifest.parquet                          one row per source file: its stat, its session, bucket and part
    DIR/messages/bucket=017/part-<id>.parquet     the message frame (schema.MESSAGE_SCHEMA), and agent_version
    DIR/sessions/bucket=017/part-<id>.parquet     the sessions table (schema.SESSIONS_SCHEMA)
    DIR/compactions/bucket=017/part-<id>.parquet  the recorded compactions (schema.COMPACTIONS_SCHEMA)

A session lives in exactly one part of one bucket, in all three tables, and
a row group of ``messages`` never cuts a session. Only the parts the
manifest names are read: a part left behind by an interrupted write is
ignored.

>>> import tempfile, polars as pl
>>> from panto_analytics.frame.schema import MESSAGE_SCHEMA
>>> root = tempfile.mkdtemp()
>>> is_dataset(root), scan_dataset.__name__
(False, 'scan_dataset')
"""
from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq

from ..defaults import DEFAULT_BUCKETS
from ..errors import IngestReport, InputError
from ..frame.schema import AGENT_VERSION, COMPACTIONS_SCHEMA, MESSAGE_SCHEMA, SESSION, SESSIONS_SCHEMA
from ..ingest import _manifest as manifests
from ..ingest.corpus import Corpus
from .info import FORMAT_NAME, INFO_FILE, DatasetInfo, is_dataset, read_info

__all__ = [
    "DATASET_MANIFEST_SCHEMA", "DEFAULT_BUCKETS", "MANIFEST_FILE", "ROW_GROUP_ROWS", "STORED_BESIDE", "TABLES",
    "TASK_ROWS", "bucket_groups", "bucket_parts", "dataset_corpus", "new_part_name",
    "collect", "part_path", "read_manifest", "read_part", "scan_dataset", "scan_parts", "write_info",
    "write_manifest", "write_part",
]

MANIFEST_FILE = "manifest.parquet"


#: Rows a ``messages`` row group aims at; it ends at the first session boundary past it.
ROW_GROUP_ROWS = 128 * 1024

#: The tables a dataset holds, and their schemas.
TABLES: dict[str, dict[str, pl.DataType]] = {
    "messages": MESSAGE_SCHEMA, "sessions": SESSIONS_SCHEMA, "compactions": COMPACTIONS_SCHEMA,
}

#: Columns a table's parts store beside its schema, read only where asked (:func:`scan_parts`' ``beside``): the
#: Claude Code version of each message (:mod:`panto_analytics.ingest.versions`), which the message frame does not
#: keep but a ``claude-code`` replay reads. A part written before it reads it as null (version unknown).
STORED_BESIDE: dict[str, dict[str, pl.DataType]] = {"messages": {AGENT_VERSION: pl.String()}}

#: One row per source file (``session_id``, ``bucket`` and ``part`` null for a file that gave no session).
DATASET_MANIFEST_SCHEMA: dict[str, pl.DataType] = {
    "abspath": pl.String(), "path": pl.String(), "size": pl.Int64(), "mtime_ns": pl.Int64(), "inode": pl.Int64(),
    SESSION: pl.String(), "bucket": pl.UInt16(), "part": pl.String(), "messages": pl.UInt32(),
}

def write_info(root: str | Path, info: DatasetInfo) -> None:
    """Write ``dataset.json`` (atomically)."""
    _replace(Path(root) / INFO_FILE, lambda p: p.write_text(json.dumps({"format": FORMAT_NAME, **asdict(info)}, indent=1)))


def read_manifest(root: str | Path) -> pl.DataFrame:
    """The manifest (``DATASET_MANIFEST_SCHEMA``); empty when the dataset has none yet."""
    path = Path(root) / MANIFEST_FILE
    frame = manifests.read_parquet_manifest(path, lambda message: InputError(path, None, message, skippable=False),
                                    what="dataset manifest", schema=DATASET_MANIFEST_SCHEMA, exact=False)
    return pl.DataFrame(schema=DATASET_MANIFEST_SCHEMA) if frame is None else frame


def write_manifest(root: str | Path, manifest: pl.DataFrame) -> None:
    """Write the manifest (atomically)."""
    _replace(Path(root) / MANIFEST_FILE, lambda p: manifest.write_parquet(p))


def _replace(path: Path, write) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    write(tmp)
    os.replace(tmp, path)


def new_part_name(bucket: int) -> str:
    """A fresh part's name relative to a table folder, e.g. ``bucket=017/part-<hex>.parquet``."""
    return f"bucket={bucket:03d}/part-{uuid.uuid4().hex}.parquet"


def part_path(root: str | Path, table: str, part: str) -> Path:
    """Where ``part`` of ``table`` lives."""
    return Path(root) / table / part


def write_part(root: str | Path, table: str, part: str, frame: pl.DataFrame) -> None:
    """Write one part of ``table`` (zstd Parquet, atomically); ``messages`` row groups end at session boundaries."""
    path = part_path(root, table, part)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = frame.to_arrow()
    cuts = _row_group_cuts(frame) if table == "messages" else np.array([0, frame.height])

    def write(tmp: Path) -> None:
        with pq.ParquetWriter(tmp, data.schema, compression="zstd") as writer:
            for lo, hi in zip(cuts[:-1], cuts[1:]):  # one iteration per row group, not per session
                writer.write_table(data.slice(int(lo), int(hi - lo)), row_group_size=max(int(hi - lo), 1))

    _replace(path, write)


def _row_group_cuts(frame: pl.DataFrame, target: int = ROW_GROUP_ROWS) -> np.ndarray:
    """Row offsets ``[0, ..., height]`` where row groups start: the first session start at or past each multiple
    of ``target`` rows, so that no row group cuts a session.

    >>> df = pl.DataFrame({"session_id": ["a", "a", "a", "b", "c", "c"]})
    >>> _row_group_cuts(df, 2).tolist()
    [0, 3, 4, 6]
    """
    if frame.height == 0:
        return np.array([0, 0])
    sid = pl.col(SESSION)
    starts = frame.select((sid != sid.shift(1)).fill_null(True).arg_true()).to_series().to_numpy().astype(np.int64)
    wanted = np.arange(target, frame.height, target)
    picked = starts[np.minimum(np.searchsorted(starts, wanted, side="left"), len(starts) - 1)]
    inner = np.unique(picked[picked > 0])
    return np.concatenate([[0], inner, [frame.height]])


def read_part(root: str | Path, table: str, part: str) -> pl.DataFrame:
    """One part of ``table`` as it is stored: the table's schema and the columns stored beside it."""
    return collect(scan_parts(root, table, [part], beside=True), root)


def collect(lf: pl.LazyFrame, root: str | Path) -> pl.DataFrame:
    """``lf.collect()``; a missing or corrupt part of the dataset at ``root`` is one line of bad input.

    >>> collect(pl.scan_parquet("/nonexistent/part.parquet"), "/nonexistent")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    panto_analytics.errors.InputError: /nonexistent: unreadable dataset (...
    """
    try:
        return lf.collect()
    except (pl.exceptions.PolarsError, OSError) as e:
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InputError(root, None, f"unreadable dataset ({reason}); write it again with "
                         "'panto-analytics ingest PATH... --dataset DIR'", skippable=False) from None


def scan_parts(root: str | Path, table: str, parts: list[str], *, beside: bool = False) -> pl.LazyFrame:
    """``table``'s rows in ``parts`` (names as :func:`bucket_parts` gives them), in the table's schema;
    ``beside``: with the columns stored beside it (:data:`STORED_BESIDE`) too."""
    return _scan([part_path(root, table, p) for p in parts], table, beside=beside)


def _scan(paths: list[Path], table: str, *, beside: bool = False) -> pl.LazyFrame:
    schema = {**TABLES[table], **(STORED_BESIDE.get(table, {}) if beside else {})}
    if not paths:
        return pl.LazyFrame(schema=schema)
    # Columns the schema gained since a part was written read as nulls; columns it lost are ignored.
    return pl.scan_parquet(paths, hive_partitioning=False, schema=schema, missing_columns="insert",
                           extra_columns="ignore").select(list(schema))


def dataset_corpus(root: str | Path) -> Corpus:
    """The whole dataset in memory, as a :class:`~panto_analytics.ingest.Corpus` (what a command that has no
    streaming path reads); its report counts the dataset's files, sessions and messages."""
    info = read_info(root)
    report = IngestReport(files=info.files, sessions=info.sessions, messages=info.messages)
    tables = [collect(scan_dataset(root, t), root) for t in TABLES]
    return Corpus(tables[0], tables[1], tables[2], report)


def bucket_parts(root: str | Path, buckets: Iterable[int] | None = None) -> dict[int, list[str]]:
    """Each bucket's parts (names relative to a table folder), buckets and parts sorted; only those the manifest names."""
    path = Path(root) / MANIFEST_FILE
    if not path.exists():
        return {}
    # Two columns, of the buckets asked for: the manifest has a row per source file (1M rows, 144 MiB whole at
    # 1M sessions, read by each timeline of a report for the parts of a bucket or two).
    manifest = pl.scan_parquet(path).select("bucket", "part").filter(pl.col("part").is_not_null())
    if buckets is not None:
        manifest = manifest.filter(pl.col("bucket").is_in(pl.Series(list(buckets), dtype=pl.Int64).implode()))
    rows = collect(manifest.unique().sort("bucket", "part"), root)
    out: dict[int, list[str]] = {}
    for bucket, part in rows.iter_rows():  # one row per part, not per session
        out.setdefault(int(bucket), []).append(part)
    return out


#: Messages a task over the dataset aims at (:func:`bucket_groups`): enough that a task's fixed cost
#: (planning a query, opening parts) is small beside its work, few enough that its frames stay small.
TASK_ROWS = 1_000_000


def bucket_groups(root: str | Path, rows: int = TASK_ROWS) -> list[list[str]]:
    """The dataset's parts, whole buckets at a time, grouped in bucket order until a group holds ``rows`` messages.

    Every group holds whole sessions (a session lives in one bucket); each is
    one task of :func:`panto_analytics.dataset.engines.map_buckets`.
    """
    # Only the three columns needed are read: the manifest has a row per source file.
    per_part = (collect(pl.scan_parquet(Path(root) / MANIFEST_FILE).select("bucket", "part", "messages")
                        .filter(pl.col("part").is_not_null()).group_by("bucket", "part").agg(pl.col("messages").sum())
                        .sort("bucket", "part"), root)
                if (Path(root) / MANIFEST_FILE).exists() else pl.DataFrame(schema={"bucket": pl.UInt16, "part": pl.String,
                                                                                    "messages": pl.UInt32}))
    per_bucket = per_part.group_by("bucket", maintain_order=True).agg("part", pl.col("messages").sum())
    # A new group starts where the messages before a bucket pass a multiple of `rows`.
    before = per_bucket["messages"].cast(pl.Int64).cum_sum() - per_bucket["messages"].cast(pl.Int64)
    group = (before // max(rows, 1)).to_list()
    out: dict[int, list[str]] = {}
    for g, parts in zip(group, per_bucket["part"].to_list()):  # one iteration per bucket
        out.setdefault(g, []).extend(parts)
    return list(out.values())


def scan_dataset(root: str | Path, table: str = "messages", *, buckets: Iterable[int] | None = None) -> pl.LazyFrame:
    """A LazyFrame over one table of the dataset at ``root`` (all buckets, or those given).

    Nothing is read until the frame is collected, and only the parts of the
    buckets asked for.

    Parameters
    ----------
    root
        A dataset folder (:func:`~panto_analytics.dataset.write_dataset`).
    table
        ``"messages"`` (the message frame, each session's rows contiguous and in
        ``seq`` order, as :func:`~panto_analytics.read_sessions` gives it),
        ``"sessions"`` or ``"compactions"``.
    buckets
        Only these buckets; None: all.

    Returns
    -------
    pl.LazyFrame
        The table's rows in its schema (``schema.py``), sessions grouped by bucket.

    Examples
    --------
    >>> from panto_analytics.dataset.write import dataset_example
    >>> scan_dataset(dataset_example()).select("session_id", "role", "words").collect().rows()
    [('s', 'user', 1)]
    """
    if table not in TABLES:
        raise ValueError(f"table is one of {', '.join(TABLES)}, got {table!r}")
    if not is_dataset(root):
        raise InputError(root, None, f"not a dataset folder (no {INFO_FILE}; "
                         "`panto-analytics ingest PATH... --dataset DIR` writes one)", skippable=False)
    parts = [p for ps in bucket_parts(root, buckets).values() for p in ps]
    return _scan([part_path(root, table, p) for p in parts], table)
