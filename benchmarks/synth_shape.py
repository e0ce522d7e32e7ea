"""What every synthetic corpus shares: the models and how often a session has no usage.

Its own module so that the file writers (:mod:`benchmarks.synth`) and the
dataset writer (:mod:`benchmarks.synth_dataset`) both read it without
importing each other.
"""
from __future__ import annotations

__all__ = ["MODELS", "NO_USAGE_SHARE"]

#: (model name, context window in tokens, weight). Fictional names.
MODELS = (("synth-mini", 32_000, 0.35), ("synth-pro", 128_000, 0.35), ("synth-max", 200_000, 0.30))

#: Share of sessions recorded without any provider usage.
NO_USAGE_SHARE = 0.15
