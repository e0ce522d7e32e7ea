"""`replay` (with cost and loss) in every lane (in memory, a dataset bucket by bucket here, on Ray): the same rows
and table as the library's in memory; and the dataset's own means to that (the kept columns, the spill)."""
from __future__ import annotations

import warnings
from pathlib import Path

import polars as pl
import pytest
from conftest import LANES, lanes_of, our_warnings
from polars.testing import assert_frame_equal

from benchmarks.synth_dataset import write_synthetic_dataset
from panto_analytics.dataset import dataset_corpus
from panto_analytics.dataset._replay import replay_dataset
from panto_analytics.outcomes.orphan_loss import loss, with_loss_columns
from panto_analytics.policy.compaction.any_policy import replay
from panto_analytics.policy.compaction.policies import parse_policy
from panto_analytics.policy.compaction.summary import compare_policies, summarize_replay

BUDGETS = [8_000, 20_000]


@pytest.fixture(scope="module")
def synthetic_dataset(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("synth") / "ds"
    write_synthetic_dataset(root, 120, seed=7, buckets=8, chunk=50)
    return root


def by_key(frame: pl.DataFrame, *more: str) -> pl.DataFrame:
    """Rows in (policy, session, budget[, event]) order, session ids as plain strings: a dataset gives its rows
    task by task (on Ray, in the order the tasks finish), and as plain strings."""
    key = [c for c in ("policy", "session_id", "budget", *more) if c in frame.columns]
    return frame.with_columns(pl.col(c).cast(pl.String) for c in ("policy", "session_id") if c in frame.columns).sort(key)


def replayed(source, budgets, **kw) -> tuple:
    """A lane's ``replay_table`` and every events and sessions row it gave ``on_rows``, each in :func:`by_key` order."""
    rows: list[tuple[pl.DataFrame, pl.DataFrame]] = []
    got = source.replay_table(budgets, on_rows=lambda e, s: rows.append((e, s)), **kw)
    events, sessions = (pl.concat([r[i] for r in rows if r[i].height], how="vertical_relaxed") for i in (0, 1))
    return got, by_key(events, "event"), by_key(sessions)


def assert_rows_equal(got: pl.DataFrame, expected: pl.DataFrame, *more: str) -> None:
    assert_frame_equal(got, by_key(expected, *more), check_exact=True, check_dtypes=False)


@pytest.mark.parametrize("lane", LANES)
@pytest.mark.parametrize("policy", [None, ["claude-code", "libpanto", "pi"]])
@pytest.mark.parametrize("which", ["data", "synthetic"])
def test_replay_equals_in_memory(policy, which, lane, data_dataset, synthetic_dataset):
    root = data_dataset if which == "data" else synthetic_dataset
    messages = dataset_corpus(root).messages
    kw = dict(window=64_000, reserve=16_384, policy=policy, prices=True)
    summarize = compare_policies if policy else summarize_replay
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = replay(messages, BUDGETS, **kw)
        lost = loss(messages, expected, horizon=20)
        sources = lanes_of(lane, root)
        for source in sources:  # on a dataset: a task per bucket, then one task for all
            got, events, sessions = replayed(source, BUDGETS, **kw)
            assert_rows_equal(sessions, expected.sessions)
            assert_rows_equal(events, expected.events, "event")
            assert_frame_equal(got.table, summarize(expected.events, expected.sessions), check_exact=True)
            assert (got.summary_tokens, got.summary_source, got.price_source) == (
                expected.summary_tokens, expected.summary_source, expected.price_source)
        got, events, sessions = replayed(sources[0], BUDGETS, with_loss=True, horizon=20, **kw)
    assert_rows_equal(sessions, lost.sessions)
    assert_rows_equal(events, lost.events, "event")
    assert_frame_equal(got.table, with_loss_columns(summarize(lost.events, lost.sessions), lost.events),
                       check_exact=True)
    assert expected.sessions.height > 0 and (policy is None or got.table["policy"].n_unique() == len(policy))


@pytest.mark.parametrize("lane", LANES)
@pytest.mark.parametrize("which", ["data", "synthetic"])
def test_replay_warns_of_the_same_unpriced_calls(which, lane, data_dataset, synthetic_dataset, tmp_path):
    root = data_dataset if which == "data" else synthetic_dataset
    prices = tmp_path / "prices.json"  # synth-mini priced, the other models not: a partial table
    prices.write_text('{"synth-mini": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}, '
                      '"synth-small": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}}')
    messages = dataset_corpus(root).messages
    with warnings.catch_warnings(record=True) as in_memory:
        warnings.simplefilter("always")
        expected = replay(messages, BUDGETS, window=64_000, reserve=16_384, policy=["libpanto", "pi"], prices=prices)
    for source in lanes_of(lane, root):
        with warnings.catch_warnings(record=True) as streamed:
            warnings.simplefilter("always")
            source.replay_table(BUDGETS, window=64_000, reserve=16_384, policy=["libpanto", "pi"], prices=prices)
        assert our_warnings(streamed) == our_warnings(in_memory)   # not Ray's, as it starts
    assert expected.unpriced is not None
    assert expected.unpriced.height > 0 and len(in_memory) == expected.unpriced.height


def test_the_unpriced_calls_of_a_dataset_are_those_in_memory(synthetic_dataset, tmp_path):
    prices = tmp_path / "prices.json"
    prices.write_text('{"synth-mini": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}}')
    messages = dataset_corpus(synthetic_dataset).messages
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = replay(messages, BUDGETS, window=64_000, reserve=16_384, prices=prices)
        got = replay_dataset(synthetic_dataset, BUDGETS, window=64_000, reserve=16_384, prices=prices,
                             task_rows=1).replay
    assert got.unpriced is not None and expected.unpriced is not None and expected.unpriced.height > 0
    assert_frame_equal(got.unpriced, expected.unpriced, check_exact=True)


@pytest.fixture(scope="module")
def tool_dataset(tmp_path_factory) -> Path:
    """A synthetic dataset with tool references and recorded compactions (so the loss has something to count)."""
    root = tmp_path_factory.mktemp("tools") / "ds"
    write_synthetic_dataset(root, 150, seed=11, buckets=8, chunk=60, tools=True)
    return root


@pytest.mark.parametrize("policy", [None, ["libpanto", "claude-code", "pi"]])
def test_the_table_from_the_kept_columns_equals_in_memory(policy, tool_dataset, tmp_path):
    from panto_analytics.policy.compaction.summary import TABLE_COLUMNS

    prices = tmp_path / "prices.json"  # synth-mini and synth-pro priced: cost quantiles over real numbers
    prices.write_text('{"synth-mini": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}, '
                      '"synth-pro": {"input_cost_per_token": 3e-6, "output_cost_per_token": 9e-6}}')
    kw = dict(window=64_000, reserve=16_384, policy=policy, prices=prices)
    messages = dataset_corpus(tool_dataset).messages
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = replay(messages, BUDGETS, **kw)
        lost = loss(messages, r, horizon=20)
        rows: list[tuple[pl.DataFrame, pl.DataFrame]] = []
        got = replay_dataset(tool_dataset, BUDGETS, with_loss=True, task_rows=1, keep=TABLE_COLUMNS,
                             on_rows=lambda e, s: rows.append((e, s)), **kw)
    summarize = compare_policies if policy else summarize_replay
    expected = with_loss_columns(summarize(lost.events, lost.sessions), lost.events)
    assert got.loss_events is not None
    table = with_loss_columns(summarize(got.replay.events, got.replay.sessions), got.loss_events)
    assert_frame_equal(table, expected, check_exact=True)
    assert table["orphan_calls"].sum() > 0 and table["cost_p50_usd"].drop_nulls().len() > 0
    # Only the kept columns are held; every row went to on_rows whole.
    assert set(got.replay.sessions.columns) <= set(TABLE_COLUMNS[1]) and got.replay.sessions.width < lost.sessions.width
    key = [c for c in ("policy", "session_id", "budget") if c in lost.sessions.columns]
    assert_frame_equal(pl.concat([s for _, s in rows]).sort(key), lost.sessions.sort(key), check_exact=True)
    assert_frame_equal(pl.concat([e for e, _ in rows]).sort([*key, "event"]), lost.events.sort([*key, "event"]),
                       check_exact=True)


def test_a_dataset_without_sessions_is_bad_input(tmp_path):
    from panto_analytics.dataset import write_dataset
    from panto_analytics.errors import InputError

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "empty.jsonl").write_text("")
    write_dataset(tmp_path / "src", tmp_path / "ds", cache=False)
    with pytest.raises(InputError, match="ds: no sessions$"):
        replay_dataset(tmp_path / "ds", [20_000], window=64_000, reserve=16_384)


