"""The package diagram of docs/architecture.md is the import graph's (regenerate: ``python -m tests.test_architecture``).

The module import graph (:func:`tests.twin.test_layering.import_graph`) is collapsed to
packages (``twin.site``, ``ingest.live``, …; a layer's top-level modules stand as the layer),
packages that import each other are drawn as one node, and an edge implied by a longer path
is left out (a transitive reduction), so the diagram shows who builds on whom and stays
readable.
"""

from __future__ import annotations

import functools
import re
import sys
from pathlib import Path

import pytest

from tests.twin.test_layering import REPO_DIR, import_graph, strongly_connected

DOC = REPO_DIR / "docs" / "architecture.md"
BEGIN, END = "```mermaid\n", "```\n"
LAYERS = ("dashboard", "ingest", "twin")


def _package(module: str, root: Path) -> str:
    parts = module.split(".")
    if len(parts) > 2 or (len(parts) == 2 and (root / parts[0] / parts[1]).is_dir()):
        return ".".join(parts[:2])
    return parts[0]


def package_graph(root: Path = REPO_DIR) -> dict[str, set[str]]:
    """Node → the nodes it imports, reduced; a node names a package or packages importing each other (``a / b``)."""
    packages: dict[str, set[str]] = {}
    for module, deps in import_graph(root).items():
        mine = packages.setdefault(_package(module, root), set())
        mine.update(_package(d, root) for d in deps)
    for name, deps in packages.items():
        deps.discard(name)
    node = {p: p for p in packages}
    for component in strongly_connected(packages):
        for p in component:
            node[p] = " / ".join(component)
    condensed: dict[str, set[str]] = {}
    for p, deps in packages.items():
        condensed.setdefault(node[p], set()).update(node[d] for d in deps if node[d] != node[p])

    @functools.cache
    def reach(n: str) -> frozenset[str]:
        return frozenset().union(*({d} | reach(d) for d in condensed.get(n, ())))

    return {n: {d for d in deps if not any(d in reach(c) for c in deps - {d})} for n, deps in condensed.items()}


def mermaid(root: Path = REPO_DIR) -> str:
    """The diagram as a Mermaid flowchart, one subgraph per layer, sorted (stable text)."""
    graph = package_graph(root)

    def ident(name: str) -> str:  # a group is named by its first package
        first = name.split(" / ")[0]
        return re.sub(r"[^A-Za-z0-9]+", "_", first) + ("_group" if first != name else "")

    lines = ["flowchart TD"]
    for layer in LAYERS:
        lines.append(f"  subgraph {layer}")
        for name in sorted(n for n in graph if re.split(r"[. ]", n)[0] == layer):
            lines.append(f'    {ident(name)}["{name}"]')
        lines.append("  end")
    for name in sorted(graph):
        lines.extend(f"  {ident(name)} --> {ident(dep)}" for dep in sorted(graph[name]))
    return "\n".join(lines) + "\n"


def documented() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(BEGIN) + len(BEGIN)
    return text[start : text.index(END, start)]


@pytest.mark.slow
def test_the_documented_diagram_is_the_import_graph():
    assert documented() == mermaid(), "docs/architecture.md is stale: regenerate with python -m tests.test_architecture"


def test_the_diagram_reduces_an_implied_edge(tmp_path):
    for name, body in {
        "twin/__init__.py": "",
        "twin/a/__init__.py": "",
        "twin/a/m.py": "import twin.b.m\nimport twin.c.m\n",
        "twin/b/__init__.py": "",
        "twin/b/m.py": "import twin.c.m\n",
        "twin/c/__init__.py": "",
        "twin/c/m.py": "",
        "ingest/__init__.py": "",
        "dashboard/__init__.py": "",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)
    graph = package_graph(tmp_path)
    assert graph["twin.a"] == {"twin.b"} and graph["twin.b"] == {"twin.c"}  # a → c is implied by a → b → c


if __name__ == "__main__":
    sys.stdout.write(mermaid())
