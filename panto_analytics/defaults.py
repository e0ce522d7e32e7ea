"""The names and numbers a user sees before any work: the command line's choices and defaults.

They live here, in a module that imports nothing, so that the command line
can build its options (and print ``--help``) without loading Polars, Arrow
or NumPy; the modules that use them import them from here.

>>> "claude-code" in SOURCE_FORMATS and DEFAULT_RESERVE < 200_000
True
"""
from __future__ import annotations

__all__ = [
    "COST_GROUPINGS",
    "DEFAULT_BUCKETS", "DEFAULT_BUDGETS", "DEFAULT_COMPACTION_BUDGETS",
    "DEFAULT_COVERAGE", "DEFAULT_MIN_KEPT_TURNS", "DEFAULT_RESAMPLES", "DEFAULT_SEED", "DEFAULT_RESERVE",
    "DEFAULT_SUMMARY_TOKENS",
    "CLEARING_POLICY_NAMES", "ENGINES", "MAX_BUCKETS", "MIN_SUMMARY_TOKENS", "POLICY_NAMES", "RAY_INSTALL",
    "SEGMENT_KINDS", "SOURCE_FORMATS",
]

#: The source formats an adapter can read (see ``docs/formats.md``).
SOURCE_FORMATS = ("canonical", "pi", "claude-code", "codex")

#: The budgets every command tries when none are given: 0 to 100k in steps of 2.5k (one grid, so that
#: ``sweep``, ``replay``, ``recommend`` and ``report`` on the same sessions speak of the same budgets).
DEFAULT_BUDGETS = "0:100k:41"

#: The budgets ``compactions`` sets beside each recorded compaction when none are given: a few, so that its
#: table (two columns a budget) stays readable at a terminal.
DEFAULT_COMPACTION_BUDGETS = "8k,20k,50k"

#: Tokens kept free below the window for the next prompt and output (``reserve``).
DEFAULT_RESERVE = 16_384

#: Size of a simulated summary when the caller has no median of recorded ones.
DEFAULT_SUMMARY_TOKENS = 2_000

#: A median of recorded summaries below this many tokens is not a summary an agent wrote (redacted or
#: placeholder text): the replay then assumes :data:`DEFAULT_SUMMARY_TOKENS` and says why.
MIN_SUMMARY_TOKENS = 100

#: The policies that clear old tool results in place rather than summarize a prefix (no cut).
CLEARING_POLICY_NAMES = ("clear-tool-uses", "claude-code-microcompact", "claude-code-time-microcompact",
                         "observation-masking", "opencode-prune", "openclaw-cache-ttl")

#: The compaction policies by name, in the order comparisons list them (``policy.compaction.policies.POLICIES``).
POLICY_NAMES = ("libpanto", "pi", "pi-whole-turn", "codex", "claude-code", "gemini-cli", "last-n-turns",
                "anthropic-compact", "openai-compact", "cline", "openhands", "opencode", "summarize-every",
                *CLEARING_POLICY_NAMES)

#: The rule applied when none is given: 90% of sessions keep at least two whole turns.
DEFAULT_MIN_KEPT_TURNS = 2
DEFAULT_COVERAGE = 0.9

#: The bootstrap over sessions behind every interval (analysis/choose/bootstrap.py): resamples and seed.
DEFAULT_RESAMPLES = 200
DEFAULT_SEED = 0

#: Ways to split a corpus into segments (``analysis.plot_data.session_segments``).
SEGMENT_KINDS = ("model", "source_format", "project", "length")

#: What ``cost --by`` groups the bill by (``outcomes.cost.costs``).
COST_GROUPINGS = ("session", "day", "week", "month", "model", "project", "format")

#: Where the per-bucket work over a dataset runs.
ENGINES = ("local", "ray")

#: How to get the Ray engine.
RAY_INSTALL = "pip install 'panto_analytics[ray]'"

#: Buckets a new dataset gets: a few thousand sessions per bucket at a million sessions.
DEFAULT_BUCKETS = 256

#: Bucket folders are named with three digits (``bucket=017``).
MAX_BUCKETS = 1000
