"""Fixtures shared by the whole suite: where the shared fixtures and reference sites live."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.store.pgserver import throwaway_postgres

REPO_DIR = Path(__file__).resolve().parents[1]
# markers of tests that start a real server or browser: all of them are also "slow"
SERVICE_MARKERS = ("browser", "postgres", "prometheus", "ipmi", "slurm", "alertmanager")
SHARED_DIR = (REPO_DIR.parent / "shared").resolve()
FIXTURES_DIR = SHARED_DIR / "fixtures"


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """``../shared/fixtures`` next to the repository (real payloads from public projects)."""
    if not FIXTURES_DIR.is_dir():
        raise RuntimeError(f"shared fixtures not found at {FIXTURES_DIR}: clone next to shared/")
    return FIXTURES_DIR


def pytest_collection_modifyitems(items):
    """Every test that drives a server or a browser is slow: ``make test-fast`` leaves it out."""
    for item in items:
        if any(item.get_closest_marker(name) for name in SERVICE_MARKERS):
            item.add_marker(pytest.mark.slow)


# --------------------------------------------------------------------------- PostgreSQL
@pytest.fixture(scope="session")
def postgres_url():
    """A throwaway PostgreSQL server on 127.0.0.1 for the whole session; yields its URL."""
    with throwaway_postgres() as url:
        yield url


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
