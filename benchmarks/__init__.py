"""Benchmarks and test references of panto_analytics: not part of the installed package.

- :mod:`.bench`: ``python -m benchmarks`` (speed and size, side by side, in one run);
- :mod:`.synth`, :mod:`.synth_claude_code`: deterministic synthetic corpora (``data/`` is one);
- :mod:`.reference_port`: the literal Python port of libpanto's compaction.zig that the tests hold the engine to.
"""
