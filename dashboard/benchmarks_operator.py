"""Benchmark "dashboard_operator": the operator's first five seconds on colossus, in headless Chromium.

A colossus live hub (synthetic source, no recording) with one CDU lost is stepped for a
minute and served from a thread.  Two figures, medians of ``BROWSER_RUNS`` runs, timed in
the page (``performance.now()``):

* ``overview_banner_tiles_{viewport}_{cold|warm}_ms`` — navigation start to the status
  banner naming the cause and all twelve tiles showing values on ``/``; "cold" is a fresh
  browser context (every script fetched and compiled), "warm" a reload with the cache.
  Target ≤ 2000 ms.
* ``alert_to_cdu_click_ms`` — from the click on the lost CDU's link in its cause group on
  ``/alerts`` to the CDU page rendered (its title, its LOST state and its graphs drawn).
  Target ≤ 1000 ms.
"""

from __future__ import annotations

import logging
import statistics
import tempfile
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

from dashboard.benchmarks import BROWSER_RUNS, CHROME_FLAGS, CHROMIUM
from twin.bench import benchmark

log = logging.getLogger(__name__)
SITE = "colossus"
OVERVIEW_BUDGET_MS = 2000.0
ALERT_TO_CDU_BUDGET_MS = 1000.0
N_KPIS = 12

# ms since navigation start once the banner names its cause and every tile has a value (false before)
_OVERVIEW_READY_JS = """
(n) => {
    const headline = document.querySelector('#overview-status .status-headline');
    const values = [...document.querySelectorAll('.kpi .kpi-value')];
    const shown = values.filter(v => v.textContent.trim() && v.textContent.trim() !== '–' && v.offsetParent !== null);
    return headline && headline.textContent.trim() && shown.length >= n ? performance.now() : false;
}
"""

# ms since the click once the CDU page shows the CDU, its state and its drawn graphs (false before)
_CDU_READY_JS = """
(cdu) => {
    const title = document.querySelector('h1');
    const status = document.querySelector('#cdu-status');
    const graphs = document.querySelectorAll('#_pages_content .js-plotly-plot .main-svg');
    return window.location.pathname === '/cdu' && title && title.textContent === 'CDU ' + cdu
        && status && status.textContent.includes('LOST') && graphs.length > 0
        ? performance.now() - window.clustertwinClickT0 : false;
}
"""

_ARM_CLICK_TIMER_JS = """
() => document.addEventListener('click', () => { window.clustertwinClickT0 = performance.now(); },
                                {capture: true, once: true})
"""


def faulted_hub(db_url: str, cdu: str):
    """The colossus hub with ``cdu`` lost, a minute of history behind a snapshot stamped now."""
    from ingest.live.runtime import build_hub

    start = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(seconds=62)
    hub = build_hub(SITE, db_url, record=False, start=start, faults=(f"cdu:{cdu}",))
    for second in range(60):
        hub.step(start + timedelta(seconds=second))
    hub.step(datetime.now(timezone.utc))
    return hub


def browser_figures(base: str, cdu: str, group: str) -> dict:
    """The two figures (see module docstring) against the app served at ``base``."""
    from playwright.sync_api import sync_playwright

    results: dict[str, float] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROME_FLAGS)
        for width, height in ((1366, 768), (1920, 1080)):
            times: dict[str, list[float]] = {"cold": [], "warm": []}
            for _ in range(BROWSER_RUNS):
                context = browser.new_context(viewport={"width": width, "height": height})
                page = context.new_page()
                for kind in ("cold", "warm"):
                    page.goto(base + "/", wait_until="commit")
                    ready = page.wait_for_function(_OVERVIEW_READY_JS, arg=N_KPIS, timeout=30_000, polling=10)
                    times[kind].append(float(ready.json_value()))
                context.close()
            for kind, values in times.items():
                results[f"overview_banner_tiles_{width}x{height}_{kind}_ms"] = round(statistics.median(values), 1)
        context = browser.new_context(viewport={"width": 1920, "height": 1080})
        page = context.new_page()
        clicks = []
        for _ in range(BROWSER_RUNS):
            page.goto(base + "/alerts")
            link = page.locator(f'tbody.alert-group[data-group="{group}"] tr.alert-row:not(.child) a').first
            link.wait_for(timeout=30_000)
            page.evaluate(_ARM_CLICK_TIMER_JS)
            link.click()
            ready = page.wait_for_function(_CDU_READY_JS, arg=cdu, timeout=30_000, polling=10)
            clicks.append(float(ready.json_value()))
        results["alert_to_cdu_click_ms"] = round(statistics.median(clicks), 1)
        context.close()
        browser.close()
    return results


@benchmark("dashboard_operator")
def dashboard_operator_benchmark() -> dict:
    """Overview first render and alert → CDU page on colossus with a CDU lost (see module docstring)."""
    from werkzeug.serving import make_server

    from dashboard.app import create_app

    if not Path(CHROMIUM).exists():
        log.warning("no Chromium at %s: operator render times not measured", CHROMIUM)
        return {}
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="clustertwin-bench-") as tmp:
        from twin.site.load import load_site

        cdu_id = 0
        cdu = load_site(SITE).cdu_name[cdu_id]
        hub = faulted_hub(f"sqlite:///{Path(tmp) / 'operator.db'}", cdu)
        app = create_app(hub, tick_ms=60_000)  # the figures time rendering, not live updates
        server = make_server("127.0.0.1", 0, app.server, threaded=True)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            results = {"site": SITE, "gpus": hub.state.n_gpus, "lost_cdu": cdu}
            results.update(browser_figures(f"http://127.0.0.1:{server.server_port}", cdu, f"pump:cdu:{cdu_id}"))
        finally:
            server.shutdown()
            thread.join(timeout=5)
            hub.db.dispose()
    overview = [v for k, v in results.items() if k.startswith("overview_banner_tiles_") and k.endswith("_cold_ms")]
    results["overview_budget_ratio"] = round(max(overview) / OVERVIEW_BUDGET_MS, 2)
    results["alert_to_cdu_budget_ratio"] = round(results["alert_to_cdu_click_ms"] / ALERT_TO_CDU_BUDGET_MS, 2)
    return results
