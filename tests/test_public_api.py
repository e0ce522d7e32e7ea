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
    for name in ("read_sessions", "turns", "splits", "sweep", "plots", "recommend", "choose_budget", "report", "open_corpus", "costs",
                 "loss", "replay", "ingest.filter_corpus", "analysis.worst_served", "dataset.write_dataset"):
        assert f"pa.{name}" in tour


def test_the_public_face_is_the_verbs_of_the_tour_and_the_types_users_construct():
    assert set(pa.__all__) == {"read_sessions", "open_corpus", "turns", "splits", "sweep", "replay", "recommend",
                               "choose_budget", "costs", "loss", "Cache", "Rule", "SessionFilter"}


def test_the_rest_is_one_attribute_further_in_the_subpackage_that_owns_it():
    for path in ("ingest.read_corpus", "ingest.filter_corpus", "ingest.sessions", "ingest.compactions", "ingest.Corpus",
                 "analysis.Choice", "analysis.worst_served", "analysis.summary_request", "outcomes.Loss",
                 "outcomes.load_prices", "outcomes.references", "outcomes.refetch", "policy.Replay", "policy.annotate",
                 "policy.summarize_replay", "budgets.parse_budget", "budgets.parse_budgets", "errors.InputError",
                 "errors.IngestReport", "dataset.write_dataset", "dataset.scan_dataset", "dataset.Source",
                 "dataset.InMemory", "dataset.OnDataset", "dataset.OnRay"):
        module, name = path.split(".")
        assert name in getattr(pa, module).__all__, path
        assert getattr(getattr(pa, module), name) is not None
    assert pa.examples.messages().height == 8     # loaded on first use, like pa.plots
