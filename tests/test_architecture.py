"""The package's plan, checked on its import graph and on the wheel it builds.

Floors, top to bottom: ``cli`` -> ``dataset`` -> ``analysis``, where two wings meet: reading (``ingest`` ->
``formats``: files into the message frame) and modelling (``policy`` -> ``outcomes``: the replay over the
frame, and prices and loss below it, the cost the replay bills with); neither wing imports the other. Both
stand on ``examples`` (a tiny message frame for doctests) -> ``frame`` (the message frame's vocabulary: the
schema, word counts, the column expressions, the tool-call targets) -> the shared vocabulary (``errors``,
``budgets``, ``transcript``, ``defaults``, ``phrases``, ``models``, ``pathnames``, ``lazy``). An import
may stay in its floor or go to one its row of :data:`LAYERS` names, never up or across; the vocabulary
imports nothing of ours; nothing inside imports the package's own ``__init__``; and no two modules import
each other, directly or around a loop.
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys
import zipfile

import grimp
import pytest
from conftest import REPO

PACKAGE = "panto_analytics"
DEFAULTS = f"{PACKAGE}.defaults"

#: Floors from the bottom up, each with the floors it may import (nearest first); a module belongs to the first
#: floor whose prefix it has. ``formats``/``ingest`` (reading) and ``outcomes``/``policy`` (modelling) are two
#: wings over ``frame``: neither names the other.
LAYERS = (
    ("shared", ("errors", "budgets", "transcript", "defaults", "models", "phrases", "pathnames", "lazy"), ()),
    ("frame", ("frame",), ("shared",)),
    ("examples", ("examples",), ("frame", "shared")),
    ("outcomes", ("outcomes",), ("examples", "frame", "shared")),
    ("policy", ("policy",), ("outcomes", "examples", "frame", "shared")),
    ("formats", ("formats",), ("examples", "frame", "shared")),
    ("ingest", ("ingest",), ("formats", "examples", "frame", "shared")),
    ("analysis", ("analysis",), ("ingest", "formats", "policy", "outcomes", "examples", "frame", "shared")),
    ("dataset", ("dataset",), ("analysis", "ingest", "formats", "policy", "outcomes", "examples", "frame", "shared")),
    ("cli", ("cli",), ("dataset", "analysis", "ingest", "formats", "policy", "outcomes", "examples", "frame",
                       "shared")),
)

#: The two wings between ``frame`` and ``analysis``: no import crosses from one to the other.
WINGS = {"reading": ("formats", "ingest"), "modelling": ("policy", "outcomes")}


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(PACKAGE, cache_dir=None)  # a cache keyed by file can outlive a module moved away


def layer_of(module: str) -> int:
    """The rank of ``module``'s layer (0 = the shared vocabulary)."""
    parts = module.split(".")
    for rank, (_, names, _) in enumerate(LAYERS):
        if len(parts) > 1 and parts[1] in names:
            return rank
    raise AssertionError(f"{module} belongs to no layer: add it to LAYERS or move it into one")


def floor_of(module: str) -> str:
    """The name of ``module``'s floor."""
    return LAYERS[layer_of(module)][0]


def internal_imports(graph: grimp.ImportGraph) -> list[tuple[str, str]]:
    """Every direct import from one of our modules to another, the package's ``__init__`` excluded as importer."""
    return sorted((importer, imported) for importer in graph.modules if importer != PACKAGE
                  for imported in graph.find_modules_directly_imported_by(importer))


def test_every_module_has_a_layer(graph):
    for module in graph.modules - {PACKAGE}:
        layer_of(module)


def test_imports_only_go_to_the_floors_a_floor_may_import(graph):
    allowed = {name: {name, *below} for name, _, below in LAYERS}
    wrong = [f"{a} -> {b}" for a, b in internal_imports(graph)
             if b != PACKAGE and floor_of(b) not in allowed[floor_of(a)]]
    assert wrong == []


