"""The cost of a call: the vectorized bill against a literal per-call reference, and hand-computed bills."""
from __future__ import annotations

import json
import warnings
from decimal import Decimal

import polars as pl
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from panto_analytics.models import normalized_model
from panto_analytics.outcomes.cost import COST_COLUMNS, UnpricedWarning, bill, call_tokens, costs, unpriced
from panto_analytics.outcomes.prices import RATES, Prices, load_prices

# --- the literal reference: one call at a time, in Decimal, as a person would bill it --------------------


def reference_bill(call: dict, price: dict | None, rule: str) -> dict:
    """A call's five cost figures from its price row (per-token rates), by hand; None without a price, or without
    usage (every counter 0: the cost is unknown)."""
    tokens = {r: Decimal(call[r] or 0) for r in RATES}
    if price is None or not any(tokens.values()):
        return dict.fromkeys(COST_COLUMNS)
    parts = {}
    start = price["tier_start"]
    prompt = tokens["input"] + tokens["cache_read"] + tokens["cache_write_5m"] + tokens["cache_write_1h"]
    for r in RATES:
        base = Decimal(repr(price[r]))
        if start is None:
            parts[r] = tokens[r] * base
            continue
        above = Decimal(repr(price[f"{r}_above"]))
        if rule == "cliff":  # the whole call at the tier's rate once the prompt passes the tier
            parts[r] = tokens[r] * (above if prompt > start else base)
        else:                # each counter: up to the tier at base, the rest at the higher rate
            low = min(tokens[r], Decimal(start))
            parts[r] = low * base + (tokens[r] - low) * above
    out = {"input_usd": parts["input"], "output_usd": parts["output"], "cache_read_usd": parts["cache_read"],
           "cache_write_usd": parts["cache_write_5m"] + parts["cache_write_1h"]}
    out["cost_usd"] = sum(out.values(), Decimal(0))
    return {k: float(v) for k, v in out.items()}


def reference_bills(calls: pl.DataFrame, prices: Prices) -> list[dict]:
    table = prices.covering(calls.select(normalized_model("model"))["model"].to_list()).frame
    by_model = {row["model"]: row for row in table.iter_rows(named=True)}
    rows = []
    for call in calls.iter_rows(named=True):
        key = calls.select(normalized_model(pl.lit(call["model"]))).item() if call["model"] is not None else None
        rows.append(reference_bill(call, by_model.get(key), prices.rule))
    return rows


def assert_bills_match(calls: pl.DataFrame, prices: Prices) -> None:
    got = bill(calls, prices).select(COST_COLUMNS).rows(named=True)
    want = reference_bills(calls, prices)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        for c in COST_COLUMNS:
            if w[c] is None:
                assert g[c] is None, (c, g, w)
            else:
                assert g[c] == pytest.approx(w[c], rel=1e-12, abs=1e-15), (c, g, w)


@pytest.fixture(scope="module")
def genai() -> Prices:
    return load_prices()


@pytest.fixture(scope="module")
def litellm(tmp_path_factory) -> Prices:
    path = tmp_path_factory.mktemp("prices") / "model_prices_and_context_window.json"
    path.write_text(json.dumps({
        "claude-sonnet-4-5": {"input_cost_per_token": 3e-6, "output_cost_per_token": 1.5e-5,
                              "cache_read_input_token_cost": 3e-7, "cache_creation_input_token_cost": 3.75e-6,
                              "cache_creation_input_token_cost_above_1hr": 6e-6,
                              "input_cost_per_token_above_200k_tokens": 6e-6,
                              "output_cost_per_token_above_200k_tokens": 2.25e-5,
                              "cache_read_input_token_cost_above_200k_tokens": 6e-7,
                              "cache_creation_input_token_cost_above_200k_tokens": 7.5e-6},
        "claude-haiku-4-5-20251001": {"input_cost_per_token": 1e-6, "output_cost_per_token": 5e-6,
                                      "cache_read_input_token_cost": 1e-7, "cache_creation_input_token_cost": 1.25e-6},
        "gpt-5": {"input_cost_per_token": 1.25e-6, "output_cost_per_token": 1e-5, "cache_read_input_token_cost": 1.25e-7},
        "sample_spec": {"input_cost_per_token": "not a number"},
    }))
    return load_prices(path)


