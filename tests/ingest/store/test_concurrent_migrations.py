"""Three processes starting at once on an empty database all come up: migrations run one at a time.

Each process waits for a common start signal (a file) and then opens the database as every
command does (:func:`ingest.store.db.open_database`: migrate to head).  Without the lock,
PostgreSQL let two of three die with a duplicate-table traceback and SQLite with
``duplicate column name: group_key``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from sqlalchemy import inspect

from ingest.store.db import make_engine

ROOT = Path(__file__).resolve().parents[3]
PROCESSES = 3
OPEN = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    go = Path(sys.argv[2])
    while not go.exists():
        time.sleep(0.005)
    from ingest.store.db import open_database
    open_database(sys.argv[1]).dispose()
    print("up")
    """
)


@pytest.mark.slow
def test_concurrent_first_starts_all_come_up(db_url, tmp_path):
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", OPEN, db_url, str(go)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        for _ in range(PROCESSES)
    ]
    time.sleep(1.5)  # every process imported and waiting on the start signal
    go.touch()
    outcomes = [(p.wait(timeout=300), p.stdout.read().decode(), p.stderr.read().decode()) for p in procs]
    failed = [err.strip().splitlines()[-1:] for code, out, err in outcomes if code != 0 or out.strip() != "up"]
    assert failed == [], failed
    engine = make_engine(db_url)
    try:
        tables = set(inspect(engine).get_table_names())
        assert {"alembic_version", "incident", "event", "app_user"} <= tables
        columns = {c["name"] for c in inspect(engine).get_columns("event")}
        assert "group_key" in columns
    finally:
        engine.dispose()
