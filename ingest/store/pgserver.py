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
        raise PostgresUnavailable(
            "PostgreSQL server binaries not found: install Debian's 'postgresql' (make test does)"
        )
    return candidates[-1].parent


class PostgresServer:
    """A throwaway cluster that can be stopped and started again (to test database outages)."""

    def __init__(self, bin_dir: Path, work: Path, port: int, as_user: list[str], database: str) -> None:
        self.bin_dir, self.work, self.port, self.as_user = bin_dir, work, port, as_user
        self.data, self.log = work / "data", work / "server.log"
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{port}/{database}"

    def run(self, *cmd: str) -> None:
        subprocess.run(self.as_user + list(cmd), check=True, capture_output=True, timeout=60)

    def start(self) -> None:
        # fsync off is safe for a throwaway cluster stopped with ``-m immediate`` (the OS keeps what was
        # written); synchronous_commit stays on: without it a commit the client saw acknowledged can sit
        # in the WAL buffers and vanish at the immediate stop, and the outage tests would see rows lost
        opts = f"-p {self.port} -k {self.work} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
        self.run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w", "-o", opts, "start")

    def stop(self) -> None:
        """Stop at once (``-m immediate``: connections are cut, as when the server dies)."""
        subprocess.run(
            self.as_user + [str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"],
            capture_output=True,
            timeout=60,
        )


@contextmanager
def throwaway_postgres_server(database: str = "twin_test"):
    """Start a fresh cluster (fsync off), create ``database``, yield the server, then stop and delete it."""
    bin_dir = pg_bin_dir()
    work = Path(tempfile.mkdtemp(prefix="clustertwin-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(work, "postgres", "postgres")
        os.chmod(work, 0o755)
        as_user = ["runuser", "-u", "postgres", "--"]
    server = PostgresServer(bin_dir, work, free_port(), as_user, database)
    try:
        server.run(
            str(bin_dir / "initdb"), "-D", str(server.data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"
        )
        server.start()
        server.run(
            str(bin_dir / "psql"),
            "-h",
            "127.0.0.1",
            "-p",
            str(server.port),
            "-U",
            "postgres",
            "-c",
            f"create database {database}",
        )
        yield server
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


@contextmanager
def throwaway_postgres(database: str = "twin_test"):
    """Start a fresh cluster (fsync off), create ``database``, yield its URL, then stop and delete it."""
    with throwaway_postgres_server(database) as server:
        yield server.url
