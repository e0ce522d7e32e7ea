"""``ingest``: read a corpus, fill the cache (or write a dataset), and say what was read."""
from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..defaults import DEFAULT_BUCKETS, MAX_BUCKETS
from ..errors import WHOLE_FILE, IngestReport
from ..phrases import counted
from ._notes import cache_warnings_on_stderr, command, report_skips
from ._options import input_options
from ._output import check_output_path, file_output_option, output_option, to_stdout, write_frame
from ._reading import read_input_corpus, read_settings, session_files

if TYPE_CHECKING:
    from ..ingest.cache import CacheStats

__all__ = ["format_summary", "ingest"]


#: Reasons and record types listed one by one in the summary; the rest are summed up.
_MAX_ITEMS = 20


@command()
@input_options
@output_option(what="Without it, only the summary is printed. With '-', the summary goes to stderr.")
@file_output_option("--sessions", dest="sessions_out",
                    help="Also write the sessions table (one row per session) to FILE (.csv, .parquet, .json, .ndjson).")
@file_output_option("--compactions", dest="compactions_out",
                    help="Also write the recorded compaction events to FILE (.csv, .parquet, .json, .ndjson).")
@click.option("--dataset", "dataset_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              callback=lambda ctx, param, value: value and check_output_path(value, None, "--dataset", folder=True),
              help="Write (or bring up to date) a Parquet dataset partitioned by session in DIR, for corpora "
                   "larger than memory; a second run reads only new and changed files (docs/scale.md).")
@click.option("--buckets", type=click.IntRange(1, MAX_BUCKETS), default=None,
              help=f"Buckets of a new --dataset [default: {DEFAULT_BUCKETS}]; an existing one keeps its own.")
@click.option("--replace", is_flag=True,
              help="With --dataset: drop the files DIR holds that PATHS do not name [default: keep them, so "
                   "another folder is added beside them].")
def ingest(paths, format_, skip_invalid, output, sessions_out, compactions_out, dataset_dir, buckets, replace):
    """Read the sessions in PATHS, fill the cache, and say what was read.

    Ends with a summary: files, sessions, messages, API calls, skipped lines
    by reason, ignored (non-conversation) records by type, and what the cache
    did. With -o, also writes the message frame (-o - writes it to stdout,
    and the summary to stderr); with --sessions and --compactions, those
    tables.

    \b
    Examples:
      panto-analytics ingest ~/.claude/projects ~/.codex/sessions
      panto-analytics ingest data/ -o messages.parquet --sessions sessions.csv
      panto-analytics ingest logs/ --skip-invalid --no-cache
      panto-analytics ingest ~/.claude/projects --dataset corpus.ds/
      panto-analytics ingest ~/.codex/sessions --dataset corpus.ds/   # added beside what it holds
    """
    if dataset_dir is not None:
        _ingest_dataset(paths, format_, skip_invalid, dataset_dir, buckets, replace,
                        (output, sessions_out, compactions_out))
        return
    if buckets is not None or replace:
        raise click.UsageError(f"{'--buckets' if buckets is not None else '--replace'} is for --dataset")
    if output is None and to_stdout(None):  # --output-format alone: the frame to stdout, as every command does
        output = Path("-")
    corpus = read_input_corpus(paths, format_, skip_invalid, list_skips=False)  # the summary counts them
    report_skips(corpus.report)  # and stderr says where
    for frame, target in ((corpus.messages, output), (corpus.sessions, sessions_out),
                          (corpus.compactions, compactions_out)):
        if target is not None:
            write_frame(frame, target)
    click.echo(format_summary(corpus.report, corpus.cache), err=to_stdout(output))


