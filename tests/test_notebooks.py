"""The notebooks run end to end, on the bundled corpus, so they never rot; and they are committed clean."""
from __future__ import annotations

import json
import sys

import nbformat
import pytest
from conftest import REPO

#: Each test here writes a report, runs a notebook or a benchmark: seconds each.
pytestmark = pytest.mark.slow

NOTEBOOKS = REPO / "notebooks"
NAMES = ("explore", "choose_budget")
KERNEL = "panto-analytics-test"


@pytest.fixture(scope="module")
def kernel_manager_factory(tmp_path_factory):
    """Kernels on this very interpreter (the venv's), whatever kernelspecs the machine has installed."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    kernels = tmp_path_factory.mktemp("kernels")
    (kernels / KERNEL).mkdir()
    (kernels / KERNEL / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "panto_analytics tests", "language": "python",
    }))
    specs = KernelSpecManager(kernel_dirs=[str(kernels)])
    return lambda: KernelManager(kernel_name=KERNEL, kernel_spec_manager=specs)


@pytest.mark.parametrize("name", NAMES)
def test_notebook_is_committed_without_outputs(name):
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, "a notebook without code"
    assert all(c.outputs == [] and c.execution_count is None for c in code)
    # It reads like a guide: it opens with a heading and explains as it goes.
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
    assert sum(c.cell_type == "markdown" for c in nb.cells) >= 6


@pytest.mark.skipif(not any((REPO / "data").glob("*.jsonl")), reason="the bundled corpus in data/ is not there")
@pytest.mark.parametrize("name, min_plots", [("explore", 4), ("choose_budget", 5)])
def test_notebook_runs_end_to_end(name, min_plots, kernel_manager_factory):
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    # timeout=None: no limit on a cell; the kernel's start gets a generous safety net.
    client = NotebookClient(nb, km=kernel_manager_factory(), timeout=None, startup_timeout=600,
                            resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()  # raises CellExecutionError, with the cell and traceback, if any cell fails
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    plots = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(plots) >= min_plots
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    if name == "choose_budget":
        assert "recommended keep_verbatim:" in text
