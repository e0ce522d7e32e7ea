"""``replay(..., prices=...)``: the bill on the replay's own frames, the no-compaction identity on real recordings."""
from __future__ import annotations

import json

import polars as pl
import pytest
from click.testing import CliRunner
from conftest import REALDATA

import panto_analytics as pa
from panto_analytics.cli import main
from panto_analytics.policy.compaction.priced import summarizer_cached
from panto_analytics.policy.compaction.summary import compare_policies, summarize_replay

COSTS = ("recorded_cost_usd", "simulated_cost_usd", "summarizer_cost_usd", "total_cost_usd")


@pytest.fixture(scope="module")
def real() -> pl.DataFrame:
    if not REALDATA.is_dir():
        pytest.skip(f"no real recordings at {REALDATA}")
    return pa.read_sessions([REALDATA], skip_invalid=True)


def test_nothing_fires_costs_the_recorded_cost_to_the_last_digit(real):
    """A window no session reaches: every session on every real recording costs exactly what it recorded."""
    result = pa.replay(real, [8_000, 20_000], window=10**9, prices=True)
    assert result.events.is_empty()
    assert result.price_source.startswith("genai-prices")
    ses = result.sessions
    assert ses.height == 2 * real["session_id"].n_unique()
    assert ses.filter(pl.col("recorded_cost_usd").is_not_null()).height > 0
    for part in ("input_usd", "output_usd", "cache_read_usd", "cache_write_usd", "cost_usd"):
        assert ses[f"simulated_{part}"].equals(ses[f"recorded_{part}"])
    assert (ses["summarizer_cost_usd"] == 0).all()
    # Where nothing fires the bill skips the rule: its frames have the columns and types of one where something
    # fired, and every session costs the same as in the full bill.
    fired = pa.replay(real, [8_000, 20_000], window=64_000, prices=True)
    assert fired.events.height > 0
    assert result.events.schema == fired.events.schema and ses.schema == fired.sessions.schema
    quiet = fired.sessions.filter(pl.col("n_compactions") == 0)
    same = quiet.join(ses, on=["session_id", "budget"], suffix="_none")
    assert same.height == quiet.height > 0
    for column in ("recorded_cost_usd", "simulated_cost_usd", "total_cost_usd", "cache_miss_usd"):
        assert same[column].equals(same[f"{column}_none"])


CLEARING = ["clear-tool-uses", "observation-masking", "claude-code-microcompact", "opencode-prune", "openclaw-cache-ttl"]


def test_a_clearing_edit_that_never_applies_costs_the_recorded_cost_to_the_last_digit(real):
    """A trigger no call reaches, and masking that keeps more results than any session has: every session costs
    exactly what it recorded, as the cut policies' identity above."""
    quiet = pa.replay(real, [20_000], window=200_000, prices=True,
                      policy=["clear-tool-uses:trigger=1000m", "observation-masking:m=100000",
                              "openclaw-cache-ttl:ttl=10000000"])
    assert quiet.events.is_empty()
    ses = quiet.sessions
    assert ses.filter(pl.col("recorded_cost_usd").is_not_null()).height > 0
    for part in ("input_usd", "output_usd", "cache_read_usd", "cache_write_usd", "cost_usd"):
        assert ses[f"simulated_{part}"].equals(ses[f"recorded_{part}"])
        assert ses[f"total_{part}"].equals(ses[f"recorded_{part}"])
    assert (ses["summarizer_cost_usd"] == 0).all() and (ses["cache_miss_usd"] == 0).all()


def test_clearing_changes_the_bill_only_where_it_edits(real):
    """Each clearing policy beside a cut policy: sessions it never edits cost what they recorded; where it edits,
    no summarizer is paid, the cache misses are the events' and the rows keep the replay's order."""
    result = pa.replay(real, [20_000], window=200_000, prices=True, policy=["libpanto", *CLEARING])
    ses = result.sessions
    assert ses["policy"].unique(maintain_order=True).to_list() == ["libpanto", *CLEARING]
    clearing = ses.filter(pl.col("policy").is_in(CLEARING))
    quiet = clearing.filter(pl.col("n_compactions") == 0)
    assert quiet["simulated_cost_usd"].equals(quiet["recorded_cost_usd"])
    edited = clearing.filter((pl.col("n_compactions") > 0) & pl.col("recorded_cost_usd").is_not_null())
    assert edited.height > 0 and (edited["summarizer_cost_usd"] == 0).all()
    assert (edited["simulated_cost_usd"] != edited["recorded_cost_usd"]).all()
    ev = result.events.filter(pl.col("policy").is_in(CLEARING))
    per_session = ev.group_by("policy", "session_id").agg(pl.col("cache_miss_usd").sum().alias("_events"))
    both = edited.join(per_session, on=["policy", "session_id"], how="left")
    assert (both["cache_miss_usd"] - both["_events"].fill_null(0.0)).abs().max() < 1e-9
    # Masking changes the prompt at every call: it writes more to the cache than was recorded.
    masked = edited.filter(pl.col("policy") == "observation-masking")
    assert masked["simulated_cache_write_usd"].sum() > masked["recorded_cache_write_usd"].sum()


