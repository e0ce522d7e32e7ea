"""The agent version each message was recorded by (Claude Code's ``version`` field), for policies that changed
between versions (``claude-code``'s preserved segment).

The message frame keeps no version (it would cost every format a column); :func:`with_agent_versions` reads
it back from the recordings on demand: for each Claude Code message with a ``file`` and a ``line``, the
top-level ``version`` of the record on that line. A message whose file is gone, whose line holds no version
or is not one JSON object, and every message of another format: null (the policy treats it as unknown).

>>> import tempfile, pathlib, polars as pl
>>> f = pathlib.Path(tempfile.mkdtemp()) / "s.jsonl"
>>> _ = f.write_text('{"type":"user","message":{"content":"hi version"},"version":"2.1.185"}\\n{"type":"x"}\\n')
>>> m = pl.DataFrame({"source_format": ["claude-code", "claude-code", "pi"], "file": [str(f)] * 3,
...                   "line": [1, 2, 1]}, schema_overrides={"file": pl.Categorical})
>>> with_agent_versions(m)["agent_version"].to_list()
['2.1.185', None, None]
"""
from __future__ import annotations

from pathlib import Path

import polars as pl

from ..frame.schema import AGENT_VERSION

__all__ = ["VERSIONED_FORMATS", "needs_agent_versions", "reads_agent_versions", "with_agent_versions"]

#: The formats whose records name the agent version.
VERSIONED_FORMATS = ("claude-code",)


def reads_agent_versions(policies) -> bool:
    """Whether a replay under ``policies`` (specs, or None) reads recorded versions: a ``claude-code`` policy, or
    stage of a staged one (``A+B``), without a forced ``version``.

    >>> reads_agent_versions(["pi", "clear-tool-uses+claude-code"]), reads_agent_versions(["claude-code:version=2.1.185"])
    (True, False)
    """
    specs = [p if isinstance(p, str) else p.spec() if hasattr(p, "spec") else str(p) for p in policies or []]
    stages = [s.strip() for p in specs for s in p.split("+")]
    return any(s.split(":")[0] == "claude-code" and "version=" not in s for s in stages)


def needs_agent_versions(messages: pl.DataFrame, policies) -> bool:
    """Whether a replay of ``messages`` under ``policies`` (specs) reads recorded versions
    (:func:`reads_agent_versions`) that ``messages`` lacks: Claude Code rows without an ``agent_version`` column yet.

    >>> needs_agent_versions(pl.DataFrame({"source_format": ["claude-code"]}), ["claude-code:version=2.1.185"])
    False
    """
    return (reads_agent_versions(policies) and AGENT_VERSION not in messages.columns
            and "source_format" in messages.columns
            and messages["source_format"].cast(pl.String).is_in(VERSIONED_FORMATS).any())


def _file_versions(path: str, lines: pl.Series) -> pl.DataFrame:
    """``(file, line, agent_version)`` for the given 1-based lines of one file (none when it cannot be read)."""
    try:
        text = Path(path).read_bytes().decode("utf-8", errors="replace").split("\n")
    except OSError:
        return pl.DataFrame(schema={"file": pl.String, "line": pl.Int64, AGENT_VERSION: pl.String})
    wanted = lines.cast(pl.Int64).unique().filter((lines >= 1) & (lines <= len(text)))
    records = pl.Series([text[i - 1] for i in wanted.to_list()], dtype=pl.String)
    return pl.DataFrame({"file": [path] * len(wanted), "line": wanted}).with_columns(
        records.str.json_path_match("$.version").alias(AGENT_VERSION))


def with_agent_versions(messages: pl.DataFrame) -> pl.DataFrame:
    """``messages`` with an ``agent_version`` column (a string; see the module docstring)."""
    keyed = messages.with_columns(_file=pl.col("file").cast(pl.String), _line=pl.col("line").cast(pl.Int64))
    need = keyed.filter(pl.col("source_format").cast(pl.String).is_in(VERSIONED_FORMATS)
                        & pl.col("_file").is_not_null() & pl.col("_line").is_not_null())
    parts = [_file_versions(path, rows["_line"]) for (path,), rows in need.group_by("_file")]  # one read per file
    found = pl.concat(parts) if parts else pl.DataFrame(schema={"file": pl.String, "line": pl.Int64,
                                                                 AGENT_VERSION: pl.String})
    versioned = pl.col("source_format").cast(pl.String).is_in(VERSIONED_FORMATS)
    return keyed.join(found.rename({"file": "_file", "line": "_line"}), on=["_file", "_line"], how="left",
                      maintain_order="left").with_columns(
        pl.when(versioned).then(pl.col(AGENT_VERSION)).alias(AGENT_VERSION)).drop("_file", "_line")
