"""The message frame's vocabulary: what reading writes and modelling reads, on a floor of its own.

Both wings stand on it: reading (:mod:`panto_analytics.formats`, :mod:`panto_analytics.ingest`) builds the
frame with it, modelling (:mod:`panto_analytics.policy`, :mod:`panto_analytics.outcomes`) computes on it,
and neither imports the other; they meet in :mod:`panto_analytics.analysis`.

- :mod:`.schema`: every frame's columns and dtypes, declared once (``pa.schema``).
- :mod:`.words`: libpanto's word count of a message (``countWords``), one row or a whole Arrow array.
- :mod:`.json_words`: the same count read straight from JSON strings.
- :mod:`.expressions`: the column expressions (one definition of a turn start, of an API call, of a cost).
- :mod:`.tool_targets`: what each tool call touches (the frame's ``refs`` column), and the references table.

Nothing is imported here: ``import panto_analytics.frame`` loads no Polars.
"""
__all__ = list[str]()