MODELS = ["claude-sonnet-4-5", "claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001", "claude-opus-4-5",
          "gpt-5", "openrouter/anthropic/claude-sonnet-4-5", "gpt-5.3-codex", "no-such-model", None]

counts = st.integers(0, 400_000)
call = st.fixed_dictionaries({"model": st.sampled_from(MODELS), "input": counts, "output": st.integers(0, 300_000),
                              "cache_read": counts, "cache_write_5m": counts, "cache_write_1h": counts})


def frame(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"model": pl.String, **{r: pl.UInt32 for r in RATES}})


@settings(max_examples=examples(60))
@given(st.lists(call, min_size=1, max_size=12))
def test_the_vectorized_bill_is_the_per_call_reference_under_genai_prices(genai, rows):
    assert_bills_match(frame(rows), genai)


@settings(max_examples=examples(60))
@given(st.lists(call, min_size=1, max_size=12))
def test_the_vectorized_bill_is_the_per_call_reference_under_a_litellm_file(litellm, rows):
    assert_bills_match(frame(rows), litellm)


@settings(max_examples=examples(40))
@given(st.lists(call.filter(lambda c: c["model"] is not None and c["model"] != "no-such-model"), min_size=1,
                max_size=6))
def test_genai_prices_own_calculation_agrees(genai, rows):
    """genai-prices' calc_price (input_tokens includes cache reads and writes; 1h writes are part of writes)."""
    from genai_prices import Usage, calc_price

    billed = bill(frame(rows), genai)["cost_usd"].to_list()
    for row, ours in zip(rows, billed, strict=True):
        if not any(row[r] for r in RATES):
            assert ours is None   # no usage recorded: unknown, where genai-prices says $0
            continue
        usage = Usage(input_tokens=row["input"] + row["cache_read"] + row["cache_write_5m"] + row["cache_write_1h"],
                      output_tokens=row["output"], cache_read_tokens=row["cache_read"],
                      cache_write_tokens=row["cache_write_5m"] + row["cache_write_1h"],
                      cache_write_1h_tokens=row["cache_write_1h"])
        theirs = float(calc_price(usage, normalized_model_py(row["model"])).total_price)
        assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-12), row


def normalized_model_py(name: str) -> str:
    return pl.select(normalized_model(pl.lit(name))).item()


def test_hand_computed_bills(genai, litellm):
    calls = frame([
        # claude-opus-4-5 on genai-prices: $5 in, $25 out, $0.50 read, $6.25 5m write, $10 1h write per MTok.
        {"model": "claude-opus-4-5-20251101", "input": 1_000, "output": 2_000, "cache_read": 100_000,
         "cache_write_5m": 4_000, "cache_write_1h": 1_000},
        # claude-sonnet-4-5, 150k + 60k = 210k prompt: past the tier, every token at $6 / $22.50 / $0.60 / $7.50.
        {"model": "claude-sonnet-4-5", "input": 150_000, "output": 1_000, "cache_read": 60_000,
         "cache_write_5m": 0, "cache_write_1h": 0},
    ])
    got = bill(calls, genai)
    # 0.005 + 0.05 + 0.05 + (0.025 + 0.01)
    assert got.row(0, named=True)["input_usd"] == pytest.approx(0.005)
    assert got.row(0, named=True)["output_usd"] == pytest.approx(0.05)
    assert got.row(0, named=True)["cache_read_usd"] == pytest.approx(0.05)
    assert got.row(0, named=True)["cache_write_usd"] == pytest.approx(0.035)
    assert got["cost_usd"][0] == pytest.approx(0.14)
    # 150k x 6 + 1k x 22.5 + 60k x 0.6 per MTok = 0.9 + 0.0225 + 0.036
    assert got["cost_usd"][1] == pytest.approx(0.9585)
    # The split rule (LiteLLM, ccusage): no single counter passes 200k here, so the base rates:
    # 150k x 3 + 1k x 15 + 60k x 0.3 = 0.45 + 0.015 + 0.018
    assert bill(calls[1:], litellm)["cost_usd"][0] == pytest.approx(0.483)
    # 300k input on the split rule: 200k x 3 + 100k x 6 = 1.20; on the cliff, 300k x 6 = 1.80.
    big = frame([{"model": "claude-sonnet-4-5", "input": 300_000, "output": 0, "cache_read": 0,
                  "cache_write_5m": 0, "cache_write_1h": 0}])
    assert bill(big, litellm)["cost_usd"][0] == pytest.approx(1.20)
    assert bill(big, genai)["cost_usd"][0] == pytest.approx(1.80)
    # A 1-hour write on LiteLLM: cache_creation_input_token_cost_above_1hr ($6); haiku has none: the 5m rate.
    writes = frame([{"model": m, "input": 0, "output": 0, "cache_read": 0, "cache_write_5m": 0,
                     "cache_write_1h": 1_000_000} for m in ("claude-sonnet-4-5", "claude-haiku-4-5")])
    assert bill(writes, litellm)["cache_write_usd"].to_list() == pytest.approx([6.0, 1.25])


