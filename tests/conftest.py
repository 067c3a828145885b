"""Fixtures shared by the whole suite: where the shared fixtures and reference sites live."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

REPO_DIR = Path(__file__).resolve().parents[1]
SHARED_DIR = (REPO_DIR.parent / "shared").resolve()
FIXTURES_DIR = SHARED_DIR / "fixtures"


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """``../shared/fixtures`` next to the repository (real payloads from public projects)."""
    if not FIXTURES_DIR.is_dir():
        raise RuntimeError(f"shared fixtures not found at {FIXTURES_DIR}: clone next to shared/")
    return FIXTURES_DIR


# --------------------------------------------------------------------------- PostgreSQL

def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _pg_bin() -> Path:
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if not candidates:
        raise RuntimeError("PostgreSQL server binaries not found (make test installs Debian 'postgresql')")
    return candidates[-1].parent


@pytest.fixture(scope="session")
def postgres_url():
    """A throwaway PostgreSQL server on 127.0.0.1 for the session; yields a SQLAlchemy URL.

    initdb refuses to run as root, so when root the cluster belongs to the ``postgres`` user.
    """
    bin_dir = _pg_bin()
    work = Path(tempfile.mkdtemp(prefix="clustertwin-pg-"))
    data, log = work / "data", work / "server.log"
    port = _free_port()
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(work, "postgres", "postgres")
        os.chmod(work, 0o755)
        as_user = ["runuser", "-u", "postgres", "--"]
    subprocess.run(as_user + [str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres",
                              "-E", "UTF8", "--no-sync"], check=True, capture_output=True)
    opts = (f"-p {port} -k {work} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off")
    subprocess.run(as_user + [str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-o", opts, "start"],
                   check=True, capture_output=True)
    try:
        subprocess.run(as_user + [str(bin_dir / "psql"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres",
                                  "-c", "create database twin_test"], check=True, capture_output=True)
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/twin_test"
    finally:
        subprocess.run(as_user + [str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request, tmp_path):
    """The same storage test on the embedded SQLite file and on a real PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'twin.db'}"
    url = request.getfixturevalue("postgres_url")
    from sqlalchemy import create_engine, text
    engine = create_engine(url)
    with engine.begin() as conn:  # each test starts from an empty schema
        conn.execute(text("DROP SCHEMA public CASCADE; CREATE SCHEMA public"))
    engine.dispose()
    return url
