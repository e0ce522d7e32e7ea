"""Reading JSON Lines typed in whole chunks (:class:`.typed.TypedLines`) against the line-by-line reading of
:func:`.jsonl.records`: the same lines, the same records, the same skips and errors, whatever the chunk size."""
from __future__ import annotations

from pathlib import Path

import msgspec
import orjson
import pytest
from conftest import REALDATA, examples
from hypothesis import given, settings
from hypothesis import strategies as st

from panto_analytics.errors import IngestReport, InputError
from panto_analytics.formats import jsonl, typed
from panto_analytics.formats.columnar import valid_utf8
from panto_analytics.formats.contract import SourceFile
from panto_analytics.formats.typed import TypedLines, beyond_double, beyond_double_spans, one_per_line, plain


class Rec(msgspec.Struct):
    a: int | None = None


DECODER = msgspec.json.Decoder(Rec)
ANY = msgspec.json.Decoder()

#: A number beyond a double in a field the shape does not declare (msgspec skips it, orjson refuses the line), and
#: numbers and hex ids that look like one but are not.
BEYOND = [b'{"b":1e400}', b'{"b":[-1.5E+309]}', b'{"b":{"c":' + b"9" * 310 + b"}}", b'{"b": \t2e0400,"a":1}',
          b'{"b":"3e456","a":1}', b'{"b":[1e99,1e-400]}']

#: Lines, good and bad (one holds a line break, so it is two lines).
FRAGMENTS = [b'{"a":1}', b'{"a":"x"}', b"{}", b"", b" ", b'{"a":\n1}', b'{"a":1} {"a":2}', b"[1]", b'{"a":1}\r',
             b"{", b"[", b'\xef\xbb\xbf{"a":1}', b'{"b":"\xff"}', b'{"a":"\xe9"}', b'{"a":1e400}', b'  {"a":2}',
             b'{"a":3}  ', b"1", b'"s"', b'{"a":true}', b'{"b":[{"c":{}}]}', b'{"a":1,"a":null}', b'{"a":12',
             b'{"b":"caf\xc3\xa9"}', b'{"b":"\\ud800"}', b'{"a":18446744073709551616}', b'{"b":{}\n}', b'{"b":\n{}}',
             *BEYOND]


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


def _accepted_typed(line: bytes) -> bool:
    """Whether msgspec takes ``line`` as a :class:`Rec` (skipping every field but ``a``)."""
    try:
        DECODER.decode(line)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False
    return True


#: JSON number tokens, from ordinary to far beyond a double: digits, a fraction, an exponent of up to five digits.
NUMBERS = st.builds(lambda sign, whole, frac, exp: sign + whole + frac + exp,
                    st.sampled_from(["", "-"]),
                    st.one_of(st.just("0"), st.from_regex(r"[1-9][0-9]{0,3}", fullmatch=True),
                              st.integers(200, 320).map(lambda n: "1" + "0" * n)),
                    st.one_of(st.just(""), st.from_regex(r"\.[0-9]{1,3}", fullmatch=True)),
                    st.one_of(st.just(""), st.from_regex(r"[eE][+-]?[0-9]{1,5}", fullmatch=True)))
WHITESPACE = st.sampled_from(["", " ", "\t", " \r "])


@settings(max_examples=examples(500))
@given(number=NUMBERS, before=WHITESPACE, after=WHITESPACE, where=st.sampled_from(["b", "[b]", "[1,b]", "{b}"]))
def test_a_number_orjson_refuses_where_msgspec_skips_it_is_found(number, before, after, where):
    """Every line whose skipped field holds a number orjson refuses is found (then read plain, as orjson reads it)."""
    value = where.replace("b", before + number + after).replace("{", '{"c":')
    line = ('{"a":1,"x":' + value + "}").encode()
    assert _accepted_typed(line)
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError:
        assert beyond_double(line), line
        assert not plain(line)
        assert _scanned(line), line