def test_a_staged_policy_whose_clearing_never_applies_bills_as_its_last_stage(real):
    """``A+B`` where A never edits a call: every session's bill is B's, digit for digit; where A edits, the recorded
    cost stays the recording's and the compactions are billed on the edited calls."""
    result = pa.replay(real, [20_000], window=200_000, prices=True,
                       policy=["libpanto", "clear-tool-uses:trigger=1000m+libpanto", "clear-tool-uses+libpanto"])
    ses = result.sessions
    plain = ses.filter(pl.col("policy") == "libpanto").drop("policy")
    quiet = ses.filter(pl.col("policy") == "clear-tool-uses:trigger=1000000000+libpanto").drop("policy")
    for column in ("recorded_cost_usd", "simulated_cost_usd", "summarizer_cost_usd", "total_cost_usd", "n_compactions"):
        assert quiet[column].equals(plain[column])
    staged = ses.filter(pl.col("policy") == "clear-tool-uses+libpanto").drop("policy")
    assert staged["recorded_cost_usd"].equals(plain["recorded_cost_usd"])
    assert (staged["n_compactions"] >= plain["n_compactions"]).all()
    assert (staged["total_cost_usd"] - staged["simulated_cost_usd"] - staged["summarizer_cost_usd"]).abs().max() < 1e-9


def test_the_recorded_cost_is_the_cost_of_the_recorded_calls(real):
    """Per session, ``recorded_cost_usd`` is ``outcomes.costs`` by session, the one definition."""
    result = pa.replay(real, [20_000], window=10**9, prices=True)
    by_session = pa.costs(real, by=["session"])
    joined = result.sessions.select(pl.col("session_id").cast(pl.String), "recorded_cost_usd").join(
        by_session.select(pl.col("session_id").cast(pl.String), "cost_usd"), on="session_id")
    assert joined.height == result.sessions.height
    assert joined.select((pl.col("recorded_cost_usd") - pl.col("cost_usd")).abs().max()).item() < 1e-9


def test_compactions_change_the_bill(real):
    result = pa.replay(real, [20_000], window=200_000, policy=["libpanto", "codex", "gemini-cli"], prices=True)
    fired = result.sessions.filter(pl.col("n_compactions") > 0)
    assert fired.height > 0
    # Each compacted session pays a summarizer, and its calls cost less than recorded once the context shrank
    # (the same where the compaction came after its last call).
    assert (fired["summarizer_cost_usd"] > 0).all()
    later = result.events.group_by("policy", "session_id").agg(pl.col("calls_after").sum())
    fired = fired.join(later, on=["policy", "session_id"])
    assert (fired.filter(pl.col("calls_after") > 0).select(pl.col("simulated_cost_usd") < pl.col("recorded_cost_usd"))
            .to_series().all())
    assert fired.filter(pl.col("calls_after") == 0).select(pl.col("simulated_cost_usd") == pl.col(
        "recorded_cost_usd")).to_series().all()
    assert (fired["total_cost_usd"] - fired["simulated_cost_usd"] - fired["summarizer_cost_usd"]).abs().max() < 1e-9
    quiet = result.sessions.filter(pl.col("n_compactions") == 0)
    assert quiet["simulated_cost_usd"].equals(quiet["recorded_cost_usd"])
    # Codex asks on its cached conversation, the others separately.
    ev = result.events
    assert (ev.filter(pl.col("policy") == "codex")["summarizer_cache_read"] > 0).all()
    assert (ev.filter(pl.col("policy") != "codex")["summarizer_cache_read"] == 0).all()
    # Each compaction's cache miss: never negative, a session's is the sum of its events', nothing on a quiet one.
    assert (ev["cache_miss_usd"] >= 0).all() and (ev["cache_miss_tokens"] >= 0).all()
    assert (ev.filter(pl.col("calls_after") > 0)["cache_miss_tokens"] > 0).any()
    per_session = ev.group_by("policy", "session_id").agg(pl.col("cache_miss_usd").sum().alias("_events"))
    both = result.sessions.join(per_session, on=["policy", "session_id"], how="left")
    assert (both["cache_miss_usd"] - both["_events"].fill_null(0.0)).abs().max() < 1e-9
    assert (quiet["cache_miss_usd"] == 0).all()
    table = compare_policies(result.events, result.sessions)
    # A policy's cost is its sessions' sum, unknown (null) where a session is unpriced (a model no price table
    # knows, as agentic-wallet's OpenRouter model), never the priced part passed off as the whole.
    totals = result.sessions.group_by("policy", maintain_order=True).agg(
        pl.when(pl.col("total_cost_usd").null_count() == 0).then(pl.col("total_cost_usd").sum()))
    got, want = table["cost_usd"].to_list(), totals["total_cost_usd"].to_list()
    assert [g is None for g in got] == [w is None for w in want]
    assert [g for g in got if g is not None] == pytest.approx([w for w in want if w is not None])
    assert table["recorded_cost_usd"].n_unique() == 1  # one recorded bill beside every policy (null if unpriced)


