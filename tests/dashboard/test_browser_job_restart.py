"""Real browser: a GPU failure injected in the live twin runs through detection, restart and lost work on /jobs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def restarting(dash_app, tmp_path_factory):
    """``(served app, hub)``: the demo live hub whose job lost a GPU to an XID 79 and is warming up again."""
    dash_app.server.test_client().get("/")  # the session app takes its inline scripts first (see colossus_app)
    from dashboard.app import app_for_hub
    from ingest.live.runtime import build_hub
    from tests.dashboard.conftest import ServedApp

    db = tmp_path_factory.mktemp("restart") / "hub.db"
    now = datetime.now(UTC).replace(microsecond=0)
    hub = build_hub("demo", f"sqlite:///{db}", record=False, start=now, faults=("xid:h1-r01-k02-n0/5@5=79",))
    t = hub.ticker.jobs.runs[0].timings
    seconds = int(5 + t.xid_detection_s + t.drain_swap_s + t.restore_s + t.warmup_s / 2)  # half-way through warm-up
    start = now - timedelta(seconds=seconds)
    hub = build_hub("demo", f"sqlite:///{db}", record=False, start=start, faults=("xid:h1-r01-k02-n0/5@5=79",))
    for second in range(seconds + 1):
        hub.step(start + timedelta(seconds=second))
    app = app_for_hub(hub, tick_ms=60_000)  # the page shows the stepped state
    app.server.test_client().get("/")
    served = ServedApp(app)
    yield served, hub
    served.stop()
    hub.db.dispose()


@pytest.mark.parametrize("viewport", ["1366x768", "1920x1080"])
def test_the_jobs_page_shows_the_restart_and_the_lost_work(restarting, new_page, screenshot, viewport):
    served, hub = restarting
    job = hub.view.latest().jobs[0]
    assert job.restart_phase == "warming_up" and job.interruptions_total == 1 and job.tokens_per_s > 0
    page, log = new_page(viewport)
    page.goto(served.url(f"/jobs?job={job.name}"))
    expect(page.locator('[data-kpi="step"] .kpi-note')).to_have_text("warming up")
    expect(page.locator('[data-kpi="lost"] .kpi-note')).to_contain_text("1 interruption(s)")
    timeline = page.locator("#jobs-timeline")
    for text in ("failure detected", "draining, swapping spares", "restoring the checkpoint", "warming up"):
        expect(timeline).to_contain_text(text)
    screenshot(page, f"jobs-restart-{viewport}")
    assert log.errors == []
