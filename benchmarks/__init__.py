"""Benchmarks of panto_analytics: not part of the installed package.

- :mod:`.bench`: ``python -m benchmarks`` (speed and size, side by side, in one run);
- :mod:`.synth`, :mod:`.synth_claude_code`: deterministic synthetic corpora (``data/`` is one);

The test oracles (the literal Python port of libpanto's compaction.zig, the sequential replays) are in the
top-level ``reference/`` folder.
"""
