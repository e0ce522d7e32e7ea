"""Budget parsing: what people type on the command line."""
import pytest

from panto_analytics.budgets import parse_budget, parse_budgets


@pytest.mark.parametrize("text,value", [("0", 0), ("20k", 20_000), ("20K", 20_000), ("1.5M", 1_500_000),
                                        ("2G", 2_000_000_000), (" 8k ", 8_000), ("0.5k", 500)])
def test_parse_budget(text, value):
    assert parse_budget(text) == value


@pytest.mark.parametrize("text", ["", "k", "-5", "1.2345k", "20kb", "1e5", "abc"])
def test_parse_budget_rejects(text):
    with pytest.raises(ValueError):
        parse_budget(text)


def test_range_is_inclusive_and_evenly_spaced():
    values = parse_budgets("0:200k:21")
    assert len(values) == 21 and values[0] == 0 and values[-1] == 200_000
    assert {b - a for a, b in zip(values, values[1:])} == {10_000}


def test_list_is_sorted_and_unique():
    assert parse_budgets("50k,8k,20k,8k") == [8_000, 20_000, 50_000]


@pytest.mark.parametrize("text", ["10:0:3", "0:10:0", "0:10:x", ",,"])
def test_parse_budgets_rejects(text):
    with pytest.raises(ValueError):
        parse_budgets(text)


def test_range_to_the_largest_budget_stays_within_it():
    from panto_analytics.budgets import MAX_BUDGET

    values = parse_budgets(f"0:{MAX_BUDGET}:3")
    assert values == [0, 2**63, MAX_BUDGET]  # (2^64-1)/2 = 2^63 - 1/2, rounded half to even
    assert all(0 <= v <= MAX_BUDGET for v in parse_budgets(f"1:{MAX_BUDGET}:7"))

