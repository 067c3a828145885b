"""Small units: no class over 400 lines and no function over 80 lines in ``twin/`` and ``ingest/``.

A unit's size is ``end_lineno - lineno + 1`` of its ``ast`` node (decorators not counted;
docstring, comments and blank lines counted).  Methods and nested functions are
functions of their own; a class's size includes its methods.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO_DIR = Path(__file__).resolve().parents[1]
MAX_CLASS_LINES = 400
MAX_FUNCTION_LINES = 80


def oversized(root: Path, package: str) -> list[str]:
    """``path:line kind name: N lines`` of every class and function under ``root/package`` over its limit."""
    out = []
    for path in sorted((root / package).rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                kind, limit = "class", MAX_CLASS_LINES
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                kind, limit = "function", MAX_FUNCTION_LINES
            else:
                continue
            lines = node.end_lineno - node.lineno + 1
            if lines > limit:
                out.append(f"{path.relative_to(root).as_posix()}:{node.lineno} {kind} {node.name}: {lines} lines")
    return out


def test_the_measure_finds_a_long_function_and_a_large_class(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    methods = "\n".join(f"    def m{i}(self):\n        return {i}\n" for i in range(MAX_CLASS_LINES // 2))
    (pkg / "units.py").write_text(
        f"def long():\n{body}\n\n\ndef short():\n{body[: body.index(chr(10))]}\n\n\nclass Big:\n{methods}"
    )
    found = oversized(tmp_path, "pkg")
    assert found[0] == f"pkg/units.py:1 function long: {MAX_FUNCTION_LINES + 1} lines"
    assert len(found) == 2 and found[1].startswith("pkg/units.py:") and " class Big: " in found[1]


@pytest.mark.slow
def test_twin_units_fit_their_limits():
    assert oversized(REPO_DIR, "twin") == []


@pytest.mark.slow
def test_ingest_units_fit_their_limits():
    assert oversized(REPO_DIR, "ingest") == []
