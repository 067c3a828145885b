"""Two server processes on one database (two apps, each with its own engine): one login limit for both."""

from __future__ import annotations

import pytest

from dashboard.auth import AuthSettings
from dashboard.auth.access import auth_state
from ingest.store.db import open_database
from ingest.store.users import add_user
from tests.dashboard.auth.conftest import PASSWORDS, Client

SETTINGS = AuthSettings(login_failures_per_address=4, login_failures_per_user=3, login_window_s=300.0)


@pytest.fixture
def two_apps(live_twin, db_url):
    """Two apps over their own engines on the database of ``db_url`` (SQLite, then the real PostgreSQL)."""
    from dashboard.app import app_for_hub

    engines = [open_database(db_url) for _ in range(2)]
    add_user(engines[0], "otto", "operator", PASSWORDS["otto"])
    apps = [app_for_hub(live_twin, tick_ms=60_000, db=engine, auth=SETTINGS) for engine in engines]
    now = [1_000_000.0]
    for app in apps:
        state = auth_state(app.server)
        state.by_address.clock = state.by_user.clock = lambda: now[0]
    yield [Client(app) for app in apps], now
    for engine in engines:
        engine.dispose()


def login(c: Client, name: str, password: str):
    return c.http.post("/login", data={"username": name, "password": password, "csrf_token": c.csrf_from_form()})


@pytest.mark.slow
def test_attempts_through_both_processes_count_against_one_limit(two_apps):
    (first, second), now = two_apps
    assert login(first, "otto", "wrong password!").status_code == 401
    assert login(second, "otto", "wrong password!").status_code == 401
    assert login(first, "otto", "wrong password!").status_code == 401
    for c in (second, first):  # the right password, but the name has used its 3 attempts in both processes
        refused = login(c, "otto", PASSWORDS["otto"])
        assert refused.status_code == 429 and int(refused.headers["Retry-After"]) == 300
    now[0] += 301  # old counters expire
    assert login(second, "otto", PASSWORDS["otto"]).status_code == 302
    # per address: one client trying names through both processes
    assert login(first, "nobody1", "wrong password!").status_code == 401
    assert login(second, "nobody2", "wrong password!").status_code == 401
    assert login(first, "nobody3", "wrong password!").status_code == 401
    assert login(second, "nobody4", "wrong password!").status_code == 401
    assert login(first, "otto", PASSWORDS["otto"]).status_code == 429
    assert login(second, "otto", PASSWORDS["otto"]).status_code == 429
