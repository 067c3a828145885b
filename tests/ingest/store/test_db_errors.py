"""A database that cannot be opened is one :class:`DatabaseError` line, quickly, without its password."""

from __future__ import annotations

import socket
import sqlite3
import time

import pytest

from ingest.store import db
from ingest.store.db import DatabaseError, open_database, resolve_db_url
from ingest.store.pgserver import free_port

PASSWORD = "s3cret-pw"


def test_refused_postgresql_is_one_line_without_the_password():
    url = f"postgresql://twin:{PASSWORD}@127.0.0.1:{free_port()}/twin"
    start = time.perf_counter()
    with pytest.raises(DatabaseError) as info:
        open_database(url)
    assert time.perf_counter() - start < db.CONNECT_TIMEOUT_S
    message = str(info.value)
    assert PASSWORD not in message and "***" in message and "\n" not in message
    assert "cannot open" in message and "refused" in message.lower()


@pytest.mark.slow
def test_silent_postgresql_server_times_out():
    """A server that accepts the connection and never answers (a hung host) is given up after the timeout."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)  # never accepted: the kernel completes the handshake, nobody answers
        url = f"postgresql://twin:{PASSWORD}@127.0.0.1:{listener.getsockname()[1]}/twin"
        start = time.perf_counter()
        with pytest.raises(DatabaseError, match="cannot open") as info:
            open_database(url)
        elapsed = time.perf_counter() - start
    assert db.CONNECT_TIMEOUT_S - 1 <= elapsed < 4 * db.CONNECT_TIMEOUT_S
    assert PASSWORD not in str(info.value)


def test_read_only_sqlite_database_is_one_line(tmp_path):
    path = tmp_path / "twin.db"
    sqlite3.connect(path).close()
    # opened read-only: SQLite answers as it does for a file on a read-only filesystem
    with pytest.raises(DatabaseError, match="cannot open: attempt to write a readonly database"):
        open_database(f"sqlite:///file:{path}?mode=ro&uri=true")


def test_sqlite_file_in_a_missing_directory(tmp_path):
    with pytest.raises(DatabaseError, match="cannot open: unable to open database file"):
        open_database(f"sqlite:///{tmp_path / 'no' / 'such' / 'dir' / 'twin.db'}")


def test_default_sqlite_directory_that_cannot_be_created(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "var").write_text("a file where the directory should be")
    monkeypatch.delenv("CLUSTERTWIN_DB", raising=False)
    with pytest.raises(DatabaseError, match="cannot create its directory"):
        resolve_db_url()


def test_not_a_database_url():
    with pytest.raises(DatabaseError, match="not a database URL"):
        open_database("nonsense")
    with pytest.raises(DatabaseError, match="unsupported URL"):
        open_database("nosuchdb://host/x")