def test_an_unpriced_model_costs_null_never_zero(genai):
    calls = frame([{"model": "no-such-model", "input": 10, "output": 1, "cache_read": 0, "cache_write_5m": 0,
                    "cache_write_1h": 0}, {"model": None, "input": 1, "output": 1, "cache_read": 0,
                                           "cache_write_5m": 0, "cache_write_1h": 0}])
    billed = bill(calls, genai)
    assert billed.select(COST_COLUMNS).null_count().row(0) == (2,) * 5
    assert unpriced(billed).rows() == [("(no model)", 1, 2), ("no-such-model", 1, 11)]


def test_bill_is_lazy_in_lazy_out_and_keeps_row_order(genai):
    calls = frame([{"model": m, "input": i, "output": 1, "cache_read": 0, "cache_write_5m": 0, "cache_write_1h": 0}
                   for i, m in enumerate(["gpt-5", "claude-opus-4-5", "gpt-5", "x"])])
    lazy = bill(calls.lazy(), genai.covering(["gpt-5", "claude-opus-4-5"]))
    assert isinstance(lazy, pl.LazyFrame)
    eager = bill(calls, genai)
    assert lazy.collect().equals(eager)
    assert eager["input"].to_list() == [0, 1, 2, 3]


# --- costs: the message frame's bill per group ---------------------------------------------------------

def messages() -> pl.DataFrame:
    from panto_analytics.frame.schema import MESSAGE_SCHEMA

    rows = [
        # session a: two calls on 2026-11-01 (23:30 UTC is 2026-11-02 in Tokyo), one on 2026-11-09
        ("a", 0, "user", None, None, None, None, None, "2026-11-01T09:00:00"),
        ("a", 1, "assistant", 1_000, 100, 10_000, 2_000, "claude-opus-4-5-20251101", "2026-11-01T09:01:00"),
        ("a", 2, "assistant", 500, 50, 12_000, 0, "claude-opus-4-5", "2026-11-01T23:30:00"),
        ("a", 3, "assistant", 0, 10, 0, 0, "claude-haiku-4-5-20251001", "2026-11-09T10:00:00"),
        # session b: one unpriced call
        ("b", 0, "assistant", 7, 3, 0, 0, "mystery-model", "2026-12-02T10:00:00"),
    ]
    df = pl.DataFrame([dict(session_id=s, seq=q, role=r, words=1, serialized_bytes=1, has_tool_result=False,
                            has_summary=False, bash_execution=False, input=i, output=o, cache_read=cr, cache_write=cw,
                            source_format="canonical", model=m, timestamp=t, file=f"{s}.jsonl", line=q + 1)
                       for s, q, r, i, o, cr, cw, m, t in rows],
                      schema_overrides={"timestamp": pl.String})
    df = df.with_columns(pl.col("timestamp").str.to_datetime("%Y-%m-%dT%H:%M:%S", time_zone="UTC"),
                         cache_write_1h=pl.when(pl.col("input").is_not_null()).then(0), recorded_cost=None,
                         refs=pl.lit(None, MESSAGE_SCHEMA["refs"]))
    return df.cast({k: v for k, v in MESSAGE_SCHEMA.items() if k in df.columns}).select(list(MESSAGE_SCHEMA))


