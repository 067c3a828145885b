"""Real-browser checks of ``/alerts``' silences and maintenance windows on a live demo twin: an operator
silences hall H1, its rows say so and the need-attention count drops; expiring it brings them back."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from tests.dashboard.conftest import ServedApp

pytestmark = pytest.mark.browser
T0 = datetime(2026, 7, 15, 14, 0, tzinfo=UTC)
FAULT = "cdu:H1-R01-K02-CDU"  # the CDU, its rack's heat and GPUs (hall H1) and the stalled job (no hall)


@pytest.fixture(scope="module")
def twin(tmp_path_factory):
    """A demo live twin with a CDU loss under way, stepped by hand, served with its alert actions."""
    from dashboard.app import app_for_hub
    from ingest.live.runtime import build_hub

    hub = build_hub("demo", f"sqlite:///{tmp_path_factory.mktemp('mutes') / 'h.db'}", start=T0, faults=(FAULT,))
    for k in range(25):
        hub.step(T0 + timedelta(seconds=k))
    served = ServedApp(app_for_hub(hub, tick_ms=1000))
    yield served, hub
    served.stop()
    hub.db.dispose()


@pytest.fixture()
def served(twin):
    served, hub = twin
    for row in hub.alert_actions.mutes():
        hub.alert_actions.expire_mute(row["id"], "test")
    return served


def _status_cells(page):
    return page.locator("#alerts-active-table tr.alert-row td.alert-status")


@pytest.mark.parametrize("viewport", ["1366x768", "1920x1080"])
def test_an_operator_silences_a_hall_and_expires_it(served, new_page, screenshot, viewport):
    page, log = new_page(viewport)
    page.goto(served.url("/alerts"))
    summary = page.locator("#alerts-summary")
    expect(summary).to_contain_text("4 open in 1 causes")
    expect(summary).to_contain_text("· 4 need attention")
    expect(page.locator("#alert-mutes-list")).to_contain_text("no scoped silence or maintenance window")
    page.locator("#alert-mutes-scope-value").fill("H1")
    page.locator("#alert-mutes-comment").fill("pump swap on H1-R01-K02")
    page.get_by_role("button", name="add", exact=True).click()
    expect(page.locator("#alert-mutes-result")).to_contain_text(re.compile(r"^silenced H1 until \d\d:\d\d UTC$"))
    expect(_status_cells(page).filter(has_text=re.compile(r"^silenced by H1 until \d\d:\d\d UTC$"))).to_have_count(3)
    expect(_status_cells(page).filter(has_text=re.compile("^open$"))).to_have_count(1)  # the job lies in no hall
    expect(summary).to_contain_text("· 1 need attention")
    row = page.locator("#alert-mutes-list tr.mute-row")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("H1")
    expect(row).to_contain_text("pump swap on H1-R01-K02")
    screenshot(page, f"alerts-hall-silence-{viewport}")
    # the status column and the panel are readable: nothing cut or overlapping the page's width
    width = int(viewport.split("x")[0])
    for selector in ("#alert-mutes-panel", "#alerts-active-table table"):
        box = page.locator(selector).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, (selector, box)
    font_px = _status_cells(page).first.evaluate("e => parseFloat(getComputedStyle(e).fontSize)")
    assert font_px >= 12
    row.get_by_role("button", name="expire").click()
    expect(page.locator("#alert-mutes-result")).to_have_text("silence of H1 expired")
    expect(_status_cells(page).filter(has_text=re.compile("^open$"))).to_have_count(4)
    expect(summary).to_contain_text("· 4 need attention")
    expect(page.locator("#alert-mutes-list")).to_contain_text("no scoped silence or maintenance window")
    assert log.errors == []
    assert log.external == []


def test_an_operator_schedules_a_maintenance_window_on_a_cause(served, new_page, screenshot):
    page, log = new_page("1366x768")
    page.goto(served.url("/alerts"))
    page.get_by_text("maintenance window", exact=True).click()
    start = page.locator("#alert-mutes-start")
    expect(start).to_be_enabled()
    start.fill((datetime.now(UTC) - timedelta(minutes=1)).strftime("%Y-%m-%d %H:%M"))
    page.locator("#alert-mutes-scope-kind").click()
    page.get_by_text("cause group", exact=True).click()
    page.locator("#alert-mutes-scope-value").fill("pump:cdu:1")
    page.locator("#alert-mutes-comment").fill("CDU pump swap")
    page.get_by_role("button", name="add", exact=True).click()
    expect(page.locator("#alert-mutes-result")).to_contain_text("maintenance window for cause pump:cdu:1 from ")
    expect(_status_cells(page).filter(has_text="in maintenance: CDU pump swap (until ")).to_have_count(4)
    expect(page.locator("#alerts-summary")).to_contain_text("· 0 need attention")
    expect(page.locator("#alerts-summary")).to_contain_text("· 4 in maintenance")
    screenshot(page, "alerts-maintenance-1366x768")
    page.locator("#alert-mutes-list tr.mute-row").get_by_role("button", name="cancel").click()
    expect(page.locator("#alert-mutes-result")).to_have_text("maintenance window for cause pump:cdu:1 cancelled")
    expect(page.locator("#alerts-summary")).to_contain_text("· 4 need attention")
    assert log.errors == []
