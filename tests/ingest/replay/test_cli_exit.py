"""``clustertwin incidents list`` and ``show`` exit 0 every time (they once aborted at exit, code 134).

The process had decoded Parquet with Arrow's CPU thread pool, whose threads were torn down
during interpreter exit ("terminate called without an active exception") about one run in
ten; bundles are now decoded without it.  Twenty runs of ``list`` (five of ``show``), all clean.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
RUNS = 20


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "twin.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


@pytest.mark.slow
def test_incidents_list_and_show_exit_cleanly_every_time(tmp_path):
    db = f"sqlite:///{tmp_path / 'x.db'}"
    outcomes = []
    for i in range(RUNS):
        listed = _run(["incidents", "--dir", str(tmp_path / "lib"), "list", "--db", db], tmp_path)
        outcomes.append(("list", listed.returncode, listed.stderr[-200:]))
        assert "colossus-generator-trip" in listed.stdout
        if i % 4 == 0:  # show decodes every table of a bundle
            shown = _run(["incidents", "show", "colossus-generator-trip", "--json"], tmp_path)
            outcomes.append(("show", shown.returncode, shown.stderr[-200:]))
            assert '"tables"' in shown.stdout
    assert [o for o in outcomes if o[1] != 0] == []
