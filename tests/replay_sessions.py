"""Sessions as message-frame rows, hand-made or drawn by hypothesis, for the replay's tests against its references.

A row has the columns the replay reads: ``role``, ``serialized_bytes``, ``has_tool_result``, ``has_summary``,
``bash_execution`` and the usage counters (all null where the message reports no usage).
"""
from __future__ import annotations

from hypothesis import strategies as st

__all__ = ["frame_row", "growing_sessions"]


def frame_row(role: str, size: int = 400, cum: int | None = None, tool_result: bool = False, summary: bool = False,
              bash: bool = False) -> dict:
    """One row of ``size`` serialized bytes whose usage reports the context ``cum`` (None: no usage).

    >>> frame_row("assistant", 10, 300)["input"], frame_row("user")["input"]
    (300, None)
    """
    usage = {"input": cum, "output": 0, "cache_read": 0, "cache_write": 0} if cum is not None else \
        {"input": None, "output": None, "cache_read": None, "cache_write": None}
    return {"role": role, "serialized_bytes": size, "has_tool_result": tool_result, "has_summary": summary,
            "bash_execution": bash, **usage}


@st.composite
def growing_sessions(draw: st.DrawFn, kinds: list[str], summary_roles: tuple[str, ...] = ("user",),
                     summary_resets: bool = False) -> dict[str, list[dict]]:
    """One to three sessions (``s0``, ...) of up to 40 rows of sizes up to 3,000 bytes, each of a kind drawn from
    ``kinds`` (repeat a kind to draw it more often): ``assistant``, a call whose usage reports a context grown by
    -800 to 2,500 tokens (unreported once in six); ``tool``, a tool result; ``bash``, a user's bash execution;
    ``summary``, a recorded compaction summary of one of ``summary_roles`` (after which, with
    ``summary_resets``, the context reported starts again from 0 to 2,000); any other, a message of that role.
    """
    out = {}
    for s in range(draw(st.integers(1, 3))):
        cum, rows = 0, []
        for _ in range(draw(st.integers(0, 40))):
            kind = draw(st.sampled_from(kinds))
            size = draw(st.integers(0, 3_000))
            if kind == "assistant":
                cum = max(cum + draw(st.integers(-800, 2_500)), 0)
                rows.append(frame_row("assistant", size, cum if draw(st.integers(0, 5)) else None))
            elif kind in ("tool", "bash"):
                rows.append(frame_row("user", size, tool_result=kind == "tool", bash=kind == "bash"))
            elif kind == "summary":
                rows.append(frame_row(draw(st.sampled_from(summary_roles)), size, summary=True))
                cum = draw(st.integers(0, 2_000)) if summary_resets else cum
            else:
                rows.append(frame_row(kind, size))
        out[f"s{s}"] = rows
    return out
