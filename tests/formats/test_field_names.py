"""Errors in the file's own terms: each format's own field names, and encodings named with where they break."""
from __future__ import annotations

import pytest
from click.testing import CliRunner
from conftest import DATA, FIXTURES

import panto_analytics as pa
from panto_analytics.cli import main
from panto_analytics.errors import InputError

#: (fixture, the text of a counter in it, the same counter broken, the field the error must name)
BROKEN_COUNTERS = [
    (FIXTURES / "claude_code" / "blocks.jsonl", b'"input_tokens":900', b'"input_tokens":-900',
     "message.usage.input_tokens"),
    (FIXTURES / "claude_code" / "blocks.jsonl", b'"output_tokens":40', b'"output_tokens":"forty"',
     "message.usage.output_tokens"),
    (FIXTURES / "pi" / "v1.jsonl", b'"cacheRead":1000', b'"cacheRead":1000.5', "message.usage.cacheRead"),
    (FIXTURES / "codex" / "calls.jsonl", b'"last_token_usage":{"input_tokens":1000',
     b'"last_token_usage":{"input_tokens":1099511627776', "token_count.info.last_token_usage.input_tokens"),
    (sorted(DATA.glob("*.jsonl"))[0], b'"usage":{"input":', b'"usage":{"input":-', "usage.input"),
]


@pytest.mark.parametrize("fixture,good,bad,field", BROKEN_COUNTERS, ids=lambda v: getattr(v, "name", None))
def test_a_bad_usage_counter_names_the_files_own_field(tmp_path, fixture, good, bad, field):
    data = fixture.read_bytes()
    assert good in data
    f = tmp_path / fixture.name
    f.write_bytes(data.replace(good, bad, 1))
    with pytest.raises(InputError) as e:
        pa.read_sessions([f], jobs=1)
    assert e.value.reason.startswith(field + " ") and e.value.line is not None, str(e.value)


def test_a_byte_that_is_not_utf8_is_named_with_its_offset(tmp_path):
    lines = sorted(DATA.glob("*.jsonl"))[0].read_bytes().splitlines(keepends=True)
    at = lines[2].index(b'"text":"') + 8
    lines[2] = lines[2][:at] + b"caf\xe9 " + lines[2][at:]
    f = tmp_path / "latin1.jsonl"
    f.write_bytes(b"".join(lines))
    with pytest.raises(InputError) as e:
        pa.read_sessions([f])
    assert (e.value.line, e.value.reason) == (3, f"not UTF-8: byte 0xe9 at byte {at + 3} of the line")


@pytest.mark.parametrize("codec,endian", [("utf-16", "little-endian"), ("utf-16-le", "little-endian"),
                                          ("utf-16-be", "big-endian")])
def test_a_utf16_file_is_named_as_utf16(tmp_path, codec, endian):
    # orjson's own word for it was "surrogates not allowed".
    f = tmp_path / "wide.jsonl"
    f.write_bytes(sorted(DATA.glob("*.jsonl"))[0].read_text(encoding="utf-8").encode(codec))
    result = CliRunner().invoke(main, ["ingest", str(f), "--no-cache", "-q"])
    assert result.exit_code == 1
    assert result.output.startswith(f"error: {f}:1: the file is UTF-16 ({endian}), not UTF-8")
    assert len(result.output.strip().splitlines()) == 1
