"""Options shared by several commands, as decorators (sqlite-utils style)."""
from __future__ import annotations

import functools
import sys
from pathlib import Path

import click
import polars as pl

from ..budgets import parse_budgets
from ..errors import IngestReport, InputError
from ..formats import ADAPTERS


def input_options(fn):
    """PATH... plus --format and --skip-invalid: what to read and how strictly."""
    fn = click.option("--skip-invalid", is_flag=True,
                      help="Skip bad lines instead of stopping; skips are counted and reported on stderr.")(fn)
    fn = click.option("--format", "format_", type=click.Choice(sorted(ADAPTERS)), default=None,
                      help="Force a source format instead of detecting it per file.")(fn)
    fn = click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))(fn)
    return fn


class BudgetList(click.ParamType):
    name = "BUDGETS"

    def convert(self, value, param, ctx):
        if isinstance(value, list):
            return value
        try:
            return parse_budgets(value)
        except ValueError as e:
            self.fail(str(e), param, ctx)


def budgets_option(default: str | None = None):
    return click.option("--budgets", "-b", type=BudgetList(), required=default is None, default=default,
                        help="Token budgets (keep_verbatim): a list like 8k,20k,1.5M or START:STOP:N.")


_WRITERS = {".csv": "write_csv", ".parquet": "write_parquet", ".json": "write_json",
            ".ndjson": "write_ndjson", ".jsonl": "write_ndjson"}


def _check_output(ctx, param, value: Path | None) -> Path | None:
    # Checked before any work, so a typo never costs a whole run.
    if value is not None and value.suffix.lower() not in _WRITERS:
        raise click.BadParameter(f"cannot tell the format from {value.name!r}: use .csv, .parquet, .json or .ndjson")
    return value


def output_option(fn):
    """-o FILE: write csv, parquet or json (by extension) instead of a table on stdout."""
    return click.option("--output", "-o", type=click.Path(path_type=Path), default=None, callback=_check_output,
                        help="Write to FILE; .csv, .parquet, .json or .ndjson chooses the format. "
                             "Without it a table is printed.")(fn)


def write_frame(df: pl.DataFrame, output: Path | None) -> None:
    """Write ``df`` to ``output`` by extension, or print it as a table."""
    if output is None:
        with pl.Config(tbl_rows=min(len(df), 200), tbl_cols=-1, tbl_width_chars=200,
                       tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True):
            click.echo(df)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    getattr(df, _WRITERS[output.suffix.lower()])(output)
    click.echo(f"wrote {len(df)} rows to {output}", err=True)


def report_skips(report: IngestReport) -> None:
    """Tell stderr how many bad lines were skipped, and where."""
    if report.n_skipped:
        click.echo(f"skipped {report.n_skipped} invalid line(s):", err=True)
        for row in report.skipped_frame().iter_rows(named=True):
            click.echo(f"  {row['file']}: {row['lines']} x {row['reason']}", err=True)


def friendly_errors(fn):
    """Turn bad input into one clear line on stderr and exit code 1, never a traceback."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except InputError as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(1)
    return wrapper
