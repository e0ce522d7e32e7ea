"""Where the Claude Code fast path's CPU goes, step by step, in one process.

``python -m benchmarks.claude_code_split`` copies the real Claude Code
recordings of ``../shared/realdata`` ``--copies`` times with fresh ids (as
``benchmarks.whole_process`` does), reads them all with
``formats.claude_code.fast.read_frames`` ``--rounds`` times, and prints the
best CPU time of the whole read and of each step (reading the files,
decoding them into the declared shapes, records and blocks into columns, the
tool calls' targets, words and bytes, the state machine and the frame), with
the load average. Each step is timed by a wrapper around the function that
does it, so a step that calls another includes it (the frame includes the
targets and the words).
"""
from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from .real_formats import write_copies

__all__ = ["charged", "charged_reads", "split"]

REPO = Path(__file__).resolve().parent.parent

#: ``(module attribute of formats.claude_code.fast, what it does)``, in the order of the read.
STEPS = [
    ("read_together", "reading the files"),
    ("_lines", "finding the lines"),
    ("decode_file", "decoding into the shapes (msgspec)"),
    ("_Columns", "records and blocks into columns"),
    ("_state", "the state machine (window expressions)"),
    ("_declined", "the files declined"),
    ("_assemble", "the frame (targets and words included)"),
    ("refs_column", "  the tool calls' targets (refs)"),
    ("block_words", "  words (each block's, once)"),
    ("serialized_bytes", "  summarizer-request bytes"),
]


def charged(spent: dict[str, float], name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function``, adding the CPU seconds of each call to ``spent[name]`` (a step timed where it is called).

    >>> spent: dict[str, float] = {}
    >>> charged(spent, "sum", sum)([1, 2]), list(spent)
    (3, ['sum'])
    """
    def run(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            spent[name] = spent.get(name, 0.0) + time.process_time() - start
    return run


def charged_reads(owners: dict[str, Any], read: Callable[[], list], rounds: int) -> dict[str, Any]:
    """Best CPU seconds over ``rounds`` of ``read()`` (as ``total``) and of each function ``owners`` names
    (``{name: the module or class it is an attribute of}``), each :func:`charged` while the reads run and put
    back after; the messages of the frames ``read`` returns, and the files it declined (None).
    """
    spent: dict[str, float] = {}
    originals = {name: vars(owner)[name] for name, owner in owners.items()}
    best: dict[str, float] = {}
    try:
        for name, function in originals.items():
            setattr(owners[name], name, charged(spent, name, function))
        for _ in range(rounds):
            spent.clear()
            start = time.process_time()
            frames = read()
            spent["total"] = time.process_time() - start
            for name, seconds in spent.items():
                best[name] = min(best.get(name, seconds), seconds)
    finally:
        for name, function in originals.items():
            setattr(owners[name], name, function)
    return {"seconds": best, "messages": sum(f.height for f in frames if f is not None),
            "declined": sum(f is None for f in frames)}


def split(paths: list[Path], rounds: int) -> dict[str, Any]:
    """Best CPU seconds of ``read_frames`` over ``paths`` and of each of :data:`STEPS`."""
    from panto_analytics.formats.claude_code import fast
    from panto_analytics.formats.contract import SourceFile

    return charged_reads({name: fast for name, _ in STEPS},
                         lambda: fast.read_frames([SourceFile(p, "claude-code") for p in paths]), rounds)


@click.command()
@click.option("--copies", type=click.IntRange(min=1), default=37, show_default=True,
              help="Copies of the real Claude Code recordings (about 4 MB each; 37: about 150 MB).")
@click.option("--rounds", type=click.IntRange(min=1), default=3, show_default=True, help="Reads; the best of each.")
def main(copies: int, rounds: int) -> None:
    """Where the Claude Code fast path's CPU goes, step by step, in one process (best CPU time of each)."""
    source = REPO.parent / "shared" / "realdata" / "claude-code"
    if not source.is_dir():
        raise click.UsageError(f"no real recordings at {source}")
    with tempfile.TemporaryDirectory(prefix="panto-split-") as tmp:
        paths = write_copies(source, copies, Path(tmp))
        size = sum(p.stat().st_size for p in paths)
        got = split(paths, rounds)
    load = os.getloadavg()
    click.echo(f"{len(paths)} files, {size / 1e6:.0f} MB of Claude Code ({copies} copies), {got['messages']:,} "
               f"messages, {got['declined']} declined; best CPU of {rounds}; load average "
               f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    seconds = got["seconds"]
    click.echo(f"  {'read_frames, in all':<44}{seconds['total']:6.3f} s")
    for name, what in STEPS:
        if name in seconds:
            click.echo(f"  {what:<44}{seconds[name]:6.3f} s")


if __name__ == "__main__":
    main()
