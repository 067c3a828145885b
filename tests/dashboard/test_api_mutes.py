"""The API's scoped silences and maintenance windows on a live twin with users: operators change, viewers read,
every change audited, bad input refused in one line."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ingest.store.audit import list_entries
from tests.dashboard.api_hub import bearer_headers, demo_hub_with_users

FAULT = "xid:h1-r01-k02-n0/5@1=79"


@pytest.fixture(scope="module")
def twin(tmp_path_factory):
    hub = demo_hub_with_users(tmp_path_factory.mktemp("api-mutes"), 4, faults=(FAULT,))
    yield hub
    hub.db.dispose()


@pytest.fixture(scope="module")
def tokens(twin) -> dict[str, dict]:
    return bearer_headers(twin)


@pytest.fixture(scope="module")
def client(twin, tokens):
    from dashboard.app import app_for_hub

    return app_for_hub(twin, tick_ms=60_000).server.test_client()


@pytest.fixture()
def clean(twin):
    """No silence or window left over from another test."""
    for row in twin.alert_actions.mutes():
        twin.alert_actions.expire_mute(row["id"], "test")
    return twin


def _open_alerts(client, tokens) -> list[dict]:
    r = client.get("/api/v1/alerts", headers=tokens["vera"])
    assert r.status_code == 200
    return r.get_json()["items"]


def _entries(twin, action):
    return [e for e in list_entries(twin.db) if e["action"] == action]


@pytest.mark.slow
def test_an_operator_silences_a_hall_and_a_viewer_reads_it(client, clean, tokens):
    body = {"scope": {"kind": "hall", "value": "h1"}, "duration_s": 3600, "comment": "swapping the GPU"}
    refused = client.post("/api/v1/silences", json=body, headers=tokens["vera"])
    assert refused.status_code == 403 and "operator" in refused.get_json()["error"]
    assert client.get("/api/v1/silences", headers=tokens["vera"]).get_json()["items"] == []
    r = client.post("/api/v1/silences", json=body, headers=tokens["otto"])
    assert r.status_code == 200, r.get_json()
    silence = r.get_json()
    assert silence["scope"] == "H1" and silence["scope_value"] == "H1" and silence["created_by"] == "otto"
    assert silence["state"] == "active" and silence["kind"] == "silence"
    listed = client.get("/api/v1/silences", headers=tokens["vera"]).get_json()["items"]
    assert [s["id"] for s in listed] == [silence["id"]]
    alerts = _open_alerts(client, tokens)
    in_hall = [a for a in alerts if a["entity_kind"] in ("gpu", "rack")]
    assert in_hall and all(a["silence"]["id"] == silence["id"] for a in in_hall)
    assert all(a["silence"] is None for a in alerts if a["entity_kind"] == "job")  # a job lies in no hall
    entry = _entries(clean, "silence.add")[0]
    assert entry["user_name"] == "otto" and entry["target"] == f"silence {silence['id']}: H1"
    assert entry["after"]["scope_kind"] == "hall" and entry["after"]["comment"] == "swapping the GPU"

    refused = client.post(f"/api/v1/silences/{silence['id']}/expire", headers=tokens["vera"])
    assert refused.status_code == 403
    r = client.post(f"/api/v1/silences/{silence['id']}/expire", headers=tokens["otto"])
    assert r.status_code == 200 and r.get_json()["state"] == "ended" and r.get_json()["expired_by"] == "otto"
    assert all(a["silence"] is None for a in _open_alerts(client, tokens))
    entry = _entries(clean, "silence.expire")[0]
    assert entry["before"]["state"] == "active" and entry["after"]["state"] == "ended"
    again = client.post(f"/api/v1/silences/{silence['id']}/expire", headers=tokens["otto"])
    assert again.status_code == 422 and "already" in again.get_json()["error"]
    ended = client.get("/api/v1/silences?ended_within_s=600", headers=tokens["vera"]).get_json()["items"]
    assert [s["state"] for s in ended] == ["ended"]


@pytest.mark.slow
def test_a_maintenance_window_is_scheduled_shown_and_cancelled(client, clean, tokens):
    now = datetime.now(UTC)
    body = {
        "scope": {"kind": "entity", "value": "H1-R01-K02*"},
        "starts_at": (now - timedelta(minutes=1)).isoformat(),
        "ends_at": (now + timedelta(hours=2)).isoformat(),
        "reason": "GPU swap in H1-R01-K02",
    }
    assert client.post("/api/v1/maintenance-windows", json=body, headers=tokens["vera"]).status_code == 403
    r = client.post("/api/v1/maintenance-windows", json=body, headers=tokens["otto"])
    assert r.status_code == 200, r.get_json()
    window = r.get_json()
    assert window["state"] == "active" and window["kind"] == "maintenance"
    upcoming = dict(
        body, starts_at=(now + timedelta(days=1)).isoformat(), ends_at=(now + timedelta(days=2)).isoformat()
    )
    later = client.post("/api/v1/maintenance-windows", json=upcoming, headers=tokens["otto"]).get_json()
    assert later["state"] == "upcoming"
    listed = client.get("/api/v1/maintenance-windows", headers=tokens["vera"]).get_json()["items"]
    assert [w["id"] for w in listed] == [window["id"], later["id"]]
    assert client.get("/api/v1/silences", headers=tokens["vera"]).get_json()["items"] == []
    muted = [a for a in _open_alerts(client, tokens) if a["maintenance"]]
    assert muted and {a["maintenance"]["comment"] for a in muted} == {"GPU swap in H1-R01-K02"}
    assert all(a["entity_name"].lower().startswith("h1-r01-k02") for a in muted)
    # a window is cancelled, not expired through the silences' route
    assert client.post(f"/api/v1/silences/{window['id']}/expire", headers=tokens["otto"]).status_code == 404
    r = client.post(f"/api/v1/maintenance-windows/{later['id']}/cancel", headers=tokens["otto"])
    assert r.status_code == 200 and r.get_json()["state"] == "ended"
    entry = _entries(clean, "maintenance.cancel")[0]
    assert entry["target"] == f"maintenance {later['id']}: H1-R01-K02*" and entry["before"]["state"] == "upcoming"
    assert _entries(clean, "maintenance.add")[0]["after"]["comment"] == "GPU swap in H1-R01-K02"
    missing = client.post("/api/v1/maintenance-windows/999999/cancel", headers=tokens["otto"])
    assert missing.status_code == 404 and missing.get_json()["error"] == "no maintenance window with id 999999"


@pytest.mark.parametrize(
    "path, body, status, message",
    [
        (
            "/api/v1/silences",
            {"scope": {"kind": "entity", "value": "H1-[R0"}, "duration_s": 60, "comment": "x"},
            422,
            "entity pattern 'H1-[R0': a '[' is not closed by ']'",
        ),
        (
            "/api/v1/silences",
            {"scope": {"kind": "entity", "value": "**"}, "duration_s": 60, "comment": "x"},
            422,
            "entity pattern '**' matches every entity",
        ),
        (
            "/api/v1/silences",
            {"scope": {"kind": "hall", "value": "H7"}, "duration_s": 60, "comment": "x"},
            422,
            "hall 'H7' is not one of the site's halls (H1)",
        ),
        (
            "/api/v1/silences",
            {"scope": {"kind": "hall", "value": "H1", "rule": "gpuhot"}, "duration_s": 60, "comment": "x"},
            422,
            "rule 'gpuhot' is not an alert rule",
        ),
        (
            "/api/v1/maintenance-windows",
            {
                "scope": {"kind": "hall", "value": "H1"},
                "starts_at": "2030-01-02T00:00:00+00:00",
                "ends_at": "2030-01-01T00:00:00+00:00",
                "reason": "x",
            },
            422,
            "end 2030-01-01T00:00:00+00:00 is not after the start 2030-01-02T00:00:00+00:00",
        ),
        (
            "/api/v1/maintenance-windows",
            {
                "scope": {"kind": "hall", "value": "H1"},
                "starts_at": "2030-01-01T00:00:00+00:00",
                "ends_at": "2030-01-09T00:00:00+00:00",
                "reason": "x",
            },
            422,
            "is longer than 7 days",
        ),
        (
            "/api/v1/silences",
            {"scope": {"kind": "hall", "value": "H1"}, "duration_s": 8 * 86400, "comment": "x"},
            400,
            "body.duration_s: Input should be less than or equal to 604800",
        ),
        (
            "/api/v1/silences",
            {"scope": {"kind": "rack", "value": "H1"}, "duration_s": 60, "comment": "x"},
            400,
            "body.scope.kind: Input should be 'entity', 'group' or 'hall'",
        ),
        ("/api/v1/silences", {"scope": {"kind": "hall", "value": "H1"}, "duration_s": 60}, 400, "body.comment"),
    ],
)
def test_bad_input_is_refused_in_one_line(client, clean, tokens, path, body, status, message):
    r = client.post(path, json=body, headers=tokens["otto"])
    assert r.status_code == status, r.get_json()
    error = r.get_json()["error"]
    assert message in error and "\n" not in error
    assert clean.alert_actions.mutes() == []  # nothing stored


def test_routes_are_documented_with_their_roles(client, tokens):
    doc = client.get("/api/v1/openapi.json", headers=tokens["vera"]).get_json()
    add = doc["paths"]["/api/v1/silences"]["post"]
    assert {"403", "422"} <= set(add["responses"])
    assert "/api/v1/maintenance-windows/{mute_id}/cancel" in doc["paths"]
