"""How token counts are written for people."""
from panto_analytics.analysis.formatting import format_tokens


def test_format_tokens():
    assert [format_tokens(v) for v in (0, 999, 1000, 1500, 20_000, 123_456, 1_500_000)] == \
        ["0", "999", "1k", "1.5k", "20k", "123k", "1.5M"]