def test_costs_by_session_are_hand_computed(genai):
    with pytest.warns(UnpricedWarning, match="mystery-model: 1 call"):
        table = costs(messages(), by="session", prices=genai)
    a, b = table.rows(named=True)
    assert (a["session_id"], a["api_calls"], a["input"], a["cache_read"], a["cache_write_5m"]) == \
        ("a", 3, 1_500, 22_000, 2_000)
    # opus: (1500 x 5 + 150 x 25 + 22000 x 0.5 + 2000 x 6.25) / 1e6; haiku: 10 x 5 / 1e6
    assert a["cost_usd"] == pytest.approx((7_500 + 3_750 + 11_000 + 12_500 + 50) / 1e6)
    assert a["price_source"] == f"{genai.source} (anthropic)"   # the provider whose prices it took
    assert b["price_source"] == genai.source   # none
    assert b["cost_usd"] is None and b["unpriced_calls"] == 1 and b["api_calls"] == 1


def test_costs_by_day_follow_the_time_zone(genai):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnpricedWarning)
        utc = costs(messages(), by="day", prices=genai)
        tokyo = costs(messages(), by="day", prices=genai, timezone="Asia/Tokyo")
        weeks = costs(messages(), by=["week", "model"], prices=genai)
        months = costs(messages(), by="month", prices=genai)
    assert [str(d) for d in utc["day"]] == ["2026-11-01", "2026-11-09", "2026-12-02"]
    assert utc["api_calls"].to_list() == [2, 1, 1]
    assert [str(d) for d in tokyo["day"]] == ["2026-11-01", "2026-11-02", "2026-11-09", "2026-12-02"]
    assert [(str(w), m) for w, m in weeks.select("week", "model").rows()] == [
        ("2026-10-26", "claude-opus-4-5"), ("2026-11-09", "claude-haiku-4-5"), ("2026-11-30", "mystery-model")]
    assert [str(m) for m in months["month"]] == ["2026-11-01", "2026-12-01"]
    # Groups add up to the whole.
    total = costs(messages().filter(pl.col("session_id") == "a"), prices=genai)
    assert total["cost_usd"].item() == pytest.approx(utc["cost_usd"][:2].sum())


