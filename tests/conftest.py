"""Shared test fixtures: where ``../shared`` is, and running the engine on each frame kind."""
from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, settings

import panto_analytics as pa

# Hypothesis draws the same examples on every run unless asked to explore, so a
# run of the suite (CI's included) passes or fails on the code alone. Exploring
# is a separate, deliberate step: HYPOTHESIS_PROFILE=explore draws fresh
# examples each run (failures are kept in .hypothesis/ and replayed first), and
# FUZZ_SCALE=20 draws twenty times as many of them.
# Neither depends on the machine's speed: no deadline, and no health check on
# how slowly examples are drawn (CI machines are shared and slow at times).
_UNTIMED = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("repeatable", derandomize=True, database=None, print_blob=True, **_UNTIMED)
settings.register_profile("explore", derandomize=False, print_blob=True, **_UNTIMED)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


def examples(n: int) -> int:
    """How many examples a property test draws: ``n`` times ``FUZZ_SCALE`` (1 unless set).

    >>> examples(40) >= 1
    True
    """
    return max(1, round(n * float(os.environ.get("FUZZ_SCALE", "1"))))


#: The repository root.
REPO = Path(__file__).resolve().parents[1]

#: The small, readable test inputs.
FIXTURES = REPO / "tests" / "fixtures"

#: The bundled synthetic corpus.
DATA = REPO / "data"

#: ``../shared`` next to the repository (reference code and real recordings), when present.
SHARED = REPO.parent / "shared"

#: Real pi, Claude Code and Codex recordings, when ``../shared`` is present.
REALDATA = SHARED / "realdata"

#: libpanto's reference harness (compaction.zig compiled unchanged), when ``../shared`` is present.
HARNESS = SHARED / "reference" / "harness"


def canonical_session(path: Path, n_turns: int, *, user: str = "w w w", assistant: str = "w w", sid: str | None = None,
                      usage: bool = False) -> Path:
    """A canonical session file of ``n_turns`` user/assistant turns, with a header naming ``sid`` where given and,
    with ``usage``, assistant usage of 10 input tokens more each turn (and 1 output).

    >>> import tempfile
    >>> canonical_session(Path(tempfile.mkdtemp()) / "s.jsonl", 2, sid="s").read_text().count("\\n")
    5
    """
    lines: list[dict] = [{"type": "session", "id": sid}] if sid else []
    for t in range(n_turns):
        lines.append({"type": "message", "role": "user", "content": [{"type": "text", "text": user}]})
        lines.append({"type": "message", "role": "assistant", "content": [{"type": "text", "text": assistant}],
                      **({"usage": {"input": 10 * (t + 1), "output": 1}} if usage else {})})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


@functools.cache
def oracle_module():
    """The harness module with its binary built once for the whole run, or a skip without ``../shared``.

    ``oracle_splits`` runs build.sh (about 0.15 s) on every call: the built
    binary is remembered instead.
    """
    if not (HARNESS / "oracle.py").is_file():
        pytest.skip(f"libpanto's reference harness is absent ({HARNESS}): no oracle to compare with")
    sys.path.insert(0, str(HARNESS))
    try:
        import oracle
    finally:
        sys.path.remove(str(HARNESS))
    binary = oracle.oracle_binary()
    oracle.oracle_binary = lambda: binary
    return oracle

#: How a message frame is handed to the engine: eager, lazy, or lazy collected by the streaming engine.
FRAME_KINDS = ("eager", "lazy", "streaming")


class Engine:
    """Runs ``panto_analytics`` on a message frame handed over as one of :data:`FRAME_KINDS`.

    Checks that the result kind matches the input kind (DataFrame in,
    DataFrame out; LazyFrame in, LazyFrame out) and returns row dicts.
    """

    @staticmethod
    def _run(fn, messages: pl.DataFrame, kind: str, *args, **kwargs) -> list[dict]:
        if kind == "eager":
            result = fn(messages, *args, **kwargs)
            assert isinstance(result, pl.DataFrame)
        else:
            result = fn(messages.lazy(), *args, **kwargs)
            assert isinstance(result, pl.LazyFrame)
            result = result.collect(engine="streaming" if kind == "streaming" else "auto")
        return result.to_dicts()

    def splits(self, messages: pl.DataFrame, budgets: list[int], kind: str = "eager",
               sessions: pl.DataFrame | None = None) -> list[dict]:
        return self._run(pa.splits, messages, kind, budgets, sessions=sessions)

    def turns(self, messages: pl.DataFrame, kind: str = "eager") -> list[dict]:
        return self._run(pa.turns, messages, kind)

    def check(self, folder: Path, sessions: dict[str, list[dict]], budgets: list[int], kind: str = "eager",
              headers: bool = False, with_sessions: bool = False) -> tuple[dict, dict]:
        """Write ``sessions`` as canonical files in ``folder``, read them, and assert that every
        ``splits`` and ``turns`` column (and each message's word count) equals the reference port's.

        Returns ``(splits, turns)``: ``splits[(session_id, budget)]`` and
        ``turns[session_id]``, as row dicts without the session id. With
        ``headers`` the id comes from a session header line, else from the file name.
        With ``with_sessions`` the sessions table goes to ``splits`` too, so that
        sessions without messages get rows (computeSplit of an empty list).
        """
        from reference import port as ref

        for i, (sid, msgs) in enumerate(sessions.items()):
            ref.write_session(folder / (f"file{i}.jsonl" if headers else f"{sid}.jsonl"), msgs,
                              session_id=sid if headers else None)
        corpus = pa.ingest.read_corpus(folder)
        frame = corpus.messages
        words = {sid: [] for sid in sessions}
        for sid, n in frame.select(pl.col("session_id").cast(pl.String), "words").iter_rows():
            words[sid].append(n)
        assert words == {sid: [ref.count_words(m) for m in msgs] for sid, msgs in sessions.items()}

        got_splits = {}
        for row in self.splits(frame, budgets, kind, corpus.sessions if with_sessions else None):
            got_splits[row.pop("session_id"), row.pop("budget")] = row
        got_turns: dict[str, list[dict]] = {sid: [] for sid in sessions}
        for row in self.turns(frame, kind):
            got_turns[row.pop("session_id")].append(row)
        traces = {sid: ref.walk(msgs) for sid, msgs in sessions.items()}
        assert got_turns == {sid: ref.expected_turns(msgs, traces[sid]) for sid, msgs in sessions.items()}
        # A session without messages has no rows in the frame, so no split rows unless
        # the sessions table says it exists.
        assert got_splits == {(sid, b): row for sid, msgs in sessions.items() if msgs or with_sessions
                              for b, row in ref.expected_splits(msgs, sorted(set(budgets)), traces[sid]).items()}
        return got_splits, got_turns


