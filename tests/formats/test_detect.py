"""detect_format: its first look at a file's head (one read) answers as the line-by-line sniffing does."""
from __future__ import annotations

import glob

import pytest
from conftest import REPO, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import panto_analytics.formats as formats
from panto_analytics.errors import InputError
from panto_analytics.formats import detect_format

#: Real first lines of every format (and some that are no format's), from the fixtures.
_LINES = sorted({line for path in glob.glob(str(REPO / "tests/fixtures/**/*.jsonl"), recursive=True)
                 for line in open(path, "rb").readlines()[:3]})
_LINE = st.sampled_from(_LINES) | st.sampled_from([b"\n", b"  \n", b"{\n", b"not json\n", b"[]\n", b"{}\n"]) \
    | st.builds(lambda n: b'{"type":"x","pad":"' + b"a" * n + b'"}\n', st.integers(0, 3 * formats._HEAD_BYTES))


def _judged(path):
    try:
        return detect_format(path)
    except InputError as e:
        return ("error", str(e))


@settings(max_examples=examples(150), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_LINE, max_size=25), bom=st.booleans(), cut=st.booleans())
def test_the_head_answers_as_the_lines_do(tmp_path, monkeypatch, lines, bom, cut):
    data = (b"\xef\xbb\xbf" if bom else b"") + b"".join(lines)
    if cut and data.endswith(b"\n"):
        data = data[:-1]
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    with_head = _judged(path)
    with monkeypatch.context() as m:
        m.setattr(formats, "_known_from_head", lambda _: None)
        assert _judged(path) == with_head


@pytest.mark.parametrize("name", ["s.jsonl.gz", "folder"])
def test_what_the_head_cannot_read_is_left_to_the_lines(tmp_path, name):
    path = tmp_path / name
    if name == "folder":
        path.mkdir()
    else:
        path.write_bytes(b"{}\n")
    assert formats._known_from_head(path) is None