def test_costs_by_project_need_the_sessions_table(genai):
    with pytest.raises(ValueError, match="sessions"):
        costs(messages(), by="project", prices=genai)
    sessions = pl.DataFrame({"session_id": ["a", "b"], "project": ["/p", "/q"]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnpricedWarning)
        table = costs(messages(), by=["project", "format"], prices=genai, sessions=sessions)
    assert table.select("project", "source_format", "api_calls").rows() == [("/p", "canonical", 3),
                                                                           ("/q", "canonical", 1)]


def test_a_one_hour_write_is_billed_at_its_rate(genai):
    msgs = messages().filter(pl.col("seq") == 1, pl.col("session_id") == "a").with_columns(
        cache_write_1h=pl.lit(500, pl.UInt32))
    calls = call_tokens(msgs)
    assert calls.select("cache_write_5m", "cache_write_1h").row(0) == (1_500, 500)
    table = costs(msgs, prices=genai)
    # 1500 x 6.25 + 500 x 10 per MTok
    assert table["cache_write_usd"].item() == pytest.approx((9_375 + 5_000) / 1e6)


def test_unknown_grouping_is_an_error():
    with pytest.raises(ValueError, match="unknown grouping"):
        costs(messages(), by="year")  # type: ignore[arg-type]


# --- issue 30: calls without usage, :free ids, the priced part, the provider ---------------------------------

def _calls_frame(rows: list[tuple]) -> pl.DataFrame:
    """A message frame of assistant calls ``(session, model, input, output, cache_read, cache_write, time)``."""
    from panto_analytics.frame.schema import MESSAGE_SCHEMA

    df = pl.DataFrame([dict(session_id=s, seq=q, role="assistant", words=1, serialized_bytes=1, has_tool_result=False,
                            has_summary=False, bash_execution=False, input=i, output=o, cache_read=cr, cache_write=cw,
                            cache_write_1h=0, source_format="claude-code", model=m, timestamp=t, file="f", line=q + 1)
                       for q, (s, m, i, o, cr, cw, t) in enumerate(rows)], schema_overrides={"timestamp": pl.String})
    df = df.with_columns(pl.col("timestamp").str.to_datetime("%Y-%m-%dT%H:%M:%S", time_zone="UTC"),
                         recorded_cost=None, refs=pl.lit(None, MESSAGE_SCHEMA["refs"]))
    return df.cast({k: v for k, v in MESSAGE_SCHEMA.items() if k in df.columns}).select(list(MESSAGE_SCHEMA))


def test_a_call_without_usage_costs_null_counted_with_a_note_never_zero(genai):
    frame_ = _calls_frame([("a", "claude-opus-4-5", 1_000, 100, 0, 0, "2026-11-01T09:00:00"),
                           ("a", "claude-opus-4-5", 0, 0, 0, 0, "2026-11-01T09:05:00"),   # a proxy recorded none
                           ("b", "claude-opus-4-5", 2_000, 0, 0, 0, "2026-11-02T09:00:00")])
    with pytest.warns(UnpricedWarning, match="1 call of model claude-opus-4-5 recorded no usage") as notes:
        table = costs(frame_, by="day", prices=genai)
    assert all(type(n.message).__name__ == "NoUsageWarning" for n in notes)
    one, two = table.rows(named=True)
    assert (one["api_calls"], one["no_usage_calls"], one["unpriced_calls"], one["cost_usd"]) == (2, 1, 0, None)
    # The priced part, at hand: 1,000 x $5 + 100 x $25 per MTok.
    assert one["priced_cost_usd"] == pytest.approx(0.0075, abs=1e-15)
    assert (two["no_usage_calls"], two["cost_usd"], two["priced_cost_usd"]) == (0, pytest.approx(0.01), pytest.approx(0.01))
    # Not an unpriced model: its model has a price.
    assert unpriced(bill(frame([{"model": "claude-opus-4-5", **dict.fromkeys(RATES, 0)}]), genai)).height == 0


def test_an_openrouter_free_model_costs_nothing_and_an_unpriced_one_keeps_its_priced_part(genai):
    frame_ = _calls_frame([
        ("a", "nvidia/nemotron-3-super-120b-a12b-20230311:free", 25_430, 59, 0, 0, "2026-11-01T09:00:00"),
        ("a", "claude-opus-4-5", 1_000, 0, 0, 0, "2026-11-01T09:01:00"),
        ("a", "no-such-model", 1_000, 0, 0, 0, "2026-11-01T09:02:00")])
    with pytest.warns(UnpricedWarning, match="no price for model no-such-model"):
        day = costs(frame_, by="day", prices=genai).row(0, named=True)
        models = costs(frame_, by="model", prices=genai)
    assert (day["cost_usd"], day["unpriced_calls"], day["priced_cost_usd"]) == (None, 1, pytest.approx(0.005))
    free = models.filter(pl.col("model").str.ends_with(":free")).row(0, named=True)
    assert (free["cost_usd"], free["price_source"]) == (0.0, f"{genai.source} (free)")
    assert day["price_source"] == f"{genai.source} (anthropic, free)"


def test_the_provider_decides_a_glm_price_and_is_named(genai):
    frame_ = _calls_frame([("a", "glm-5", 1_000_000, 0, 0, 0, "2026-11-01T09:00:00")])
    by_default = costs(frame_, prices=genai).row(0, named=True)
    zai = costs(frame_, prices=load_prices(provider="zai")).row(0, named=True)
    zhipu = costs(frame_, prices=load_prices(provider="zhipuai")).row(0, named=True)
    assert zai["price_source"].endswith("(zai)") and zhipu["price_source"].endswith("(zhipuai)")
    assert by_default["price_source"] == zhipu["price_source"]   # genai-prices' own match
    # The two lists differ (Z.AI's $1 against Zhipu's $0.552 per MTok of input in genai-prices 0.2.3).
    assert zai["cost_usd"] > 1.5 * zhipu["cost_usd"] > 0
    # GLM-4.6 is priced by Z.AI only: no price unless the user picks it.
    frame46 = _calls_frame([("a", "glm-4.6", 1_000_000, 0, 0, 0, "2026-11-01T09:00:00")])
    with pytest.warns(UnpricedWarning, match="glm-4.6"):
        assert costs(frame46, prices=genai)["cost_usd"].item() is None
    assert costs(frame46, prices=load_prices(provider="zai"))["cost_usd"].item() == pytest.approx(0.6)
    with pytest.raises(ValueError, match="unknown provider 'nope'"):
        load_prices(provider="nope")
