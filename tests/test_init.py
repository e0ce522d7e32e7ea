"""What a notebook user finds after ``import panto_analytics as pa``."""
from __future__ import annotations

import pydoc
import subprocess
import sys

from conftest import DATA

import panto_analytics as pa


def test_sweep_is_the_summary_of_splits():
    splits = pa.splits(pa.read_sessions([DATA]), [0, 20_000])
    assert pa.sweep(splits).equals(pa.summarize_splits(splits))


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


def test_help_gives_a_tour_with_the_functions_names():
    text = pydoc.render_doc(pa, renderer=pydoc.plaintext)
    tour = [text.index(f"pa.{name}(") for name in ("read_sessions", "turns", "splits", "sweep", "recommend")]
    assert tour == sorted(tour)
    assert "pa.plots." in text and "pa.report." in text
