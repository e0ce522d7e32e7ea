"""The console script's own process: it ends at once (:func:`panto_analytics.cli.app.leave`), its output whole.

Each check runs a fresh process, as the console script runs, since ending
the process is what is checked.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import DATA

from panto_analytics.ingest import read_sessions

#: A process that ends through :func:`leave` with ``CODE`` after writing ``LINES`` lines to stdout (buffered, more
#: than one buffer's worth) and a file it closes; ``THREAD`` starts a thread of its own that is still running.
_SCRIPT = """
import sys, threading, time
from panto_analytics.cli.app import leave
code, lines, thread, path = eval(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
for i in range(lines):
    print(f"line {i}")
with open(path, "w") as f:
    f.write("written")
if thread:
    threading.Thread(target=time.sleep, args=(0.3,)).start()
leave(code)
"""


def _run(tmp_path, code: object, lines: int = 0, thread: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _SCRIPT, repr(code), str(lines), "1" if thread else "0",
                           str(tmp_path / "out.txt")], capture_output=True, text=True)


@pytest.mark.parametrize(("code", "status"), [(None, 0), (0, 0), (1, 1), (2, 2), (True, 1)])
def test_the_status_is_the_one_system_exit_gives(tmp_path, code, status):
    assert _run(tmp_path, code).returncode == status


def test_buffered_output_is_all_written_before_the_end(tmp_path):
    done = _run(tmp_path, 0, lines=20_000)
    assert done.returncode == 0 and done.stdout.splitlines() == [f"line {i}" for i in range(20_000)]
    assert (tmp_path / "out.txt").read_text() == "written"


def test_a_message_or_a_running_thread_ends_the_usual_way(tmp_path):
    message = _run(tmp_path, "no good")
    assert message.returncode == 1 and "no good" in message.stderr
    assert _run(tmp_path, 3, thread=True).returncode == 3   # Python waits for the thread, then exits with 3


def test_the_console_script_prints_its_whole_frame_to_a_pipe(tmp_path):
    script = "import sys; from panto_analytics.cli import run; sys.exit(run())"
    done = subprocess.run([sys.executable, "-c", script, "ingest", str(DATA), "--no-cache", "-o", "-",
                           "--output-format", "ndjson"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = done.stdout.splitlines()
    assert len(rows) == read_sessions(DATA).height > 100 and all(r.startswith("{") and r.endswith("}") for r in rows)


@pytest.mark.parametrize("closed", [">&-", "2>&-", ">&- 2>&-"])
def test_a_closed_stdout_or_stderr_still_ends_at_once_with_the_file_written(tmp_path, closed):
    # A shell's ``>&-`` leaves the process without fd 1 (or 2): Python sets sys.stdout (sys.stderr) to None.
    script = "import sys; from panto_analytics.cli import run; sys.exit(run())"
    out = tmp_path / "out.csv"
    done = subprocess.run(["bash", "-c", f'"$@" {closed}', "bash", sys.executable, "-c", script, "splits",
                           str(DATA), "-b", "8k", "-q", "-o", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert out.read_text().count("\n") > 1
    version = subprocess.run(["bash", "-c", f'"$@" {closed}', "bash", sys.executable, "-c", script, "--version"],
                             capture_output=True, text=True)
    assert version.returncode == 0, version.stderr[-2000:]


#: The console script on ``replay DATASET``, sent SIGTERM (as ``timeout`` sends it) by itself while its spill folder
#: exists: at the first rows spilled, so that the signal comes at a known point, not after a guessed wait.
_SIGTERM_SCRIPT = """
import os, signal, sys
from panto_analytics.cli import run
from panto_analytics.dataset.spill import Spill
append = Spill.append
def append_then_term(self, name, frame):
    append(self, name, frame)
    assert os.listdir(os.environ["TMPDIR"])   # the spill folder is there
    os.kill(os.getpid(), signal.SIGTERM)
Spill.append = append_then_term
sys.argv[0] = "panto-analytics"
sys.exit(run())
"""


def test_sigterm_ends_the_command_as_ctrl_c_does_and_leaves_no_spill_folder(tmp_path):
    from click.testing import CliRunner

    from panto_analytics.cli import main
    from panto_analytics.cli.app import SIGTERM_STATUS

    dataset, spills = tmp_path / "ds", tmp_path / "tmp"
    spills.mkdir()
    assert CliRunner().invoke(main, ["ingest", str(DATA), "--dataset", str(dataset), "--buckets", "2"]).exit_code == 0
    done = subprocess.run([sys.executable, "-c", _SIGTERM_SCRIPT, "replay", str(dataset), "--window", "64k", "-b",
                           "8k", "-o", str(tmp_path / "t.csv")], capture_output=True, text=True,
                          env={**os.environ, "TMPDIR": str(spills)})
    assert done.returncode == SIGTERM_STATUS == 143, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and list(spills.iterdir()) == []
    assert not (tmp_path / "t.csv").exists()
