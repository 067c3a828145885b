"""The alerts page's silences and maintenance windows, called directly on a real demo hub: the panel adds and
ends them (audited), rows say what mutes them, and the need-attention count leaves them out."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest

from dashboard import ids
from dashboard.components import mute_panel

T0 = datetime(2026, 7, 15, 14, 0, tzinfo=UTC)
FAULT = "cdu:H1-R01-K02-CDU"  # the CDU, its rack's heat and GPUs, and the stalled job: one cause
ALL = ["critical", "warning", "info"]


@pytest.fixture(scope="module")
def hub(tmp_path_factory, dash_app):
    from ingest.live.runtime import build_hub

    hub = build_hub("demo", f"sqlite:///{tmp_path_factory.mktemp('mutes') / 'h.db'}", start=T0, faults=(FAULT,))
    for k in range(25):
        hub.step(T0 + timedelta(seconds=k))
    yield hub
    hub.db.dispose()


@pytest.fixture()
def live(hub):
    """The hub's view with its actions, as the app has them; no silence or window left from another test."""
    for row in hub.alert_actions.mutes():
        hub.alert_actions.expire_mute(row["id"], "test")
    hub.view.actions = hub.alert_actions
    return hub.view


def _rows(active):
    return [row for group in active.children[1:] for row in group.children if "alert-row" in row.className]


def _statuses(alerts_page, view) -> dict[str, str]:
    shown = alerts_page.alerts_view(view, ALL, False, actions=view.actions)
    return {getattr(row, "data-alert"): row.children[5].children for row in _rows(shown["active"])}


def _form(**kw) -> dict:
    form = {"kind": "silence", "scope_kind": "hall", "value": "H1", "rule": "", "start": None, "duration_s": 3600}
    return {**form, "comment": "pump swap", **kw}


@pytest.mark.slow
def test_a_hall_silence_marks_its_rows_and_drops_the_count(page_module, live, view_request, caplog):
    alerts = page_module("alerts")
    caplog.set_level(logging.INFO, logger="dashboard.auth.access")
    with view_request(live):
        before = alerts.alerts_view(live, ALL, False, actions=live.actions)
        assert "4 need attention" in before["summary"]
        message = mute_panel.apply_add(live.actions, _form(), "otto")
        assert message.startswith("silenced H1 until ") and message.endswith(" UTC")
        statuses = _statuses(alerts, live)
        shown = alerts.alerts_view(live, ALL, False, actions=live.actions)
    silenced = [s for s in statuses.values() if s.startswith("silenced by H1 until ")]
    assert len(silenced) == 3 and list(statuses.values()).count("open") == 1  # the job lies in no hall
    assert "1 need attention" in shown["summary"] and shown["signature"] != before["signature"]
    table = shown["mutes"]
    row = table.children[1].children[0]
    assert getattr(row, "data-mute") and row.children[1].children == "H1" and row.children[2].children == "active"
    mute_id = int(getattr(row, "data-mute"))
    audited = [r.getMessage() for r in caplog.records if r.getMessage().startswith("audit: ")]
    assert audited == [f"audit: local silence.add silence {mute_id}: H1"]  # this app has no database: logged only
    with view_request(live):
        done = mute_panel.apply_end(live.actions, mute_id, "otto")
        assert done == "silence of H1 expired"
        assert list(_statuses(alerts, live).values()).count("open") == 4
    assert caplog.records[-1].getMessage() == f"audit: local silence.expire silence {mute_id}: H1"


def test_a_window_says_in_maintenance_and_counts_apart(page_module, live, view_request):
    alerts = page_module("alerts")
    with view_request(live):
        start = (datetime.now(UTC) - timedelta(minutes=5)).strftime("%Y-%m-%d %H:%M")
        form = _form(kind="maintenance", scope_kind="group", value="pump:cdu:1", start=start, comment="CDU pump swap")
        assert mute_panel.apply_add(live.actions, form, "otto").startswith("maintenance window for cause pump:cdu:1 ")
        statuses = _statuses(alerts, live)
        summary = alerts.alerts_view(live, ALL, False, actions=live.actions)["summary"]
    assert all(s.startswith("in maintenance: CDU pump swap (until ") for s in statuses.values()), statuses
    assert "0 need attention" in summary and summary.endswith(" · 4 in maintenance")


def test_refused_forms_say_why_in_one_line(live, view_request):
    with view_request(live):
        refused = {
            "bad glob": mute_panel.apply_add(live.actions, _form(scope_kind="entity", value="H1-[R0"), "otto"),
            "unknown hall": mute_panel.apply_add(live.actions, _form(value="H5"), "otto"),
            "no comment": mute_panel.apply_add(live.actions, _form(comment=" "), "otto"),
            "bad start": mute_panel.apply_add(live.actions, _form(kind="maintenance", start="tomorrow"), "otto"),
            "bad duration": mute_panel.apply_add(live.actions, _form(duration_s=10**9), "otto"),
            "unknown id": mute_panel.apply_end(live.actions, 424242, "otto"),
        }
    assert refused == {
        "bad glob": "not done: entity pattern 'H1-[R0': a '[' is not closed by ']'",
        "unknown hall": "not done: hall 'H5' is not one of the site's halls (H1)",
        "no comment": "not done: a silence needs a comment",
        "bad start": "not done: window start 'tomorrow': expected a date and time such as 2026-07-15 14:00 (UTC)",
        "bad duration": "not done: silence duration 1e+09 s is outside 0 s < duration ≤ 604800 s (7 days)",
        "unknown id": "not done: no silence or maintenance window with id 424242 on site demo",
    }
    assert live.actions.mutes() == []


def test_the_panel_is_part_of_the_page_and_absent_without_a_store(page_module, live, view_request, find, demo_view):
    alerts = page_module("alerts")
    with view_request(live):
        page = alerts.layout()
    assert not getattr(find(page, ids.AlertMutes.ADD), "disabled", False)  # no users: everyone may change
    assert find(page, ids.AlertMutes.START).disabled is True  # a silence starts now
    assert find(page, ids.AlertMutes.LIST) is not None
    with view_request(demo_view):  # a stand-in hub's actions store no silences
        page = alerts.layout()
    panel = find(page, ids.AlertMutes.PANEL)
    assert find(page, ids.AlertMutes.ADD) is None and "need the live twin's database" in str(panel.children)
    # the page's table callback writes the list and listens to the message: both are there all the same
    assert find(page, ids.AlertMutes.LIST) is not None and find(page, ids.AlertMutes.RESULT) is not None
