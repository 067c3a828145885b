"""Database URL, engine and migrations.

The URL comes from ``--db``, else ``CLUSTERTWIN_DB``, else the embedded default: an
SQLite file ``var/clustertwin.db`` under the working directory.  Any SQLAlchemy URL
works; PostgreSQL (``postgresql+psycopg://…``) is tested for real.  The schema is
created and changed only by Alembic migrations (``ingest/store/migrations``).
"""

from __future__ import annotations

import fcntl
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import event, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, OperationalError
from sqlmodel import create_engine

from twin.errors import InputError

log = logging.getLogger(__name__)
MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
DEFAULT_SQLITE_PATH = Path("var") / "clustertwin.db"
CONNECT_TIMEOUT_S = 5  # PostgreSQL: give up on an unreachable server after this long


class DatabaseError(InputError):
    """The database cannot be opened: bad URL, refused or unreachable server, read-only file.

    The message shows the URL with its password hidden.
    """


def _shown(url: str) -> str:
    """``url`` with any password replaced by ``***``."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparsable database URL>"


def resolve_db_url(url: str | None = None) -> str:
    """The database URL to use: ``url``, else ``$CLUSTERTWIN_DB``, else the embedded SQLite file."""
    url = url or os.environ.get("CLUSTERTWIN_DB")
    if url:
        return url
    path = DEFAULT_SQLITE_PATH.resolve()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatabaseError(f"database {path}: cannot create its directory: {exc.strerror or exc}") from None
    return f"sqlite:///{path}"


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")  # readers (dashboard) don't block the writer (ingest)
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=5000")
    cur.close()


def make_engine(url: str | None = None) -> Engine:
    """An engine for ``url`` (resolved as in :func:`resolve_db_url`)."""
    url = resolve_db_url(url)
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise DatabaseError(
            f"database URL {_shown(url)}: not a database URL "
            "(e.g. sqlite:///var/clustertwin.db or postgresql://user@host/db)"
        ) from None
    if parsed.get_backend_name() == "sqlite":
        engine = create_engine(url, connect_args={"check_same_thread": False})
        event.listen(engine, "connect", _sqlite_pragmas)
    else:
        if parsed.get_backend_name() == "postgresql" and parsed.drivername == "postgresql":
            url = parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
        connect_args = {"connect_timeout": CONNECT_TIMEOUT_S} if parsed.get_backend_name() == "postgresql" else {}
        try:
            engine = create_engine(url, pool_pre_ping=True, connect_args=connect_args)
        except (ArgumentError, ImportError) as exc:
            raise DatabaseError(f"database {_shown(url)}: unsupported URL: {exc}") from None
    return engine


def alembic_config(engine: Engine) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["engine"] = engine
    return cfg


MIGRATION_LOCK_KEY = 7_242_026_001  # PostgreSQL advisory lock held while migrating (any number unique to us)


@contextmanager
def migration_lock(engine: Engine) -> Iterator[None]:
    """Only one process migrates a database at a time; the others wait, then find the schema current.

    PostgreSQL: a session-level advisory lock on its own connection.  SQLite: an exclusive
    ``flock`` on ``<database file>.migrate-lock`` next to the file (an in-memory database
    has one process).  Processes starting together on an empty database (the shards of a
    site, the workers of ``serve --prod``) would otherwise run the same migrations at once.
    """
    backend = engine.url.get_backend_name()
    if backend == "postgresql":
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": MIGRATION_LOCK_KEY})
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": MIGRATION_LOCK_KEY})
                conn.commit()
        return
    database = engine.url.database if backend == "sqlite" else None
    if not database or database == ":memory:" or database.startswith("file:"):
        yield
        return
    try:
        lock = open(f"{database}.migrate-lock", "a+b")  # noqa: SIM115 — held for the block below
    except OSError:  # no such directory, read-only: SQLite's own error names the problem
        yield
        return
    with lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def migrate(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to ``revision`` (default: the newest migration), one process at a time."""
    with migration_lock(engine):
        command.upgrade(alembic_config(engine), revision)


def open_database(url: str | None = None) -> Engine:
    """Engine with the schema migrated to head: what every process calls first.

    Raises :class:`DatabaseError` when the database cannot be reached or written.
    """
    engine = make_engine(url)
    try:
        migrate(engine)
    except OperationalError as exc:
        engine.dispose()
        lines = str(exc.orig or exc).strip().splitlines() or [type(exc).__name__]
        raise DatabaseError(
            f"database {engine.url.render_as_string(hide_password=True)}: cannot open: {lines[0]}"
        ) from None
    log.info("database ready at %s", engine.url.render_as_string(hide_password=True))
    return engine
