"""A record's fields checked as adapters read them: one definition of a usage counter and of a timestamp.

A field of an unexpected shape raises :class:`Invalid` (or, from code that assumed a JSON type, one of
:data:`BAD_RECORD`); the adapter reports it as a bad line with :func:`bad_record`, so no input ends in a
traceback.
"""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ..frame.schema import MAX_USAGE

__all__ = ["BAD_RECORD", "Invalid", "bad_record", "parse_timestamp", "timestamp_field", "usage_counter"]


class Invalid(ValueError):
    """Raised by validators inside an adapter; the adapter reports it with its line."""


#: What converting one record can raise on input of an unexpected shape: :class:`Invalid` from a
#: validator, ``TypeError`` where a field of another JSON type reached code that assumed one (a list
#: used as a key), ``RecursionError`` from nesting deeper than Python recurses. Adapters report each
#: as a bad line (:func:`bad_record`), so no input ends in a traceback.
BAD_RECORD = (Invalid, TypeError, RecursionError)


def bad_record(error: Exception) -> str:
    """The reason reported for a record that raised one of :data:`BAD_RECORD`.

    >>> bad_record(Invalid("usage.input must be an integer")), bad_record(TypeError("unhashable type: 'list'"))
    ('usage.input must be an integer', "unexpected record shape: TypeError: unhashable type: 'list'")
    """
    return str(error) if isinstance(error, Invalid) else f"unexpected record shape: {type(error).__name__}: {error}"


def usage_counter(value: Any, field: str) -> int:
    """A usage counter as an int, or :class:`Invalid` saying what is wrong with it.

    ``field`` is the counter's place in the file, as the file names it
    (``message.usage.input_tokens`` in Claude Code, ``usage.input`` in the canonical format), so the
    error points at what the file holds.

    >>> usage_counter(12, "usage.input")
    12
    >>> usage_counter(1.5, "message.usage.output_tokens")
    Traceback (most recent call last):
    ...
    panto_analytics.formats.record_fields.Invalid: message.usage.output_tokens must be a non-negative integer, got 1.5
    """
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        raise Invalid(f"{field} must be a non-negative integer, got {shown}")
    if value > MAX_USAGE:
        raise Invalid(f"{field} = {value} is above the supported maximum {MAX_USAGE}")
    return value


def parse_timestamp(value: Any) -> datetime | None:
    """An ISO-8601 string or epoch milliseconds as an aware UTC datetime, else None.

    >>> parse_timestamp("2025-01-02T03:04:05.678Z").isoformat()
    '2025-01-02T03:04:05.678000+00:00'
    >>> parse_timestamp(1735787045678).year
    2025
    >>> parse_timestamp(10**30) is None   # no datetime holds it
    True
    """
    if isinstance(value, str):
        try:
            ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return ts if ts.tzinfo else ts.replace(tzinfo=UTC)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value / 1000, tz=UTC)
        except (OverflowError, OSError, ValueError):  # beyond the years a datetime holds: no time known
            return None
    return None


def timestamp_field(value: Any, where: str) -> datetime | None:
    """An optional timestamp field of a format that documents one (ISO-8601 or epoch ms): None when absent,
    :class:`Invalid` naming the field when it is there but no time (a wrong type, text, out of range).

    >>> timestamp_field(None, "message.timestamp") is None, timestamp_field(0, "message.timestamp").year
    (True, 1970)
    >>> timestamp_field("not a date", "message.timestamp")
    Traceback (most recent call last):
    ...
    panto_analytics.formats.record_fields.Invalid: message.timestamp must be an ISO-8601 string or epoch milliseconds, got 'not a date'
    """
    if value is None:
        return None
    ts = parse_timestamp(value)
    if ts is None:
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        raise Invalid(f"{where} must be an ISO-8601 string or epoch milliseconds, got {shown}")
    return ts
