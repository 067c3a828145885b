"""A throwaway PostgreSQL server on 127.0.0.1, for the test suite and the storage benchmark.

``initdb`` refuses to run as root, so when started by root the cluster belongs to the
``postgres`` system user (Debian's postgresql package creates it).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server binaries on this machine."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def pg_bin_dir() -> Path:
    """Directory of the newest installed PostgreSQL server binaries."""
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if not candidates:
        raise PostgresUnavailable("PostgreSQL server binaries not found: install Debian's 'postgresql' "
                                  "(make test does)")
    return candidates[-1].parent


@contextmanager
def throwaway_postgres(database: str = "twin_test"):
    """Start a fresh cluster (fsync off), create ``database``, yield its URL, then stop and delete it."""
    bin_dir = pg_bin_dir()
    work = Path(tempfile.mkdtemp(prefix="clustertwin-pg-"))
    data, log = work / "data", work / "server.log"
    port = free_port()
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(work, "postgres", "postgres")
        os.chmod(work, 0o755)
        as_user = ["runuser", "-u", "postgres", "--"]

    def run(*cmd: str) -> None:
        subprocess.run(as_user + list(cmd), check=True, capture_output=True, timeout=60)

    try:
        run(str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")
        opts = (f"-p {port} -k {work} -c listen_addresses=127.0.0.1 -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off")
        run(str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-o", opts, "start")
        run(str(bin_dir / "psql"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres",
            "-c", f"create database {database}")
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/{database}"
    finally:
        subprocess.run(as_user + [str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True, timeout=60)
        shutil.rmtree(work, ignore_errors=True)
