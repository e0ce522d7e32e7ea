"""Reading many files: paths, parallel parsing, the report, errors from worker processes."""
from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import DATA, FIXTURES, REPO

import panto_analytics as pa
from panto_analytics.errors import STRAY, IngestReport, InputError
from panto_analytics.ingest import parallel
from panto_analytics.ingest import pipeline as ingest
from panto_analytics.ingest.cache import Cache
from panto_analytics.ingest.paths import expand_paths


def write_session(path: Path, n_turns: int, *, usage: bool = True) -> Path:
    lines = []
    for t in range(n_turns):
        lines.append({"type": "message", "role": "user", "content": [{"type": "text", "text": "w " * (t + 1)}]})
        lines.append({"type": "message", "role": "assistant", "content": [{"type": "text", "text": "ok"}],
                      **({"usage": {"input": 10 * (t + 1), "output": 1}} if usage else {})})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


@pytest.fixture
def corpus(tmp_path) -> Path:
    d = tmp_path / "corpus"
    (d / "sub").mkdir(parents=True)
    for i in range(6):
        write_session(d / f"s{i}.jsonl", 1 + i, usage=i != 2)
    write_session(d / "sub" / "deep.jsonl", 4)
    return d


@pytest.fixture
def always_parallel(monkeypatch):
    """Use a worker pool even for tiny inputs."""
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)


#: How long a test waits for a worker process to start before it fails (a safety net, never a pass condition).
WORKER_START_LIMIT_S = 600


@pytest.fixture
def worker_first(monkeypatch):
    """``worker_first()``: from now on, this process parses nothing until a worker has taken its first file.

    No timing involved: the caller waits for the worker to be handed the
    front of the queue (the biggest file), however long the worker takes
    to start. Returns the list of files parsed here.
    """
    def enable() -> list[str]:
        here: list[str] = []
        fed = threading.Event()
        real_parse, real_feed = ingest.parse_entries, parallel._Schedule.feed

        def feed(self, pool):
            real_feed(self, pool)
            fed.set()

        def parse_after_the_worker(paths, *args, **kwargs):
            assert fed.wait(WORKER_START_LIMIT_S), "no worker process started"
            here.extend(Path(p).name for p in paths)
            return real_parse(paths, *args, **kwargs)

        monkeypatch.setattr(parallel._Schedule, "feed", feed)
        monkeypatch.setattr(ingest, "parse_entries", parse_after_the_worker)
        return here
    return enable


@pytest.mark.slow
def test_parallel_equals_sequential(corpus, tmp_path, always_parallel, worker_first):
    seq_report, par_report = IngestReport(), IngestReport()
    sequential = pa.read_sessions(corpus, jobs=1, report=seq_report)
    here = worker_first()
    cache = Cache(tmp_path / "cache")
    parallel_ = pa.read_sessions(corpus, jobs=2, report=par_report, cache=cache)
    assert 0 < len(here) < 7  # both processes parsed files
    assert parallel_.equals(sequential)
    assert par_report == seq_report
    assert cache.stats.misses == 7 and cache.stats.written == 7  # entries written by whichever process parsed
    assert pa.read_sessions(corpus, jobs=2, cache=cache).equals(sequential)
    assert cache.stats.hits == 7


def test_error_in_any_process_names_the_file_and_line(corpus, always_parallel, worker_first):
    bad = corpus / "zz-bad.jsonl"
    write_session(bad, 30)  # the biggest file: queued first
    with bad.open("a") as f:
        f.write('{"type": "message", "role": "robot", "content": []}\n')
    here = worker_first()
    with pytest.raises(InputError) as e:
        pa.read_sessions(corpus, jobs=2)
    assert "zz-bad.jsonl" not in here  # the worker took the biggest file, and its error came back
    assert (e.value.path, e.value.line) == (str(bad), 61)
    assert "robot" in e.value.reason


def test_skips_counted_the_same_in_parallel(corpus, always_parallel):
    with (corpus / "s1.jsonl").open("a") as f:
        f.write("not json\n")
    seq, par = IngestReport(), IngestReport()
    assert pa.read_sessions(corpus, jobs=1, skip_invalid=True, report=seq).equals(
        pa.read_sessions(corpus, jobs=2, skip_invalid=True, report=par))
    assert seq == par and par.n_skipped == 1


def test_report_counts_api_calls_from_usage_when_the_format_records_none(corpus):
    report = IngestReport()
    df = pa.read_sessions(corpus, report=report, jobs=1)
    # sessions s0..s5 have 1..6 turns; s2 has no usage; sub/deep has 4 turns
    assert report.api_calls == (1 + 2 + 4 + 5 + 6) + 4
    assert report.files == report.sessions == 7 and report.messages == df.height


def test_expand_paths_drops_duplicates_through_links_and_dots(corpus, tmp_path):
    os.symlink(corpus / "s0.jsonl", corpus / "link.jsonl")
    os.symlink(corpus, tmp_path / "corpus-link")
    files = expand_paths([corpus, tmp_path / "corpus-link", corpus / "sub" / ".." / "s3.jsonl"])
    assert len(files) == 7
    assert {f.resolve() for f in files} == {p.resolve() for p in corpus.rglob("*.jsonl")}


def test_duplicate_session_ids_are_still_refused_from_the_cache(tmp_path):
    d = tmp_path / "dup"
    (d / "x").mkdir(parents=True)
    write_session(d / "s.jsonl", 1)
    write_session(d / "x" / "s.jsonl", 1)
    for _ in range(2):  # cold, then cached
        with pytest.raises(InputError, match=r"session id 's' is also the id of .*dup/s\.jsonl"):
            pa.read_sessions(d, cache=tmp_path / "cache", jobs=1)


