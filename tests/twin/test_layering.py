"""The twin is the bottom layer: importing all of it loads nothing of ``ingest`` or ``dashboard``."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

TWIN_DIR = Path(__file__).resolve().parents[2] / "twin"
UPPER_LAYERS = ("ingest", "dashboard")

_IMPORT_ALL = """
import importlib, pkgutil, sys
import twin
for info in pkgutil.walk_packages(twin.__path__, "twin."):
    importlib.import_module(info.name)
upper = sorted(m for m in sys.modules if m.split(".")[0] in ("ingest", "dashboard"))
print(len([m for m in sys.modules if m.startswith("twin")]), upper)
assert not upper, upper
"""


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


def test_no_twin_source_names_an_upper_layer_module():
    offenders = []
    for path in sorted(TWIN_DIR.rglob("*.py")):
        for name in _names_in(ast.parse(path.read_text(), str(path))):
            if name.split(".")[0] in UPPER_LAYERS and (name in UPPER_LAYERS or "." in name):
                offenders.append(f"{path.relative_to(TWIN_DIR.parent)}: {name}")
    assert not offenders, offenders
