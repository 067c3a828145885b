"""The served twin through a real PostgreSQL outage: live state and alerts from memory, /metrics answers, login 503.

A demo hub with a viewer on a throwaway PostgreSQL cluster, served by the app; the test
stops the cluster (``pg_ctl -m immediate``: connections cut, as when the server dies),
checks what the API, ``/metrics`` and ``/login`` answer while it is down, starts it again
and checks that everything is back and the flag is gone.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from ingest.store.pgserver import throwaway_postgres_server
from tests.dashboard.api_hub import USERS

T0 = datetime(2024, 7, 22, 15, 0, tzinfo=UTC)


@pytest.mark.postgres
def test_api_metrics_and_login_through_a_database_outage():
    from dashboard.app import app_for_hub
    from ingest.live.runtime import build_hub
    from ingest.store.users import add_user, new_token

    with throwaway_postgres_server("twin_web_outage") as server:
        hub = build_hub("demo", server.url, start=T0, faults=("xid:h1-r01-k02-n0/5@1=79",))
        for i in range(4):
            hub.step(T0 + timedelta(seconds=i))
        role, password = USERS["vera"]
        add_user(hub.db, "vera", role, password)
        auth = {"Authorization": f"Bearer {new_token(hub.db, 'vera')}"}
        app = app_for_hub(hub, tick_ms=60_000)
        client = app.server.test_client()
        before = client.get("/api/v1/alerts", headers=auth).get_json()
        assert before["total_count"] > 0
        assert client.get("/api/v1/live/kpis", headers=auth).get_json()["database_reachable_flag"] is True

        server.stop()
        hub.step(T0 + timedelta(seconds=4))  # the twin ticks on, from memory
        kpis = client.get("/api/v1/live/kpis", headers=auth)
        assert kpis.status_code == 200, kpis.get_data(as_text=True)
        assert kpis.get_json()["database_reachable_flag"] is False
        assert kpis.get_json()["ts"].startswith("2024-07-22T15:00:04")
        alerts = client.get("/api/v1/alerts", headers=auth)
        assert alerts.status_code == 200, alerts.get_data(as_text=True)
        assert alerts.get_json()["items"] == before["items"]  # the last list read
        assert alerts.get_json()["database_reachable_flag"] is False
        # a list never read before the outage (a fresh worker, another filter): an answer, not a 500
        cleared = client.get("/api/v1/alerts?active_only=false", headers=auth)
        assert cleared.status_code == 200 and cleared.get_json()["database_reachable_flag"] is False
        metrics = client.get("/metrics", headers=auth)
        assert metrics.status_code == 200, metrics.get_data(as_text=True)
        assert "clustertwin_it_power_watts" in metrics.get_data(as_text=True)
        assert re.search(r"clustertwin_database_reachable\{[^}]*\} 0", metrics.get_data(as_text=True))
        browser = app.server.test_client()
        form = browser.get("/login").get_data(as_text=True)
        token = re.search(r'name="csrf_token" value="([^"]+)"', form).group(1)
        login = browser.post("/login", data={"username": "vera", "password": password, "csrf_token": token})
        assert login.status_code == 503, login.get_data(as_text=True)[:500]
        assert "database" in login.get_data(as_text=True) and login.headers.get("Retry-After")

        server.start()
        hub.step(T0 + timedelta(seconds=5))
        kpis = client.get("/api/v1/live/kpis", headers=auth).get_json()
        assert kpis["database_reachable_flag"] is True
        assert client.get("/api/v1/alerts", headers=auth).get_json()["database_reachable_flag"] is True
        token = re.search(r'name="csrf_token" value="([^"]+)"', browser.get("/login").get_data(as_text=True)).group(1)
        assert (
            browser.post("/login", data={"username": "vera", "password": password, "csrf_token": token}).status_code
            == 302
        )
        hub.db.dispose()
