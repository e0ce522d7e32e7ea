"""columnar.read_together: each file's bytes as open_session_file reads them, newline-terminated, in one buffer;
the timestamps a fast path takes: read by the vectorized parse exactly as :func:`.record_fields.parse_timestamp` reads them."""
from __future__ import annotations

import gzip

import polars as pl
import pyarrow as pa
import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from panto_analytics.errors import IngestReport, InputError
from panto_analytics.formats import adapter, frame_builder
from panto_analytics.formats.columnar import checked_timestamps, parse_timestamps, read_together
from panto_analytics.formats.contract import SourceFile
from panto_analytics.formats.record_fields import parse_timestamp
from panto_analytics.formats.session_files import BOM, open_session_file

_BYTES = st.lists(st.sampled_from([b"{}\n", b'{"a":1}', b"\n", b"   ", b"x" * 70_000, BOM, b"\xc3\xa9\n"]), max_size=6)


@settings(max_examples=examples(60), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(contents=st.lists(st.tuples(st.booleans(), st.booleans(), _BYTES.map(b"".join)), min_size=1, max_size=5))
def test_each_span_holds_what_open_session_file_reads(tmp_path, contents):
    sources = []
    for k, (bom, compressed, data) in enumerate(contents):
        data = (BOM if bom else b"") + data
        path = tmp_path / f"{k}.jsonl{'.gz' if compressed else ''}"
        path.write_bytes(gzip.compress(data) if compressed else data)
        sources.append(SourceFile(str(path), "canonical"))
    buffer, spans = read_together(sources)
    for src, span in zip(sources, spans):
        with open_session_file(src.file) as f:
            expected = f.read()
        if expected and not expected.endswith(b"\n"):
            expected += b"\n"
        assert (bytes(buffer[span[0]:span[1]]) if span is not None else b"") == expected


#: A header, a line each format refuses, and a line it reads.
_LINES = {
    "pi": (b'{"type":"session","id":"s","timestamp":"2026-01-02T10:00:00Z","cwd":"/w"}\n', b'{"type":"message","message":5}\n',
           b'{"type":"message","message":{"role":"user","content":"hi"}}\n'),
    "codex": (b'{"timestamp":"2026-01-02T10:00:00Z","type":"session_meta","payload":{"id":"x"}}\n',
              b'{"type":"response_item","payload":5}\n',
              b'{"timestamp":"2026-01-02T10:00:00Z","type":"turn_context","payload":{}}\n'),
}


@pytest.mark.parametrize("fmt", sorted(_LINES))
def test_errors_come_in_file_order_with_a_damaged_compressed_file(tmp_path, monkeypatch, fmt):
    """A fast path declines a damaged compressed file (the line reader reports it, in file order): the first
    error is a.jsonl's line 2, before b.jsonl.gz's damage; under skip_invalid the damage is counted once."""
    from panto_analytics.ingest import read_sessions

    header, bad, good = _LINES[fmt]
    (tmp_path / "a.jsonl").write_bytes(header + bad)
    packed = gzip.compress(header.replace(b'"id":"', b'"id":"gz') + good * 400)
    (tmp_path / "b.jsonl.gz").write_bytes(packed[:len(packed) // 2])

    def read() -> tuple:
        with pytest.raises(InputError) as strict:
            read_sessions([tmp_path], format=fmt, jobs=1)
        report = IngestReport()
        frame = read_sessions([tmp_path], format=fmt, skip_invalid=True, report=report, jobs=1)
        return str(strict.value), frame, dict(report.skipped)

    fast = read()
    assert fast[0].startswith(f"{tmp_path / 'a.jsonl'}:2: "), fast[0]
    monkeypatch.setattr(adapter(fmt), "read_frames", None)
    line = read()
    assert fast[0] == line[0] and fast[2] == line[2] and fast[1].equals(line[1])
    assert [n for (file, _), n in fast[2].items() if file.endswith(".gz")] == [1], fast[2]


# -- timestamps: the vectorized parse against Python's ----------------------------------

#: ISO-8601 times that fit the fast paths' shape (or nearly) but that Python's parser and Polars' may read apart.
ODD_TIMESTAMPS = [
    "2025-01-01T00:00:60Z", "2025-06-30T23:59:60.5Z", "0000-01-01T00:00:00Z", "2025-13-01T00:00:00Z",
    "2025-00-10T00:00:00Z", "2025-04-31T00:00:00Z", "2025-02-29T00:00:00Z", "2025-01-01T24:00:00Z",
    "2025-01-01T00:60:00Z", "2025-01-01T00:00:00.1234567Z", "2025-01-01T00:00:00+01:00", "2025-01-01T00:00:00-00:00",
    "2025-01-01T00:00:00,5Z", "٢٠٢٥-01-01T00:00:00Z", "2025-01-01 00:00:00Z", "2025-01-01T00:00:00z",
]

_DIGITS = st.sampled_from("0123456789")


@st.composite
def iso_like(draw) -> str:
    """Strings shaped like ``YYYY-MM-DDTHH:MM:SS[.f]Z``, each field anywhere in its digits' range, and other ends."""
    def num(lo: int, hi: int, width: int) -> str:
        return str(draw(st.integers(lo, hi))).zfill(width)
    year = draw(st.one_of(st.sampled_from(["0000", "0001", "1970", "2024", "2025", "2100", "9999"]),
                          st.text(_DIGITS, min_size=4, max_size=4)))
    frac = draw(st.one_of(st.just(""), st.text(_DIGITS, min_size=0, max_size=9).map(lambda d: "." + d)))
    end = draw(st.sampled_from(["Z", "+00:00", "-00:00", "+01:00", "z", ""]))
    return f"{year}-{num(0, 13, 2)}-{num(0, 32, 2)}T{num(0, 25, 2)}:{num(0, 61, 2)}:{num(0, 61, 2)}{frac}{end}"


def _python_ms(text: str) -> int | None:
    """What the line-by-line readers make of ``text``: :func:`.record_fields.parse_timestamp` through
    :class:`.frame_builder.FrameBuilder`."""
    ts = parse_timestamp(text)
    return None if ts is None else frame_builder._timestamps([ts]).cast(pl.Int64)[0]


@settings(max_examples=examples(300))
@given(texts=st.lists(st.one_of(iso_like(), st.sampled_from(ODD_TIMESTAMPS)), min_size=1, max_size=8))
def test_a_timestamp_the_fast_paths_take_is_read_as_python_reads_it(texts):
    values = pa.array(texts, pa.string())
    checked, bad = checked_timestamps(values)
    parsed = parse_timestamps(values).cast(pl.Int64).to_list()
    assert checked.cast(pl.Int64).to_list() == parsed
    for text, is_bad, ms in zip(texts, bad, parsed):
        if not is_bad:
            assert ms is not None and ms == _python_ms(text), text


@pytest.mark.parametrize("text", ODD_TIMESTAMPS)
def test_times_python_refuses_are_not_taken(text):
    if parse_timestamp(text) is None:
        assert checked_timestamps(pa.array([text]))[1].tolist() == [True]