def test_the_floors_only_go_down():
    """The table itself: every floor a row names is below it (so no import can run up a floor)."""
    rank = {name: i for i, (name, _, _) in enumerate(LAYERS)}
    assert [(name, b) for name, _, below in LAYERS for b in below if rank[b] >= rank[name]] == []


def test_no_import_crosses_between_the_wings(graph):
    """Reading (``formats``, ``ingest``) and modelling (``policy``, ``outcomes``) meet in ``analysis`` only."""
    wing = {floor: name for name, floors in WINGS.items() for floor in floors}
    crossing = [f"{a} -> {b}" for a, b in internal_imports(graph) if b != PACKAGE
                and {wing.get(floor_of(a)), wing.get(floor_of(b))} == set(WINGS)]
    assert crossing == []


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


#: The one import of ours from outside the package: ``panto-analytics bench`` runs the checkout's benchmark.
OUTSIDE_IMPORTS = {("panto_analytics.cli.bench_command", "benchmarks")}

#: Modules that import modules by name (lazy public names; the worker processes' initializer), and what they may.
IMPORT_BY_NAME = {"lazy.py", "ingest/parallel.py"}


def test_the_package_imports_no_oracle_test_or_benchmark_but_the_bench_command():
    graph = grimp.build_graph(PACKAGE, include_external_packages=True, cache_dir=None)
    outside = {(a, b) for a in graph.modules if a.startswith(PACKAGE)
               for b in graph.find_modules_directly_imported_by(a) if b.split(".")[0] in ("benchmarks", "reference", "tests")}
    assert outside == OUTSIDE_IMPORTS


def test_no_import_by_name_detours_past_the_graph():
    root = REPO / PACKAGE
    by_name = {p.relative_to(root).as_posix() for p in root.rglob("*.py") if "import_module(" in p.read_text()}
    assert by_name <= IMPORT_BY_NAME
    for name in by_name:
        assert not re.search(r"import_module\(\s*[\"'](benchmarks|reference|tests)", (root / name).read_text())


def floor_table(text: str) -> dict[str, list[str]]:
    """The table of docs/architecture.md that says what each floor may import: ``{floor: [floors]}``."""
    section = text.split("## What each floor may import", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip().strip("|").split("|") for line in section.splitlines() if line.startswith("| `")]
    return {cells[0].strip().strip("`"): re.findall(r"`([^`]+)`", cells[1].split("(")[0]) for cells in rows}


def test_the_architecture_doc_lists_the_floors_and_what_each_may_import():
    documented = floor_table((REPO / "docs" / "architecture.md").read_text())
    assert documented == {name: list(below) for name, _, below in LAYERS}
    folders = {p.name for p in (REPO / PACKAGE).iterdir() if (p / "__init__.py").is_file()}
    assert folders == {name for name, _, _ in LAYERS} - {"shared", "examples"}


def lines_of(path) -> int:
    return sum(len(p.read_text().splitlines()) for p in ([path] if path.is_file() else path.rglob("*.py")))


def test_no_folder_holds_a_quarter_of_the_package():
    """The size rule per leaf folder: the modules directly in a folder (its subfolders counted on their own),
    so a floor grows by folders (``formats/pi/``, ``formats/codex/``, ...), never by one folder of many modules."""
    root = REPO / PACKAGE
    total = lines_of(root)
    folders = [root, *(p for p in root.rglob("*") if (p / "__init__.py").is_file())]
    shares = {p.relative_to(root).as_posix() or ".": sum(lines_of(f) for f in p.glob("*.py")) / total for p in folders}
    assert max(shares.values()) < 0.25, sorted(shares.items(), key=lambda kv: -kv[1])[:5]


def test_no_public_function_shares_its_module_name():
    """``from .policy import splits`` is the function, never a module: no module ``splits.py`` defines ``splits``."""
    clashes = []
    for path in (REPO / PACKAGE).rglob("*.py"):
        name = path.parent.name if path.stem == "__init__" else path.stem
        clashes += [f"{path.relative_to(REPO)}: {node.name}" for node in ast.parse(path.read_text()).body
                    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name]
    assert clashes == []


