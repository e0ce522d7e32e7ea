"""What the policy's functions share about the frames they take and return (private: no user imports it).

Each public function of :mod:`panto_analytics.policy` takes a ``DataFrame`` or a ``LazyFrame`` and returns the
same kind (:data:`Frame`, :func:`same_kind`), checks an eager frame's order first (:func:`checked`) and casts
its result to the schema it declares (:func:`cast_to`).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import polars as pl

from ..frame import expressions as ex
from ..frame.schema import SEQ, SESSION

__all__ = ["Frame", "cast_to", "check_order", "checked", "same_kind"]

Frame = TypeVar("Frame", pl.DataFrame, pl.LazyFrame)


def cast_to(lf: pl.LazyFrame, schema: dict[str, pl.DataType], keep: Sequence[str] = ()) -> pl.LazyFrame:
    """Cast to ``schema`` and order its columns (then ``keep``'s); ``session_id`` keeps the caller's dtype."""
    return lf.cast({k: v for k, v in schema.items() if k != SESSION}).select(*schema, *keep)


def same_kind(result: pl.LazyFrame, like: Frame) -> Frame:
    """``result`` as the same kind as ``like``: collected for a DataFrame, lazy for a LazyFrame.

    >>> same_kind(pl.LazyFrame({"a": [1]}), pl.DataFrame()).shape
    (1, 1)
    """
    return result.collect() if isinstance(like, pl.DataFrame) else result


def check_order(messages: pl.DataFrame) -> None:
    """Raise ValueError unless each session's rows are contiguous and in ``seq`` order 0, 1, 2, ...

    Every scan of the policy relies on it, as :func:`~panto_analytics.read_sessions`
    returns frames. Eager frames are checked by the public functions here; a
    LazyFrame is taken on trust (checking it would mean collecting it).

    >>> df = pl.DataFrame({"session_id": ["a", "b", "a"], "seq": [0, 0, 1]})
    >>> check_order(df)
    Traceback (most recent call last):
    ...
    ValueError: the message frame is not in order: sort it by session_id, seq (each session's rows contiguous, seq 0, 1, 2, ...)
    """
    start = ex.session_start()
    expected_seq = pl.when(start).then(0).otherwise(pl.col(SEQ).shift(1) + 1)
    ok = messages.select(
        (pl.col(SEQ) == expected_seq).all() & (start.sum() == pl.col(SESSION).n_unique())
    ).item()
    if ok is False:
        raise ValueError("the message frame is not in order: sort it by session_id, seq "
                         "(each session's rows contiguous, seq 0, 1, 2, ...)")


def checked(messages: Frame) -> Frame:
    """``messages`` itself, once :func:`check_order` passed on it (a LazyFrame is taken on trust)."""
    if isinstance(messages, pl.DataFrame):
        check_order(messages)
    return messages
