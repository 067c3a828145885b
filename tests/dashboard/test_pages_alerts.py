"""Alerts page functions, called directly: filters, acknowledge, silence, signatures."""

from __future__ import annotations

from datetime import datetime, timezone

from dashboard import ids
def test_severity_filter_parsing_and_url(page_module):
    alerts = page_module("alerts")
    assert alerts.parse_severities("critical,bogus") == ["critical"]
    assert alerts.parse_severities("") == ["critical", "warning", "info"]
    assert alerts.url_search(["critical", "warning"], True) == "?severity=critical%2Cwarning&past=1"
    assert alerts.url_search(["critical", "warning", "info"], False) == ""


def test_view_splits_active_and_cleared_and_filters(page_module, demo_hub):
    alerts = page_module("alerts")
    view = alerts.alerts_view(demo_hub, ["critical"], True)
    rows = view["active"].children[1].children
    assert len(rows) == 1 and rows[0].className == "alert-row status-open"
    assert view["past"].children == "no cleared alerts match the filter"
    assert "3 active: 1 critical" in view["summary"]


def test_acknowledge_and_silence_change_status_and_signature(page_module, demo_hub):
    alerts = page_module("alerts")
    before = alerts.alerts_view(demo_hub, ["critical", "warning", "info"], False)["signature"]
    assert alerts.apply_action(demo_hub, ids.alert_ack("a2"), 900) == "alert a2 acknowledged"
    assert alerts.apply_action(demo_hub, ids.alert_silence("a3"), 3600) == "alert a3 silenced for 60 min"
    now = datetime.now(timezone.utc)
    status = {a["id"]: alerts.alert_status(a, now) for a in demo_hub.alerts()}
    assert status == {"a1": "open", "a2": "acknowledged", "a3": "silenced"}
    assert alerts.alerts_view(demo_hub, ["critical", "warning", "info"], False)["signature"] != before


def test_naive_database_times_are_treated_as_utc(page_module, demo_hub):
    alerts = page_module("alerts")
    naive = [dict(a, ts=a["ts"].replace(tzinfo=None)) for a in demo_hub.alerts(active_only=False)]
    demo_hub._alerts = naive
    view = alerts.alerts_view(demo_hub, ["critical", "warning", "info"], True)
    assert len(view["active"].children[1].children) == 3


def test_layout_restores_filters(page_module, demo_hub, hub_request, find):
    alerts = page_module("alerts")
    with hub_request(demo_hub):
        page = alerts.layout(severity="warning", past="1")
    assert find(page, ids.Alerts.SEVERITY).value == ["warning"]
    assert find(page, ids.Alerts.SHOW_CLEARED).value == ["past"]
