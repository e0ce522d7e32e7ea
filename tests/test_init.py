"""What a notebook user finds after ``import panto_analytics as pa``."""
from __future__ import annotations

import pydoc
import subprocess
import sys

from conftest import DATA

import panto_analytics as pa


def test_sweep_is_the_summary_of_splits():
    splits = pa.splits(pa.read_sessions([DATA]), [0, 20_000])
    assert pa.sweep(splits).equals(pa.sweep(splits))


def test_one_budget_is_a_budget_list_of_one():
    messages = pa.read_sessions([DATA])
    assert pa.splits(messages, 20_000).equals(pa.splits(messages, [20_000]))
    assert pa.splits(messages.lazy(), 20_000).collect().equals(pa.splits(messages, [20_000]))


def test_plots_and_report_are_reachable_but_loaded_only_when_used():
    code = ("import sys, panto_analytics as pa; assert 'matplotlib' not in sys.modules; "
            "assert callable(pa.plots.kept_tokens_by_budget) and callable(pa.report.build_report); "
            "assert 'plots' in dir(pa)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_subpackages_are_attributes_imported_on_first_use():
    code = ("import sys, panto_analytics as pa; assert 'polars' not in sys.modules; "
            "assert 'panto_analytics.dataset' not in sys.modules; assert {'dataset', 'outcomes'} <= set(dir(pa)); "
            "assert callable(pa.dataset.write_dataset) and callable(pa.outcomes.load_prices); "
            "assert 'polars' in sys.modules")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_help_gives_a_tour_with_the_functions_names():
    text = pydoc.render_doc(pa, renderer=pydoc.plaintext)
    tour = [text.index(f"pa.{name}(") for name in ("read_sessions", "turns", "splits", "sweep", "recommend")]
    assert tour == sorted(tour)
    assert "pa.plots." in text and "pa.report." in text


def test_budgets_are_taken_as_strings_as_the_command_line_takes_them():
    messages = pa.examples.messages()
    assert pa.splits(messages, "20k").equals(pa.splits(messages, 20_000))
    assert pa.splits(messages, "8k,20k").equals(pa.splits(messages, [8_000, 20_000]))
    assert pa.splits(messages, ["20k", 8_000]).equals(pa.splits(messages, [8_000, 20_000]))
    assert pa.splits(messages, "0:10k:3")["budget"].unique().sort().to_list() == [0, 5_000, 10_000]
    window = pa.replay(messages, "1k", window=30_000, reserve=1_000, summary_tokens=10)
    assert window.events.equals(pa.replay(messages, [1_000], window=30_000, reserve=1_000, summary_tokens=10).events)


def test_a_recommendation_prints_as_a_person_reads_it():
    rec = pa.recommend(pa.splits(pa.examples.messages(), "0:2k:5"))
    assert str(rec) == rec.to_text() and str(rec).startswith(rec.headline())
    line = repr(rec)
    assert "\n" not in line and line.startswith("<Choice: ") and "5 budgets tried" in line
    assert "shape:" not in line  # no DataFrame dump


def test_dir_holds_the_public_names_and_not_the_module_machinery():
    names = dir(pa)
    assert set(pa.__all__) <= set(names) and {"plots", "report", "examples"} <= set(names)
    assert not {"importlib", "Any", "TYPE_CHECKING"} & set(names)
    assert not [n for n in names if n.startswith("_") and not n.startswith("__")]


def test_help_opens_with_the_tour():
    text = pydoc.render_doc(pa, renderer=pydoc.plaintext)
    description = text.split("DESCRIPTION", 1)[1].strip()
    assert description.startswith("A tour"), description[:200]
    assert description.index("pa.read_sessions(") < description.index("Cache")
