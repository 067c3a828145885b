"""The replay page's "calibrate and save" writes a site version: operators only, and audited.

A viewer's API token posting the callback with a state naming a real incident of the
library gets 403 and leaves no ``site_version`` row and no audit entry; an operator's
session gets the new version and a ``site.calibration`` entry naming the incident.
"""

from __future__ import annotations

import pytest
from sqlmodel import Session, func, select

from dashboard import ids
from ingest.store.audit import AuditFilter, list_entries
from ingest.store.models import AuditEntry, SiteVersion
from ingest.store.users import new_token

OUTPUT = f"{ids.Replay.CALIBRATION}.children"


@pytest.fixture(scope="module")
def incident_dir(tmp_path_factory):
    """A small demo incident in a user library of its own (2 minutes, one detail rack)."""
    from ingest.replay.session import RecordSpec, record_synthetic

    folder = tmp_path_factory.mktemp("library")
    spec = RecordSpec(
        "demo",
        "tim-roles",
        faults=("tim:H1-R01-K03@0=3",),
        duration_s=120,
        tick_s=5,
        detail_racks=("H1-R01-K03",),
        max_detail_racks=1,
    )
    record_synthetic(spec, folder)
    return folder


def calibrate_body(name: str) -> dict:
    return {
        "output": OUTPUT,
        "outputs": {"id": ids.Replay.CALIBRATION, "property": "children"},
        "inputs": [{"id": ids.Replay.CALIBRATE, "property": "n_clicks", "value": 1}],
        "state": [{"id": ids.Replay.FRAMES, "property": "data", "value": {"name": name}}],
        "changedPropIds": [f"{ids.Replay.CALIBRATE}.n_clicks"],
    }


def _counts(engine) -> tuple[int, int]:
    with Session(engine) as session:
        versions = session.exec(select(func.count()).select_from(SiteVersion)).one()
        audited = session.exec(select(func.count()).select_from(AuditEntry)).one()
    return versions, audited


@pytest.mark.slow
def test_a_viewer_cannot_calibrate_and_save(auth_app, client, live_twin, incident_dir, monkeypatch):
    monkeypatch.setenv("CLUSTERTWIN_INCIDENTS", str(incident_dir))
    before = _counts(live_twin.db)
    token = new_token(live_twin.db, "vera")
    http = auth_app.server.test_client()
    response = http.post(
        "/_dash-update-component", json=calibrate_body("tim-roles"), headers={"Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 403, response.get_data(as_text=True)
    assert "needs the operator role" in response.json["error"]
    assert _counts(live_twin.db) == before


@pytest.mark.slow
def test_an_operator_calibrates_and_the_new_version_is_audited(auth_app, client, live_twin, incident_dir, monkeypatch):
    monkeypatch.setenv("CLUSTERTWIN_INCIDENTS", str(incident_dir))
    versions, audited = _counts(live_twin.db)
    operator = client()
    operator.login("otto")
    response = operator.callback(calibrate_body("tim-roles"))
    assert response.status_code == 200, response.get_data(as_text=True)
    assert "Saved as version" in response.get_data(as_text=True)
    assert _counts(live_twin.db) == (versions + 1, audited + 1)
    entry = list_entries(live_twin.db, AuditFilter(user_name="otto", action="site.calibration"))[0]
    assert entry["target"] == "site demo" and entry["after"]["incident"] == "tim-roles"
    assert entry["after"]["site_version"] >= 1
