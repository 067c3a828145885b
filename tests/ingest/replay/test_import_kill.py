"""``kill -9`` during ``clustertwin incidents import``: never a library file without its database row and audit entry.

The import is killed at instants spread over its own run time (measured first, in the same
run); after each kill a later process (here: ``incidents list``, which sweeps temporary
files of killed imports) must find every library file with its ``incident`` row and its
``incident.import`` audit entry, and no temporary file left behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ingest.replay.session import RecordSpec, record_synthetic
from ingest.store.audit import AuditFilter, list_entries
from ingest.store.db import open_database
from ingest.store.incidents import stored_incidents

ROOT = Path(__file__).resolve().parents[3]
CLI = [sys.executable, "-m", "twin.cli"]
KILLS = 8


def _import(bundle: Path, lib: Path, db: str, name: str) -> subprocess.Popen:
    return subprocess.Popen(
        [*CLI, "incidents", "--dir", str(lib), "import", str(bundle), "--name", name, "--db", db],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def _consistent(lib: Path, db: str) -> list[str]:
    """What is wrong with the library and the database (after a process swept the library)."""
    listed = subprocess.run(
        [*CLI, "incidents", "--dir", str(lib), "list", "--db", db], cwd=ROOT, capture_output=True, timeout=120
    )
    assert listed.returncode == 0, listed.stderr
    engine = open_database(db)
    try:
        rows = {r.name for r in stored_incidents(engine)}
        audited = {e["target"].removeprefix("incident ") for e in list_entries(engine, AuditFilter(action="incident."))}
    finally:
        engine.dispose()
    files = {p.name.removesuffix(".ctincident") for p in lib.glob("*.ctincident")}
    problems = [f"{n}: file without row" for n in files - rows] + [f"{n}: file without audit" for n in files - audited]
    return problems + [f"left over: {p.name}" for p in lib.iterdir() if p.name.startswith(".")]


@pytest.mark.slow
def test_a_killed_import_leaves_no_file_without_its_row_and_audit_entry(tmp_path):
    bundle = record_synthetic(RecordSpec("demo", "kill-me", duration_s=60, tick_s=5), tmp_path / "out")
    lib, db = tmp_path / "lib", f"sqlite:///{tmp_path / 'store.db'}"
    lib.mkdir()
    t0 = time.monotonic()
    assert _import(bundle, lib, db, "whole").wait(timeout=300) == 0
    run_s = time.monotonic() - t0
    assert _consistent(lib, db) == []
    for i in range(KILLS):
        proc = _import(bundle, lib, db, f"killed-{i}")
        time.sleep(run_s * (0.4 + 0.6 * i / (KILLS - 1)))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        assert _consistent(lib, db) == [], f"kill {i} at {run_s * (0.4 + 0.6 * i / (KILLS - 1)):.2f} s"
