"""Reading JSON Lines typed in whole chunks (:class:`.typed.TypedLines`) against the line-by-line reading of
:func:`.jsonl.records`: the same lines, the same records, the same skips and errors, whatever the chunk size."""
from __future__ import annotations

from pathlib import Path

import msgspec
import orjson
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from panto_analytics.errors import IngestReport, InputError
from panto_analytics.formats import jsonl
from panto_analytics.formats.base import SourceFile
from panto_analytics.formats.columnar import valid_utf8
from panto_analytics.formats.typed import TypedLines, one_per_line


class Rec(msgspec.Struct):
    a: int | None = None


DECODER = msgspec.json.Decoder(Rec)
ANY = msgspec.json.Decoder()

#: Lines, good and bad (one holds a line break, so it is two lines). Left out: a number beyond a double in
#: a field the shape does not declare, which msgspec skips and orjson rejects (``typed.plain``).
FRAGMENTS = [b'{"a":1}', b'{"a":"x"}', b"{}", b"", b" ", b'{"a":\n1}', b'{"a":1} {"a":2}', b"[1]", b'{"a":1}\r',
             b"{", b"[", b'\xef\xbb\xbf{"a":1}', b'{"b":"\xff"}', b'{"a":"\xe9"}', b'{"a":1e400}', b'  {"a":2}',
             b'{"a":3}  ', b"1", b'"s"', b'{"a":true}', b'{"b":[{"c":{}}]}', b'{"a":1,"a":null}', b'{"a":12',
             b'{"b":"caf\xc3\xa9"}', b'{"b":"\\ud800"}', b'{"a":18446744073709551616}', b'{"b":{}\n}', b'{"b":\n{}}']


def _read(path: Path, skip_invalid: bool, chunk: int | None) -> tuple[object, ...]:
    report = IngestReport()
    src = SourceFile(path, "codex", skip_invalid=skip_invalid, report=report)
    out: list[object] = []
    try:
        if chunk is None:
            out.extend(jsonl.records(src))
        else:
            saved, jsonl.CHUNK = jsonl.CHUNK, chunk
            try:
                lines = TypedLines(src, DECODER)
                for lineno, rec in lines:
                    if isinstance(rec, Rec):  # typed: its line is that record, as orjson reads it
                        plain = orjson.loads(lines.raw(lineno))
                        assert rec.a == plain.get("a")
                        rec = plain
                    out.append((lineno, rec))
            finally:
                jsonl.CHUNK = saved
    except InputError as e:
        out.append(("error", e.line, e.reason))
    return out, dict(report.skipped)


@settings(max_examples=examples(300))
@given(lines=st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=12), final=st.booleans(),
       chunk=st.sampled_from([1, 16, 40, 300, jsonl.CHUNK]), skip_invalid=st.booleans())
def test_chunks_read_as_lines(tmp_path_factory, lines, final, chunk, skip_invalid):
    path = tmp_path_factory.mktemp("typed") / "s.jsonl"
    path.write_bytes(b"\n".join(lines) + (b"\n" if final else b""))
    assert _read(path, skip_invalid, chunk) == _read(path, skip_invalid, None)


#: Lines that end one value and start another, or hold a line break inside one ("}" then "]"; ":" then "{").
BOUNDARIES = [b"{}", b'{"a":1}', b'{"a":1} {"a":2}', b'{"a":1}{"a":2}', b'{"b":{}\n}', b'{"b":[{}\n]}',
              b'{"b":\n{}}', b'{"a":1}\r', b' {"a":1}', b""]


@settings(max_examples=examples(300))
@given(lines=st.lists(st.sampled_from(BOUNDARIES + FRAGMENTS[:8]), min_size=1, max_size=6), final=st.booleans())
def test_one_per_line_means_one_value_per_line(lines, final):
    """Where :func:`one_per_line` counts *n* lines and they decode as *n* values, each line is one of them."""
    chunk = b"\n".join(lines) + (b"\n" if final else b"")
    n = one_per_line(chunk)
    try:
        values = ANY.decode_lines(chunk)
    except msgspec.DecodeError:
        return
    if n is not None and len(values) == n:
        assert values == [ANY.decode(line) for line in chunk.split(b"\n")[:n]]


def test_valid_utf8_is_pythons_rule():
    for data in (b"", b"abc", b"caf\xc3\xa9", b"\xe9", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
                 b"\xf0\x9f\x98\x80", b"\xe2\x82", b"a\x00b", "\U0010ffff".encode()):
        try:
            data.decode()
            expected = True
        except UnicodeDecodeError:
            expected = False
        assert valid_utf8(data) is expected, data