def test_summarizer_settings():
    assert summarizer_cached("cached", has_policy=True) is True
    assert summarizer_cached(None, has_policy=False) is False
    names = pl.DataFrame({"policy": ["codex:user_tokens=10000", "pi", "libpanto:reserve=8000"]})
    assert names.select(summarizer_cached(None, has_policy=True)).to_series().to_list() == [True, False, False]
    with pytest.raises(ValueError, match="summarizer must be one of"):
        summarizer_cached("sometimes", has_policy=True)


def test_an_unpriced_model_is_noted_and_null():
    from panto_analytics import examples
    with pytest.warns(pa.outcomes.UnpricedWarning, match="no price for model"):
        result = pa.replay(examples.messages(), [1_000], window=8_000, reserve=4_000, summary_tokens=500,
                           prices=True)
    assert result.sessions["recorded_cost_usd"].null_count() == result.sessions.height


def test_the_table_without_a_bill_has_no_cost_columns():
    from panto_analytics import examples
    r = pa.replay(examples.messages(), [1_000], window=8_000, reserve=4_000, summary_tokens=500)
    assert "cost_usd" not in summarize_replay(r.events, r.sessions).columns
    assert r.price_source is None


def test_cli_replay_cost(tmp_path, real):
    sessions = tmp_path / "sessions.ndjson"
    out = CliRunner().invoke(main, ["replay", str(REALDATA), "--skip-invalid", "-w", "200k", "-b", "20k",
                                    "--policy", "libpanto", "--policy", "codex", "--cost", "--sessions",
                                    str(sessions), "-o", "-", "--output-format", "json"])
    assert out.exit_code == 0, out.output
    assert "prices: genai-prices" in out.stderr
    table = json.loads(out.stdout)
    assert {"cost_p50_usd", "cost_p90_usd", "cost_usd", "recorded_cost_usd", "summarizer_cost_usd"} <= set(table[0])
    rows = pl.read_ndjson(sessions)
    assert set(COSTS) <= set(rows.columns)


def test_the_field_policies_replay_the_real_recordings_with_cost_and_loss(real):
    """Issue 29's policies on ../shared/realdata at 200k (the small windows the count-triggered ones need are
    their own): each compacts some session, pays its summarizer, and has a loss; where nothing fires the bill is
    the recorded one to the last digit."""
    from panto_analytics.outcomes.orphan_loss import loss

    specs = ["claude-code:version=2.1.185", "anthropic-compact", "openai-compact", "cline", "opencode", "openhands",
             "summarize-every"]
    result = pa.replay(real, [20_000], window=200_000, policy=specs, prices=True)
    lost = loss(real, result, horizon=20).sessions
    fired = lost.filter(pl.col("n_compactions") > 0)
    assert set(fired["policy"].unique()) == set(specs)
    assert (fired.filter(pl.col("summarizer_cost_usd").is_not_null())["summarizer_cost_usd"] > 0).all()
    assert fired["orphan_calls"].is_not_null().all()
    quiet = lost.filter(pl.col("n_compactions") == 0)
    assert quiet["simulated_cost_usd"].equals(quiet["recorded_cost_usd"])
