"""The what-if editor's scenarios through the API: the editor's store, checks and audit entries, by role."""

from __future__ import annotations

import pytest

from dashboard.whatif.store import scenario_store
from ingest.store import scenarios as stored
from ingest.store.audit import list_entries
from tests.dashboard.api_hub import bearer_headers, demo_hub_with_users
from twin.commands.jsonout import finite_or_null
from twin.scenario.load import parse_scenario
from twin.scenario.projection import project

BASE = "/api/v1/whatif/scenarios"
CDU = "H1-R01-K01-CDU"
FILE = f"""[scenario]
name = "from a file"

[[edits]]
op = "fail"
elements = ["{CDU}"]

[[edits]]
op = "set_weather"
outdoor_dry_bulb_c = 41.0
outdoor_wet_bulb_c = 26.0
"""


@pytest.fixture(scope="module")
def twin(tmp_path_factory):
    hub = demo_hub_with_users(tmp_path_factory.mktemp("api-whatif"), 2)
    yield hub
    hub.db.dispose()


@pytest.fixture(scope="module")
def tokens(twin) -> dict[str, dict]:
    return bearer_headers(twin)


@pytest.fixture(scope="module")
def app(twin, tokens):
    from dashboard.app import app_for_hub

    return app_for_hub(twin, tick_ms=60_000)


@pytest.fixture(scope="module")
def client(app):
    return app.server.test_client()


def _audit(twin, action: str) -> dict:
    return next(e for e in list_entries(twin.db) if e["action"] == action)


@pytest.mark.slow
def test_an_operator_creates_edits_undoes_and_every_change_is_audited(client, twin, tokens):
    otto = tokens["otto"]
    r = client.post(BASE, json={"name": "pump drill"}, headers=otto)
    assert r.status_code == 200, r.get_json()
    assert r.get_json() == {
        "name": "pump drill",
        "site": "demo",
        "position": 0,
        "can_undo": False,
        "can_redo": False,
        "edits": [],
    }
    assert _audit(twin, "scenario.new")["user_name"] == "otto"
    edit = {"op": "fail", "elements": [CDU], "pumps_count": 1}
    r = client.post(f"{BASE}/pump drill/edits", json={"edit": edit}, headers=otto)
    assert r.status_code == 200, r.get_json()
    assert r.get_json()["edits"] == [edit] and r.get_json()["can_undo"]
    entry = _audit(twin, "scenario.edit")
    assert (entry["user_name"], entry["target"]) == ("otto", "scenario pump drill")
    assert entry["before"] == {"edits": 0} and entry["after"] == {"edits": 1, "edit": edit}
    # the database row the editor and `clustertwin scenario` read
    row = stored.find_scenario(twin.db, "demo", "pump drill")
    assert [e.as_dict() for e in row.applied] == [edit]
    r = client.post(f"{BASE}/pump drill/undo", headers=otto)
    assert r.status_code == 200 and r.get_json()["edits"] == [] and r.get_json()["can_redo"]
    assert _audit(twin, "scenario.undo")["after"]["edits"] == 0
    assert client.post(f"{BASE}/pump drill/undo", headers=otto).status_code == 409
    r = client.post(f"{BASE}/pump drill/redo", headers=otto)
    assert r.status_code == 200 and r.get_json()["edits"] == [edit]


@pytest.mark.parametrize(
    "edit, message",
    [
        ({"op": "fail", "elements": ["no-such-cdu"]}, "edit.elements: 'no-such-cdu'"),
        ({"op": "explode"}, "edit.op: unknown op 'explode'"),
        ({"op": "set_weather", "outdoor_dry_bulb_c": 400.0}, "edit.outdoor_dry_bulb_c: expected a number"),
        ({"op": "move_rack", "racks": ["H1-R01-K01"], "x_m": 1.0}, "edit.y_m: a position needs both"),
        ({"op": "fail", "elements": [CDU], "colour": "red"}, "edit.colour: unknown field for fail"),
        (
            {"op": "set_setpoint", "cdus": [CDU], "supply_temp_c": 40.0},
            "edit.supply_temp_c: supply_temp_c goes with loops; cdus take supply_setpoint_c",
        ),
        ({"op": "set_setpoint", "cdus": [CDU], "supply_setpoint_c": None}, "edit.supply_setpoint_c: expected a number"),
        ([1, 2], "edit.op: expected a table with an op"),
        (
            {"op": "fail", "elements": [CDU], "pumps_count": 1.5},
            "edit.pumps_count: expected a whole number in [1, 1000]",
        ),
    ],
)
@pytest.mark.slow
def test_an_invalid_edit_is_422_naming_the_problem_and_nothing_is_stored(client, twin, tokens, edit, message):
    otto = tokens["otto"]
    if client.get(f"{BASE}/refusals", headers=otto).status_code == 404:
        assert client.post(BASE, json={"name": "refusals"}, headers=otto).status_code == 200
    before = client.get(f"{BASE}/refusals", headers=otto).get_json()
    audited = len(list_entries(twin.db))
    r = client.post(f"{BASE}/refusals/edits", json={"edit": edit}, headers=otto)
    assert r.status_code == 422 and r.get_json()["error"].startswith(message), r.get_json()
    assert "\n" not in r.get_json()["error"]
    assert client.get(f"{BASE}/refusals", headers=otto).get_json() == before
    assert len(list_entries(twin.db)) == audited


