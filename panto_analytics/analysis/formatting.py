"""How numbers are shown to people: one way to write a token count, a share, a column (a count of things:
:mod:`panto_analytics.phrases`).

>>> format_tokens(20_000), format_tokens(1_500_000), format_tokens(950)
('20k', '1.5M', '950')
"""
from __future__ import annotations

import fnmatch
import math
from collections.abc import Sequence
from typing import Any

__all__ = ["ID_COLUMNS", "SHORT_ID", "TABLE_CONFIG", "format_column", "format_share", "format_tokens", "has_budget",
           "is_money", "point_name", "render_table", "shortest_unique_prefix"]


def format_tokens(n: float | int | None) -> str:
    """A token count as people say it: ``950``, ``2.5k``, ``20k``, ``1.5M``.

    >>> [format_tokens(x) for x in (0, 1000, 2500, 12_345, 200_000, 2_000_000)]
    ['0', '1k', '2.5k', '12.3k', '200k', '2M']
    """
    if n is None or (isinstance(n, float) and math.isnan(n)):
        return "-"
    for scale, suffix in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if abs(n) >= scale:
            value = n / scale
            text = f"{value:.1f}" if value < 100 else f"{value:.0f}"
            return text.removesuffix(".0") + suffix
    return f"{n:.0f}"


def format_share(x: float | None) -> str:
    """A share as a percentage, up to ten times the whole; beyond that, how many times (a budget of 2^64-1
    tokens is not "57646075230342352%" of a window).

    >>> [format_share(x) for x in (0.25, 0.58, 1.5, 12.0, 5.7e16, None)]
    ['25%', '58%', '150%', '12 times', 'more than 1,000 times', '-']
    """
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if x < 10:
        return f"{x:.0%}"
    if x < 1000:
        return f"{x:,.0f} times"
    return "more than 1,000 times"


def is_money(column: str) -> bool:
    """Whether a column holds dollars: the cost columns are named ``*_usd``.

    >>> is_money("cost_usd"), is_money("cost_p50_usd"), is_money("input")
    (True, True, False)
    """
    return column.endswith("_usd")


def format_column(values: list, *, money: bool = False) -> list[str]:
    """A column of numbers in one notation: integers with thousands separators; floats all fixed-point, with
    as many decimals as the column's largest magnitude leaves room for (never ``3.37e+04`` beside ``17,459``).
    None is ``-``; text stays as it is. ``money``: dollars, in cents (four decimals when the whole column is
    under a dollar), so a cost is never rounded to a bare ``0.0``.

    >>> format_column([33_700.5, 17_459.0, None]), format_column([0.5, 0.125]), format_column([1_200, 2**64 - 1])
    (['33,700', '17,459', '-'], ['0.500', '0.125'], ['1,200', '18,446,744,073,709,551,615'])
    >>> format_column([29.5123, 0.0412, None], money=True), format_column([0.0412, 0.00031], money=True)
    (['29.51', '0.04', '-'], ['0.0412', '0.0003'])
    """
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    floats = [abs(v) for v in numbers if isinstance(v, float) and not math.isnan(v)]
    if money and floats:
        decimals = 2 if max(floats) >= 1 else 4
    elif floats and not all(v.is_integer() for v in floats):
        top = max(floats)
        decimals = 0 if top >= 100 else 1 if top >= 10 else 3
    else:
        decimals = 0
    out = []
    for v in values:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            out.append("-")
        elif isinstance(v, bool):
            out.append("yes" if v else "no")
        elif isinstance(v, int):  # exactly, past what a float holds (2^64-1)
            out.append(f"{v:,}" if not decimals else f"{v:,.{decimals}f}")
        elif isinstance(v, float):
            out.append(f"{v:,.{decimals}f}")
        else:
            out.append(str(v))
    return out


#: How polars draws a table for people: every column, strings whole, no shape or types.
TABLE_CONFIG: dict[str, Any] = {"tbl_cols": -1, "tbl_width_chars": 65_535, "fmt_str_lengths": 65_535,
                "tbl_hide_dataframe_shape": True, "tbl_hide_column_data_types": True}


#: Columns of session ids: shortened to a unique prefix where a table does not fit (:func:`render_table`).
ID_COLUMNS = ("session_id", "session", "parent_session_id")

#: The fewest characters a shortened session id keeps.
SHORT_ID = 8


def shortest_unique_prefix(ids: Sequence[str | None], least: int = SHORT_ID) -> int:
    """The fewest leading characters (``least`` at the fewest) that still tell the distinct ``ids`` apart.

    >>> shortest_unique_prefix(["0963a6d2-9c87", "0963a6d2-1111", "12d91d84-aaaa"])
    10
    >>> shortest_unique_prefix(["a", "b"])
    8
    """
    distinct = {i for i in ids if i is not None}
    longest = max(map(len, distinct), default=0)
    n = least
    while n < longest and len({i[:n] for i in distinct}) < len(distinct):
        n += 1
    return n


