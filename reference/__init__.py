"""The test oracles of panto_analytics: literal, sequential Python the tests hold the engine to.

Outside the package and outside the wheel, like ``benchmarks/``; the tests
import it from the checkout (``pyproject.toml`` puts the checkout on the test
path).

- :mod:`.port`: the literal Python port of libpanto's compaction.zig, with every one of its tests.
- :mod:`.replay`: compaction over a session's life, one call at a time (``policy.replay``'s statement).
- :mod:`.policies`: each compaction policy's cut and replay, the way its source states it.
- :mod:`.billing`: the tokens of every replayed call and summarizer call, one call at a time
  (``outcomes.billing``'s statement).
- :mod:`.frame_rows`: a frame built one message at a time (``formats.frame_builder.FrameBuilder``'s statement).
- :mod:`.pi_lines`: the line-by-line pi reader (``formats.pi``'s statement).
- :mod:`.codex_lines`: the line-by-line Codex reader (``formats.codex``'s statement).
- :mod:`.canonical_lines`: the line-by-line canonical reader (``formats.canonical``'s statement).
- :mod:`.claude_code_lines`: the line-by-line Claude Code reader (``formats.claude_code``'s statement).
"""

__all__ = []
