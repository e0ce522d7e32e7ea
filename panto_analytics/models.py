"""Model names as agents record them, normalized so that one model is one group.

Providers write the same model several ways: with a release date
(``claude-opus-4-5-20251101``, ``gpt-4o-2024-08-06``), behind a router
(``openrouter/anthropic/claude-sonnet-4``), as a Bedrock or Vertex id
(``us.anthropic.claude-3-5-sonnet-20240620-v1:0``, ``claude-3-5-sonnet@20240620``).
:func:`normalized_model` strips those decorations; the sessions table keeps the
raw name beside it (``model_raw``).

>>> import polars as pl
>>> names = ["claude-opus-4-5-20251101", "claude-opus-4-5", "gpt-4o-2024-08-06", "openrouter/anthropic/claude-sonnet-4",
...          "us.anthropic.claude-3-5-sonnet-20240620-v1:0", "claude-3-5-sonnet@20240620", "<synthetic>", "deepseek-v3", None]
>>> for name in pl.DataFrame({"m": names}).select(normalized_model("m"))["m"]:
...     print(name)
claude-opus-4-5
claude-opus-4-5
gpt-4o
claude-sonnet-4
claude-3-5-sonnet
claude-3-5-sonnet
<synthetic>
deepseek-v3
None
"""
from __future__ import annotations

import polars as pl
from polars._typing import IntoExpr

__all__ = ["MODEL_DECORATIONS", "NOT_A_MODEL", "normalized_model", "session_model"]

#: Names an agent records where no model answered (Claude Code's ``<synthetic>``, its own messages): they
#: name no session's model.
NOT_A_MODEL = ("<synthetic>",)

#: What is stripped, in order: a router or provider path, a Bedrock region and vendor prefix, a Bedrock
#: version suffix, a Vertex ``@version``, a release date (``-YYYYMMDD`` or ``-YYYY-MM-DD``).
MODEL_DECORATIONS = (
    r"^.*/",
    r"^(?:[a-z]{2}\.)?(?:anthropic|meta|amazon|mistral|cohere)\.",
    r"-v\d+:\d+$",
    r"@.*$",
    r"-\d{8}$",
    r"-\d{4}-\d{2}-\d{2}$",
)


def normalized_model(model: IntoExpr = "model") -> pl.Expr:
    """The model name without provider, router, version or date decorations (null stays null).

    Parameters
    ----------
    model
        A column of model names (String or Categorical), by name or expression.

    Returns
    -------
    pl.Expr
        A String expression named like its input.

    Examples
    --------
    >>> import polars as pl
    >>> pl.select(normalized_model(pl.lit("claude-sonnet-4-5-20250929"))).item()
    'claude-sonnet-4-5'
    """
    expr = pl.col(model) if isinstance(model, str) else pl.lit(model) if not isinstance(model, pl.Expr) else model
    out = expr.cast(pl.String)
    for pattern in MODEL_DECORATIONS:
        out = out.str.replace(pattern, "")
    return out


def session_model(model: IntoExpr = "model") -> pl.Expr:
    """A session's model from its messages' (an aggregation: use it in ``group_by(...).agg``): the last model
    a message names, :data:`NOT_A_MODEL` left out, as recorded (normalize it with :func:`normalized_model`).

    The sessions table takes it where the session itself names none; every per-model table and plot groups
    by it, so that a session is counted once, under one name.

    >>> import polars as pl
    >>> m = pl.DataFrame({"s": ["a", "a", "a", "b"], "model": ["claude-opus-4-5-20251101", "<synthetic>", None, None]})
    >>> m.group_by("s", maintain_order=True).agg(session_model()).rows()
    [('a', 'claude-opus-4-5-20251101'), ('b', None)]
    """
    expr = pl.col(model) if isinstance(model, str) else model if isinstance(model, pl.Expr) else pl.lit(model)
    name = expr.cast(pl.String)
    return name.filter(name.is_not_null() & ~name.is_in(NOT_A_MODEL)).last()