def test_file_vanishing_before_the_read_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="cannot read"):
        ingest.parse_files([tmp_path / "gone.jsonl"])


def test_skip_invalid_skips_a_file_that_is_not_jsonl_at_all(tmp_path):
    good = tmp_path / "good.jsonl"
    good.write_text('{"type":"message","role":"user","content":[{"type":"text","text":"hi"}]}\n')
    pretty = tmp_path / "pretty.jsonl"
    pretty.write_text('{\n  "type": "message",\n  "role": "user"\n}\n')
    with pytest.raises(InputError, match=r"pretty\.jsonl:1: not JSONL"):
        pa.read_sessions([good, pretty])
    report = IngestReport()
    corpus = pa.ingest.read_corpus([good, pretty], skip_invalid=True, report=report)
    assert corpus.messages["session_id"].cast(str).to_list() == ["good"]
    assert corpus.sessions["session_id"].cast(str).to_list() == ["good"]
    assert report.files == 2 and report.sessions == 1
    assert [(f, n) for (f, _), n in report.skipped.items()] == [(str(pretty), 1)]
    # Found in a folder, it is not a session file: skipped and counted, skip_invalid or not (issue 32).
    for skip_invalid in (False, True):
        report = IngestReport()
        corpus = pa.ingest.read_corpus(tmp_path, skip_invalid=skip_invalid, report=report)
        assert corpus.sessions["session_id"].cast(str).to_list() == ["good"]
        assert report.files == 1 and report.skipped == {(str(pretty), STRAY): 1}


def test_a_first_line_that_is_not_json_says_why(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"type":"message","role":"user","content":[{"type":"text","text":"\xff"}]}\n')
    with pytest.raises(InputError, match=r"bad\.jsonl:1: not UTF-8: byte 0xff at byte 66 of the line"):
        pa.read_sessions(bad)
    bad.write_bytes(b'{"type":"message","role":"user",\n')
    with pytest.raises(InputError, match=r"bad\.jsonl:1: the first line is not valid JSON: "):
        pa.read_sessions(bad)


#: A fresh process (Polars not yet imported, so the launch forks) reads ``argv[1]`` on two forked workers with
#: batches cut small, and leaves the frame, the report or the error, and the batches' count in ``argv[2]``.
_FORKED_READ = """
import pickle, sys
from panto_analytics.ingest import parallel
assert parallel.launch(jobs=2, method="fork") and parallel.launched_workers() == 2
from panto_analytics.errors import IngestReport, InputError
from panto_analytics.ingest import _schedule, pipeline
_schedule.MIN_SHARED_BATCH_BYTES, _schedule.BATCH_BYTES = 1, int(sys.argv[3])
handed = []
real_run = parallel.run
def run(fn, items, **kw):
    handed.append(len(items))
    return real_run(fn, items, **kw)
parallel.run = run
report = IngestReport()
try:
    frame = pipeline.read_sessions([sys.argv[1]], skip_invalid=sys.argv[4] == "skip", report=report, cache=None)
    out = ("ok", frame, report)
except InputError as e:
    out = ("error", (e.path, e.line, e.reason), None)
parallel.close()
with open(sys.argv[2], "wb") as f:
    pickle.dump((*out, handed), f)
"""


@pytest.fixture
def mixed_corpus(tmp_path) -> Path:
    """The repo's data (pi) and the Claude Code fixtures, with bad lines in two files, one early and one late."""
    d = tmp_path / "mixed"
    shutil.copytree(DATA, d / "data", ignore=shutil.ignore_patterns("*.md"))
    for f in (FIXTURES / "claude_code").glob("*.jsonl"):
        shutil.copy(f, d / f"cc-{f.name}")
    for name, at in (("data/0963a6d2-bad.jsonl", 3), ("zz-late-bad.jsonl", 5)):
        lines = next(iter(sorted((d / "data").glob("*.jsonl")))).read_text().splitlines(keepends=True)
        (d / name).write_text("".join(lines[:at - 1]) + '{"type": "message", "role": "robot"\n' + "".join(lines[at:]))
    return d


def forked_read(corpus: Path, tmp_path: Path, batch_bytes: int, how: str) -> tuple:
    out = tmp_path / f"forked-{batch_bytes}-{how}.pickle"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", _FORKED_READ, str(corpus), str(out), str(batch_bytes), how],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    with out.open("rb") as f:
        return pickle.load(f)


@pytest.mark.slow
@pytest.mark.parametrize("batch_bytes", [10**9, 200_000])  # two batches, one a worker; many, handed out in order
def test_a_read_shared_by_forked_workers_is_the_read_of_one_process(mixed_corpus, tmp_path, batch_bytes):
    here = IngestReport()
    alone = pa.read_sessions(mixed_corpus, jobs=1, skip_invalid=True, report=here)
    status, frame, report, handed = forked_read(mixed_corpus, tmp_path, batch_bytes, "skip")
    assert status == "ok" and handed[0] >= (2 if batch_bytes > 10**6 else 5)
    assert frame.equals(alone) and frame.height > 0
    assert report == here and list(report.skipped) == list(here.skipped) and report.n_skipped >= 2
    with pytest.raises(InputError) as first:
        pa.read_sessions(mixed_corpus, jobs=1)
    status, error, _, handed = forked_read(mixed_corpus, tmp_path, batch_bytes, "strict")
    assert status == "error" and handed[0] >= 2
    assert error == (first.value.path, first.value.line, first.value.reason)
    assert Path(error[0]).name != "zz-late-bad.jsonl"  # the first bad line in file order, not the last
