"""The dashboard on the real colossus live hub, in a real browser: every page, navigation, drill-down."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from dashboard.components.nav import PAGES

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("viewport", ["1366x768", "1920x1080"])
def test_my_pages_on_colossus_render_without_errors(live_colossus, new_page, screenshot, viewport):
    served, hub = live_colossus
    page, log = new_page(viewport)
    page.goto(served.url("/"))
    expect(page.locator(".js-plotly-plot")).to_have_count(6)
    expect(page.locator('[data-kpi="it_power"] .kpi-value')).not_to_have_text("–")
    page.wait_for_timeout(1500)
    screenshot(page, f"live-overview-{viewport}")
    page.goto(served.url("/floor"))
    # halls whose racks are all powered off draw only their hatch (no heatmap image): count the traces
    expect(page.locator("#floor-halls .hm image, #floor-halls .heatmaplayer image")).not_to_have_count(0)
    n_heatmaps = page.evaluate(
        "document.querySelector('#floor-halls .js-plotly-plot').data.filter(t => t.type === 'heatmap').length"
    )
    assert n_heatmaps == len(hub.state.hall_name)
    n_rows = len(set(hub.state.rack_row.tolist()))  # hall titles and one label per row
    expect(page.locator("#floor-halls .annotation-text")).to_have_count(len(hub.state.hall_name) + n_rows)
    screenshot(page, f"live-floor-{viewport}")
    page.goto(served.url(f"/floor?metric=time_to_throttle_s&rack={hub.state.rack_name[900]}"))
    expect(page.locator("#floor-rack-title")).to_have_text(f"Rack {hub.state.rack_name[900]}")
    expect(page.locator("#floor-rack-gpu-power table.gpu-grid td")).to_have_count(64)
    page.wait_for_timeout(1500)
    screenshot(page, f"live-floor-drilldown-{viewport}")
    page.goto(served.url("/alerts?past=1"))
    expect(page.locator("#alerts-summary")).to_contain_text("open in")
    screenshot(page, f"live-alerts-{viewport}")
    assert log.errors == []
    assert log.external == []


def test_live_updates_keep_zoom_and_the_data_ages_tick(live_colossus, new_page):
    served, hub = live_colossus
    page, log = new_page("1920x1080")
    page.goto(served.url("/floor"))
    expect(page.locator("#floor-halls .hm image, #floor-halls .heatmaplayer image")).not_to_have_count(0)
    page.evaluate("""() => { const gd = document.querySelector('#floor-halls .js-plotly-plot');
                             return window.Plotly.relayout(gd, {'xaxis.range': [5, 20]}); }""")
    clock = page.locator("#shell-clock").inner_text()
    expect(page.locator("#shell-clock")).not_to_have_text(clock, timeout=10_000)
    page.wait_for_timeout(2500)  # at least two live patches of the floor
    x_range = page.evaluate("() => document.querySelector('#floor-halls .js-plotly-plot').layout.xaxis.range")
    assert x_range == [5, 20]
    expect(page.locator('.age-badge[data-source="synthetic"]')).to_have_attribute("data-age-class", "fresh")
    assert log.errors == []


def test_every_nav_link_opens_its_page_without_errors(live_colossus, new_page):
    served, _hub = live_colossus
    page, log = new_page("1366x768")
    page.goto(served.url("/"))
    for path, label in PAGES:
        page.locator(".nav").get_by_text(label, exact=True).click()
        expect(page).to_have_url(re.compile(re.escape(served.url(path)) + r"(\?.*)?$"))  # pages may add their view
        expect(page.locator(".nav-link.active")).to_have_text(label)
        expect(page.locator("h1").first).to_be_visible()
    assert log.errors == []


def test_acknowledge_and_silence_on_the_real_hub(live_colossus, new_page):
    """Alert ids from the database are integers: buttons must hand them back unchanged."""
    from sqlmodel import Session

    from ingest.store.models import Event

    served, hub = live_colossus
    rack = hub.state.rack_name[321]
    with Session(hub.db) as session:
        event = Event(
            site_name=hub.site_name,
            key=f"test-{rack}",
            severity="warning",
            source="test",
            entity_kind="rack",
            entity_id=321,
            entity_name=rack,
            metric="rack_max_gpu_temp_c",
            message=f"test alert on {rack}",
        )
        session.add(event)
        session.commit()
        alert_id = event.id
    page, log = new_page("1366x768")
    page.goto(served.url("/alerts?severity=warning"))
    row = page.locator(f'#alerts-active-table tr[data-alert="{alert_id}"]')
    expect(row.locator("a")).to_have_attribute("href", f"/floor?rack={rack}")
    row.get_by_role("button", name="acknowledge").click()
    expect(page.locator("#alerts-action-result")).to_contain_text("acknowledged: ")
    expect(row).to_have_class("alert-row status-acknowledged")
    row.get_by_role("button", name="silence").click()
    expect(row).to_have_class("alert-row status-silenced")
    assert [a for a in hub.view.alerts() if a["id"] == alert_id][0]["acknowledged"] is True
    assert log.errors == []
