"""Real-browser checks of the header search: Ctrl-K, suggestions, Enter, Escape, no match."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def _search(page, text: str) -> None:
    box = page.locator("#shell-search")
    for attempt in range(3):  # a page still rendering after a navigation may take the focus back: press again
        page.keyboard.press("Control+k")
        try:
            expect(box).to_be_focused(timeout=7_000)
            break
        except AssertionError:
            if attempt == 2:
                raise
    box.fill(text)


def test_ctrl_k_suggestions_and_enter_open_the_entity(served_app, demo_state, new_page, screenshot):
    s = demo_state
    page, log = new_page("1366x768")
    page.goto(served_app.url("/alerts"))
    expect(page.locator("#shell-search")).to_be_visible()
    page.locator("body").click(position={"x": 5, "y": 300})

    rack = s.rack_name[3]
    _search(page, rack.lower())
    first = page.locator("#shell-search-results a.search-hit").first
    expect(first).to_contain_text(rack)
    screenshot(page, "search-1366x768")
    page.keyboard.press("Enter")
    expect(page).to_have_url(served_app.url(f"/floor?rack={rack}"))
    expect(page.locator("#shell-search")).to_have_value("")
    expect(page.locator("#shell-search-results")).to_be_hidden()

    for text, path in ((s.node_name[5], "/floor"), (s.cdu_name[1], f"/cdu?cdu={s.cdu_name[1]}")):
        _search(page, text)
        expect(page.locator("#shell-search-results a.search-hit").first).to_contain_text(text)
        page.keyboard.press("Enter")
        expect(page).to_have_url(re.compile(re.escape(served_app.url(path))))

    _search(page, "zz-no-such-thing")
    expect(page.locator("#shell-search-results")).to_have_text("no match")
    page.keyboard.press("Escape")
    expect(page.locator("#shell-search")).to_have_value("")
    expect(page.locator("#shell-search-results")).to_be_hidden()
    assert log.errors == []


def test_a_job_hit_keeps_the_view_and_fits_a_wide_screen(served_app, dash_app, new_page, screenshot):
    from dashboard.views.context import LIVE_VIEW_KEY

    job = dash_app.server.config[LIVE_VIEW_KEY].latest().jobs[0].name
    page, log = new_page("1920x1080")
    page.goto(served_app.url("/?view=live"))
    expect(page.locator("#overview-status")).to_be_visible()
    _search(page, job[-6:])
    hit = page.locator("#shell-search-results a.search-hit", has_text=job).first
    expect(hit).to_be_visible()
    screenshot(page, "search-1920x1080")
    hit.click()
    expect(page).to_have_url(re.compile(r"/jobs\?view=live&job=" + re.escape(job) + "$"))
    assert log.errors == []
