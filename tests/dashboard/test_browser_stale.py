"""Stale data looks stale: an old snapshot greys the page and says so; a second app serves side by side."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


@pytest.fixture()
def stale_app(demo_state, dash_app):
    """An app whose only snapshot is 30 s old (created after the session app: both must keep working)."""
    from tests.dashboard.standin_hub import StandinView, standin_app, synthetic_snapshot

    snapshot = synthetic_snapshot(demo_state, ts=datetime.now(UTC) - timedelta(seconds=30), seed=4)
    snapshot.source_age_s = {"dcgm": 30.0, "redfish": float("inf")}
    return standin_app(StandinView(demo_state, snapshot))


def test_old_snapshot_marks_page_and_badges_stale(stale_app, served_app, serve_app, new_page, screenshot):
    served = serve_app(stale_app)
    page, log = new_page("1366x768")
    page.goto(served.url("/floor"))
    expect(page.locator("#shell-main")).to_have_class("main is-stale")
    expect(page.locator('.age-badge[data-source="dcgm"]')).to_have_attribute("data-age-class", "stale")
    expect(page.locator('.age-badge[data-source="redfish"]')).to_have_text("redfish never")
    expect(page.locator("#shell-clock")).to_contain_text("s old")
    expect(page.locator("#floor-halls .hm image, #floor-halls .heatmaplayer image")).to_have_count(1)
    screenshot(page, "stale-floor-1366x768")
    assert log.errors == []
    # the session app, created first, still serves its own live data
    other, other_log = new_page("1366x768")
    other.goto(served_app.url("/floor"))
    expect(other.locator("#shell-main")).to_have_class("main")
    assert other_log.errors == []
