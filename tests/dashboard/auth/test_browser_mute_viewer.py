"""Real-browser check: a viewer sees the alerts page's silences and windows read-only, controls disabled with a
tooltip naming the operator role."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.dashboard.auth.conftest import PASSWORDS
from tests.dashboard.conftest import ServedApp

pytestmark = pytest.mark.browser


@pytest.fixture()
def served_auth(auth_app, live_twin):
    silence = live_twin.alert_actions.add_silence({"kind": "hall", "value": "H1"}, 3600, "GPU swap", user="otto")
    served = ServedApp(auth_app)
    yield served
    served.stop()
    live_twin.alert_actions.expire_mute(silence["id"], "test")


def test_a_viewer_sees_silences_read_only(served_auth, new_page, screenshot):
    page, log = new_page("1366x768")
    page.goto(served_auth.url("/alerts"))
    page.get_by_label("User name").fill("vera")
    page.get_by_label("Password").fill(PASSWORDS["vera"])
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(served_auth.url("/alerts"))
    panel = page.locator("#alert-mutes-panel")
    expect(panel).to_contain_text("read-only: adding or ending silences and windows needs the operator role")
    add = panel.get_by_role("button", name="add", exact=True)
    expect(add).to_be_disabled()
    expect(add).to_have_attribute("title", "needs the operator role")
    expect(page.locator("#alert-mutes-scope-value")).to_be_disabled()
    expect(page.locator("#alert-mutes-comment")).to_be_disabled()
    row = page.locator("#alert-mutes-list tr.mute-row")
    expect(row).to_contain_text("GPU swap")
    expect(row.get_by_role("button", name="expire")).to_be_disabled()
    silenced = page.locator("#alerts-active-table td.alert-status").filter(has_text="silenced by H1 until ")
    expect(silenced.first).to_be_visible()
    screenshot(page, "alerts-mutes-viewer-1366x768")
    assert [e for e in log.errors if "401" not in e] == []
