"""The default ``jobs`` of an in-process read is never more work than ``jobs=1`` below the pool's size (issue 31
item 10): the same batches, parsed in this process, no pool started.

Issue 31 measured ``jobs=1`` faster than the default on 177 MB (2.72 s against 3.11 s); below
:data:`parallel.MIN_PARALLEL_BYTES` (256 MB) both run the same calls (cProfile's call counts of a 300-file read
differ only in ``default_jobs``/``launched_workers``), so that difference was the machine's load. This test keeps
it so: a pool, or any other step only the default takes, would fail it.
"""
from __future__ import annotations

import pytest
from conftest import DATA

from panto_analytics.ingest import _schedule as schedule
from panto_analytics.ingest import parallel, pipeline, read_sessions
from panto_analytics.ingest.cache import FileKey


class _NoPool:
    def __init__(self, *args, **kwargs):
        raise AssertionError("a read below the pool's size started a worker pool")


def test_the_default_reads_as_jobs_1_does_below_the_pools_size(monkeypatch):
    monkeypatch.setattr(parallel, "ProcessPoolExecutor", _NoPool)
    seen: dict[object, list] = {}
    real_batches = schedule.batches

    def batches(keys, jobs, pool_from, **kw):
        got = real_batches(keys, jobs, pool_from, **kw)
        seen[jobs] = [[k.path for k in b] for b in got]
        return got

    monkeypatch.setattr(schedule, "batches", batches)
    assert not parallel.launched()
    default, one = read_sessions(DATA), read_sessions(DATA, jobs=1)
    assert default.equals(one) and default.height > 0
    assert seen[None] == seen[1] and len(seen) == 2


@pytest.mark.parametrize("jobs", [None, 1])
def test_a_read_below_the_pools_size_is_parsed_here(monkeypatch, jobs):
    here = []
    real = pipeline._parse_batch
    monkeypatch.setattr(pipeline, "_parse_batch", lambda task: here.append(len(task[0])) or real(task))
    read_sessions(DATA, jobs=jobs)
    assert sum(here) == len(list(DATA.rglob("*.jsonl")))


def _keys(size: int, path: str = "s.jsonl", n: int = 4) -> list[FileKey]:
    return [FileKey(path, path, size // n, 0, 0) for _ in range(n)]


@pytest.mark.parametrize("cores", [1, 2])
def test_files_with_a_fast_path_start_no_pool_on_two_cores_however_big(cores):
    """On 2 cores the fast paths' threads take both: a pool only adds its start (313 MB: 5.26-7.75x the floor
    with it, 4.68-5.08x without; schedule.FAST_POOL_MIN_CORES)."""
    for size in (schedule.SLOW_PARALLEL_BYTES, parallel.MIN_PARALLEL_BYTES, 10 * parallel.MIN_PARALLEL_BYTES):
        assert schedule.pool_threshold(_keys(size), "canonical", cores=cores) == schedule.NO_POOL


def test_more_cores_share_big_reads_and_slow_files_share_sooner(tmp_path):
    big = 2 * parallel.MIN_PARALLEL_BYTES
    assert schedule.pool_threshold(_keys(big), "canonical", cores=schedule.FAST_POOL_MIN_CORES) == \
        parallel.MIN_PARALLEL_BYTES
    # files no adapter reads with a fast path (here: a format none knows) are Python's alone: a pool sooner
    odd = tmp_path / "hook.jsonl"
    odd.write_text('{"hook": "PreToolUse"}\n')
    assert schedule.pool_threshold(_keys(big, str(odd)), None, cores=2) == schedule.SLOW_PARALLEL_BYTES
    assert schedule.pool_threshold(_keys(schedule.SLOW_PARALLEL_BYTES - 1, str(odd)), None, cores=2) == \
        parallel.MIN_PARALLEL_BYTES   # too small for a pool either way
