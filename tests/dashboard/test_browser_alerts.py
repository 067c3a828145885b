"""Real-browser checks of ``/alerts``: tables, acknowledge, silence, filters and deep links."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("viewport", ["1366x768", "1920x1080"])
def test_alerts_page_lists_active_alerts_with_entity_links(served_app, new_page, screenshot, viewport):
    page, log = new_page(viewport)
    page.goto(served_app.url("/alerts?past=1"))
    expect(page.locator("#alerts-active-table tbody tr.alert-row")).to_have_count(3)
    expect(page.locator("#alerts-active-table tbody.alert-group")).to_have_count(3)
    expect(page.locator("#alerts-active-table .runbook").first).to_contain_text("first action")
    expect(page.locator("#alerts-past-table tbody tr")).to_have_count(1)
    expect(page.locator("#alerts-active-table a").first).to_have_attribute(
        "href", re.compile(r"^/floor\?rack=H1-R\d\d-K\d\d$")
    )
    screenshot(page, f"alerts-{viewport}")
    assert log.errors == []
    assert log.external == []


def test_acknowledge_and_severity_filter_deep_link(served_app, new_page, screenshot):
    page, log = new_page("1366x768")
    page.goto(served_app.url("/alerts"))
    first = page.locator("#alerts-active-table tbody tr.alert-row").first
    alert_id = first.get_attribute("data-alert")
    first.get_by_placeholder("comment").fill("on it")
    first.get_by_role("button", name="acknowledge").click()
    expect(page.locator("#alerts-action-result")).to_contain_text("acknowledged: rack ")
    expect(page.locator("#alerts-action-result")).to_contain_text("(“on it”)")
    row = page.locator(f'#alerts-active-table tr[data-alert="{alert_id}"]')
    expect(row).to_have_class("alert-row status-acknowledged")
    expect(row).to_contain_text("acknowledged: on it")
    expect(row.get_by_role("button", name="acknowledge")).to_be_disabled()
    page.get_by_text("info", exact=True).click()  # untick info
    expect(page).to_have_url(served_app.url("/alerts?severity=critical%2Cwarning"))
    page.reload()
    expect(page.locator("#alerts-severity input[value=info]")).not_to_be_checked()
    expect(page.locator("#alerts-severity input[value=critical]")).to_be_checked()
    assert log.errors == []


def test_entity_link_opens_the_rack_on_the_floor(served_app, new_page):
    page, log = new_page("1366x768")
    page.goto(served_app.url("/alerts"))
    link = page.locator("#alerts-active-table tbody tr.alert-row").first.locator("a")
    rack = link.inner_text().split()[-1]
    link.click()
    expect(page.locator("#floor-rack-title")).to_have_text(f"Rack {rack}")
    expect(page.locator(".nav-link.active")).to_have_text("Floor")
    assert log.errors == []
