"""The key columns of each command's terminal table: the ones the command exists for, kept at any width.

A table that does not fit the terminal leaves out other columns first (and
shortens session ids): see :func:`~panto_analytics.analysis.formatting.render_table`.
``recommend`` declares its own (:meth:`~panto_analytics.analysis.choose.choice.Choice.key_columns`).

>>> key_columns("cost")
('cost_usd',)
>>> key_columns("no-such-command")
()
"""
from __future__ import annotations

__all__ = ["KEY_COLUMNS", "key_columns"]

#: By command: column names or ``fnmatch`` patterns (a table holds those of them it has).
KEY_COLUMNS: dict[str, tuple[str, ...]] = {
    "splits": ("budget", "kept_turns", "kept_tokens"),
    "sweep": ("kept_tokens_p*",),
    "sessions": ("model", "messages", "api_calls", "last_turn_share", "kept_turns", "kept_tokens"),
    "cost": ("cost_usd",),
    "replay": ("policy", "budget", "compactions_mean", "kept_tokens_p50", "orphan_rate"),
    "compactions": ("agent_tokens", "turns@*", "tokens@*"),
    "policy-cuts": ("exact", "distance_messages_p50"),
    "loss": ("cut", "orphan_rate", "precision", "recall"),
    "recommend": ("policy", "budget", "keeps_k_share", "within_limit_share", "orphan_rate"),
}


def key_columns(command: str | None) -> tuple[str, ...]:
    """The key columns of ``command``'s table; none for a command without a table of its own (``ingest``)."""
    return KEY_COLUMNS.get(command or "", ())
