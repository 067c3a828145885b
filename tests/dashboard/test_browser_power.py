"""Real-browser checks of ``/power``: one-line diagram at colossus scale, focus by click, deep link."""

from __future__ import annotations

import numpy as np
import pytest
from playwright.sync_api import expect

from tests.dashboard.colossus_app import colossus_app, freshen  # noqa: F401

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("viewport", ["1366x768", "1920x1080"])
def test_power_renders_without_console_errors(colossus_app, new_page, screenshot, viewport):  # noqa: F811
    served, hub = colossus_app
    freshen(hub)
    page, log = new_page(viewport)
    page.goto(served.url("/power"))
    expect(page.locator("#power-tree .scatterlayer .trace")).not_to_have_count(0)
    expect(page.locator("#power-tree .gtitle")).to_contain_text("site")
    expect(page.locator("#power-worst tbody tr")).to_have_count(10)
    expect(page.locator("#power-generation .bars .point")).not_to_have_count(0)
    expect(page.locator('[data-kpi="runnable"] .kpi-unit')).to_have_text("GPUs")
    expect(page.locator('[data-kpi="cap"] .kpi-unit')).to_have_text("W")
    # the 43 MW of July 2024 do not carry every GPU: the policy sheds the racks without work first,
    # so the job runs uncapped (docs/physics.md, shortfall policy)
    expect(page.locator('[data-kpi="policy"] .kpi-value')).to_have_text("shed")
    expect(page.locator('[data-kpi="policy"] .kpi-note')).to_contain_text("GPUs shed")
    expect(page.locator('[data-chain="shortfall"]')).to_contain_text("GPUs shed → step")
    screenshot(page, f"power-{viewport}")
    assert log.errors == []
    assert log.external == []


def _switchgear_point(page, name):
    """The marker of the labelled switchgear ``name`` in the one-line diagram."""
    label = page.locator("#power-tree .scatterlayer .textpoint", has_text=name)
    expect(label).to_have_count(1)
    box = label.bounding_box()
    return box["x"] + box["width"] / 2, box["y"] + box["height"] + 6  # the marker sits under its label


def test_clicking_an_element_focuses_the_diagram(colossus_app, new_page, screenshot):  # noqa: F811
    served, hub = colossus_app
    freshen(hub)
    state = hub.state
    swgr = next(n for i, n in enumerate(state.power_name) if state.power_depth[i] == 1)
    page, log = new_page("1366x768")
    page.goto(served.url("/power"))
    x, y = _switchgear_point(page, swgr)
    page.mouse.move(x, y)
    page.mouse.click(x, y)
    expect(page).to_have_url(served.url(f"/power?element={swgr}&metric=power_n1_load_frac"))
    expect(page.locator("#power-tree .gtitle")).to_contain_text(swgr)
    expect(page.locator("#power-scope")).to_contain_text(swgr)
    screenshot(page, "power-focus-1366x768")
    page.click("#power-reset")
    expect(page.locator("#power-tree .gtitle")).to_contain_text("(site)")
    expect(page).to_have_url(served.url("/power?metric=power_n1_load_frac"))
    assert log.errors == []


def test_deep_link_restores_element_and_metric(colossus_app, new_page):  # noqa: F811
    served, hub = colossus_app
    freshen(hub)
    state = hub.state
    ups = state.power_name[int(np.flatnonzero(state.power_kind == 2)[5])]
    page, log = new_page("1920x1080")
    page.goto(served.url(f"/power?element={ups}&metric=load_frac"))
    expect(page.locator("#power-tree .gtitle")).to_contain_text(ups)
    expect(page.locator("#power-tree .gtitle")).to_contain_text("load of the usable rating")
    expect(page.locator("#power-metric input[value=load_frac]")).to_be_checked()
    page.locator("#power-metric input[value=power_n1_load_frac]").check()
    expect(page).to_have_url(served.url(f"/power?element={ups}&metric=power_n1_load_frac"))
    expect(page.locator("#power-tree .gtitle")).to_contain_text("N-1 load")
    assert log.errors == []


def test_generator_trip_shows_the_shortfall_chain(colossus_app, new_page, screenshot):  # noqa: F811
    """Two generators trip while the job runs: lost sources → UPS → cap → step time, readable on one line."""
    from dataclasses import replace as _replace

    from twin.engine.tick import TickInputs, TwinEngine

    served, hub = colossus_app
    state, snap0, detail0 = hub.state, hub.snapshot, hub.tick_detail
    engine = TwinEngine(state)
    tripped = TickInputs(failed_sources=[1, 2])
    snap = engine.tick(1.0, tripped)  # the UPSs carry the gap
    try:
        hub.tick_detail = engine.detail
        freshen(
            hub,
            **{
                f.name: getattr(snap, f.name)
                for f in snap.__dataclass_fields__.values()
                if f.name not in ("ts", "jobs", "source_age_s")
            },
        )
        page, log = new_page("1366x768")
        page.goto(served.url("/power"))
        chain = page.locator('[data-chain="shortfall"]')
        expect(chain).to_contain_text("GEN-A-01, GEN-A-02 lost")
        expect(chain).to_contain_text("UPS")
        screenshot(page, "power-generator-trip-1366x768")
        assert log.errors == []
    finally:
        hub.tick_detail = detail0
        hub.snapshot = _replace(snap0)
