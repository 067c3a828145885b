"""Real-browser checks of ``/floor``: plan, metric switch, rack drill-down, deep links."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def _click_first_rack(page):
    """Click the centre of the first rack cell of the first hall."""
    box = page.locator("#floor-halls .nsewdrag").first.bounding_box()
    # demo hall, drawn y downward: row 1 (K01 first) is the top row, K01 the top-left cell
    page.mouse.click(box["x"] + box["width"] * 0.06, box["y"] + box["height"] * 0.08)


@pytest.mark.parametrize("viewport", ["1366x768", "1920x1080"])
def test_floor_plan_renders_and_metric_switch_updates_url(served_app, new_page, screenshot, viewport):
    page, log = new_page(viewport)
    page.goto(served_app.url("/floor"))
    expect(page.locator("#floor-halls .heatmaplayer image, #floor-halls .hm image")).not_to_have_count(0)
    expect(page.locator("#floor-halls .colorbar")).to_have_count(1)
    page.get_by_text("Rack power [kW]").click()
    expect(page).to_have_url(served_app.url("/floor?metric=rack_power_kw"))
    expect(page.locator("#floor-halls .colorbar")).to_contain_text("Rack power")
    screenshot(page, f"floor-{viewport}")
    assert log.errors == []
    assert log.external == []


def test_deep_link_opens_rack_drilldown(served_app, new_page, screenshot, demo_state):
    rack = demo_state.rack_name[3]
    page, log = new_page("1366x768")
    page.goto(served_app.url(f"/floor?metric=coolant_delta_t_k&rack={rack}"))
    expect(page.locator("#floor-rack-title")).to_have_text(f"Rack {rack}")
    expect(page.locator("#floor-metric input[value=coolant_delta_t_k]")).to_be_checked()
    expect(page.locator("#floor-rack-gpu-temp table.gpu-grid td")).to_have_count(64)
    expect(page.locator("#floor-rack-feeds tbody tr")).not_to_have_count(0)
    expect(page.locator("#floor-rack-fabric tbody tr")).not_to_have_count(0)
    expect(page.locator("#floor-rack-cdu")).to_contain_text("pumps running")
    screenshot(page, "floor-drilldown-1366x768")
    page.click("#floor-rack-close")
    expect(page.locator("#floor-rack-panel")).to_have_class("rack-panel hidden")
    expect(page).to_have_url(served_app.url("/floor?metric=coolant_delta_t_k"))
    assert log.errors == []


def test_clicking_a_rack_opens_its_drilldown(served_app, new_page):
    page, log = new_page("1920x1080")
    page.goto(served_app.url("/floor"))
    expect(page.locator("#floor-halls .nsewdrag")).not_to_have_count(0)
    _click_first_rack(page)
    expect(page.locator("#floor-rack-title")).to_have_text("Rack H1-R01-K01")
    expect(page).to_have_url(served_app.url("/floor?metric=max_gpu_temp_c&rack=H1-R01-K01"))
    assert log.errors == []


def test_drilldown_links_navigate_inside_the_app(served_app, new_page, demo_state):
    rack = demo_state.rack_name[3]
    page, log = new_page("1366x768")
    page.goto(served_app.url(f"/floor?rack={rack}"))
    link = page.locator("#floor-rack-feeds a").first
    expect(link).to_be_visible()
    element = link.inner_text()
    page.evaluate("window.stillThisPage = true")  # a full page load would drop it
    link.click()
    expect(page.locator(".nav-link.active")).to_have_text("Power")
    assert "/power?element=" in page.url and element.replace(" ", "+") in page.url
    assert page.evaluate("window.stillThisPage") is True
    assert log.errors == []
