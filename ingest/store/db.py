"""Database URL, engine and migrations.

The URL comes from ``--db``, else ``CLUSTERTWIN_DB``, else the embedded default: an
SQLite file ``var/clustertwin.db`` under the working directory.  Any SQLAlchemy URL
works; PostgreSQL (``postgresql+psycopg://…``) is tested for real.  The schema is
created and changed only by Alembic migrations (``ingest/store/migrations``).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlmodel import create_engine

log = logging.getLogger(__name__)
MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
DEFAULT_SQLITE_PATH = Path("var") / "clustertwin.db"


def resolve_db_url(url: str | None = None) -> str:
    """The database URL to use: ``url``, else ``$CLUSTERTWIN_DB``, else the embedded SQLite file."""
    url = url or os.environ.get("CLUSTERTWIN_DB")
    if url:
        return url
    path = DEFAULT_SQLITE_PATH.resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
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
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        engine = create_engine(url, connect_args={"check_same_thread": False})
        event.listen(engine, "connect", _sqlite_pragmas)
    else:
        if parsed.get_backend_name() == "postgresql" and parsed.drivername == "postgresql":
            url = parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
        engine = create_engine(url, pool_pre_ping=True)
    return engine


def alembic_config(engine: Engine) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["engine"] = engine
    return cfg


def migrate(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to ``revision`` (default: the newest migration)."""
    command.upgrade(alembic_config(engine), revision)


def open_database(url: str | None = None) -> Engine:
    """Engine with the schema migrated to head: what every process calls first."""
    engine = make_engine(url)
    migrate(engine)
    log.info("database ready at %s", engine.url.render_as_string(hide_password=True))
    return engine
