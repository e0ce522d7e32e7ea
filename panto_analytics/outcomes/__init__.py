"""Outcomes of a compaction policy: what each tool call references (:mod:`.references`), what a compaction loses
(:mod:`.loss`)."""
from .loss import Loss, loss
from .references import references

__all__ = ["Loss", "loss", "references"]
