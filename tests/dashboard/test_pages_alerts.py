"""Alerts page functions, called directly: filters, acknowledge, silence, signatures."""

from __future__ import annotations

from datetime import UTC, datetime

from dashboard import ids


def _rows(active):
    """Every alert row of the grouped active table (one tbody per cause)."""
    return [row for group in active.children[1:] for row in group.children if "alert-row" in row.className]


def test_severity_filter_parsing_and_url(page_module):
    alerts = page_module("alerts")
    assert alerts.parse_severities("critical,bogus") == ["critical"]
    assert alerts.parse_severities("") == ["critical", "warning", "info"]
    assert alerts.url_search(["critical", "warning"], True) == "?severity=critical%2Cwarning&past=1"
    assert alerts.url_search(["critical", "warning", "info"], False) == ""


def test_view_splits_active_and_cleared_and_filters(page_module, demo_view):
    alerts = page_module("alerts")
    view = alerts.alerts_view(demo_view, ["critical"], True)
    rows = _rows(view["active"])
    assert len(rows) == 1 and rows[0].className == "alert-row status-open"
    assert view["past"].children == "no cleared alerts match the filter"
    assert "3 open in 3 causes: 1 critical" in view["summary"]


def test_acknowledge_and_silence_change_status_and_signature(page_module, demo_view):
    alerts = page_module("alerts")
    before = alerts.alerts_view(demo_view, ["critical", "warning", "info"], False)["signature"]
    a2 = next(a for a in demo_view.alerts() if a["id"] == "a2")
    done = alerts.apply_action(demo_view, demo_view.actions, ids.alert_ack("a2"), 900, comment="  swapping the pump  ")
    assert done == f"acknowledged: rack {a2['entity_name']} — {a2['message']} (“swapping the pump”)"
    assert alerts.apply_action(demo_view, demo_view.actions, ids.alert_silence("a3"), 3600).startswith(
        "silenced for 60 min: rack "
    )
    now = datetime.now(UTC)
    status = {a["id"]: alerts.alert_status(a, now) for a in demo_view.alerts()}
    assert status == {"a1": "open", "a2": "acknowledged", "a3": "silenced"}
    assert next(a for a in demo_view.alerts() if a["id"] == "a2")["ack_comment"] == "swapping the pump"
    assert alerts.alerts_view(demo_view, ["critical", "warning", "info"], False)["signature"] != before
    assert alerts.apply_action(demo_view, demo_view.actions, {"type": "alert-unsilence", "alert": "a3"}).startswith(
        "silence lifted: rack "
    )
    assert alerts.alert_status(next(a for a in demo_view.alerts() if a["id"] == "a3"), now) == "open"


def test_silence_durations_are_bounded(page_module, demo_view):
    alerts = page_module("alerts")
    for bad in (1e9, 1e12, float("inf"), float("nan"), -5, 0, "abc", None):
        assert alerts.apply_action(demo_view, demo_view.actions, ids.alert_silence("a1"), bad).startswith("not done: ")
    assert alerts.apply_action(demo_view, demo_view.actions, ids.alert_silence("a1"), 7 * 24 * 3600).startswith(
        "silenced for"
    )


def test_naive_database_times_are_treated_as_utc(page_module, demo_view):
    alerts = page_module("alerts")
    naive = [dict(a, ts=a["ts"].replace(tzinfo=None)) for a in demo_view.alerts(active_only=False)]
    demo_view._alerts = naive
    view = alerts.alerts_view(demo_view, ["critical", "warning", "info"], True)
    assert len(_rows(view["active"])) == 3


def test_layout_restores_filters(page_module, demo_view, view_request, find):
    alerts = page_module("alerts")
    with view_request(demo_view):
        page = alerts.layout(severity="warning", past="1")
    assert find(page, ids.Alerts.SEVERITY).value == ["warning"]
    assert find(page, ids.Alerts.SHOW_CLEARED).value == ["past"]
