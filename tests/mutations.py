"""Ways to break one line of a session file, for fuzz and differential tests (hypothesis draws them).

Each mutation keeps the file's other lines as they are: ``truncate`` cuts the
line short, ``retype`` gives one field (at the top or one level down) a value
of another JSON type, ``huge`` makes a number too big for 64 bits, ``big``
puts a number that JSON holds but no counter or timestamp does (2^32, 2^63, 2^64-1, 1e30, ...) where
the line has one, ``deep`` nests arrays deeper than Python recurses, ``bad utf-8`` inserts invalid
bytes, ``bom`` and ``crlf`` add a byte-order mark and a carriage return,
``drop`` empties the line.
"""
from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

__all__ = ["BIG_NUMBERS", "MUTATIONS", "mutate", "mutated_file", "mutated_lines", "mutation_test", "retype"]


def _deep(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = {"a": [value]}
    return value


def retype(line: bytes, data: st.DataObject) -> bytes:
    """One field of the record (at the top or one level down) given a value of another type."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return line
    if not isinstance(record, dict) or not record:
        return line
    target = record
    key = data.draw(st.sampled_from(sorted(target)))
    if isinstance(target[key], dict) and target[key] and data.draw(st.booleans()):
        target = target[key]
        key = data.draw(st.sampled_from(sorted(target)))
    target[key] = data.draw(st.sampled_from([None, True, -1, 1.5, 2**70, "x", [], {}, [[]], _deep(100)]))
    return json.dumps(record).encode()


MUTATIONS = ["truncate", "retype", "huge", "big", "deep", "bad utf-8", "bom", "crlf", "drop"]

#: Numbers JSON holds that no usage counter (u32) or timestamp (a datetime) holds.
BIG_NUMBERS = [b"4294967296", b"9007199254740993", b"9223372036854775808", b"18446744073709551615", b"1e30",
               b"-1e30", b"1.7e308"]


def mutate(line: bytes, how: str, data: st.DataObject) -> bytes:
    if how == "truncate":
        return line[: data.draw(st.integers(0, max(0, len(line) - 1)))]
    if how == "retype":
        return retype(line, data)
    if how == "huge":
        return line.replace(b"1", b"9" * 30, 1)
    if how == "big":
        numbers = [m for m in re.finditer(rb"(?<![\w.\"-])\d+(?![\w.\"])", line)]
        if not numbers:
            return line
        m = numbers[data.draw(st.integers(0, len(numbers) - 1))]
        return line[:m.start()] + data.draw(st.sampled_from(BIG_NUMBERS)) + line[m.end():]
    if how == "deep":
        return b'{"type": "message", "role": "user", "content": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    if how == "bad utf-8":
        at = data.draw(st.integers(0, len(line)))
        return line[:at] + b"\xff\xfe" + line[at:]
    if how == "bom":
        return b"\xef\xbb\xbf" + line
    if how == "crlf":
        return line + b"\r"
    return b""


def mutated_lines(source: Path, data: st.DataObject) -> bytes:
    """``source``'s bytes with one to three of its lines mutated (:func:`mutate`), as the draws say."""
    lines = source.read_bytes().splitlines()
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        at = data.draw(st.integers(0, len(lines) - 1), label="line")
        lines[at] = mutate(lines[at], data.draw(st.sampled_from(MUTATIONS), label="how"), data)
    return b"\n".join(lines) + b"\n"


@contextmanager
def mutated_file(source: Path, data: st.DataObject) -> Iterator[Path]:
    """:func:`mutated_lines` of ``source`` written to ``s.jsonl`` in a temporary folder, removed afterwards."""
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "s.jsonl"
        f.write_bytes(mutated_lines(source, data))
        yield f


def mutation_test(sources: list[Path], check: Callable[[Path], object], *, n: int = 60) -> Callable[..., None]:
    """A slow property test: ``check`` on a :func:`mutated_file` of one of ``sources``, ``examples(n)`` draws.

    A test module binds it under a test's name (``test_mutated_file = mutation_test(SOURCES, agree)``); what the
    test asserts is ``check``'s (its docstring is the test's).
    """
    @pytest.mark.slow
    @settings(max_examples=examples(n), deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(data=st.data())
    def test(data: st.DataObject) -> None:
        with mutated_file(data.draw(st.sampled_from(sources), label="source"), data) as f:
            check(f)
    test.__doc__ = check.__doc__
    return test
