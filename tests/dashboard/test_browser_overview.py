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
    assert _plot_heights(page) and min(_plot_heights(page)) >= MIN_TREND_PX  # full size, not squashed
    assert log.errors == []
    assert log.external == []


MIN_TREND_PX = 200  # the trends were once squashed to ~24 px while the README showed them full size


def _plot_heights(page) -> list[float]:
    """Rendered heights [px] of every plotly chart's drawing on the page."""
    return page.evaluate(
        "() => [...document.querySelectorAll('.js-plotly-plot .main-svg')].map(e => e.getBoundingClientRect().height)"
    )


@pytest.mark.parametrize("viewport", ["1366x768", "1920x1080"])
def test_cdu_page_trends_are_full_size(served_app, demo_state, new_page, screenshot, viewport):
    page, log = new_page(viewport)
    page.goto(served_app.url(f"/cdu?cdu={demo_state.cdu_name[1]}"))
    expect(page.locator(".js-plotly-plot").first).to_be_visible()
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .main-svg').length > 0")
    heights = _plot_heights(page)
    assert heights and min(heights) >= MIN_TREND_PX, heights
    screenshot(page, f"cdu-{viewport}")
    assert log.errors == []


def test_overview_prints_dark_on_white(served_app, new_page, screenshot):
    page, log = new_page("1366x768")
    page.goto(served_app.url("/"))
    expect(page.locator(".js-plotly-plot .main-svg").first).to_be_visible()
    page.emulate_media(media="print")
    assert page.evaluate("() => getComputedStyle(document.body).backgroundColor") == "rgb(255, 255, 255)"
    assert page.evaluate("() => getComputedStyle(document.querySelector('.kpi-value')).color") == "rgb(0, 0, 0)"
    expect(page.locator(".nav")).to_be_hidden()
    screenshot(page, "overview-print-1366x768")
    assert log.errors == []


def test_window_deep_link_and_switch(served_app, new_page):
    page, log = new_page("1366x768")
    page.goto(served_app.url("/?window=3600"))
    expect(page.locator("#overview-window input[value='3600']")).to_be_checked()
    page.locator("#overview-window").get_by_text("6 h").click()
    expect(page).to_have_url(served_app.url("/?window=21600"))
    page.reload()
    expect(page.locator("#overview-window input[value='21600']")).to_be_checked()
    assert log.errors == []


def test_pinned_time_deep_link_and_clear(served_app, new_page, screenshot):
    import datetime as dt

    at = (dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    page, log = new_page("1920x1080")
    page.goto(served_app.url(f"/?window=900&at={at}"))
    expect(page.locator("#overview-pin-label")).to_have_text(f"pinned {at[:10]} {at[11:19]} UTC")
    expect(page.locator("#overview-power-trend .shapelayer path")).to_have_count(1)
    page.wait_for_timeout(2500)  # a live update must keep the pin
    expect(page.locator("#overview-power-trend .shapelayer path")).to_have_count(1)
    screenshot(page, "overview-pinned-1920x1080")
    page.click("#overview-pin-clear")
    expect(page).to_have_url(served_app.url("/?window=900"))
    expect(page.locator("#overview-power-trend .shapelayer path")).to_have_count(0)
    assert log.errors == []
