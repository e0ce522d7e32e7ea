"""pathnames: pathlib's spelling of a path, name and suffix, worked out on the string, against pathlib itself."""
from __future__ import annotations

from pathlib import Path

from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from panto_analytics.formats.session_files import session_stem
from panto_analytics.pathnames import file_name, path_stem, path_string, path_suffix

#: Paths made of the pieces pathlib respells: slashes, dots, "..", suffixes.
_PIECE = st.sampled_from(["", ".", "..", "a", "b.jsonl", ".gz", "s.jsonl.gz", "s.jsonl.zst", "x.", ".hidden", "~", "é"])
PATHS = st.lists(_PIECE, min_size=1, max_size=6).map("/".join) | st.text(alphabet="/.ab", max_size=12)


@settings(max_examples=examples(400))
@given(PATHS)
def test_the_strings_are_pathlibs(path):
    assert path_string(path) == str(Path(path))
    assert file_name(path) == Path(path).name
    assert path_suffix(path) == Path(path).suffix
    assert path_stem(path) == Path(path).stem
    assert path_string(Path(path)) == str(Path(path))


def _stem_with_pathlib(path: str) -> str:
    """``session_stem`` as it was written with ``Path`` (the oracle)."""
    name = Path(path).name
    for suffix in (".gz", ".zst"):
        name = name.removesuffix(suffix)
    return Path(name).stem


@settings(max_examples=examples(400))
@given(PATHS)
def test_session_stem_is_the_pathlib_one(path):
    assert session_stem(path) == _stem_with_pathlib(path)


def test_the_usual_path_is_returned_as_it_is():
    name = "/home/u/.claude/projects/p/s.jsonl"
    assert path_string(name) is name
