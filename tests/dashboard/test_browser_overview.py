"""Real-browser checks of the overview page ``/``."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("viewport", ["1366x768", "1920x1080"])
def test_overview_renders_kpis_trends_and_tables(served_app, new_page, screenshot, viewport):
    page, log = new_page(viewport)
    page.goto(served_app.url("/"))
    expect(page.locator(".kpi")).to_have_count(12)
    expect(page.locator('[data-kpi="n1"] .kpi-value')).not_to_have_text("–")
    expect(page.locator(".js-plotly-plot")).to_have_count(6)
    expect(page.locator("#overview-hot-racks tbody tr")).to_have_count(10)
    page.wait_for_timeout(2500)  # one live update
    screenshot(page, f"overview-{viewport}")
    assert log.errors == []
    assert log.external == []