def render_table(df, *, width: int | None = None, rows: int = 200, key: Sequence[str] = ()) -> tuple[str, list[str]]:
    """``df`` drawn as a table of at most ``width`` characters, and the columns left out to fit.

    Where the whole table does not fit, session ids (:data:`ID_COLUMNS`) are shortened first, to the
    shortest prefix that tells them apart (:func:`shortest_unique_prefix`, ending in ``…``); other text
    is never shortened (a path is whole or absent): whole columns are left out instead. The first column
    and the ``key`` columns (names or ``fnmatch`` patterns: the ones the table exists for) always show;
    of the others, the later ones are left out first, and each that still fits is kept, so a narrow
    column after a wide one stays. ``width`` None: every column. Numbers are written as
    :func:`format_column` writes them (one notation per column, thousands separated), aligned right; the
    first ``rows`` rows are shown. A missing value is ``-``.

    >>> import polars as pl
    >>> df = pl.DataFrame({"id": ["a"], "path": ["/" + "x" * 60], "n": [1]})
    >>> text, hidden = render_table(df, width=40)
    >>> hidden, max(len(line) for line in text.splitlines()) <= 40
    (['path'], True)
    >>> df = pl.DataFrame({"session_id": ["0963a6d2-9c87-43a8-8b29-8037e82ed488"], "a": [1], "b": [2], "usd": [0.5]})
    >>> text, hidden = render_table(df, width=24, key=["usd"])
    >>> hidden, "0963a6d2…" in text
    (['a', 'b'], True)
    >>> print(render_table(pl.DataFrame({"budget": [0, 25_000], "share": [0.0, 0.368948], "p": ["/w", None]}))[0])
    ┌────────┬───────┬────┐
    │ budget ┆ share ┆ p  │
    ╞════════╪═══════╪════╡
    │      0 ┆ 0.000 ┆ /w │
    │ 25,000 ┆ 0.369 ┆ -  │
    └────────┴───────┴────┘
    """
    import polars as pl

    df = df.head(rows).with_columns(pl.col(pl.String).fill_null("-"))  # no "null" where nothing was recorded
    numeric = [c for c, t in df.schema.items() if t.is_numeric()]
    if numeric:
        def right(header: str, cells: list[str]) -> list[str]:  # right-aligned under the header too
            return [cell.rjust(max(len(header), *map(len, cells))) for cell in cells]

        df = df.with_columns(pl.Series(c, right(c, format_column(df[c].to_list(), money=is_money(c))), dtype=pl.String)
                             for c in numeric)

    def draw(frame) -> str:
        with pl.Config(tbl_rows=min(len(frame), rows), **TABLE_CONFIG):
            return str(frame)

    def wide(text: str) -> int:
        return max(map(len, text.splitlines()), default=0)

    if width is None or wide(full := draw(df)) <= width:
        return (draw(df) if width is None else full), []
    ids = [c for c in ID_COLUMNS if c in df.columns and df.schema[c] in (pl.String, pl.Categorical)]
    if ids:
        df = df.with_columns(pl.col(ids).cast(pl.String))
        n = shortest_unique_prefix([v for c in ids for v in df[c].to_list()])
        df = df.with_columns(pl.when(pl.col(c).str.len_chars() > n).then(pl.col(c).str.slice(0, n) + "…")
                             .otherwise(pl.col(c)).alias(c) for c in ids)
        if wide(full := draw(df)) <= width:
            return full, []
    # A column's share of the width: alone, drawn with its borders; side by side they share one border.
    sizes = dict(zip(df.columns, [wide(draw(df.select(c))) - 1 for c in df.columns], strict=True))
    first = df.columns[:1]
    keys = [c for c in df.columns[1:] if any(fnmatch.fnmatchcase(c, k) for k in key)]
    kept = set(first + keys)
    used = 1 + sum(sizes[c] for c in kept)
    for c in df.columns:
        if c not in kept and used + sizes[c] <= width:
            kept.add(c)
            used += sizes[c]
    shown = [c for c in df.columns if c in kept]
    return draw(df.select(shown)), [c for c in df.columns if c not in kept]


def has_budget(policy: str | None) -> bool:
    """Whether the policy (a spec; None: libpanto) has a token budget (``keep_verbatim``, ``keep_recent_tokens``,
    ...); one that has none (a share of the window, a count of turns, nothing kept) is named by its settings.

    >>> has_budget("libpanto"), has_budget("pi:keep_recent_tokens=30k"), has_budget("gemini-cli")
    (True, True, False)
    >>> has_budget("clear-tool-uses+libpanto"), has_budget("observation-masking")
    (True, False)
    """
    from ..policy.compaction.policies import parse_policy

    return policy is None or parse_policy(policy).budget_name() is not None


def point_name(policy: str | None, budget: int | None) -> str:
    """How a result names one (policy, budget) point: by its token budget where the policy has one, else by its
    settings, never as a budget of 0.

    >>> point_name("libpanto", 57_500), point_name("pi", 20_000)
    ('libpanto at 57.5k', 'pi at 20k')
    >>> point_name("gemini-cli", 0)
    'gemini-cli (threshold_ratio=0.5, preserve=0.3)'
    >>> point_name("observation-masking:m=3", 0), point_name("observation-masking:m=3+gemini-cli", 0)
    ('observation-masking (m=3)', 'observation-masking (m=3) + gemini-cli (threshold_ratio=0.5, preserve=0.3)')
    """
    from ..policy.compaction.policies import parse_policy

    name = policy or "libpanto"
    if has_budget(policy):
        return f"{name} at {format_tokens(budget)}"
    parsed = parse_policy(name)
    # A staged policy by its stages, each by its name and settings (a spec already names what differs).
    return " + ".join(f"{s.name} ({s.settings_text()})" if s.settings_text() else s.name
                      for s in getattr(parsed, "stages", (parsed,)))
