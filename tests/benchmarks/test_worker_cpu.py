"""The worker CPU benchmark reads each process's CPU: forked workers are seen, and none when they are off."""
from __future__ import annotations

import sys

import pytest
from conftest import DATA

from benchmarks import worker_cpu
from panto_analytics.ingest import parallel


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.skipif(parallel.default_jobs() < 2, reason="one core: no worker is launched")
def test_the_main_process_and_each_worker_are_measured():
    found = worker_cpu.critical_paths([DATA], rounds=1, modes=("fork", "off"))
    fork, off = found["fork"], found["off"]
    assert len(fork["workers"]) >= 2 and all(w >= 0 for w in fork["workers"]) and fork["main"] > 0
    assert fork["critical"] == pytest.approx(fork["main"] + max(fork["workers"]))
    assert off["workers"] == [] and off["critical"] == off["total"] == off["main"] > 0
