"""The replacements benchmark on a tiny corpus: each library path reads what the replacement reads, and the
report gives both paths' figures for each (no timing: the figures here are not callgrind's)."""
from __future__ import annotations

import shutil

import pytest
from conftest import REALDATA
from polars.testing import assert_frame_equal

from benchmarks import replacements
from benchmarks.synth import write_corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("replacements")
    write_corpus(folder, 3, seed=5)
    return [folder]


@pytest.mark.parametrize("name", sorted(replacements.LIBRARY_PATHS))
def test_each_library_path_reads_the_same_frame(corpus, name):
    assert_frame_equal(replacements.run_command(corpus, name), replacements.run_command(corpus))


@pytest.mark.parametrize("name", sorted(replacements.LIBRARY_PATHS))
@pytest.mark.parametrize("fmt", ["claude-code", "codex", "pi"])
def test_each_library_path_reads_the_same_real_recordings(name, fmt):
    if not (REALDATA / fmt).is_dir():
        pytest.skip("no real recordings here")
    paths = [REALDATA / fmt]
    assert_frame_equal(replacements.run_command(paths, name), replacements.run_command(paths))


def test_the_report_gives_both_paths_of_each(corpus):
    seen: list[str | None] = []

    def count(paths, library):   # a stand-in for callgrind: one more for the library path
        seen.append(library)
        return 100 if library is None else 110 if library == "words" else 101

    rows = replacements.measure(corpus, ["json_words", "words"], count=count)
    assert seen == [None, "json_words", "words"]
    assert [(r["replacement"], r["replaced"], r["library"], r["keep"]) for r in rows] == [
        ("json_words", 100, 101, False), ("words", 100, 110, True)]


def test_the_measured_command_runs(corpus, capsys):
    replacements.main(["--run", "--library", "words", *map(str, corpus)])
    assert int(capsys.readouterr().out.split()[0]) == replacements.run_command(corpus).height > 0


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="no valgrind")
def test_callgrind_counts_a_whole_process(corpus):
    assert replacements.callgrind_instructions(corpus) > 0