def test_strict_design_limits_refuse_what_warn_accepts(client, tokens):
    otto = tokens["otto"]
    assert client.post(BASE, json={"name": "denser hall"}, headers=otto).status_code == 200
    denser = {"op": "set_rack_type", "racks": ["H1-*"], "type": "GB200-NVL72"}
    strict = client.post(f"{BASE}/denser hall/edits", json={"edit": denser, "design_limits": "strict"}, headers=otto)
    assert strict.status_code == 422
    assert strict.get_json()["error"].startswith("edit.type: loop 'FW-H1': overloaded by design")
    warn = client.post(f"{BASE}/denser hall/edits", json={"edit": denser}, headers=otto)
    assert warn.status_code == 200 and warn.get_json()["edits"] == [denser]


def test_a_scenario_file_becomes_a_scenario_after_every_edit_applies(client, twin, tokens):
    otto = tokens["otto"]
    r = client.post(BASE, json={"toml": FILE}, headers=otto)
    assert r.status_code == 200, r.get_json()
    assert r.get_json()["name"] == "from a file" and len(r.get_json()["edits"]) == 2
    assert _audit(twin, "scenario.import")["after"]["edits"] == 2
    # a file naming what this site lacks is refused whole
    bad = FILE.replace(CDU, "H9-NOPE-CDU")
    r = client.post(BASE, json={"toml": bad, "name": "never stored"}, headers=otto)
    assert r.status_code == 422 and "H9-NOPE-CDU" in r.get_json()["error"]
    assert stored.find_scenario(twin.db, "demo", "never stored") is None
    r = client.post(BASE, json={"toml": "[scenario\nname = 1"}, headers=otto)
    assert r.status_code == 422 and "\n" not in r.get_json()["error"]
    assert client.post(BASE, json={}, headers=otto).status_code == 400


def test_rename_duplicate_delete_and_name_clashes(client, twin, tokens):
    otto = tokens["otto"]
    assert client.post(BASE, json={"name": "draft"}, headers=otto).status_code == 200
    assert client.post(BASE, json={"name": "draft"}, headers=otto).status_code == 409
    client.post(f"{BASE}/draft/edits", json={"edit": {"op": "fail", "elements": [CDU]}}, headers=otto)
    r = client.post(f"{BASE}/draft/rename", json={"name": "final"}, headers=otto)
    assert r.status_code == 200 and r.get_json()["name"] == "final"
    assert _audit(twin, "scenario.rename")["before"] == {"name": "draft"}
    assert client.get(f"{BASE}/draft", headers=otto).status_code == 404
    r = client.post(f"{BASE}/final/duplicate", json={"name": "final copy"}, headers=otto)
    assert r.status_code == 200 and len(r.get_json()["edits"]) == 1
    assert client.post(f"{BASE}/final/duplicate", json={"name": "final copy"}, headers=otto).status_code == 409
    r = client.delete(f"{BASE}/final copy", headers=otto)
    assert r.status_code == 200 and r.get_json()["name"] == "final copy"
    entry = _audit(twin, "scenario.delete")
    assert entry["user_name"] == "otto" and entry["before"]["edits"] == 1
    assert client.delete(f"{BASE}/final copy", headers=otto).status_code == 404
    assert client.post(f"{BASE}/final/rename", json={"name": "no/slash"}, headers=otto).status_code == 400


def test_the_editor_and_the_command_line_see_the_same_scenarios(app, client, twin, tokens):
    otto = tokens["otto"]
    assert client.post(BASE, json={"name": "shared"}, headers=otto).status_code == 200
    with app.server.app_context():
        from flask import current_app

        assert "shared" in scenario_store(twin.view, twin.db, current_app.config).names()
    stored.create_scenario(twin.db, "demo", "from the cli", design_limits="warn")
    listed = client.get(BASE, headers=tokens["vera"]).get_json()
    assert listed["persistent_flag"] is True
    assert {"shared", "from the cli"} <= {s["name"] for s in listed["items"]}


def test_projection_of_a_stored_scenario_is_the_report_of_its_file(client, twin, tokens):
    otto = tokens["otto"]
    assert client.post(BASE, json={"toml": FILE, "name": "projected"}, headers=otto).status_code == 200
    exported = client.get(f"{BASE}/projected/export", headers=tokens["vera"])
    assert exported.status_code == 200 and exported.mimetype == "application/toml"
    text = exported.get_data(as_text=True)
    assert "[[edits]]" in text and CDU in text
    r = client.post(f"{BASE}/projected/project", headers=tokens["vera"])
    assert r.status_code == 200, r.get_json()
    expected = finite_or_null(project(twin.state, parse_scenario(text, twin.state, "projected.toml")).as_dict())
    got = r.get_json()
    for key in ("it_power_mw", "facility_power_mw", "outdoor_dry_bulb_c"):
        assert got[key] == pytest.approx(expected[key])
    assert got["outdoor_dry_bulb_c"] == pytest.approx(41.0)
    # as the editor, it answers on the live fleet's occupancy, and says so
    assert twin.view.fleet() is not None and "the live fleet's occupancy" in got["baseline"]
    assert client.post(f"{BASE}/nothing here/project", headers=tokens["vera"]).status_code == 404


