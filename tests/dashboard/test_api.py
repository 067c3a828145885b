"""The JSON API under /api/v1 on a real live hub (demo site, SQLite, a GPU down by XID 79)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from dashboard.api.models import MAX_PAGE
from dashboard.api.routing import MAX_BODY_BYTES
from twin.commands.jsonout import finite_or_null
from twin.quantities import BY_NAME, NOT_QUANTITIES
from twin.scenario.load import load_scenario
from twin.scenario.projection import project
from twin.site.catalogue import DATA_DIR
from twin.site.load import load_site

FAULT = "xid:h1-r01-k01-n0/0=79"
START = datetime(2026, 7, 15, 14, 0, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    from ingest.live.runtime import build_hub

    db = tmp_path_factory.mktemp("api") / "api.db"
    hub = build_hub("demo", f"sqlite:///{db}", faults=(FAULT,), start=START)
    for k in range(3):
        hub.step(START + timedelta(seconds=k + 1))
    yield hub
    hub.db.dispose()


@pytest.fixture(scope="module")
def client(hub):
    from dashboard.app import app_for_hub

    return app_for_hub(hub).server.test_client()


def test_site_summary_and_entities(client):
    site = client.get("/api/v1/site").get_json()
    assert (site["site"], site["n_racks"], site["n_gpus"]) == ("demo", 16, 1024)
    racks = client.get("/api/v1/site/racks?limit=5&offset=14").get_json()
    assert racks["total_count"] == 16 and [r["entity_id"] for r in racks["items"]] == [14, 15]
    assert racks["items"][0]["parent"] == "H1"
    power = client.get("/api/v1/site/power?limit=1000").get_json()
    assert power["items"][0]["parent"] is None and power["items"][0]["kind"] == "switchgear"


def test_live_state_is_the_hub_latest_tick(client, hub):
    snap = hub.view.latest()
    kpis = client.get("/api/v1/live/kpis").get_json()
    assert kpis["it_power_mw"] == pytest.approx(snap.it_power_mw)
    assert kpis["n_gpus_down"] == 1  # the XID 79 GPU
    assert datetime.fromisoformat(kpis["ts"]) == snap.ts
    hot = client.get("/api/v1/live/racks?sort=rack_max_gpu_temp_c&limit=3").get_json()
    temps = [r["rack_max_gpu_temp_c"] for r in hot["items"]]
    assert temps == sorted(temps, reverse=True) and temps[0] == pytest.approx(float(snap.rack_max_gpu_temp_c.max()))
    cdus = client.get("/api/v1/live/cdus?limit=1000").get_json()
    assert len(cdus["items"]) == 16
    first = cdus["items"][0]
    assert first["cdu_capacity_use_frac"] == pytest.approx(first["cdu_heat_kw"] / first["cdu_capacity_kw"])
    jobs = client.get("/api/v1/live/jobs").get_json()
    assert jobs["items"][0]["name"] == snap.jobs[0].name
    assert client.get("/api/v1/live/power").get_json()["total_count"] == hub.state.n_power
    assert client.get("/api/v1/live/generation").get_json()["total_count"] == hub.state.n_sources
    assert [s["source"] for s in client.get("/api/v1/live/sources").get_json()["items"]] == ["synthetic"]


def test_rack_filter_by_hall_and_unknown_hall(client):
    assert client.get("/api/v1/live/racks?hall=H1").get_json()["total_count"] == 16
    r = client.get("/api/v1/live/racks?hall=H9")
    assert r.status_code == 404 and "no hall 'H9'" in r.get_json()["error"]


@pytest.mark.parametrize(
    "path, status, message",
    [
        (f"/api/v1/live/racks?limit={MAX_PAGE + 1}", 400, "query.limit: Input should be less than or equal to 1000"),
        ("/api/v1/live/racks?limit=-1", 400, "query.limit"),
        ("/api/v1/live/racks?limit=1&limit=2", 400, "query.limit: given more than once"),
        ("/api/v1/live/racks?sort=drop_table", 400, "query.sort"),
        ("/api/v1/live/racks?hall=%00", 400, "query.hall"),
        ("/api/v1/live/kpis?x=1", 400, "this route takes no query parameters"),
        ("/api/v1/site/gpus", 400, "path.kind"),
        ("/api/v1/alerts/0", 400, "path.alert_id"),
        ("/api/v1/alerts/99999", 404, "no alert with id 99999"),
        ("/api/v1/no/such/route", 404, "no such API route"),
    ],
)
def test_bad_requests_are_one_line_json_errors(client, path, status, message):
    r = client.get(path)
    assert r.status_code == status and r.is_json, r.data[:200]
    error = r.get_json()["error"]
    assert message in error and "\n" not in error


def test_alerts_list_acknowledge_and_silence(client, hub):
    alerts = client.get("/api/v1/alerts?limit=1000").get_json()["items"]
    gpu = next(a for a in alerts if a["entity_kind"] == "gpu")
    assert not gpu["acknowledged"]
    r = client.post(f"/api/v1/alerts/{gpu['id']}/acknowledge", json={"comment": "swapping the board"})
    assert r.status_code == 200, r.data
    assert r.get_json()["acknowledged"] and r.get_json()["ack_comment"] == "swapping the board"
    assert next(a for a in hub.view.alerts(True) if a["id"] == gpu["id"])["acknowledged"]
    r = client.post(f"/api/v1/alerts/{gpu['id']}/silence", json={"duration_s": 3600})
    until = datetime.fromisoformat(r.get_json()["silenced_until"])
    assert timedelta(minutes=59) < until - datetime.now(UTC) <= timedelta(hours=1)
    kpis = client.get("/api/v1/alerts/" + str(gpu["id"])).get_json()
    assert kpis["id"] == gpu["id"]
    critical = client.get("/api/v1/alerts?severity=critical").get_json()["items"]
    assert all(a["severity"] == "critical" for a in critical)


@pytest.mark.parametrize(
    "body, status, message",
    [
        ({"duration_s": 0}, 400, "body.duration_s: Input should be greater than 0"),
        ({"duration_s": 8 * 24 * 3600}, 400, "body.duration_s"),
        ({"duration_s": "NaN"}, 400, "body.duration_s"),
        ({"duration_s": 60, "extra": 1}, 400, "body.extra: Extra inputs are not permitted"),
        ({}, 400, "body.duration_s: Field required"),
        ([1, 2], 400, "body: Input should be a valid dictionary"),
    ],
)
def test_silence_bodies_are_validated(client, hub, body, status, message):
    alert_id = hub.view.alerts(True)[0]["id"]
    r = client.post(f"/api/v1/alerts/{alert_id}/silence", json=body)
    assert r.status_code == status and message in r.get_json()["error"], r.get_json()


def test_bodies_are_json_and_size_limited(client, hub):
    alert_id = hub.view.alerts(True)[0]["id"]
    url = f"/api/v1/alerts/{alert_id}/acknowledge"
    r = client.post(url, data="comment=x", content_type="application/x-www-form-urlencoded")
    assert r.status_code == 415
    r = client.post(url, data="{not json", content_type="application/json")
    assert r.status_code == 400 and r.get_json()["error"] == "body is not valid JSON"
    r = client.post(url, data="[" * 100_000 + "]" * 100_000, content_type="application/json")
    assert r.status_code == 400
    big = json.dumps({"comment": "x" * (MAX_BODY_BYTES + 10)})
    r = client.post(url, data=big, content_type="application/json")
    assert r.status_code == 413 and r.is_json
    r = client.post(url, json={"comment": "x" * 501})
    assert r.status_code == 400 and "body.comment" in r.get_json()["error"]


def test_wrong_method_is_json(client):
    r = client.delete("/api/v1/site")
    assert r.status_code in (404, 405) and r.is_json


def test_project_body_gives_the_numbers_of_clustertwin_project(client):
    path = DATA_DIR / "scenarios" / "demo-cdu-loss.toml"
    state = load_site("demo")
    expected = finite_or_null(project(state, load_scenario(path, state)).as_dict())
    import tomllib

    raw = tomllib.loads(path.read_text())
    body = json.loads(json.dumps(raw, default=lambda t: t.isoformat()))
    r = client.post("/api/v1/project", json=body)
    assert r.status_code == 200, r.get_json()
    got = r.get_json()
    assert got["facility_power_mw"] == pytest.approx(expected["facility_power_mw"])
    assert got["time_to_throttle_s"] == expected["time_to_throttle_s"]
    assert got["hottest_racks"] == expected["hottest_racks"]
    stored = client.post("/api/v1/scenarios/demo-cdu-loss/project").get_json()
    assert stored["facility_power_mw"] == pytest.approx(expected["facility_power_mw"])


@pytest.mark.parametrize(
    "body, message",
    [
        ({"conditions": {"cdus_failed": ["NO-SUCH-CDU"]}}, "conditions.cdus_failed: 'NO-SUCH-CDU' is not in this site"),
        ({"scenario": {"settle_s": 86_400}}, "body.scenario.settle_s: Input should be less than or equal to 3600"),
        ({"conditions": {"gpu_util_frac": 2}}, "body.conditions.gpu_util_frac"),
        ({"conditions": {"job": "../../etc/passwd"}}, "body.conditions.job"),
        ({"conditions": {"job": "no-such-job"}}, "no-such-job"),
        ({"scenario": {"time": "2024-07-22T20:00:00"}}, "needs a time zone"),
        ({"conditions": {"failed_power": ["x"] * 3000}}, "body.conditions.failed_power"),
    ],
)
def test_bad_project_bodies(client, body, message):
    r = client.post("/api/v1/project", json=body)
    assert r.status_code == 400 and message in r.get_json()["error"], r.get_json()


def test_scenarios_list_and_show(client):
    items = client.get("/api/v1/scenarios").get_json()["items"]
    assert "demo-cdu-loss" in [s["name"] for s in items]
    one = client.get("/api/v1/scenarios/demo-cdu-loss").get_json()
    assert "[conditions]" in one["toml"]
    assert client.get("/api/v1/scenarios/nope").status_code == 404


def test_incidents_list_show_and_export(client):
    listed = client.get("/api/v1/incidents?limit=1000").get_json()
    name = listed["items"][0]["name"]
    assert client.get(f"/api/v1/incidents/{name}").get_json()["name"] == name
    r = client.get(f"/api/v1/incidents/{name}/export")
    assert r.status_code == 200 and r.data[:2] == b"PK" and name in r.headers["Content-Disposition"]


@pytest.mark.parametrize(
    "name", ["..%2F..%2Fetc%2Fpasswd", "..", "%2e%2e", "..%5Cpasswd", "colossus-generator-trip%00", "%2Fetc%2Fpasswd"]
)
def test_incident_export_cannot_leave_the_library(client, name):
    r = client.get(f"/api/v1/incidents/{name}/export")
    assert r.status_code in (400, 404) and r.is_json and b"root:" not in r.data


def _fields(schema: dict, schemas: dict, out: set) -> set:
    for name, prop in schema.get("properties", {}).items():
        out.add(name)
        for ref in [prop] + prop.get("anyOf", []) + [prop.get("items", {})]:
            target = ref.get("$ref") or ref.get("items", {}).get("$ref")
            if target:
                _fields(schemas[target.rsplit("/", 1)[1]], schemas, out)
    return out


@pytest.mark.slow
def test_every_answer_field_is_a_listed_quantity_or_not_one(client):
    doc = client.get("/api/v1/openapi.json").get_json()
    schemas = doc["components"]["schemas"]
    fields = set()
    for name, schema in schemas.items():
        if not name.endswith(("Body", "Head", "Conditions", "Acknowledge", "Silence")):
            _fields(schema, schemas, fields)
    assert sorted(f for f in fields if f not in BY_NAME and f not in NOT_QUANTITIES) == []


def test_openapi_document_lists_every_route(client):
    doc = client.get("/api/v1/openapi.json").get_json()
    assert doc["openapi"].startswith("3.1")
    assert "/api/v1/alerts/{alert_id}/acknowledge" in doc["paths"]
    ack = doc["paths"]["/api/v1/alerts/{alert_id}/acknowledge"]["post"]
    assert ack["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/Acknowledge")
    assert {"400", "403", "404"} <= set(ack["responses"])
