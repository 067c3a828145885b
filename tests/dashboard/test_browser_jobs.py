"""Real-browser checks of ``/jobs``: placement, breakdown, bottleneck racks, rack click, deep link."""

from __future__ import annotations

import re

import numpy as np
import pytest
from playwright.sync_api import expect

from tests.dashboard.colossus_app import colossus_app, freshen  # noqa: F401

pytestmark = pytest.mark.browser


def _with_bottlenecks(hub):
    """Make three racks of the job slow, as the twin would after throttling there."""
    job = hub.snapshot.jobs[0]
    racks = np.unique(hub.state.gpu_rack[job.gpu_ids])[[3, 40, 300]].astype(np.int32)
    job.bottleneck_racks = racks
    job.drain_gain_frac = 0.04
    return racks


@pytest.mark.parametrize("viewport", ["1366x768", "1920x1080"])
def test_jobs_renders_without_console_errors(colossus_app, new_page, screenshot, viewport):  # noqa: F811
    served, hub = colossus_app
    racks = _with_bottlenecks(hub)
    freshen(hub)
    page, log = new_page(viewport)
    page.goto(served.url("/jobs"))
    job = hub.snapshot.jobs[0]
    expect(page.locator("#jobs-placement .gtitle")).to_contain_text(job.name)
    expect(page.locator("#jobs-breakdown .bars .point")).not_to_have_count(0)
    expect(page.locator("#jobs-breakdown .legend")).to_contain_text("bubble")
    expect(page.locator("#jobs-bottlenecks tbody tr")).to_have_count(racks.size)
    link = page.locator("#jobs-bottlenecks tbody tr a").first
    expect(link).to_have_attribute("href", f"/floor?rack={hub.state.rack_name[racks[0]]}")
    expect(page.locator('[data-kpi="mfu"] .kpi-unit')).to_have_text("%")
    screenshot(page, f"jobs-{viewport}")
    assert log.errors == []
    assert log.external == []


def test_clicking_a_rack_marks_it(colossus_app, new_page):  # noqa: F811
    served, hub = colossus_app
    freshen(hub)
    page, log = new_page("1366x768")
    page.goto(served.url("/jobs"))
    point = page.locator("#jobs-placement .scatterlayer .trace").nth(1).locator("path.point").first
    expect(point).to_be_attached()
    point.scroll_into_view_if_needed()  # the placement may start below the fold at 1366×768
    box = point.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.click(x, y)
    expect(page).to_have_url(re.compile(r"/jobs\?job=[^&]+&rack=H\d-R\d+-K\d+$"), timeout=15_000)
    expect(page.locator("#jobs-placement .legend")).to_contain_text("selected")
    assert log.errors == []


def test_deep_link_restores_job_and_rack(colossus_app, new_page):  # noqa: F811
    served, hub = colossus_app
    freshen(hub)
    job = hub.snapshot.jobs[0].name
    rack = hub.state.rack_name[12]
    page, log = new_page("1920x1080")
    page.goto(served.url(f"/jobs?job={job}&rack={rack}"))
    expect(page.locator("#jobs-job")).to_contain_text(job)
    expect(page.locator("#jobs-placement .legend")).to_contain_text("selected")
    assert log.errors == []
