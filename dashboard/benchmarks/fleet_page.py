"""Benchmark "dashboard_fleet_page": ``/jobs`` with about 10,000 fleet jobs, opened in a real browser.

A colossus live hub (synthetic source, no recording) is served from a thread; its fleet is the
busy one of :func:`dashboard.benchmarks.fleet.busy_fleet` (about 10,000 jobs running or
waiting).  Headless Chromium opens ``/jobs`` at 1920×1080 ``LOADS`` times; each load is timed in
the page (``performance.now()``, from the navigation's start) until the fleet section is drawn: the
KPIs, the first 20 rows of the jobs table, the teams table, the fragmentation and the allocation
timeline charts, and the browser having painted twice after them (``navigation_to_fleet_drawn_*_ms``).
The peer in the same run is the server's own part: the page's layout built and encoded as Dash
does for the first response (``server_layout_*_ms``), so ``browser_over_server_ms`` is what the
transfer, Dash's renderer and plotly.js add.  Target: the issue's fleet page with 10,000 jobs
rendered in ≤ ``RENDER_BUDGET_MS``.
"""

from __future__ import annotations

import json
import logging
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import plotly

from dashboard.benchmarks.fleet import RENDER_BUDGET_MS, busy_fleet
from dashboard.benchmarks.live import CHROME_FLAGS, CHROMIUM, served_in_thread
from twin.bench import benchmark

log = logging.getLogger(__name__)
SITE = "colossus"
LOADS = 5
DRAWN_TIMEOUT_MS = 120_000
TABLE_ROWS = 20  # the jobs table's page size

# ms since the navigation started once the fleet section is drawn and painted twice (false before)
_FLEET_DRAWN_JS = """
(rows) => {
    if (document.querySelectorAll('#jobs-fleet-table .dash-spreadsheet tbody tr:has(td)').length !== rows
        || !document.querySelector('[data-kpi="fleet-running"] .kpi-value')
        || !document.querySelector('#jobs-fleet-teams-table tbody tr')
        || !document.querySelector('#jobs-fleet-gantt .bars .point')
        || !document.querySelector('#jobs-fleet-frag .bars .point')) { return false; }
    if (window.clustertwinPainted === undefined) {
        window.clustertwinPainted = null;
        requestAnimationFrame(() => requestAnimationFrame(() => {
            window.clustertwinPainted = performance.now(); }));
    }
    return window.clustertwinPainted || false;
}
"""


def _layout_ms(jobs_page, hub, repeat: int = 3) -> float:
    """Best wall time (ms) of the page's layout built and JSON-encoded, as for the first response."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        json.dumps(jobs_page.layout().to_plotly_json(), cls=plotly.utils.PlotlyJSONEncoder)
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def browser_figures(base: str) -> list[float]:
    """Open ``/jobs`` :data:`LOADS` times; ms from each navigation's start to the fleet section drawn."""
    from playwright.sync_api import sync_playwright

    drawn: list[float] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROME_FLAGS)
        context = browser.new_context(viewport={"width": 1920, "height": 1080})
        page = context.new_page()
        for _ in range(LOADS + 1):  # the first load fills the browser's cache of the scripts: not counted
            page.goto(base + "/jobs")
            ready = page.wait_for_function(_FLEET_DRAWN_JS, arg=TABLE_ROWS, timeout=DRAWN_TIMEOUT_MS, polling=10)
            drawn.append(float(ready.json_value()))
        context.close()
        browser.close()
    return drawn[1:]


@benchmark("dashboard_fleet_page")
def dashboard_fleet_page_benchmark() -> dict:
    """Navigation to the fleet section drawn on ``/jobs`` with ~10,000 jobs, against the server's layout time."""
    import importlib

    from dashboard.app import app_for_hub
    from ingest.live.runtime import build_hub

    if not Path(CHROMIUM).exists():
        log.warning("no Chromium at %s: fleet page load times not measured", CHROMIUM)
        return {}
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="clustertwin-bench-") as tmp:
        now = datetime.now(UTC).replace(microsecond=0)
        hub = build_hub(
            SITE, f"sqlite:///{Path(tmp) / 'fleet-page.db'}", record=False, start=now - timedelta(seconds=2)
        )
        hub.step(now)
        fleet = busy_fleet(hub.state, now)
        hub.ticker.fleet = fleet  # the pages read the ticker's fleet; the hub is not stepped again
        app = app_for_hub(hub, tick_ms=60_000)  # the figures time the page's load, not live updates
        jobs_page = importlib.import_module("dashboard.pages.jobs")
        try:
            with served_in_thread(app) as base:
                with app.server.test_request_context("/jobs"):
                    server_ms = [_layout_ms(jobs_page, hub) for _ in range(2)]
                drawn = browser_figures(base)
        finally:
            hub.db.dispose()
    frame = fleet.frame()
    out: dict[str, Any] = {
        "site": SITE,
        "jobs_count": frame.n_jobs,
        "pending_jobs_count": frame.count("pending"),
        "loads": LOADS,
        "navigation_to_fleet_drawn_median_ms": round(statistics.median(drawn), 1),
        "navigation_to_fleet_drawn_min_ms": round(min(drawn), 1),
        "navigation_to_fleet_drawn_max_ms": round(max(drawn), 1),
        "server_layout_ms": round(min(server_ms), 1),
    }
    out["browser_over_server_ms"] = round(out["navigation_to_fleet_drawn_median_ms"] - out["server_layout_ms"], 1)
    out["render_budget_ratio"] = round(out["navigation_to_fleet_drawn_median_ms"] / RENDER_BUDGET_MS, 3)
    return out
