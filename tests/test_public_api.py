"""What a notebook user finds after ``import panto_analytics as pa``: every function documented and exemplified."""
from __future__ import annotations

import inspect

import pytest

import panto_analytics as pa

FUNCTIONS = sorted(name for name in pa.__all__ if inspect.isfunction(getattr(pa, name)))


@pytest.mark.parametrize("name", FUNCTIONS)
def test_every_public_function_has_numpydoc_sections_and_a_doctest(name):
    doc = inspect.getdoc(getattr(pa, name)) or ""
    for section in ("Parameters\n----------", "Returns\n-------"):
        assert section in doc, f"pa.{name}: no {section.splitlines()[0]} section"
    assert ">>>" in doc, f"pa.{name}: no example"


def test_the_tour_names_the_functions_it_walks_through():
    tour = pa.__doc__ or ""
    for name in ("read_sessions", "turns", "splits", "sweep", "plots", "recommend", "report", "filter_corpus",
                 "worst_served"):
        assert f"pa.{name}" in tour


def test_types_returned_are_exported():
    assert {"Cache", "Corpus", "Recommendation", "Replay", "SessionFilter"} <= set(pa.__all__)
    assert pa.examples.messages().height == 8     # loaded on first use, like pa.plots
