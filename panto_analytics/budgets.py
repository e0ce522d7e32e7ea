"""Budget lists as people type them: ``20k``, ``1.5M``, ``0,8k,20k``, ``0:100k:11``.

>>> parse_budget("20k"), parse_budget("1.5M"), parse_budget("2500")
(20000, 1500000, 2500)
>>> parse_budgets("0:100k:5")
[0, 25000, 50000, 75000, 100000]
>>> parse_budgets("8k,20k,8k")
[8000, 20000]
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation
from fractions import Fraction

__all__ = ["MAX_BUDGET", "Budgets", "as_budgets", "budgets_as_written", "parse_budget", "parse_budgets"]

#: The largest budget libpanto can hold (a u64).
MAX_BUDGET = 2**64 - 1

_SUFFIX = {"": 1, "k": 1_000, "m": 1_000_000, "g": 1_000_000_000}
_BUDGET = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([kKmMgG]?)\s*$")


def parse_budget(text: str) -> int:
    """One token budget; a suffix ``k``/``M``/``G`` multiplies by 10^3/10^6/10^9.

    Parameters
    ----------
    text
        ``20000``, ``20k``, ``1.5M``, ...

    Returns
    -------
    int
        The budget in tokens; :class:`ValueError` says what is wrong with ``text``.

    Examples
    --------
    >>> parse_budget("20k"), parse_budget("1.5M")
    (20000, 1500000)
    """
    m = _BUDGET.match(text)
    if not m:
        raise ValueError(f"not a token budget: {text!r} (examples: 20000, 20k, 1.5M)")
    try:
        value = Decimal(m.group(1)) * _SUFFIX[m.group(2).lower()]
    except InvalidOperation:
        raise ValueError(f"not a token budget: {text!r}") from None
    if value != value.to_integral_value():
        raise ValueError(f"a budget is a whole number of tokens, got {text!r} = {value}")
    if value > MAX_BUDGET:
        raise ValueError(f"budget {text.strip()!r} is above the largest libpanto holds, 2^64-1 = {MAX_BUDGET}")
    return int(value)


def parse_budgets(text: str) -> list[int]:
    """A comma list of budgets, or ``START:STOP:N`` for N evenly spaced budgets (rounded).

    Parameters
    ----------
    text
        ``8k,20k,50k`` or ``0:200k:5``.

    Returns
    -------
    list of int
        Sorted unique budgets (:func:`budgets_as_written` says whether that changed the list).

    Examples
    --------
    >>> parse_budgets("50k,8k,8k"), parse_budgets("0:200k:5")
    ([8000, 50000], [0, 50000, 100000, 150000, 200000])
    """
    text = text.strip()
    if text.count(":") == 2:
        start_s, stop_s, n_s = text.split(":")
        start, stop = parse_budget(start_s), parse_budget(stop_s)
        if not n_s.strip().isdigit() or int(n_s) < 1:
            raise ValueError(f"in START:STOP:N, N must be a positive integer, got {n_s!r}")
        n = int(n_s)
        if stop < start:
            raise ValueError(f"in START:STOP:N, STOP ({stop}) must not be below START ({start})")
        if n == 1:
            return [start]
        # Exact rational steps: a float step would round 2^64-1 up past what a u64 holds.
        return sorted({round(start + Fraction((stop - start) * i, n - 1)) for i in range(n)})
    parts = [p for p in text.split(",") if p.strip()]
    if not parts:
        raise ValueError("no budgets given (examples: 8k,20k,50k or 0:200k:21)")
    return sorted({parse_budget(p) for p in parts})


def budgets_as_written(text: str) -> list[int]:
    """A comma list of budgets in the order written, repeats kept (a range: as :func:`parse_budgets`).

    >>> budgets_as_written("20k,8k,8k")
    [20000, 8000, 8000]
    """
    if text.strip().count(":") == 2:
        return parse_budgets(text)
    return [parse_budget(p) for p in text.split(",") if p.strip()]


#: What the library's functions take as budgets: see :func:`as_budgets`.
Budgets = int | str | Iterable[int | str]


def as_budgets(budgets: Budgets) -> list[int]:
    """Budgets as the library takes them, sorted and unique: an int, a string as the command line takes it
    (``"20k"``, ``"8k,20k"``, ``"0:100k:41"``), or a list of ints and such strings.

    >>> as_budgets(20_000), as_budgets("20k"), as_budgets("0:10k:3"), as_budgets(["8k", 2_000, "8k"])
    ([20000], [20000], [0, 5000, 10000], [2000, 8000])
    """
    if isinstance(budgets, str):
        return parse_budgets(budgets)
    if isinstance(budgets, int):
        return [int(budgets)]
    return sorted({parse_budget(b) if isinstance(b, str) else int(b) for b in budgets})
