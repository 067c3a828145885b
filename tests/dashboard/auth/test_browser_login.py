"""Real-browser checks of the access layer: the login page, an operator acknowledging an alert, a viewer
without action buttons, the admin's audit log — with no CSP violation reported in the console."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.dashboard.auth.conftest import PASSWORDS, alert_rows
from tests.dashboard.conftest import ServedApp

pytestmark = pytest.mark.browser


@pytest.fixture()
def served_auth(auth_app):
    served = ServedApp(auth_app)
    yield served
    served.stop()


def log_in(page, served, name: str, password: str | None = None) -> None:
    page.goto(served.url("/alerts"))
    expect(page).to_have_url(served.url("/login?next=/alerts"))
    page.get_by_label("User name").fill(name)
    page.get_by_label("Password").fill(password or PASSWORDS[name])
    page.get_by_role("button", name="Log in").click()


@pytest.mark.parametrize("viewport", ["1366x768", "1920x1080"])
def test_login_page_is_readable_and_refuses_a_wrong_password(served_auth, new_page, screenshot, viewport):
    page, log = new_page(viewport)
    log_in(page, served_auth, "otto", "not the password")
    expect(page.locator(".login-error")).to_have_text("Wrong user name or password.")
    expect(page.get_by_label("User name")).to_have_value("otto")
    box = page.locator(".login-card").bounding_box()
    width, height = (int(v) for v in viewport.split("x"))
    assert box["y"] >= 0 and box["y"] + box["height"] <= height and 300 <= box["width"] <= 420
    font_px = page.locator("#password").evaluate("e => parseFloat(getComputedStyle(e).fontSize)")
    assert font_px >= 14
    screenshot(page, f"login-{viewport}")
    assert [e for e in log.errors if "401" not in e] == []  # the refused login is a 401 page, nothing else
    assert log.external == []


def test_operator_logs_in_and_acknowledges_an_alert(served_auth, new_page, screenshot, fresh_alerts):
    page, log = new_page("1366x768")
    log_in(page, served_auth, "otto")
    expect(page).to_have_url(served_auth.url("/alerts"))
    expect(page.locator(".account")).to_contain_text("otto")
    expect(page.locator(".account")).to_contain_text("operator")
    first = page.locator("#alerts-active-table tbody tr.alert-row").first
    alert_id = int(first.get_attribute("data-alert"))
    first.get_by_placeholder("comment").fill("swapping the GPU")
    first.get_by_role("button", name="acknowledge").click()
    expect(page.locator("#alerts-action-result")).to_contain_text("acknowledged: ")
    assert alert_rows(fresh_alerts)[alert_id][:2] == (True, "swapping the GPU")
    screenshot(page, "alerts-operator-1366x768")
    page.get_by_role("button", name="log out").click()
    expect(page).to_have_url(served_auth.url("/login"))
    assert log.errors == [], log.errors  # no CSP violation, no refused request
    assert log.external == []


def test_viewer_sees_no_alert_actions(served_auth, new_page, screenshot, fresh_alerts):
    page, log = new_page("1366x768")
    log_in(page, served_auth, "vera")
    expect(page.locator("#alerts-active-table tbody tr.alert-row").first).to_be_visible()
    expect(page.get_by_role("button", name="acknowledge")).to_have_count(0)
    expect(page.get_by_role("button", name="silence")).to_have_count(0)
    expect(page.locator("#alerts-active-table .actions.muted").first).to_have_text("read-only")
    expect(page.locator(".account-audit")).to_have_count(0)
    screenshot(page, "alerts-viewer-1366x768")
    assert log.errors == [], log.errors


@pytest.mark.parametrize("viewport", ["1366x768", "1920x1080"])
def test_admin_reads_the_audit_log(served_auth, new_page, screenshot, fresh_alerts, viewport):
    from ingest.store import audit

    audit.record(
        fresh_alerts.db,
        "otto",
        "alert.acknowledge",
        "alert 1: rack H1-R01-K02 — GPU XID 79",
        {"acknowledged": False, "ack_comment": ""},
        {"acknowledged": True, "ack_comment": "swapping the GPU"},
        address="127.0.0.1",
    )
    page, log = new_page(viewport)
    log_in(page, served_auth, "ada")
    page.locator(".account-audit").click()
    expect(page.locator("#audit-table tbody tr").first).to_contain_text("alert.acknowledge")
    page.get_by_text("users", exact=True).click()
    expect(page.locator("#audit-table")).not_to_contain_text("alert.acknowledge")
    page.get_by_text("alerts", exact=True).click()
    expect(page.locator("#audit-table tbody tr").first).to_contain_text("swapping the GPU")
    screenshot(page, f"audit-{viewport}")
    assert log.errors == [], log.errors


def test_webgl_traces_draw_under_the_policy_without_eval(served_auth, new_page):
    """The policy has no 'unsafe-eval': plotly.js' scattergl (the power page's headroom chart on big sites) still draws."""
    page, log = new_page("1366x768")
    log_in(page, served_auth, "vera")
    expect(page.locator("#alerts-active-table")).to_be_visible()
    page.evaluate("""() => { const d = document.createElement('div'); d.id = 'gl-check';
        d.style.width = '400px'; d.style.height = '300px'; document.body.appendChild(d);
        return Plotly.newPlot(d, [{type: 'scattergl', mode: 'markers', x: [1, 2, 3], y: [1, 3, 2]}]); }""")
    expect(page.locator("#gl-check canvas.gl-canvas").first).to_be_attached()
    page.wait_for_timeout(500)
    assert "'unsafe-eval'" not in page.evaluate("() => fetch('/').then(r => r.headers.get('Content-Security-Policy'))")
    assert log.errors == [], log.errors


def test_viewer_sees_the_whatif_editing_controls_disabled(served_auth, new_page, screenshot):
    """A viewer reads the what-if editor (the comparison, the blast radius) but its editing buttons are
    greyed out with a tooltip saying which role they need; the server refuses them anyway."""
    page, log = new_page("1366x768")
    log_in(page, served_auth, "vera")
    page.goto(served_auth.url("/whatif"))
    for control in ("whatif-new", "whatif-delete", "whatif-apply-fail", "whatif-apply-type", "whatif-undo"):
        button = page.locator(f"#{control}")
        expect(button).to_be_disabled()
        expect(button).to_have_attribute("title", "needs the operator role")
    expect(page.locator("#whatif-import button")).to_be_disabled()
    expect(page.locator("#whatif-blast-run")).to_be_enabled()  # reading what a trip takes down changes nothing
    expect(page.locator("#whatif-export")).to_be_enabled()
    expect(page.locator(".whatif-readonly")).to_have_text("read-only: editing needs the operator role")
    screenshot(page, "whatif-viewer-1366x768")
    assert log.errors == [], log.errors


def test_operator_sees_the_whatif_editing_controls_enabled(served_auth, new_page):
    page, log = new_page("1366x768")
    log_in(page, served_auth, "otto")
    page.goto(served_auth.url("/whatif"))
    for control in ("whatif-new", "whatif-apply-fail", "whatif-delete"):
        expect(page.locator(f"#{control}")).to_be_enabled()
        expect(page.locator(f"#{control}")).not_to_have_attribute("title", "needs the operator role")
    expect(page.locator(".whatif-readonly")).to_have_count(0)
    assert log.errors == [], log.errors
