"""The fleet sits between training and the engine: importing it loads no engine, scenario or command module."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO_DIR

_IMPORT = """
import importlib, pkgutil, sys
import twin.fleet
for info in pkgutil.walk_packages(twin.fleet.__path__, "twin.fleet."):
    importlib.import_module(info.name)
above = sorted(m for m in sys.modules if m.startswith(("twin.engine", "twin.scenario", "twin.commands", "ingest", "dashboard")))
assert not above, above
print(len([m for m in sys.modules if m.startswith("twin.fleet.")]))
"""


def test_importing_the_fleet_loads_nothing_above_it():
    done = subprocess.run([sys.executable, "-c", _IMPORT], cwd=REPO_DIR, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout.strip()) >= 15
