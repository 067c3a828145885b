"""Migrations and relational tables on SQLite and a real PostgreSQL."""

from datetime import datetime, timedelta, timezone

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect
from sqlmodel import Session, SQLModel, select

from ingest.store.db import make_engine, migrate, open_database, resolve_db_url
from ingest.store.models import Event, Scenario


def test_migrations_create_every_table_and_match_the_models(db_url):
    engine = open_database(db_url)
    tables = set(inspect(engine).get_table_names())
    assert {
        "site_version",
        "scenario",
        "incident",
        "event",
        "telemetry_layout",
        "telemetry_chunk",
        "alembic_version",
    } <= tables
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), SQLModel.metadata)
    assert diff == [], f"models and migrations disagree: {diff}"
    migrate(engine)  # a second run is a no-op, not an error
    engine.dispose()


def test_timestamps_round_trip_as_aware_utc(db_url):
    engine = open_database(db_url)
    raised = datetime(2024, 7, 22, 9, 20, tzinfo=timezone(timedelta(hours=-5)))
    with Session(engine) as session:
        session.add(
            Event(
                site_name="demo",
                key="k",
                raised_at=raised,
                severity="warning",
                source="twin",
                entity_kind="rack",
                entity_id=3,
                entity_name="H1-R01-K04",
                metric="gpu_temp_c",
                value=88.0,
                message="hot",
            )
        )
        session.commit()
        got = session.exec(select(Event)).one()
    assert got.raised_at == raised and got.raised_at.tzinfo is not None
    assert got.raised_at.utcoffset() == timedelta(0)
    engine.dispose()


def test_naive_timestamp_is_refused_and_nothing_is_written(db_url):
    engine = open_database(db_url)
    with Session(engine) as session:
        session.add(Scenario(site_name="demo", name="x", content="", created_at=datetime(2024, 1, 1)))
        with pytest.raises(Exception, match="timezone-aware"):
            session.commit()
    with Session(engine) as session:
        assert session.exec(select(Scenario)).all() == []
    engine.dispose()


def test_default_url_is_an_sqlite_file_under_var(monkeypatch, tmp_path):
    monkeypatch.delenv("CLUSTERTWIN_DB", raising=False)
    monkeypatch.chdir(tmp_path)
    url = resolve_db_url(None)
    assert url == f"sqlite:///{tmp_path / 'var' / 'clustertwin.db'}"
    monkeypatch.setenv("CLUSTERTWIN_DB", "sqlite:///elsewhere.db")
    assert resolve_db_url(None) == "sqlite:///elsewhere.db"
    assert resolve_db_url("sqlite:///flag.db") == "sqlite:///flag.db"
    assert make_engine("postgresql://u@127.0.0.1/x").url.drivername == "postgresql+psycopg"
