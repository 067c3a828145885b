"""Real-browser check of the overview's status banner under a silence: a dead medium-voltage feed sets it
critical (the racks run on their B feed, the job unaffected); once the cause is silenced (from the command line, on the twin's database) the banner goes quiet, lists the job at the
Throughput tile's rate, and the cause is listed marked "· muted"; expiring the silence brings the banner back."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from tests.dashboard.conftest import ServedApp
from twin.cli import main

pytestmark = pytest.mark.browser
T0 = datetime(2026, 7, 15, 14, 0, tzinfo=UTC)
FAULT = "feed:MV-A"  # one cause, power_dead:power:0: the dead feed and the elements left without redundancy
CAUSE = "power_dead:power:0"
RELOAD_MS = 15_000  # the live twin rereads the silences at least every 5 s, the page updates every second


@pytest.fixture(scope="module")
def twin(tmp_path_factory):
    """A demo live twin with feed A dead, stepped by hand, served; and its database URL."""
    from dashboard.app import app_for_hub
    from ingest.live.runtime import build_hub

    url = f"sqlite:///{tmp_path_factory.mktemp('banner-mutes') / 'h.db'}"
    hub = build_hub("demo", url, start=T0, faults=(FAULT,))
    for k in range(25):
        hub.step(T0 + timedelta(seconds=k))
    served = ServedApp(app_for_hub(hub, tick_ms=1000))
    yield served, url
    served.stop()
    hub.db.dispose()


def test_a_silenced_cause_leaves_the_banner_quiet_and_is_listed_muted(twin, new_page, screenshot, capsys):
    served, url = twin
    page, log = new_page("1366x768")
    page.goto(served.url("/"))
    banner = page.locator("#overview-status")
    causes = page.locator("#overview-open-alerts tr")
    expect(banner).to_have_class(re.compile(r"\bstatus-banner-critical\b"))
    expect(banner.locator(".status-headline")).to_contain_text("MV-A")
    expect(causes).to_have_count(1)
    expect(causes.first).not_to_contain_text("· muted")
    # the job runs on: the banner lists it at the Throughput tile's figure (a 30 s mean), as the tile shows it
    throughput = page.locator('[data-kpi="tokens"] .kpi-value').inner_text().strip()
    assert re.fullmatch(r"\d+\.\d [kMG]", throughput), throughput
    jobs = banner.locator(".status-jobs")
    expect(jobs).to_have_text(re.compile(rf"^jobs unaffected: \S+ {re.escape(throughput)} tokens/s$"))

    assert (
        main(["alerts", "silence", "--db", url, "--group", CAUSE, "--for", "1h", "--comment", "feed A switchgear work"])
        == 0
    )
    silence_id = int(re.match(r"silence (\d+) ", capsys.readouterr().out).group(1))
    expect(banner).to_have_class(re.compile(r"\bstatus-banner-ok\b"), timeout=RELOAD_MS)
    expect(banner.locator(".status-headline")).to_have_text("Nothing needs attention")
    expect(banner.locator(".status-scope")).to_have_text("1 cause muted (silenced or in maintenance)")
    expect(causes.first).to_contain_text("MV-A")
    expect(causes.first).to_contain_text("· muted")
    expect(causes.first).to_have_class(re.compile(r"\bcause-muted\b"))
    throughput = page.locator('[data-kpi="tokens"] .kpi-value').inner_text().strip()
    expect(jobs).to_have_text(re.compile(rf"^\S+ {re.escape(throughput)} tokens/s$"))
    screenshot(page, "overview-banner-muted-1366x768")
    box = banner.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 1366, box

    assert main(["alerts", "expire", "--db", url, str(silence_id)]) == 0
    expect(banner).to_have_class(re.compile(r"\bstatus-banner-critical\b"), timeout=RELOAD_MS)
    expect(causes.first).not_to_contain_text("· muted")
    assert log.errors == []
    assert log.external == []