def _scanned(data: bytes, start: int = 0, end: int | None = None, block: int = 32) -> bool:
    """:func:`.typed.beyond_double`'s block scan (what a whole file gets), in blocks of ``block`` bytes."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(typed, "_BLOCK", block)
        return typed._scanned(data, [(start, len(data) if end is None else end)])[0]


@settings(max_examples=examples(300))
@given(text=st.from_regex(r"[0-9a-fA-F+.-]{0,40}", fullmatch=True), key=st.from_regex(r"[a-z]{1,3}", fullmatch=True))
def test_numbers_inside_strings_are_not_taken_for_numbers(text, key):
    """A string (a hex id, ``3e456``, ``-12E+999``) holds no number: a line is not declined for one."""
    line = ('{"' + key + '":"' + text + '","a":[1e99,-2.5E-30,0.1]}').encode()
    assert not beyond_double(line) and not _scanned(line) and not _scanned(line, block=64)


@settings(max_examples=examples(200))
@given(number=st.sampled_from(["1e400", "-2.5E+308", "9" * 310, "1" + "0" * 315 + "e-5"]), at=st.integers(0, 200),
       block=st.sampled_from([32, 64, 96]), text=st.from_regex(r"[0-9a-f]{0,300}", fullmatch=True))
def test_the_block_scan_finds_a_number_wherever_the_blocks_end(number, at, block, text):
    """A file is scanned in blocks: a number beyond a double is found across their ends, in a part of a buffer
    (a file of a batch) too, and nothing past the part is looked at."""
    filler = ('{"id":"' + text + '"}\n') * 3
    line = (filler[:at] + '{"b":' + number + "}\n" + filler).encode()
    assert _scanned(line, block=block) and beyond_double(line)
    clean = (filler[:at] + '{"b":1e99}\n' + filler).encode()
    assert not _scanned(clean, block=block) and not beyond_double(clean)
    assert not _scanned(clean + line, 0, len(clean), block) and _scanned(clean + line, len(clean), None, block)


def test_beyond_double_looks_at_a_part_of_a_buffer():
    data = b'{"a":"12e456"}\n{"b":1e400}\n'
    assert beyond_double(data) and beyond_double(data, 15) and not beyond_double(data, 0, 15)
    assert not beyond_double(b"") and beyond_double(b"1e400") and beyond_double(b" -1e400") and not beyond_double(b"1e99")
    assert not _scanned(b"") and _scanned(b"1e400") and _scanned(b" -1e400") and not _scanned(b"1e99")


#: Pieces a buffer is made of for :func:`beyond_double`: its classes of byte, long runs, numbers in and out of strings.
PIECES = st.one_of(st.sampled_from(list("0123456789.+-eE :,[ \t\r\n\"a{}x")),
                   st.builds(lambda c, n: c * n, st.sampled_from(list("9.-+e ")), st.integers(200, 215)),
                   NUMBERS, NUMBERS.map(lambda n: '"' + n + '"'))


@settings(max_examples=examples(300))
@given(pieces=st.lists(PIECES, max_size=40), cuts=st.lists(st.integers(0, 10**6), max_size=6), gaps=st.booleans())
def test_beyond_double_of_many_spans_at_once_is_beyond_double_of_each(pieces, cuts, gaps):
    data = "".join(pieces).encode()
    edges = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    spans = list(zip(edges, edges[1:]))
    if gaps:   # spans need not touch: leave every other one out
        spans = spans[::2]
    assert beyond_double_spans(data, spans) == [beyond_double(data, start, end) for start, end in spans]


def test_beyond_double_spans_in_a_bytearray_and_out_of_order():
    data = bytearray(b'{"a":1e400}\n{"b":"1e400"}\n')
    assert beyond_double_spans(data, [(0, 12), (12, 26)]) == [True, False] and beyond_double_spans(data, []) == []
    with pytest.raises(ValueError, match="in order"):
        beyond_double_spans(data, [(12, 26), (0, 12)])
    # Large and small spans in one call.
    filler = b'{"t":"' + b"3e456 -12E+999 " * 2000 + b'"}\n'
    big = bytearray(filler + b'{"a":1e400}\n' + filler + b'{"b":"1e400"}\n{"c":[-2.5E+308]}\n')
    cuts = [0, len(filler) + 12, len(big) - 34, len(big) - 20, len(big)]
    spans = list(zip(cuts, cuts[1:]))
    assert beyond_double_spans(big, spans) == [beyond_double(big, *s) for s in spans] == [True, False, False, True]


@pytest.mark.skipif(not REALDATA.is_dir(), reason="../shared/realdata is absent")
def test_no_real_recording_is_declined_for_it():
    paths = sorted(REALDATA.glob("**/*.jsonl"))
    assert paths and not [p for p in paths if beyond_double(p.read_bytes())]


@settings(max_examples=examples(300))
@given(pieces=st.lists(PIECES, min_size=1, max_size=40), cuts=st.lists(st.integers(0, 10**6), min_size=2, max_size=2),
       walk=st.sampled_from([1, 3, 64]))
def test_the_exponents_judged_at_once_are_each_judged_alone(pieces, cuts, walk):
    """:func:`.typed._exponents` (every candidate ``e`` of a scan at once, in NumPy) is :func:`.typed._exponent`
    of each, within its span, also where a run outlasts the NumPy walk and is walked on in Python."""
    import numpy as np

    raw = bytearray("".join(pieces).encode())
    start, end = sorted(c % (len(raw) + 1) for c in cuts)
    at = [i for i in range(start, end) if raw[i] in b"eE"]
    with pytest.MonkeyPatch.context() as m:
        m.setattr(typed, "_WALK", walk)
        verdict = typed._exponents(raw, np.frombuffer(raw, np.uint8), np.array(at, np.int64),
                                   np.full(len(at), start, np.int64), np.full(len(at), end, np.int64))
    assert verdict.tolist() == [typed._exponent(raw, e, start, end) for e in at]
