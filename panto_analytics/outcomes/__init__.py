"""What a compaction costs and loses: prices, cost, references -> loss.

A floor of its own between ``ingest`` (below: it may read the corpus tables
and the model names) and ``analysis`` / ``dataset`` (above: they report and
stream its tables). The cost and loss work adds its modules here.
"""

__all__ = []
