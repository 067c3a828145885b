"""Imports run one way.

* The twin is the bottom layer: importing all of it loads nothing of ``ingest`` or
  ``dashboard``, and no twin source names a module of theirs.
* No import cycles anywhere in ``twin/``, ``ingest/`` or ``dashboard/``: every import counts,
  at module level or inside a function (a function-level import is still a dependency).
* Inside ``twin/`` imports go only downwards in the order
  ``site → physics → training → fleet → engine → scenario → commands`` (a package may import
  its own modules and those of the packages before it, never those after it; ``fleet`` is
  in the order whether or not it exists yet).  ``twin.benchmarks``, ``twin.cli``,
  ``twin.bench`` and the top-level modules (``twin.quantities``, ``twin.errors``,
  ``twin.textfile``, ...) are outside the order: any twin module may import them, and they
  may import any twin module.

Imports are read with ``ast``.  ``from P import name`` depends on ``P.name`` when that is a
module, else on ``P``; the implicit import of parent packages is not counted.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO_DIR = Path(__file__).resolve().parents[2]
TWIN_DIR = REPO_DIR / "twin"
UPPER_LAYERS = ("ingest", "dashboard")
PACKAGES = ("twin", "ingest", "dashboard")
TWIN_ORDER = ("site", "physics", "training", "fleet", "engine", "scenario", "commands")

_IMPORT_ALL = """
import importlib, pkgutil, sys
import twin
for info in pkgutil.walk_packages(twin.__path__, "twin."):
    importlib.import_module(info.name)
upper = sorted(m for m in sys.modules if m.split(".")[0] in ("ingest", "dashboard"))
print(len([m for m in sys.modules if m.startswith("twin")]), upper)
assert not upper, upper
"""


@pytest.mark.slow
def test_importing_every_twin_module_loads_no_upper_layer():
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_ALL], cwd=TWIN_DIR.parent, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    n_twin_modules = int(done.stdout.split()[0])
    assert n_twin_modules > 30  # the walk really imported the package tree


def _names_in(tree: ast.AST):
    """Module names a file imports, and string constants that look like dotted module names."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and " " not in node.value:
            yield node.value


@pytest.mark.slow
def test_no_twin_source_names_an_upper_layer_module():
    offenders = []
    for path in sorted(TWIN_DIR.rglob("*.py")):
        for name in _names_in(ast.parse(path.read_text(), str(path))):
            if name.split(".")[0] in UPPER_LAYERS and (name in UPPER_LAYERS or "." in name):
                offenders.append(f"{path.relative_to(TWIN_DIR.parent)}: {name}")
    assert not offenders, offenders


# --- the import graph -------------------------------------------------------------------------
def _modules(root: Path, packages=PACKAGES) -> dict[str, Path]:
    """Dotted module name → file, for every module of ``packages`` under ``root``."""
    out = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def import_graph(root: Path, packages=PACKAGES) -> dict[str, set[str]]:
    """Module → the modules of ``packages`` it imports (anywhere in the file)."""
    modules = _modules(root, packages)

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                deps.update(known(a.name) for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(anchor + ([node.module] if node.module else []))
                for a in node.names:
                    deps.add(f"{base}.{a.name}" if f"{base}.{a.name}" in modules else known(base))
        deps.discard(None)
        deps.discard(module)
        graph[module] = deps
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module (iterative), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[v] = min(low[v], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return sorted(out)


def upward_imports(graph: dict[str, set[str]], order=TWIN_ORDER) -> list[str]:
    """``a -> b`` for every twin module ``a`` that imports ``b`` of a package later in ``order``."""

    def rank(module: str) -> int | None:
        parts = module.split(".")
        return order.index(parts[1]) if len(parts) > 1 and parts[0] == "twin" and parts[1] in order else None

    out = []
    for a, deps in sorted(graph.items()):
        for b in sorted(deps):
            ra, rb = rank(a), rank(b)
            if ra is not None and rb is not None and rb > ra:
                out.append(f"{a} -> {b}")
    return out


def test_the_graph_sees_cycles_and_upward_imports_however_they_are_written(tmp_path):
    pkg = tmp_path / "twin"
    for sub in ("site", "engine", "physics"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "site" / "a.py").write_text("def f():\n    from twin.engine import b  # inside a function\n")
    (pkg / "engine" / "b.py").write_text("from ..site.a import f\n")
    (pkg / "physics" / "c.py").write_text("import twin.engine.b\n")
    graph = import_graph(tmp_path, ("twin",))
    assert graph["twin.site.a"] == {"twin.engine.b"} and graph["twin.engine.b"] == {"twin.site.a"}
    assert strongly_connected(graph) == [["twin.engine.b", "twin.site.a"]]
    assert upward_imports(graph) == ["twin.physics.c -> twin.engine.b", "twin.site.a -> twin.engine.b"]


@pytest.mark.slow
def test_no_import_cycles_in_twin_ingest_or_dashboard():
    graph = import_graph(REPO_DIR)
    assert len(graph) > 200  # the whole tree was read
    assert strongly_connected(graph) == []


@pytest.mark.slow
def test_twin_packages_import_only_downwards():
    assert upward_imports(import_graph(REPO_DIR, ("twin",))) == []
