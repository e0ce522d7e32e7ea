"""The ``replay --cost`` benchmark (benchmarks.replay_cost) in one process, on a few synthetic sessions."""
from __future__ import annotations

import re

from benchmarks.replay_cost import main


def test_in_process_times_the_replay_and_the_bill(capsys):
    main(["--sessions", "6", "--window", "24k", "--budgets", "1k,4k", "--repeat", "2", "--in-process"])
    out = capsys.readouterr().out
    bill = re.search(r"the bill alone ([\d.]+) ms: \(replay call \+ bill\) / replay call ([\d.]+)x", out)
    assert bill is not None, out
    assert float(bill.group(1)) > 0 and float(bill.group(2)) > 1
    assert re.search(r"replay call [\d.]+ s, with --cost [\d.]+ s: [\d.]+x; load average", out), out
