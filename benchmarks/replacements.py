"""Each hand-written replacement of a library function, against the library call, in the whole command it serves.

A replacement earns its place only with a gain of at least 5% of the whole
command (issue 31 item 9). The command is an ingest, in process, of a corpus
(``read_sessions(paths, cache=False, jobs=1)``: no cache, no forked worker,
so that every instruction is this process's), run once as it is and once with
one replacement swapped for the library call it replaced
(:data:`LIBRARY_PATHS`). Each run is a whole process (Python started, the
package imported, the corpus read) counted by ``valgrind --tool=callgrind``:
instructions, not seconds, so the figures repeat on a loaded machine.

The gain is the instructions the replacement saves, as a share of the whole
command with the library call (what the command would cost without it).

Command line (each replacement named, or all; ``--run`` is the measured
command itself)::

    python -m benchmarks.replacements CORPUS... [--replacement NAME]... [--json]

>>> sorted(LIBRARY_PATHS)
['json_words', 'words']
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import polars as pl

__all__ = ["LIBRARY_PATHS", "MIN_SHARE", "callgrind_instructions", "library_path", "main", "measure", "run_command"]

#: The least gain, as a share of the whole command, that keeps a replacement.
MIN_SHARE = 0.05


def _words() -> Iterator[None]:
    """Words counted by Polars' ``str.count_matches`` of runs of non-separators, not the packed-bit counter."""
    import numpy as np

    from panto_analytics.formats import blocks
    from panto_analytics.formats.canonical import fast
    from panto_analytics.frame import tool_targets

    def count(strings: object) -> np.ndarray:
        counted = pl.Series(strings).str.count_matches(r"[^ \t\n\r]+").fill_null(0)
        return counted.to_numpy().astype(np.int64)

    with _patched([(blocks, "count_words_arrow"), (fast, "count_words_arrow"), (tool_targets, "count_words_arrow")],
                  count):
        yield


def _json_words() -> Iterator[None]:
    """Canonical texts decoded by msgspec into ``str`` and made an Arrow array, not counted from their JSON."""
    import msgspec
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from panto_analytics.formats.canonical import fast, shapes
    from panto_analytics.frame.json_words import RawTexts

    def texts(strings: list[str]) -> RawTexts:
        array = pa.array(strings, pa.large_string())
        utf8 = pc.binary_length(array).to_numpy(zero_copy_only=False).astype(np.int64)
        return RawTexts(array, utf8, np.ones(len(strings), dtype=bool))

    decoder = msgspec.json.Decoder(shapes.Header | shapes.MessageRecord[str])
    with _patched([(shapes, "_LINES")], decoder), _patched([(fast, "raw_texts")], texts):
        yield


#: Each replacement by name: a context in which the command takes the library call instead.
LIBRARY_PATHS: dict[str, Callable[[], contextlib.AbstractContextManager[None]]] = {
    "json_words": contextlib.contextmanager(_json_words),
    "words": contextlib.contextmanager(_words),
}


@contextlib.contextmanager
def _patched(places: Sequence[tuple[object, str]], value: object) -> Iterator[None]:
    """Each ``(module, name)`` of ``places`` bound to ``value`` for the time of the context."""
    saved = [getattr(module, name) for module, name in places]
    for module, name in places:
        setattr(module, name, value)
    try:
        yield
    finally:
        for (module, name), old in zip(places, saved):
            setattr(module, name, old)


def library_path(name: str | None) -> contextlib.AbstractContextManager[None]:
    """The command with replacement ``name`` swapped for its library call (None: as it is)."""
    return contextlib.nullcontext() if name is None else LIBRARY_PATHS[name]()


def run_command(paths: Sequence[Path], library: str | None = None) -> pl.DataFrame:
    """The measured command: an ingest of ``paths`` in this process, no cache, no worker."""
    from panto_analytics import read_sessions

    with library_path(library):
        return read_sessions(list(paths), cache=False, jobs=1)


def callgrind_instructions(paths: Sequence[Path], library: str | None = None) -> int:
    """Instructions of a whole process running :func:`run_command`, counted by callgrind (all its threads)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-m",
                   "benchmarks.replacements", "--run", *(["--library", library] if library else []), *map(str, paths)]
        env = {**os.environ, "POLARS_MAX_THREADS": "1", "PANTO_ANALYTICS_WORKERS": "1"}
        subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for line in out.read_text().splitlines():
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError(f"{out}: no instruction total")


def measure(paths: Sequence[Path], names: Sequence[str],
            count: Callable[[Sequence[Path], str | None], int] = callgrind_instructions) -> list[dict]:
    """For each replacement of ``names``: the whole command's instructions as it is and with the library call,
    and the gain as a share of the latter (``count``: the instructions of one run, callgrind's by default)."""
    replaced = count(paths, None)
    rows = []
    for name in names:
        library = count(paths, name)
        share = (library - replaced) / library
        rows.append({"replacement": name, "replaced": replaced, "library": library, "gain_share": share,
                     "keep": share >= MIN_SHARE})
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.replacements", description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", nargs="+", type=Path, help="recordings or folders of them")
    ap.add_argument("--replacement", action="append", choices=sorted(LIBRARY_PATHS),
                    help="a replacement to measure (default: each)")
    ap.add_argument("--json", action="store_true", help="the figures as JSON")
    ap.add_argument("--run", action="store_true", help="run the measured command once (what callgrind counts)")
    ap.add_argument("--library", choices=sorted(LIBRARY_PATHS), help="with --run: the library call for this one")
    args = ap.parse_args(argv)
    if args.run:
        frame = run_command(args.corpus, args.library)
        print(f"{frame.height} messages")
        return
    if shutil.which("valgrind") is None:
        ap.error("valgrind is not installed (apt-get install -y valgrind)")
    rows = measure(args.corpus, args.replacement or sorted(LIBRARY_PATHS))
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    for r in rows:
        print(f"{r['replacement']}: {r['replaced']:,} instructions as it is, {r['library']:,} with the library call:"
              f" saves {r['gain_share']:.1%} of the command ({'keep' if r['keep'] else 'under 5%: library call'})")


if __name__ == "__main__":
    main()
