"""How token counts and dollars are written for people."""
import polars as pl

from panto_analytics.analysis.formatting import format_tokens, render_table


def test_format_tokens():
    assert [format_tokens(v) for v in (0, 999, 1000, 1500, 20_000, 123_456, 1_500_000)] == \
        ["0", "999", "1k", "1.5k", "20k", "123k", "1.5M"]


def test_dollars_are_written_in_cents_never_as_a_bare_zero():
    # A day's cost beside a cheap one: the cheap one keeps its cents (it read "0.0" with one decimal).
    text, _ = render_table(pl.DataFrame({"day": ["a", "b"], "cost_usd": [29.5123, 0.0412]}))
    assert "29.51" in text and "0.04 " in text and "0.0 " not in text
    # A column of sub-dollar costs gets four decimals, so a few hundredths of a cent still show.
    text, _ = render_table(pl.DataFrame({"cost_p50_usd": [0.0412, 0.00031]}))
    assert "0.0412" in text and "0.0003" in text
