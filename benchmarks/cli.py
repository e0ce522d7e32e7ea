"""``python -m benchmarks``: ingest speed, frame size and sweep speed against libpanto, in one run.

``panto-analytics bench`` runs this command too, from a source checkout.
"""
from __future__ import annotations

import sys

import click
import orjson

from .sizes import CLAUDE_SESSIONS, REAL_COPIES, REREAD_FILES, SMALL_FILES


@click.command(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--sessions", "-n", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Synthetic sessions to generate.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the synthetic corpus.")
@click.option("--budgets", "n_budgets", type=click.IntRange(min=1), default=64, show_default=True,
              help="Number of budgets in the sweep, evenly spaced from 0 to 200k tokens.")
@click.option("--port-seconds", type=click.FloatRange(min=0), default=20.0, show_default=True,
              help="About how long the pure-Python reference port may run; it runs on a random "
                   "sample of sessions and is scaled to the corpus by message count.")
@click.option("--claude-sessions", type=click.IntRange(min=0), default=CLAUDE_SESSIONS, show_default=True,
              help="Synthetic Claude Code sessions for the second ingest corpus (about 0.75 MB each); "
                   "0 skips it.")
@click.option("--small-files", type=click.IntRange(min=0), default=SMALL_FILES, show_default=True,
              help="Small canonical files (about 60 KB each) for the many-files ingest and the cache's cost; "
                   "0 skips it.")
@click.option("--reread-files", type=click.IntRange(min=0), default=REREAD_FILES, show_default=True,
              help="Tiny files for the cached re-read of many unchanged files; 0 skips it.")
@click.option("--real-copies", type=click.IntRange(min=0), default=REAL_COPIES, show_default=True,
              help="Copies (with fresh ids) of the real pi and Codex recordings in ../shared, timed against "
                   "their orjson floor; 0 skips them.")
@click.option("--cost-messages", type=click.IntRange(min=0), default=1_000_000, show_default=True,
              help="Messages of the synthetic frame `cost` is timed on; 0 skips it.")
@click.option("--no-native", is_flag=True, help="Skip libpanto's native computeSplit even when ../shared is present.")
@click.option("--against", metavar="COMMIT", help="Also time this checkout's cold ingest against COMMIT's, side by "
              "side in fresh processes (python -m benchmarks.against, its defaults).")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON instead of a table.")
@click.option("--markdown", is_flag=True, help="Print docs/performance.md: the goals with the commit and load "
              "they were measured at, and the report.")
def bench(sessions, seed, n_budgets, port_seconds, claude_sessions, small_files, reread_files, real_copies,
          cost_messages, no_native, against, as_json, markdown):
    """Measure ingest, frame size and the budget sweep on a synthetic corpus.

    Writes SESSIONS synthetic sessions to a temporary folder, then prints side
    by side: cold ingest MB/s against an orjson parse-only floor, the cache
    re-read (once read_sessions has a cache), the message frame's bytes per
    message, and the time of a sweep over --budgets budgets against
    libpanto's native computeSplit looped over the same budgets (when
    ../shared is present) and against the pure-Python reference port in
    benchmarks/. The ingest and cache figures
    are measured again, with the same goals, on --claude-sessions synthetic
    Claude Code transcripts, written as a projects tree that ccusage
    (ccusage daily --json --offline, version 20.0.24) reads too when it is
    installed (PANTO_CCUSAGE names it, else PATH). The cost of a cache on a
    cold read, the ingest of --small-files small files and a cached re-read
    of --reread-files unchanged files follow, then pi and Codex: --real-copies
    copies of their real recordings against their orjson floor. Then `cost`: day by day against ccusage
    (daily --json --offline -z UTC, with ccusage's own prices) on ../shared/realdata/claude-code (else the
    synthetic tree), and its time over --cost-messages messages. Each goal is marked PASS or
    MISS, and the splits are checked against both references.

    \b
    Examples:
      python -m benchmarks
      python -m benchmarks --sessions 50 --budgets 16 --json
      python -m benchmarks --against main --markdown > docs/performance.md
      panto-analytics bench --claude-sessions 0
    """
    from .bench import format_report, run_bench  # Polars and the package: loaded once there is work

    progress = (lambda line: click.echo(f"... {line}", err=True)) if sys.stderr.isatty() else (lambda line: None)
    results = run_bench(sessions, seed, n_budgets, port_seconds=port_seconds,
                        shared=not no_native, claude_sessions=claude_sessions, small_files=small_files,
                        reread_files=reread_files, real_copies=real_copies, cost_messages=cost_messages,
                        progress=progress)
    comparison = None
    if against:
        from . import against as compared

        results["against"] = compared.compare(against, progress=progress)
        comparison = compared.format_table(results["against"])
    if as_json:
        click.echo(orjson.dumps(results, option=orjson.OPT_INDENT_2).decode())
    elif markdown:
        from .performance_doc import bench_command, render

        ctx = click.get_current_context()
        shown = [p for p in bench.params if p.name not in ("as_json", "markdown", "help") and p.name in ctx.params]
        options = {max(p.opts, key=len): ctx.params[p.name] for p in shown}
        defaults = {max(p.opts, key=len): p.default for p in shown}
        click.echo(render(results, format_report(results), bench_command(options, defaults), comparison), nl=False)
    else:
        click.echo(format_report(results) + ("\n\n" + comparison if comparison else ""))
