"""Real-browser checks of the app shell: header, navigation, data ages, offline assets."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from dashboard.components.nav import PAGES

pytestmark = pytest.mark.browser


def test_shell_renders_nav_and_ages_without_console_errors(served_app, new_page, screenshot):
    page, log = new_page("1366x768")
    page.goto(served_app.url("/"))
    expect(page.locator(".nav-link")).to_have_count(len(PAGES))
    expect(page.locator(".nav-link.active")).to_have_text("Overview")
    expect(page.locator(".age-badge").first).to_be_visible()
    expect(page.locator('.age-badge[data-age-class="stale"]')).to_have_count(1)  # redfish at 14 s
    page.click("text=Alerts")
    expect(page).to_have_url(served_app.url("/alerts"))
    expect(page.locator(".nav-link.active")).to_have_text("Alerts")
    screenshot(page, "shell-1366x768")
    assert log.errors == []
    assert log.external == []