@pytest.mark.parametrize("policy", [None, ["libpanto", "claude-code", "pi"]])
def test_the_table_from_spilled_columns_equals_in_memory(policy, tool_dataset, tmp_path):
    """``replay_table_dataset``: the rows to Parquet, the table one column at a time; the same table to the
    last bit (dollars summed as whole picodollars, so the order the rows come in changes nothing)."""
    from panto_analytics.dataset._replay import replay_table_dataset

    prices = tmp_path / "prices.json"  # every model priced: cost totals (summed in picodollars) over real numbers
    prices.write_text('{"synth-mini": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}, '
                      '"synth-pro": {"input_cost_per_token": 3e-6, "output_cost_per_token": 9e-6}, '
                      '"synth-max": {"input_cost_per_token": 7e-6, "output_cost_per_token": 3e-5, '
                      '"cache_read_input_token_cost": 7e-7}}')
    kw = dict(window=64_000, reserve=16_384, policy=policy, prices=prices)
    messages = dataset_corpus(tool_dataset).messages
    spill = tmp_path / "spill"
    spill.mkdir()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = replay(messages, BUDGETS, **kw)
        lost = loss(messages, r, horizon=20)
        summarize = compare_policies if policy else summarize_replay
        expected = with_loss_columns(summarize(lost.events, lost.sessions), lost.events)
        for task_rows in (1, 10**9):
            rows: list[pl.DataFrame] = []
            got = replay_table_dataset(tool_dataset, BUDGETS, with_loss=True, horizon=20, task_rows=task_rows,
                                       spill_dir=spill, on_rows=lambda e, s, into=rows: into.append(s), **kw)
            assert_frame_equal(got.table, expected, check_exact=True)
            assert (got.summary_tokens, got.price_source) == (r.summary_tokens, r.price_source)
            assert sum(s.height for s in rows) == lost.sessions.height
            assert list(spill.iterdir()) == []  # the spilled rows are gone
        plain = replay_table_dataset(tool_dataset, BUDGETS, task_rows=1, **kw).table  # without the loss
    assert_frame_equal(plain, summarize(r.events, r.sessions), check_exact=True)
    assert expected["orphan_calls"].sum() > 0 and expected["cost_usd"].drop_nulls().len() > 0


