"""``/audit``: admins see the audit log and filter it; other roles are refused, also by a crafted filter request."""

from __future__ import annotations

import pytest

from dashboard import ids
from ingest.store import audit
from tests.dashboard.auth.test_callback_roles import open_page

FILTER_OUTPUT = f"..{ids.Audit.COUNT}.children...{ids.Audit.TABLE}.children.."


def filter_body(user="", action="", window_s=86_400) -> dict:
    return {
        "output": FILTER_OUTPUT,
        "outputs": [{"id": ids.Audit.COUNT, "property": "children"}, {"id": ids.Audit.TABLE, "property": "children"}],
        "inputs": [
            {"id": ids.Audit.USER, "property": "value", "value": user},
            {"id": ids.Audit.ACTION, "property": "value", "value": action},
            {"id": ids.Audit.WINDOW, "property": "value", "value": window_s},
        ],
        "changedPropIds": [f"{ids.Audit.ACTION}.value"],
        "state": [],
    }


@pytest.mark.slow
def test_admin_reads_and_filters_the_audit_log(client, live_twin):
    audit.record(
        live_twin.db,
        "otto",
        "alert.acknowledge",
        "alert 7: rack hot",
        {"acknowledged": False},
        {"acknowledged": True},
        address="10.0.0.9",
    )
    audit.record(live_twin.db, "cli:root", "user.add", "user zed", None, {"role": "viewer"})
    admin = client()
    admin.login("ada")
    page = open_page(admin, "/audit").get_data(as_text=True)
    assert "alert 7: rack hot" in page and "user zed" in page and "10.0.0.9" in page
    only_alerts = admin.callback(filter_body(action="alert.")).get_data(as_text=True)
    assert "alert 7: rack hot" in only_alerts and "user zed" not in only_alerts
    only_root = admin.callback(filter_body(user="cli:root")).get_data(as_text=True)
    assert "user zed" in only_root and "alert 7" not in only_root
    # bad filter values fall back to no filter instead of failing
    assert admin.callback(filter_body(action="nonsense", window_s="NaN")).status_code == 200


@pytest.mark.slow
def test_other_roles_do_not_see_the_audit_log(client, live_twin):
    audit.record(live_twin.db, "otto", "alert.silence", "alert 8: secret-looking target", None, None)
    for name in ("vera", "otto"):
        c = client()
        c.login(name)
        page = open_page(c, "/audit").get_data(as_text=True)
        assert "for administrators only" in page and "alert 8" not in page
        assert c.callback(filter_body()).status_code == 403
    assert client().http.post("/_dash-update-component", json=filter_body()).status_code == 401
