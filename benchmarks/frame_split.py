"""Where the shared frame step of the batched fast paths (pi, Codex) spends its CPU, step by step, in one process.

``python -m benchmarks.frame_split --format pi --copies 20 --rounds 5`` copies
the real recordings of the format in ``../shared/realdata`` ``--copies`` times
with fresh ids (:mod:`benchmarks.real_formats`), reads them all with the
format's ``read_frames`` ``--rounds`` times, and prints the best CPU time of
the whole read, of the frame step (``formats.fast_columns.Columns._frame``:
the Python lists the fast path filled turned into the message frame) and of
each of its parts, with the load average. Each part is timed by a wrapper
around the function that does it (the words include each block's, counted
once; the frame includes every part). Run it in two checkouts, one after the
other, to compare them.
"""
from __future__ import annotations

import importlib
import os
import tempfile
from pathlib import Path
from typing import Any

import click

from .claude_code_split import charged_reads
from .real_formats import write_copies

__all__ = ["STEPS", "split"]

REPO = Path(__file__).resolve().parent.parent

#: ``(owner in formats.fast_columns, attribute, what it does)``: the frame and its parts, in the order of the step.
STEPS = [
    ("Columns", "_frame", "the frame step, in all"),
    ("Columns", "_blocks", "  the blocks as one Arrow array"),
    ("", "block_words", "  each block's words"),
    ("", "serialized_bytes", "  summarizer-request bytes"),
    ("", "refs_column", "  the tool calls' targets (refs)"),
    ("Columns", "_timestamps", "  timestamps"),
]

#: The format's directory under ``realdata`` and its fast path's module.
FORMATS = {"pi": ("pi", "panto_analytics.formats.pi.fast"), "codex": ("codex", "panto_analytics.formats.codex.fast")}


def split(fmt: str, paths: list[Path], rounds: int) -> dict[str, Any]:
    """Best CPU seconds of ``read_frames`` of ``fmt`` over ``paths``, and of each of :data:`STEPS`."""
    from panto_analytics.formats import fast_columns
    from panto_analytics.formats.contract import SourceFile

    reader = importlib.import_module(FORMATS[fmt][1])
    owners = {name: getattr(fast_columns, owner) if owner else fast_columns for owner, name, _ in STEPS}
    return charged_reads(owners, lambda: reader.read_frames([SourceFile(p, fmt, skip_invalid=True) for p in paths]),
                         rounds)


@click.command()
@click.option("--format", "fmt", type=click.Choice(sorted(FORMATS)), default="pi", show_default=True)
@click.option("--copies", type=click.IntRange(min=1), default=20, show_default=True,
              help="Copies of the format's real recordings.")
@click.option("--rounds", type=click.IntRange(min=1), default=5, show_default=True, help="Reads; the best of each.")
def main(fmt: str, copies: int, rounds: int) -> None:
    """Where the shared frame step of pi's and Codex's fast paths spends its CPU (best CPU time of each part)."""
    source = REPO.parent / "shared" / "realdata" / FORMATS[fmt][0]
    if not source.is_dir():
        raise click.UsageError(f"no real recordings at {source}")
    with tempfile.TemporaryDirectory(prefix="panto-frame-split-") as tmp:
        paths = write_copies(source, copies, Path(tmp))
        size = sum(p.stat().st_size for p in paths)
        got = split(fmt, paths, rounds)
    load = os.getloadavg()
    click.echo(f"{len(paths)} files, {size / 1e6:.1f} MB of {fmt} ({copies} copies), {got['messages']:,} messages, "
               f"{got['declined']} declined; best CPU of {rounds}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    seconds = got["seconds"]
    click.echo(f"  {'read_frames, in all':<40}{seconds['total'] * 1000:7.1f} ms")
    for _, name, what in STEPS:
        if name in seconds:
            click.echo(f"  {what:<40}{seconds[name] * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