@pytest.mark.parametrize(
    "method, path, body",
    [
        ("POST", BASE, {"name": "viewer's"}),
        ("POST", f"{BASE}/shared/edits", {"edit": {"op": "fail", "elements": [CDU]}}),
        ("POST", f"{BASE}/shared/undo", None),
        ("POST", f"{BASE}/shared/redo", None),
        ("POST", f"{BASE}/shared/rename", {"name": "mine"}),
        ("POST", f"{BASE}/shared/duplicate", {"name": "mine"}),
        ("DELETE", f"{BASE}/shared", None),
    ],
)
def test_a_viewer_reads_but_changes_nothing_and_anonymous_gets_401(client, twin, tokens, method, path, body):
    if client.get(f"{BASE}/shared", headers=tokens["otto"]).status_code == 404:
        client.post(BASE, json={"name": "shared"}, headers=tokens["otto"])
    assert client.get(f"{BASE}/shared", headers=tokens["vera"]).status_code == 200
    before = client.get(BASE, headers=tokens["vera"]).get_json()
    r = client.open(path, method=method, json=body, headers=tokens["vera"])
    assert r.status_code == 403 and "operator" in r.get_json()["error"]
    assert client.open(path, method=method, json=body).status_code == 401
    assert client.get(BASE, headers=tokens["vera"]).get_json() == before


def test_a_server_without_a_database_keeps_the_editors_scenarios_in_memory(demo_state, demo_snapshot):
    from tests.dashboard.standin_hub import StandinView, standin_app

    client = standin_app(StandinView(demo_state, demo_snapshot)).server.test_client()
    assert client.post(BASE, json={"name": "scratch"}).status_code == 200
    r = client.post(f"{BASE}/scratch/edits", json={"edit": {"op": "fail", "elements": [CDU]}})
    assert r.status_code == 200 and r.get_json()["can_undo"]
    listed = client.get(BASE).get_json()
    assert listed == {
        "persistent_flag": False,
        "items": [{"name": "scratch", "site": "demo", "position": 1, "can_undo": True, "can_redo": False}],
    }
    assert client.post(f"{BASE}/scratch/edits", json={"edit": {"op": "fail", "elements": ["x"]}}).status_code == 422


def test_a_cdu_setpoint_through_the_api_is_stored_in_the_schemas_spelling(client, twin, tokens):
    otto = tokens["otto"]
    assert client.post(BASE, json={"name": "warmer cdu"}, headers=otto).status_code == 200
    edit = {"op": "set_setpoint", "supply_setpoint_c": 40, "cdus": [CDU]}
    r = client.post(f"{BASE}/warmer cdu/edits", json={"edit": edit}, headers=otto)
    assert r.status_code == 200, r.get_json()
    stored_edit = {"op": "set_setpoint", "cdus": [CDU], "supply_setpoint_c": 40.0}  # canonical order, a float
    assert r.get_json()["edits"] == [stored_edit]
    assert [e.as_dict() for e in stored.find_scenario(twin.db, "demo", "warmer cdu").applied] == [stored_edit]
    text = client.get(f"{BASE}/warmer cdu/export", headers=otto).get_data(as_text=True)
    assert "supply_setpoint_c = 40.0" in text


def test_the_openapi_document_shows_the_edit_models(client, tokens):
    from twin.site.edit_schema import EDIT_MODELS

    doc = client.get("/api/v1/openapi.json", headers=tokens["vera"]).get_json()
    schemas = doc["components"]["schemas"]
    edit = schemas["AppendEditBody"]["properties"]["edit"]
    mapping = edit["discriminator"]["mapping"]
    assert edit["discriminator"]["propertyName"] == "op" and len(mapping) == len(EDIT_MODELS) == 12
    setpoint = schemas[mapping["set_setpoint"].rsplit("/", 1)[1]]
    assert setpoint["properties"]["supply_setpoint_c"]["maximum"] == 60.0
    assert setpoint["properties"]["supply_temp_c"]["maximum"] == 70.0
    assert setpoint["allOf"] == [{"anyOf": [{"required": ["plants"]}, {"required": ["cdus"]}, {"required": ["loops"]}]}]
    assert setpoint["required"] == ["op"] and setpoint["additionalProperties"] is False
    answer_items = schemas["StoredScenario"]["properties"]["edits"]["items"]
    assert answer_items["discriminator"]["mapping"] == mapping  # the answer's edits are the same models