@pytest.mark.slow
def test_the_wheel_holds_the_package_and_no_benchmark(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(tmp_path)], check=True)
    (wheel,) = tmp_path.glob("panto_analytics-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "panto_analytics/py.typed" in names
    assert "panto_analytics/policy/compute_split.py" in names and "panto_analytics/formats/pi/reader.py" in names
    assert not [n for n in names if n.startswith(("benchmarks/", "reference/", "tests/")) or "synth" in n or "bench.py" in n]


def test_no_package_exports_a_name_of_its_submodules():
    """``import panto_analytics.policy.compaction.engine as engine`` works: no package's attribute named after
    one of its submodules is anything but that submodule (``from .replay.any_policy import replay`` in
    ``policy/__init__.py`` once made ``policy.replay`` a function and that import an ImportError)."""
    import importlib
    import pkgutil

    import panto_analytics

    clashes = []
    for info in pkgutil.walk_packages(panto_analytics.__path__, f"{PACKAGE}."):
        module = importlib.import_module(info.name)
        parent = sys.modules[info.name.rsplit(".", 1)[0]]
        name = info.name.rsplit(".", 1)[1]
        exported = set(getattr(parent, "__all__", ()))
        if getattr(parent, name, module) is not module or (name in exported and getattr(parent, name) is not module):
            clashes.append(info.name)
    assert clashes == []


def public_definitions() -> dict[str, list[str]]:
    """Each public function or class name defined at the top of one of our modules: ``{name: [module paths]}``."""
    found: dict[str, list[str]] = {}
    for path in sorted((REPO / PACKAGE).rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and not node.name.startswith("_"):
                found.setdefault(node.name, []).append(path.relative_to(REPO / PACKAGE).as_posix())
    return found


#: Names defined twice on purpose: the per-message statement (libpanto's, row by row) and its array form.
STATEMENT_AND_ARRAY = {"block_words", "serialized_bytes", "request_bytes"}


def test_no_public_name_is_defined_twice():
    """One definition of each idea: no two modules define a public function or class of the same name (two
    ``replay``, two ``frontier``, three ``read_manifest`` were). Allowed: each source format's own adapter
    hooks and record shapes (every definition under ``formats/``), a command named after the verb it runs
    (one definition under ``cli/``), the adapter hook a reader and the pipeline share (``postprocess``), pi's
    tree ``Entry`` beside the cache's public ``Entry``, and :data:`STATEMENT_AND_ARRAY`."""
    twice = {name: paths for name, paths in public_definitions().items() if len(paths) > 1
             and not all(p.startswith("formats/") for p in paths)
             and not (len(paths) == 2 and any(p.startswith("cli/") for p in paths))
             and name not in STATEMENT_AND_ARRAY | {"postprocess", "Entry"}}
    assert twice == {}


def test_the_architecture_doc_names_every_module():
    """docs/architecture.md's map is whole: every module of the package is named in it (``turn_costs.py`` or
    ``turn_costs``), every folder as ``name/``."""
    text = (REPO / "docs" / "architecture.md").read_text()
    root = REPO / PACKAGE
    missing = [p.relative_to(root).as_posix() for p in sorted(root.rglob("*.py"))
               if p.stem != "__init__" and not re.search(rf"(?<![\w/]){re.escape(p.stem)}\b", text)]
    missing += [p.relative_to(root).as_posix() + "/" for p in sorted(root.rglob("*")) if (p / "__init__.py").is_file()
                and p != root and f"{p.name}/" not in text]
    assert missing == []


def imported_names(module: str, path) -> list[tuple[str, str]]:
    """``(target module, name)`` for each name ``module`` imports from another of our modules (submodules excepted)."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom) or not (node.level or (node.module or "").startswith(PACKAGE)):
            continue
        parts = package.split(".")
        target = ".".join([*parts[:len(parts) - node.level + 1], *([node.module] if node.module else [])]) \
            if node.level else node.module
        found += [(target, alias.name) for alias in node.names]
    return found


def declared_all(path) -> set[str] | None:
    """The names of a module's ``__all__``, or None where it is not a plain list."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if isinstance(target, ast.Name) and target.id == "__all__":
                try:
                    return set(ast.literal_eval(node.value))
                except ValueError:
                    return None
    return None


def test_modules_import_only_what_a_face_exports():
    """No module imports another's private name (``_checked``, ``_Engine``, ``_csv_ready`` were); a helper two
    modules share has a plain name, in a private module where no user should import it (``policy/_frames.py``,
    ``ingest/_manifest.py``, as Polars' ``polars/io/_utils.py``), and every name imported is in the ``__all__``
    of the module it comes from. Private modules themselves may be imported (``from . import _schedule``)."""
    root = REPO / PACKAGE
    paths = {".".join((PACKAGE, *p.relative_to(root).with_suffix("").parts)).removesuffix(".__init__"): p
             for p in root.rglob("*.py")}
    wrong = []
    for module, path in sorted(paths.items()):
        for target, name in imported_names(module, path):
            if f"{target}.{name}" in paths or target not in paths:
                continue  # a module, or outside the package
            exported = declared_all(paths[target])
            if name.startswith("_") or (exported is not None and name not in exported):
                wrong.append(f"{module}: {target}.{name}")
    assert wrong == []


#: The names a public face may end in ``_dataset``: the dataset itself (tell one, scan it, write it), never a verb
#: run over one. A verb over a dataset is a method of :class:`~panto_analytics.dataset.Source`.
DATASET_ITSELF = {"is_dataset", "scan_dataset", "write_dataset"}


def public_faces() -> dict[str, set[str]]:
    """The ``__all__`` of every public module (no part of its dotted name private): ``{module: names}``."""
    import importlib
    import pkgutil

    import panto_analytics

    faces = {PACKAGE: set(panto_analytics.__all__)}
    for info in pkgutil.walk_packages(panto_analytics.__path__, f"{PACKAGE}."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            faces[info.name] = set(getattr(importlib.import_module(info.name), "__all__", ()))
    return faces


def test_no_face_exports_a_dataset_twin_of_a_verb():
    """One lane behind one face (issue 31 item 1): ``sweep_dataset``, ``cost_dataset``, ``replay_table_dataset``,
    ``write_splits``, ... are the private implementation of :class:`~panto_analytics.dataset.Source` (in
    ``dataset/_streaming.py``, ``_cost.py``, ...): no public module, package face or not, exports a name ending
    in ``_dataset`` but the dataset's own (:data:`DATASET_ITSELF`), nor ``write_splits`` (a verb of the Source,
    which in memory is ``splits`` written)."""
    from panto_analytics.dataset import Source

    faces = public_faces()
    assert {"panto_analytics.dataset", "panto_analytics.dataset.source"} <= set(faces)
    verbs = {name for name in vars(Source) if not name.startswith("_")}
    assert {"sweep", "choose_budget", "cost", "refetch", "replay_table", "write_splits"} <= verbs
    twins = sorted(f"{module}.{name}" for module, names in faces.items() for name in names
                   if (name.endswith("_dataset") and name not in DATASET_ITSELF) or name == "write_splits")
    assert twins == []


#: What a command body would name to pick a lane itself: the Source (``cli/_reading.py``'s ``open_source``) does.
LANE_BRANCHES = re.compile(r"check_engine|\bds is (not )?None|is_dataset|dataset_path|engine [!=]=|\b(InMemory|OnDataset|"
                           r"OnRay)\b|read_input(_corpus)?\(|dataset_corpus")


def test_no_command_body_branches_on_the_lane():
    """A command is read, verb, write (issue 31 item 1): it opens the Source its PATHS name and never asks which
    lane it runs in, the commands whose verb exists in memory only included (``source.corpus()``). ``ingest``
    writes datasets and reads files; it is no verb over a Source."""
    commands = sorted((REPO / PACKAGE / "cli").glob("*_command.py"))
    assert len(commands) > 10
    branching = [f"{p.name}: {m.group(0)}" for p in commands if p.name != "ingest_command.py"
                 for m in LANE_BRANCHES.finditer(p.read_text())]
    assert branching == []
