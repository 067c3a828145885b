"""Real-browser checks of ``/cooling``: renders at both sizes, loop drill-down, deep link."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.dashboard.colossus_app import colossus_app, freshen  # noqa: F401

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("viewport", ["1366x768", "1920x1080"])
def test_cooling_renders_without_console_errors(colossus_app, new_page, screenshot, viewport):  # noqa: F811
    served, hub = colossus_app
    freshen(hub)
    page, log = new_page(viewport)
    page.goto(served.url("/cooling"))
    expect(page.locator("#cooling-flow .sankey .sankey-node")).to_have_count(1 + 4 + 4)
    expect(page.locator("#cooling-use-hist .bars .point")).not_to_have_count(0)
    expect(page.locator("#cooling-worst tbody tr")).to_have_count(8)
    expect(page.locator("#cooling-ttt .legend .traces")).to_have_count(4)  # the twin's four failure scenarios
    expect(page.locator('[data-kpi="heat"] .kpi-unit')).to_have_text("MW")
    screenshot(page, f"cooling-{viewport}")
    assert log.errors == []
    assert log.external == []


def test_clicking_a_loop_drills_down_and_updates_url(colossus_app, new_page, screenshot):  # noqa: F811
    served, hub = colossus_app
    freshen(hub)
    loop = hub.state.loop_name[1]
    page, log = new_page("1366x768")
    page.goto(served.url("/cooling"))
    node = page.locator("#cooling-flow .sankey-node", has_text=loop)
    expect(node).to_have_count(1)
    node.locator(".node-rect").click()
    expect(page).to_have_url(served.url(f"/cooling?loop={loop}"))
    expect(page.locator("#cooling-flow .gtitle")).to_contain_text(loop)
    expect(page.locator("#cooling-worst tbody tr").first).to_contain_text(loop)
    screenshot(page, "cooling-loop-1366x768")
    page.locator("#cooling-loop").click()
    page.get_by_role("option", name="whole site").click()
    expect(page).to_have_url(served.url("/cooling"))
    assert log.errors == []


def test_deep_link_restores_the_loop(colossus_app, new_page):  # noqa: F811
    served, hub = colossus_app
    freshen(hub)
    loop = hub.state.loop_name[2]
    page, log = new_page("1920x1080")
    page.goto(served.url(f"/cooling?loop={loop}"))
    expect(page.locator("#cooling-flow .gtitle")).to_contain_text(loop)
    expect(page.locator("#cooling-loop")).to_contain_text(loop)
    expect(page.locator("#cooling-flow .sankey-node")).not_to_have_count(0)
    assert log.errors == []


def test_demo_cooling_page(served_app, new_page, screenshot):
    page, log = new_page("1366x768")
    page.goto(served_app.url("/cooling"))
    expect(page.locator("#cooling-flow .sankey-node")).not_to_have_count(0)
    screenshot(page, "cooling-demo-1366x768")
    assert log.errors == []