#: The policies of issue 29 (items 1, 5, 6): each replays with cost and loss on a dataset as in memory.
FIELD_POLICIES = ["claude-code:version=2.1.185", "anthropic-compact:trigger=50000", "openai-compact", "cline",
                  "opencode:max_output=8000,buffer=8000", "openhands", "summarize-every"]


def _replays_as_in_memory(dataset, lane: str, policies: list[str], prices: Path) -> pl.DataFrame:
    """``policies`` replayed with cost (``prices``) and loss on ``dataset`` in ``lane`` and in memory: the same
    sessions, events and table; the in-memory sessions, for what each test asserts of them."""
    kw = dict(window=64_000, reserve=16_384, policy=policies, prices=prices)
    messages = dataset_corpus(dataset).messages
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lost = loss(messages, replay(messages, BUDGETS, **kw), horizon=20)
        got, events, sessions = replayed(lanes_of(lane, dataset)[0], BUDGETS, with_loss=True, horizon=20, **kw)
    assert_rows_equal(sessions, lost.sessions)
    assert_rows_equal(events, lost.events, "event")
    assert_frame_equal(got.table, with_loss_columns(compare_policies(lost.events, lost.sessions), lost.events),
                       check_exact=True)
    return lost.sessions


@pytest.mark.parametrize("lane", LANES)
def test_the_field_policies_replay_with_cost_and_loss_as_in_memory(tool_dataset, tmp_path, lane):
    prices = tmp_path / "prices.json"
    prices.write_text('{"synth-mini": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}, '
                      '"synth-pro": {"input_cost_per_token": 3e-6, "output_cost_per_token": 9e-6}}')
    sessions = _replays_as_in_memory(tool_dataset, lane, FIELD_POLICIES, prices)
    fired = sessions.filter(pl.col("n_compactions") > 0)
    # Every policy compacts some session, pays a summarizer there and has a loss figure.
    assert set(fired["policy"].unique()) == set(FIELD_POLICIES)
    assert (fired["summarizer_cost_usd"] > 0).all() and fired["orphan_calls"].is_not_null().all()


#: The clearing and staged policies of issue 29 (items 2, 3, 4, 6, 7).
CLEARING_POLICIES = ["clear-tool-uses:trigger=20000", "observation-masking", "opencode-prune:protect=4000,minimum=2000",
                     "claude-code-time-microcompact:gap_minutes=1", "clear-tool-uses:trigger=20000+libpanto",
                     "observation-masking:m=3+pi", "openclaw-cache-ttl:ttl=1", "openclaw-cache-ttl:ttl=1+libpanto"]


@pytest.mark.parametrize("lane", LANES)
def test_the_clearing_and_staged_policies_replay_with_cost_and_loss_as_in_memory(tool_dataset, tmp_path, lane):
    prices = tmp_path / "prices.json"
    prices.write_text('{"synth-mini": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6, '
                      '"cache_read_input_token_cost": 1e-7, "cache_creation_input_token_cost": 1.25e-6}, '
                      '"synth-pro": {"input_cost_per_token": 3e-6, "output_cost_per_token": 9e-6}}')
    sessions = _replays_as_in_memory(tool_dataset, lane, CLEARING_POLICIES, prices)
    # Every policy but the cache-gated ones (the synthetic sessions have no idle hour, few idle minutes) edits some
    # session, and there its bill differs from the recording.
    edits = {parse_policy(p).spec() for p in CLEARING_POLICIES if "time" not in p and "openclaw" not in p}
    fired = sessions.filter(pl.col("n_compactions") > 0)
    assert set(fired["policy"].unique()) >= edits
    changed = fired.filter(pl.col("simulated_cost_usd") != pl.col("recorded_cost_usd"))
    assert set(changed["policy"].unique()) >= edits
