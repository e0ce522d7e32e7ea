"""The package's plan, checked on its import graph and on the wheel it builds.

Layers, top to bottom: ``cli`` -> ``dataset`` -> ``analysis`` -> ``ingest`` ->
``formats`` -> ``policy`` -> ``outcomes`` (prices and the cost of a call, below
the replay that bills with it; references and loss) -> ``examples`` (a tiny
message frame for doctests, built from the schema) -> the shared vocabulary
(``schema``, ``errors``, ``budgets``, ``words``, ``transcript``, ``defaults``,
``models``). An import may stay in its layer or go down, never up; the vocabulary imports
nothing of ours; nothing inside imports the package's own ``__init__``; and
no two modules import each other, directly or around a loop.
"""
from __future__ import annotations

import subprocess
import sys
import zipfile

import grimp
import pytest
from conftest import REPO

PACKAGE = "panto_analytics"
DEFAULTS = f"{PACKAGE}.defaults"

#: Layers from the bottom up; a module belongs to the first whose prefix it has.
LAYERS = (
    ("shared", ("schema", "errors", "budgets", "words", "transcript", "defaults", "models")),
    ("examples", ("examples",)),
    ("outcomes", ("outcomes",)),
    ("policy", ("policy",)),
    ("formats", ("formats",)),
    ("ingest", ("ingest",)),
    ("analysis", ("analysis",)),
    ("dataset", ("dataset",)),
    ("cli", ("cli",)),
)


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(PACKAGE)


def layer_of(module: str) -> int:
    """The rank of ``module``'s layer (0 = the shared vocabulary)."""
    parts = module.split(".")
    for rank, (_, names) in enumerate(LAYERS):
        if len(parts) > 1 and parts[1] in names:
            return rank
    raise AssertionError(f"{module} belongs to no layer: add it to LAYERS or move it into one")


def internal_imports(graph: grimp.ImportGraph) -> list[tuple[str, str]]:
    """Every direct import from one of our modules to another, the package's ``__init__`` excluded as importer."""
    return sorted((importer, imported) for importer in graph.modules if importer != PACKAGE
                  for imported in graph.find_modules_directly_imported_by(importer))


def test_every_module_has_a_layer(graph):
    for module in graph.modules - {PACKAGE}:
        layer_of(module)


def test_imports_never_go_up_a_layer(graph):
    upward = [f"{a} -> {b}" for a, b in internal_imports(graph)
              if b != PACKAGE and layer_of(b) > layer_of(a)]
    assert upward == []


def test_the_shared_vocabulary_imports_nothing_of_ours(graph):
    """Nothing but ``defaults`` (the names and numbers help shows), which itself imports nothing at all."""
    shared = [f"{a} -> {b}" for a, b in internal_imports(graph) if layer_of(a) == 0 and b != DEFAULTS]
    assert shared == []
    assert set(graph.find_modules_directly_imported_by(DEFAULTS)) == set()


def test_nothing_inside_imports_the_package_init(graph):
    assert [a for a, b in internal_imports(graph) if b == PACKAGE] == []


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``edges``, as a list of modules, or None (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in sorted(edges):
        if state.get(root):
            continue
        path, stack = [root], [iter(sorted(edges[root]))]
        state[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(edges.get(nxt, ()))))
    return None


def test_find_cycle_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_no_import_cycles(graph):
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert find_cycle(edges) is None


def test_every_module_says_what_it_exports(graph):
    assert [m for m in sorted(graph.modules) if "__all__ =" not in source_of(m)] == []


def source_of(module: str) -> str:
    """The source text of one of our modules (a package's is its ``__init__.py``)."""
    base = REPO / module.replace(".", "/")
    return (base / "__init__.py" if base.is_dir() else base.with_suffix(".py")).read_text()


@pytest.mark.slow
def test_the_wheel_holds_the_package_and_no_benchmark(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(tmp_path)], check=True)
    (wheel,) = tmp_path.glob("panto_analytics-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "panto_analytics/py.typed" in names
    assert "panto_analytics/policy/splits.py" in names and "panto_analytics/formats/pi.py" in names
    assert not [n for n in names if n.startswith(("benchmarks/", "reference/", "tests/")) or "synth" in n or "bench.py" in n]