@pytest.fixture(scope="session")
def engine() -> Engine:
    """The engine runner (session-scoped, so hypothesis tests may use it)."""
    return Engine()


@pytest.fixture(scope="session")
def data_dataset(tmp_path_factory) -> Path:
    """data/ written once as an 8-bucket dataset, for the tests that compare a dataset with the same files."""
    from panto_analytics.dataset import write_dataset

    root = tmp_path_factory.mktemp("ds") / "ds"
    write_dataset([DATA], root, buckets=8, cache=False)
    return root


@pytest.fixture
def corpus(tmp_path) -> Path:
    """A folder of two canonical sessions (:func:`canonical_session`), ``a.jsonl`` of 3 turns and ``b.jsonl`` of 5."""
    d = tmp_path / "corpus"
    d.mkdir()
    canonical_session(d / "a.jsonl", 3)
    canonical_session(d / "b.jsonl", 5)
    return d


@pytest.fixture(params=FRAME_KINDS)
def frame_kind(request) -> str:
    """Each way of handing a frame to the engine."""
    return request.param


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    """Keep every test's default Parquet cache out of the user's ~/.cache."""
    monkeypatch.setenv("PANTO_ANALYTICS_CACHE", str(tmp_path_factory.mktemp("cache")))


#: The lanes every verb runs in (narwhals' pattern: one face, a test parametrized over the backends): the corpus in
#: memory, a dataset bucket by bucket here, and on Ray Data (which starts Ray on this machine: marked ``ray`` and
#: ``slow``). Each lane-equality test asserts what the verb gives in each equals the library's own result.
LANES = ["memory", "dataset", pytest.param("ray", marks=[pytest.mark.ray, pytest.mark.slow])]


def open_lane(lane: str, root: Path, task_rows: int | None = 1):
    """The :class:`~panto_analytics.dataset.Source` of ``lane`` over the dataset at ``root``: in memory, the dataset
    gathered whole; on a dataset, tasks of ``task_rows`` messages (1: a task per bucket, None: each verb's own)."""
    from panto_analytics.dataset import InMemory, OnDataset, OnRay, dataset_corpus

    if lane == "memory":
        return InMemory(functools.partial(dataset_corpus, root))
    if lane == "ray":
        pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'panto_analytics[ray]'")
    return (OnRay if lane == "ray" else OnDataset)(root, task_rows=task_rows)


def lane_task_rows(lane: str) -> tuple[int | None, ...]:
    """The task sizes a lane-equality test tries: on a dataset here a task per bucket, then one task for all (the
    partial results merge the same whatever the split); on Ray a task per bucket; in memory, no tasks."""
    return {"memory": (None,), "dataset": (1, 10**9), "ray": (1,)}[lane]


def lanes_of(lane: str, root: Path):
    """Each :func:`open_lane` of ``lane`` at the task sizes of :func:`lane_task_rows`."""
    return [open_lane(lane, root, rows) for rows in lane_task_rows(lane)]


def our_warnings(records) -> list[str]:
    """The messages of the warnings our package gave (the unpriced models', ...), not a library's (Ray's
    deprecations as it starts), from ``warnings.catch_warnings(record=True)``."""
    ours = str(Path(pa.__file__).parent)
    return [str(w.message) for w in records if w.filename.startswith(ours)]


def legend_boxes(fig) -> list:
    """The drawn boxes (display coordinates) of every legend of ``fig``, the figure's and each axes'; asserts they
    lie inside the figure and that no two of them overlap (two legends placed in one spot read as neither)."""
    fig.draw_without_rendering()  # lays the legends out (the constrained layout included), whatever the backend
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None)]
    boxes = [lg.get_window_extent() for lg in legends]
    whole = fig.bbox
    for box in boxes:
        assert whole.x0 - 1 <= box.x0 and box.x1 <= whole.x1 + 1 and whole.y0 - 1 <= box.y0 and box.y1 <= whole.y1 + 1
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not a.overlaps(b), f"two legends overlap: {a} and {b}"
    return boxes
