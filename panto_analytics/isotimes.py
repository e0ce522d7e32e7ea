"""The recorders' ISO-8601 UTC timestamps (``2025-01-02T03:04:05.678Z``), read in array operations.

pi, Codex and Claude Code write every time in one shape; :func:`iso_milliseconds`
reads a whole column of that shape at once, checked as the parsers check it, and
leaves any other to the formats' general parse.

Measured (2026-12-04, issue 31 item 9): ``python -m benchmarks.replacements C``, C the first 10 files by
name (3.6 MB) of ``python -m benchmarks.synth DIR --sessions 150 --seed 1``; callgrind instructions of the
whole in-process ingest ``read_sessions(C, cache=False, jobs=1)``, Python's start and the imports included
(2,552.5 M for an empty corpus): 2,798.2 M with :func:`iso_milliseconds`, 2,813.2 M with Polars'
``str.to_datetime`` (:func:`.formats.columnar.to_datetime`) alone. It saves 0.5% of the whole command (5.8% of
the command less its start; about 4.8% of the whole command at 177 MB at that rate): under the 5% that keeps
a hand-written replacement, so due to be replaced by the library call.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["iso_milliseconds"]


#: The shape :func:`iso_milliseconds` reads: ``YYYY-MM-DDTHH:MM:SS.fffZ``, as the recorders write it.
_ISO_MS = b"0000-00-00T00:00:00.000Z"
_ISO_DIGITS = np.array([k for k, c in enumerate(_ISO_MS) if c == ord("0")])
_ISO_MARKS = np.array([k for k, c in enumerate(_ISO_MS) if c != ord("0")])


def iso_milliseconds(values: list[Any] | pa.Array) -> np.ndarray | None:
    """The UTC milliseconds since 1970 of ``values`` when every one is a string ``YYYY-MM-DDTHH:MM:SS.fffZ``
    naming a real time of a year from 1 on, read in array operations; else None (the caller parses them otherwise).

    ``values``: Python values, or an Arrow string array whose nulls are let through (0 at each: its validity
    tells them apart). Where it gives a value it is the one :func:`.formats.columnar.to_datetime` and
    :func:`.formats.record_fields.parse_timestamp` give, and :func:`.formats.columnar.iso_utc` holds: the shape is one
    its pattern allows, and its date and time are checked here as both parsers check them (month 1-12, a day
    the month has, hour 0-23, minute and second 0-59).

    >>> iso_milliseconds(["1970-01-01T00:00:01.500Z", "2024-02-29T23:59:59.999Z"]).tolist()
    [1500, 1709251199999]
    >>> iso_milliseconds(["2025-02-29T00:00:00.000Z"]), iso_milliseconds(["2025-01-01T00:00:00Z"]), iso_milliseconds([None])
    (None, None, None)
    >>> iso_milliseconds(pa.array([None, "1970-01-01T00:00:01.500Z"])).tolist()
    [0, 1500]
    """
    chars = _characters(values) if isinstance(values, pa.Array) else _joined(values)
    if chars is None or not (chars[:, _ISO_MARKS] == np.frombuffer(_ISO_MS, dtype=np.uint8)[_ISO_MARKS]).all():
        return None
    digits = chars[:, _ISO_DIGITS] - np.uint8(ord("0"))   # a byte below "0" wraps above 9
    if not (digits <= 9).all():
        return None
    d = digits.astype(np.int64)
    year, month, day = d[:, 0] * 1000 + d[:, 1] * 100 + d[:, 2] * 10 + d[:, 3], d[:, 4] * 10 + d[:, 5], d[:, 6] * 10 + d[:, 7]
    hour, minute, second = d[:, 8] * 10 + d[:, 9], d[:, 10] * 10 + d[:, 11], d[:, 12] * 10 + d[:, 13]
    milli = d[:, 14] * 100 + d[:, 15] * 10 + d[:, 16]
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
    month_days = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])[np.clip(month, 0, 12)] + (leap & (month == 2))
    if not ((year >= 1) & (month >= 1) & (month <= 12) & (day >= 1) & (day <= month_days) & (hour <= 23)
            & (minute <= 59) & (second <= 59)).all():
        return None
    # Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil), years from March.
    y = year - (month <= 2)
    era = y // 400
    of_era = y - era * 400
    of_year = (153 * (month + np.where(month > 2, -3, 9)) + 2) // 5 + day - 1
    days = era * 146097 + of_era * 365 + of_era // 4 - of_era // 100 + of_year - 719468
    milliseconds = (((days * 24 + hour) * 60 + minute) * 60 + second) * 1000 + milli
    if isinstance(values, pa.Array) and values.null_count:   # the rows read were the valid ones
        every = np.zeros(len(values), dtype=np.int64)
        every[np.asarray(values.is_valid())] = milliseconds
        return every
    out: np.ndarray = milliseconds
    return out


def _joined(values: list[Any]) -> np.ndarray | None:
    """Python strings all as long as the shape, as a matrix of their bytes (a row each); None for any other."""
    width = len(_ISO_MS)
    try:
        text = "".join(values)
    except TypeError:   # not every one a string
        return None
    # As long as the shape all together and none longer: each as long as it.
    if len(text) != width * len(values) or (values and max(map(len, values)) != width) or not text.isascii():
        return None
    return np.frombuffer(text.encode("ascii"), dtype=np.uint8).reshape(len(values), width)


def _characters(values: pa.Array) -> np.ndarray | None:
    """The valid strings of an Arrow string array, all as long as the shape, as a matrix of their bytes."""
    width = len(_ISO_MS)
    values = values.cast(pa.large_string())
    _, offsets_buf, data_buf = values.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[values.offset:values.offset + len(values) + 1]
    starts, lengths = offsets[:-1], np.diff(offsets)
    if values.null_count:
        valid = np.asarray(values.is_valid())
        starts, lengths = starts[valid], lengths[valid]
    if not len(starts):
        return np.zeros((0, width), dtype=np.uint8)
    if data_buf is None or not (lengths == width).all():
        return None
    data = np.frombuffer(data_buf, dtype=np.uint8)
    if not values.null_count:   # one after another
        return data[int(offsets[0]):int(offsets[-1])].reshape(len(values), width)
    out: np.ndarray = data[starts[:, None] + np.arange(width)]
    return out