def _ingest_dataset(paths, format_, skip_invalid, dataset_dir: Path, buckets: int | None, replace: bool,
                    outputs) -> None:
    """``ingest --dataset``: the dataset written chunk by chunk from the cache-backed read, then the summary.

    What happens to the files DIR already holds that PATHS do not name is said before anything is written.
    """
    if any(o is not None for o in outputs):
        raise click.UsageError("--dataset writes the tables into DIR; -o, --sessions and --compactions hold the corpus "
                               "in memory: use one or the other")
    from ..dataset import is_dataset, read_manifest, write_dataset
    from ..dataset.write import files_outside
    from ..ingest.paths import default_locations

    report = IngestReport()
    session_files(paths, format_)  # nothing to read is an error before any work
    named = list(paths) or default_locations()
    if is_dataset(dataset_dir):
        outside = files_outside(read_manifest(dataset_dir), named)
        if outside.height:
            what = (f"{counted(outside.height, 'file')} ({counted(outside['session_id'].drop_nulls().len(), 'session')}) that "
                    "PATHS do not name")
            click.echo(f"note: {dataset_dir} holds {what}: " + (
                "--replace drops them" if replace else "kept beside PATHS' sessions (--replace drops them)"),
                err=True)
    with cache_warnings_on_stderr():
        update = write_dataset(named, dataset_dir, buckets=buckets, format=format_, skip_invalid=skip_invalid,
                               report=report, replace=replace, **read_settings())
    report_skips(report)
    if update.files_read:  # the summary counts what was read this time; nothing read, nothing to count
        click.echo(format_summary(report, update.cache))
    click.echo(update.describe())


def format_summary(report: IngestReport, cache: CacheStats | None) -> str:
    """The ingest summary: counts first, right-aligned, then what they count.

    >>> from panto_analytics.ingest.cache import CacheStats
    >>> r = IngestReport(files=2, sessions=2, messages=1200, api_calls=300)
    >>> r.skip("a.jsonl", "malformed JSON: unexpected character: line 1 column 5 (char 4)")
    >>> r.skip("b.jsonl", "malformed JSON: unexpected character: line 1 column 9 (char 8)")
    >>> r.skip("c.json", "whole file skipped: not JSONL")
    >>> r.ignore("claude-code", "progress", 1)
    >>> print(format_summary(r, CacheStats(hits=1, misses=1)))
        2  files
        2  sessions
    1,200  messages
      300  API calls
        2  skipped lines
        2    malformed JSON: unexpected character
        1  file skipped whole
        1    not JSONL
        1  ignored record
        1    claude-code: progress
           cache: 1 cached, 1 parsed, 0 rebuilt
    """
    from ..phrases import plural_of

    by_reason: dict[str, int] = {}
    whole: dict[str, int] = {}
    for (_, reason), n in report.skipped.items():
        if reason.startswith(WHOLE_FILE):
            reason = reason.removeprefix(WHOLE_FILE).removeprefix(":").strip()
            whole[reason] = whole.get(reason, 0) + n
            continue
        reason = _WHERE_IN_LINE.sub("", reason)
        by_reason[reason] = by_reason.get(reason, 0) + n
    ignored = {f"{fmt}: {kind}": n for (fmt, kind), n in report.ignored.items()}
    n_ignored, n_whole = sum(ignored.values()), sum(whole.values())
    rows: list[tuple[int | None, str]] = [
        (report.files, plural_of(report.files, "file")), (report.sessions, plural_of(report.sessions, "session")),
        (report.messages, plural_of(report.messages, "message")), (report.api_calls, plural_of(report.api_calls, "API call")),
        (report.n_skipped_lines, plural_of(report.n_skipped_lines, "skipped line")), *_items(by_reason),
        *([(n_whole, plural_of(n_whole, "file") + " skipped whole"), *_items(whole)] if whole else []),
        (n_ignored, plural_of(n_ignored, "ignored record")), *_items(ignored),
    ]
    if cache is None:
        rows.append((None, "cache: off"))
    else:
        what = f"cache: {cache.hits:,} cached, {cache.misses:,} parsed, {cache.rebuilt:,} rebuilt"
        if cache.write_errors:
            what += f", {cache.write_errors:,} not written"
        rows.append((None, what))
    width = max(len(f"{n:,}") for n, _ in rows if n is not None)
    return "\n".join(f"{'' if n is None else format(n, ','):>{width}}  {label}" for n, label in rows)


#: Where in its line orjson found the problem: dropped, so that one reason is one row.
_WHERE_IN_LINE = re.compile(r": line \d+ column \d+ \(char \d+\)$")


def _items(counts: dict[str, int]) -> list[tuple[int, str]]:
    """Indented rows, biggest first, the tail summed up."""
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    rows = [(n, f"  {k}") for k, n in ranked[:_MAX_ITEMS]]
    rest = ranked[_MAX_ITEMS:]
    if rest:
        rows.append((sum(n for _, n in rest), f"  ({len(rest)} more)"))
    return rows
