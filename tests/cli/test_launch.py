"""The parsing workers the command line launches: the same frame, summary and cache as parsing in process.

Run through the installed entry point in fresh processes (in process, the
parsers are already imported and no worker is launched).
"""
from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import entry_points

import polars as pl
import pytest
from conftest import DATA

from panto_analytics.cli.launch import WORKERS_ENV

(ENTRY,) = entry_points(group="console_scripts", name="panto-analytics")


def cli(*args: str, workers: str | None = None) -> str:
    module, _, attr = ENTRY.value.partition(":")
    env = {k: v for k, v in os.environ.items() if k != WORKERS_ENV} | ({WORKERS_ENV: workers} if workers else {})
    done = subprocess.run([sys.executable, "-c", f"import sys; from {module} import {attr}; sys.exit({attr}())",
                           *args], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.parametrize("workers", [None, "spawn"])  # forked workers (the default), one spawned worker
def test_the_workers_read_what_the_main_process_reads_and_fill_the_same_cache(tmp_path, workers):
    by_jobs = {}
    for jobs in ("1", "2"):
        cache, out = tmp_path / f"cache-{jobs}", tmp_path / f"messages-{jobs}.parquet"
        summary = cli("ingest", str(DATA), "-q", "--cache", str(cache), "--jobs", jobs, "-o", str(out), workers=workers)
        again = cli("ingest", str(DATA), "-q", "--cache", str(cache), "--jobs", jobs, workers=workers)
        by_jobs[jobs] = (summary, again, pl.read_parquet(out))
    (one, one_again, one_frame), (two, two_again, two_frame) = by_jobs["1"], by_jobs["2"]
    assert one == two and "0 cached" in two
    assert one_again == two_again and "0 parsed" in two_again  # the workers' packs serve the re-read
    assert one_frame.equals(two_frame) and two_frame.height > 0


def test_an_unknown_workers_setting_is_a_usage_error(tmp_path):
    module, _, attr = ENTRY.value.partition(":")
    done = subprocess.run([sys.executable, "-c", f"import sys; from {module} import {attr}; sys.exit({attr}())",
                           "ingest", str(DATA), "--no-cache", "-q"], capture_output=True, text=True,
                          env={**os.environ, WORKERS_ENV: "threads"})
    assert done.returncode == 2 and WORKERS_ENV in done.stderr and "Traceback" not in done.stderr


def test_bad_input_found_on_the_worker_is_one_line_naming_file_and_line(tmp_path):
    bad = tmp_path / "s.jsonl"
    bad.write_text('{"type":"message","role":"user","content":[{"type":"text","text":"hi"}]}\n{"type": nope}\n'
                   '{"type":"message","role":"user","content":[{"type":"text","text":"again"}]}\n')
    module, _, attr = ENTRY.value.partition(":")
    done = subprocess.run([sys.executable, "-c", f"import sys; from {module} import {attr}; sys.exit({attr}())",
                           "ingest", str(bad), "--no-cache", "-q", "--jobs", "2"], capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.startswith(f"error: {bad}:2: ") and "Traceback" not in done.stderr
