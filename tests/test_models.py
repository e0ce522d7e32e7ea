"""Model names normalized for grouping, the raw name kept."""
from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from panto_analytics.models import normalized_model


def _norm(names):
    return pl.DataFrame({"m": names}, schema={"m": pl.String}).select(normalized_model("m"))["m"].to_list()


@pytest.mark.parametrize(("raw", "model"), [
    ("claude-opus-4-5-20251101", "claude-opus-4-5"),
    ("claude-haiku-4-5-20251001", "claude-haiku-4-5"),
    ("gpt-4o-2024-08-06", "gpt-4o"),
    ("anthropic/claude-sonnet-4", "claude-sonnet-4"),
    ("openrouter/anthropic/claude-sonnet-4-5", "claude-sonnet-4-5"),
    ("us.anthropic.claude-3-5-sonnet-20240620-v1:0", "claude-3-5-sonnet"),
    ("anthropic.claude-3-haiku-20240307-v1:0", "claude-3-haiku"),
    ("claude-3-5-sonnet-v2@20241022", "claude-3-5-sonnet-v2"),
    ("gpt-5.1-codex", "gpt-5.1-codex"),
    ("deepseek-v3", "deepseek-v3"),
    ("<synthetic>", "<synthetic>"),
])
def test_one_model_is_one_name(raw, model):
    assert _norm([raw]) == [model]


@given(st.lists(st.text(alphabet="abcdefgh-0123456789./@:", max_size=40), max_size=20))
def test_normalizing_is_idempotent_and_keeps_nulls(names):
    once = _norm([*names, None])
    assert once[-1] is None
    assert _norm(once) == once
