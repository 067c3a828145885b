"""The API's roles, on a live twin with users: anonymous gets 401, a viewer reads but cannot change, an operator can."""

from __future__ import annotations

import pytest

from ingest.store.audit import list_entries
from tests.dashboard.api_hub import bearer_headers, demo_hub_with_users


@pytest.fixture(scope="module")
def twin(tmp_path_factory):
    hub = demo_hub_with_users(tmp_path_factory.mktemp("api-auth"), 4, faults=("xid:h1-r01-k02-n0/5@1=79",))
    yield hub
    hub.db.dispose()


@pytest.fixture(scope="module")
def client(twin, tokens):
    """The app, created after the tokens (the access layer reads users and tokens from its cached table)."""
    from dashboard.app import app_for_hub

    return app_for_hub(twin, tick_ms=60_000).server.test_client()


@pytest.fixture(scope="module")
def tokens(twin) -> dict[str, dict]:
    return bearer_headers(twin)


def _alert_id(twin) -> int:
    return next(a["id"] for a in twin.view.alerts(True) if not a["acknowledged"])


@pytest.mark.parametrize(
    "method, path",
    [
        ("GET", "/api/v1/site"),
        ("GET", "/api/v1/live/kpis"),
        ("GET", "/api/v1/openapi.json"),
        ("POST", "/api/v1/alerts/1/acknowledge"),
    ],
)
def test_anonymous_requests_get_401(client, method, path):
    r = client.open(path, method=method, json={} if method == "POST" else None)
    assert r.status_code == 401 and r.is_json and "login required" in r.get_json()["error"]


@pytest.mark.slow
def test_metrics_need_a_token_too(client, tokens):
    refused = client.get("/metrics", headers={"Accept": "text/html"})  # a scraper: 401, never the login page
    assert refused.status_code == 401 and refused.headers["WWW-Authenticate"].startswith("Bearer")
    r = client.get("/metrics", headers=tokens["vera"])
    assert r.status_code == 200 and "clustertwin_it_power_watts" in r.get_data(as_text=True)


def test_a_bad_token_is_401(client):
    r = client.get("/api/v1/site", headers={"Authorization": "Bearer not-a-token"})
    assert r.status_code == 401


def test_a_viewer_reads_but_cannot_acknowledge_or_silence(client, twin, tokens):
    assert client.get("/api/v1/live/kpis", headers=tokens["vera"]).status_code == 200
    alert_id = _alert_id(twin)
    for action, body in (("acknowledge", {"comment": "mine"}), ("silence", {"duration_s": 600})):
        r = client.post(f"/api/v1/alerts/{alert_id}/{action}", json=body, headers=tokens["vera"])
        assert r.status_code == 403 and "operator" in r.get_json()["error"]
    alert = next(a for a in twin.view.alerts(True) if a["id"] == alert_id)
    assert not alert["acknowledged"] and alert["silenced_until"] is None


def test_an_operator_acknowledges_and_the_change_is_audited(client, twin, tokens):
    alert_id = _alert_id(twin)
    r = client.post(f"/api/v1/alerts/{alert_id}/acknowledge", json={"comment": "on it"}, headers=tokens["otto"])
    assert r.status_code == 200, r.get_json()
    assert r.get_json()["acknowledged"] and r.get_json()["acknowledged_by"] == "otto"
    entry = next(e for e in list_entries(twin.db) if e["action"] == "alert.acknowledge")
    assert entry["user_name"] == "otto" and entry["target"].startswith(f"alert {alert_id}")
    assert entry["before"]["acknowledged"] is False and entry["after"]["acknowledged"] is True


def test_openapi_document_names_the_bearer_scheme(client, tokens):
    doc = client.get("/api/v1/openapi.json", headers=tokens["vera"]).get_json()
    assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    ack = doc["paths"]["/api/v1/alerts/{alert_id}/acknowledge"]["post"]
    assert {"401", "403"} <= set(ack["responses"]) and "operator" in ack["description"]


def test_live_updates_rendered_in_the_background_pass_the_same_checks(client, tokens, monkeypatch):
    """The tick cache's background copy of a request carries the caller's token: it renders, not 401."""
    import threading

    import dashboard.views.tick_cache as tick_cache
    from tests.dashboard.test_tick_cache import _body

    now = [2_000_000.0]
    monkeypatch.setattr(tick_cache.time, "time", lambda: now[0])
    cache = client.application.extensions["clustertwin_tick_cache"]
    post = lambda n: client.post(
        "/_dash-update-component",
        json=_body(n),
        headers={
            **tokens["vera"],  # noqa: E731
            "Referer": "http://localhost/floor",
        },
    )
    assert post(1).status_code == 200
    now[0] += 100.0
    before = set(threading.enumerate())
    assert post(2).status_code == 200  # the last rendering, while the copy renders the new period
    for thread in set(threading.enumerate()) - before:
        thread.join(timeout=30)
    hits = cache.hits
    assert post(3).status_code == 200 and cache.hits == hits + 1  # the copy's rendering was stored
    assert (
        client.post("/_dash-update-component", json=_body(4), headers={"Referer": "http://localhost/floor"}).status_code
        == 401
    )


def test_every_route_that_changes_state_needs_the_operator_role():
    from dashboard.api.routing import api

    readers = {"post_project", "project_stored", "project_whatif"}  # POST, but compute without storing anything
    changing = [r for r in api.routes if r.method != "GET" and r.operation_id not in readers]
    assert len(changing) >= 10
    assert [r.path for r in changing if r.role not in ("operator", "admin")] == []
