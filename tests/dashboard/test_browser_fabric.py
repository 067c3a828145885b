"""Real-browser checks of ``/fabric``: pod matrices, switch drill-down, deep link, live update keeps zoom."""

from __future__ import annotations

import numpy as np
import pytest
from playwright.sync_api import expect

from tests.dashboard.colossus_app import colossus_app, freshen  # noqa: F401

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("viewport", ["1366x768", "1920x1080"])
def test_fabric_renders_without_console_errors(colossus_app, new_page, screenshot, viewport):  # noqa: F811
    served, hub = colossus_app
    freshen(hub)
    page, log = new_page(viewport)
    page.goto(served.url("/fabric"))
    expect(page.locator("#fabric-matrix .hm image, #fabric-matrix .heatmaplayer image")).not_to_have_count(0)
    expect(page.locator("#fabric-matrix .gtitle")).to_contain_text("Leaf switches (1,568)")
    expect(page.locator("#fabric-tiers tbody tr")).not_to_have_count(0)
    expect(page.locator('[data-kpi="job_bw"] .kpi-unit')).to_have_text("Gbit/s")
    expect(page.locator("#fabric-detail-empty")).to_be_visible()
    screenshot(page, f"fabric-{viewport}")
    assert log.errors == []
    assert log.external == []


def test_clicking_a_switch_opens_its_ports(colossus_app, new_page, screenshot):  # noqa: F811
    served, hub = colossus_app
    freshen(hub)
    page, log = new_page("1366x768")
    page.goto(served.url("/fabric"))
    drag = page.locator("#fabric-matrix .nsewdrag").first
    expect(drag).to_be_visible()
    box = drag.bounding_box()
    x, y = box["x"] + 3, box["y"] + 3  # the top-left cell: pod 0, first leaf
    page.mouse.move(x, y)
    page.mouse.click(x, y)
    first_leaf = hub.state.switch_name[0]
    expect(page).to_have_url(served.url(f"/fabric?switch={first_leaf}&tier=leaf"))
    expect(page.locator("#fabric-detail .gtitle")).to_contain_text(first_leaf)
    expect(page.locator("#fabric-detail-panel")).to_be_visible()
    screenshot(page, "fabric-switch-1366x768")
    assert log.errors == []


def test_deep_link_restores_tier_and_switch(colossus_app, new_page):  # noqa: F811
    served, hub = colossus_app
    freshen(hub)
    spine = hub.state.switch_name[int(np.flatnonzero(hub.state.switch_tier == 1)[7])]
    page, log = new_page("1920x1080")
    page.goto(served.url(f"/fabric?tier=spine&switch={spine}"))
    expect(page.locator("#fabric-tier input[value=spine]")).to_be_checked()
    expect(page.locator("#fabric-matrix .gtitle")).to_contain_text("Spine switches")
    expect(page.locator("#fabric-detail .gtitle")).to_contain_text(spine)
    assert log.errors == []


def test_live_tick_updates_data_and_keeps_zoom(colossus_app, new_page):  # noqa: F811
    served, hub = colossus_app
    freshen(hub)
    page, log = new_page("1366x768")
    page.goto(served.url("/fabric"))
    graph = "#fabric-matrix .js-plotly-plot"
    expect(page.locator("#fabric-matrix .hm image, #fabric-matrix .heatmaplayer image")).not_to_have_count(0)
    page.evaluate(
        f"Plotly.relayout(document.querySelector('{graph}'), {{'xaxis.range': [10, 20], 'yaxis.range': [8, 2]}})"
    )
    down = np.zeros(hub.state.n_links, dtype=bool)
    down[:500] = True
    freshen(hub, link_up_flag=~down)  # a new tick: 500 links go down
    expect(page.locator('[data-kpi="links_down"] .kpi-value')).to_have_text("500")
    xrange = page.evaluate(f"document.querySelector('{graph}')._fullLayout.xaxis.range")
    assert xrange == pytest.approx([10, 20])
    marks = page.evaluate(f"document.querySelector('{graph}').data[1].x.length")
    assert marks > 0
    freshen(hub, link_up_flag=np.ones(hub.state.n_links, dtype=bool))
    expect(page.locator('[data-kpi="links_down"] .kpi-value')).to_have_text("0")
    assert log.errors == []
