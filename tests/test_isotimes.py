"""isotimes.iso_milliseconds against the formats' parsers: Polars' vectorized parse and Python's."""
from __future__ import annotations

import polars as pl
import pyarrow as pa
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from panto_analytics.formats import frame_builder
from panto_analytics.formats.columnar import checked_timestamps, iso_utc, parse_timestamps, to_datetime
from panto_analytics.formats.record_fields import parse_timestamp
from panto_analytics.isotimes import iso_milliseconds

#: Near the shape, or another shape of the same time.
ODD = ["2025-01-01T00:00:00Z", "2025-01-01T00:00:00.1234Z", "2025-01-01T00:00:00.123+00:00", "2025-01-01T00:00:00.123z",
       "2025-01-01 00:00:00.123Z", "2025-01-01T00:00:00,123Z", "٢٠٢٥-01-01T00:00:00.123Z", "2025-1-01T00:00:00.1234Z"]


def _python_ms(text: str) -> int | None:
    """What the line-by-line readers make of ``text``: :func:`.record_fields.parse_timestamp` through
    :class:`.frame_builder.FrameBuilder`."""
    ts = parse_timestamp(text)
    return None if ts is None else frame_builder._timestamps([ts]).cast(pl.Int64)[0]


@st.composite
def iso_milliseconds_like(draw) -> str:
    """``YYYY-MM-DDTHH:MM:SS.fffZ`` at and around the edges of each field (leap days, month ends, 23:59:59)."""
    year = draw(st.one_of(st.sampled_from(["0000", "0001", "0004", "0100", "1900", "2000", "2024", "2025", "2100",
                                           "2400", "9999"]), st.integers(0, 9999).map(lambda y: str(y).zfill(4))))
    month, day = draw(st.integers(0, 13)), draw(st.one_of(st.sampled_from([0, 1, 28, 29, 30, 31, 32]), st.integers(1, 31)))
    hour, minute, second = (draw(st.sampled_from(edges)) for edges in ([0, 23, 24], [0, 59, 60], [0, 59, 60]))
    milli = draw(st.integers(0, 999))
    return f"{year}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{milli:03}Z"


_MILLISECONDS = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$"


@settings(max_examples=examples(500))
@given(texts=st.one_of(st.lists(iso_milliseconds_like(), min_size=1, max_size=2),
                       st.lists(st.one_of(iso_milliseconds_like(), st.sampled_from(ODD), st.text(max_size=30), st.none(),
                                          st.integers(0, 10**12)), min_size=1, max_size=6)))
def test_iso_milliseconds_reads_its_shape_as_the_parsers_do(texts):
    # A value for all or None; a value only where every one is of its shape, a real time the vectorized parse
    # takes (iso_utc) and Python reads the same.
    ms = iso_milliseconds(texts)
    strings = all(isinstance(t, str) for t in texts)
    frame = pl.DataFrame({"t": texts if strings else [None]}, schema={"t": pl.String}).with_columns(
        p=to_datetime(pl.col("t")), ok=iso_utc(pl.col("t")) & pl.col("t").str.contains(_MILLISECONDS))
    taken = strings and bool(frame["ok"].fill_null(False).all())
    assert (ms is not None) == taken, texts
    if ms is not None:
        assert ms.tolist() == frame["p"].cast(pl.Int64).to_list() == [_python_ms(t) for t in texts]


@pytest.mark.parametrize(("text", "taken"), [
    ("2000-02-29T00:00:00.000Z", True), ("2100-02-29T00:00:00.000Z", False), ("2024-02-29T23:59:59.999Z", True),
    ("2025-04-30T00:00:00.000Z", True), ("2025-04-31T00:00:00.000Z", False), ("2025-01-01T00:00:60.000Z", False),
    ("0001-01-01T00:00:00.000Z", True), ("0000-12-31T00:00:00.000Z", False), ("2025-01-01T00:00:00.000+00:00", False),
])
def test_iso_milliseconds_at_the_edges(text, taken):
    ms = iso_milliseconds([text])
    assert (ms is not None) == taken
    if taken:
        assert ms.tolist() == [_python_ms(text)]


@settings(max_examples=examples(300))
@given(texts=st.lists(st.one_of(iso_milliseconds_like(), st.none()), max_size=6), cut=st.integers(0, 2),
       large=st.booleans())
def test_an_arrow_array_reads_as_its_values_do(texts, cut, large):
    # Nulls let through (0, told apart by the array's validity); sliced arrays; string and large_string.
    array = pa.array(texts, pa.large_string() if large else pa.string()).slice(min(cut, len(texts)))
    values = array.to_pylist()
    ms = iso_milliseconds(array)
    valid = [v for v in values if v is not None]
    assert (ms is None) == (iso_milliseconds(valid) is None)
    if ms is not None:
        assert [m for m, v in zip(ms.tolist(), values) if v is not None] == iso_milliseconds(valid).tolist()
        assert [m for m, v in zip(ms.tolist(), values) if v is None] == [0] * (len(values) - len(valid))


@settings(max_examples=examples(300))
@given(texts=st.lists(st.one_of(iso_milliseconds_like(), st.none(), st.sampled_from(ODD)), max_size=6))
def test_the_columnar_timestamps_are_the_vectorized_parse_s(texts):
    # parse_timestamps and checked_timestamps read the recorders' shape in array operations: the same as Polars' parse.
    array = pa.array(texts, pa.string())
    frame = pl.DataFrame({"t": texts}, schema={"t": pl.String})
    parsed = frame.select(to_datetime(pl.col("t")))["t"]
    assert parse_timestamps(array).equals(parsed, check_names=True) and parse_timestamps(array).dtype == parsed.dtype
    checked, bad = checked_timestamps(array)
    assert checked.equals(parsed, check_names=True) and checked.dtype == parsed.dtype
    assert bad.tolist() == (~frame.select(iso_utc(pl.col("t")).fill_null(True))["t"]).to_list()
