"""columnar.read_together: each file's bytes as open_session_file reads them, newline-terminated, in one buffer."""
from __future__ import annotations

import gzip

from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from panto_analytics.formats.base import BOM, SourceFile, open_session_file
from panto_analytics.formats.columnar import read_together

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
