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

Benchmark "dashboard_whatif" (same module): on ``/whatif`` with the colossus live hub, from
the click on an edit's button (fail a transformer; convert a row of 16 racks to
GB200-NVL72) to the edit list, the comparison and the floor updated and painted —
``whatif_*_ms``, target ≤ 1000 ms — beside the peer ``page_switch_to_power_ms`` (a nav
click from ``/whatif`` to ``/power`` with its diagram drawn), medians of ``BROWSER_RUNS``;
``*_request_ms`` is the callback request within it (server and transfer), and
``*_cpu_ms`` the server's CPU time of the projection and the answer (robust to load).
"""

from __future__ import annotations

import logging
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from dashboard.benchmarks.live import BROWSER_RUNS, CHROME_FLAGS, CHROMIUM, served_in_thread
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

    start = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=62)
    hub = build_hub(SITE, db_url, record=False, start=start, faults=(f"cdu:{cdu}",))
    for second in range(60):
        hub.step(start + timedelta(seconds=second))
    hub.step(datetime.now(UTC))
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
    from dashboard.app import app_for_hub

    if not Path(CHROMIUM).exists():
        log.warning("no Chromium at %s: operator render times not measured", CHROMIUM)
        return {}
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="clustertwin-bench-") as tmp:
        from twin.site.load import load_site

        cdu_id = 0
        cdu = load_site(SITE).cdu_name[cdu_id]
        hub = faulted_hub(f"sqlite:///{Path(tmp) / 'operator.db'}", cdu)
        app = app_for_hub(hub, tick_ms=60_000)  # the figures time rendering, not live updates
        try:
            with served_in_thread(app) as base:
                results = {"site": SITE, "gpus": hub.state.n_gpus, "lost_cdu": cdu}
                results.update(browser_figures(base, cdu, f"pump:cdu:{cdu_id}"))
        finally:
            hub.db.dispose()
    overview = [v for k, v in results.items() if k.startswith("overview_banner_tiles_") and k.endswith("_cold_ms")]
    results["overview_budget_ratio"] = round(max(overview) / OVERVIEW_BUDGET_MS, 2)
    results["alert_to_cdu_budget_ratio"] = round(results["alert_to_cdu_click_ms"] / ALERT_TO_CDU_BUDGET_MS, 2)
    return results


# ------------------------------------------------------------------ what-if edit → answer
WHATIF_BUDGET_MS = 1000.0
# ms since the click once the edit list and the comparison show ``n`` edits (the floor arrives in the
# same update) and the browser has painted twice after it (false before)
_WHATIF_READY_JS = """
(n) => {
    if (document.querySelectorAll('#whatif-edit-list li.whatif-edit').length !== n
        || !document.querySelector('#whatif-comparison [data-edits="' + n + '"]')) { return false; }
    if (window.clustertwinPainted === undefined) {
        window.clustertwinPainted = null;
        requestAnimationFrame(() => requestAnimationFrame(() => {
            window.clustertwinPainted = performance.now() - window.clustertwinClickT0; }));
    }
    return window.clustertwinPainted || false;
}
"""
_POWER_READY_JS = """
() => window.location.pathname === '/power' && document.querySelector('#power-tree .scatterlayer .trace')
    ? performance.now() - window.clustertwinClickT0 : false
"""


def _choose(page, dropdown_id: str, text: str) -> None:
    page.click(f"#{dropdown_id}")
    page.keyboard.type(text)
    page.get_by_role("option", name=text, exact=True).first.click()


def _timed_edit(page, control: str, n_after: int) -> tuple[float, float]:
    """(click → answer painted, the longest callback request in it: server and transfer) in ms."""
    page.evaluate("() => { window.clustertwinPainted = undefined; performance.clearResourceTimings(); }")
    page.evaluate(_ARM_CLICK_TIMER_JS)
    page.click(f"#{control}")
    ready = page.wait_for_function(_WHATIF_READY_JS, arg=n_after, timeout=60_000, polling=10)
    requests_ms = page.evaluate("""() => performance.getEntriesByType('resource')
        .filter(e => e.name.includes('/_dash-update-component')).map(e => e.duration)""")
    return float(ready.json_value()), float(max(requests_ms, default=float("nan")))


def whatif_figures(base: str) -> dict:
    """Edit → projections and diff rendered, for a condition edit and a layout edit, and the peer page switch."""
    from playwright.sync_api import sync_playwright

    fails, converts, switches, requests = [], [], [], {"fail": [], "convert": []}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROME_FLAGS)
        context = browser.new_context(viewport={"width": 1920, "height": 1080})
        page = context.new_page()
        page.goto(base + "/whatif?scenario=bench")
        page.wait_for_selector("#whatif-comparison h2", timeout=60_000)
        for run in range(BROWSER_RUNS):  # a different element and row each run: no cached projection
            _choose(page, "whatif-fail-element", f"H{run % 4 + 1}-TX{run // 4 + 1}-A")
            total_ms, request_ms = _timed_edit(page, "whatif-apply-fail", 1)
            fails.append(total_ms)
            requests["fail"].append(request_ms)
            page.fill("#whatif-pattern", f"H4-R{run + 1:02d}-*")
            page.click("#whatif-select")
            page.wait_for_function(
                "() => document.querySelector('#whatif-selection-text').textContent.startsWith('16 racks')"
            )
            if run == 0:
                _choose(page, "whatif-type", "GB200-NVL72")
            total_ms, request_ms = _timed_edit(page, "whatif-apply-type", 2)
            converts.append(total_ms)
            requests["convert"].append(request_ms)
            for _ in range(2):  # back to an empty scenario for the next run
                count = len(page.query_selector_all("#whatif-edit-list li.whatif-edit"))
                page.click("#whatif-undo")
                page.wait_for_function(
                    f"() => document.querySelectorAll('#whatif-edit-list li.whatif-edit').length === {count - 1}"
                )
        for _ in range(BROWSER_RUNS):  # peer: switching from /whatif to the power page (its one-line diagram drawn)
            page.goto(base + "/whatif?scenario=bench")
            page.wait_for_selector("#whatif-comparison h2", timeout=60_000)
            page.evaluate(_ARM_CLICK_TIMER_JS)
            page.click('a.nav-link[href="/power"]')
            switches.append(float(page.wait_for_function(_POWER_READY_JS, timeout=60_000, polling=10).json_value()))
        context.close()
        browser.close()
    return {
        "whatif_fail_transformer_ms": round(statistics.median(fails), 1),
        "whatif_fail_transformer_request_ms": round(statistics.median(requests["fail"]), 1),
        "whatif_convert_row_gb200_ms": round(statistics.median(converts), 1),
        "whatif_convert_row_gb200_request_ms": round(statistics.median(requests["convert"]), 1),
        "page_switch_to_power_ms": round(statistics.median(switches), 1),
    }


def whatif_server_cpu_ms(app, hub) -> dict:
    """CPU time (ms, best of 3, robust to other processes) of checking, projecting and answering an edit."""
    import importlib

    from dashboard.whatif.outcome import outcome

    page = importlib.import_module("dashboard.pages.whatif")
    out = {}
    with app.server.test_request_context("/whatif"):
        outcome(hub.state, [])
        for label, make in (
            ("fail_transformer", lambda k: {"op": "fail", "elements": [f"H{k}-TX5-B"]}),
            ("convert_row_gb200", lambda k: {"op": "set_rack_type", "racks": [f"H{k}-R10-*"], "type": "GB200-NVL72"}),
        ):
            best = float("inf")
            for k in (1, 2, 3):  # another element each time: nothing cached
                start = time.process_time()
                outcome(hub.state, [make(k)])
                best = min(best, time.process_time() - start)
            out[f"whatif_{label}_projection_cpu_ms"] = round(best * 1e3, 1)
        store = page._store()
        store.create("cpu")
        store.push("cpu", {"op": "fail", "elements": ["H1-TX5-B"]})
        drawn = page.answer("cpu", "max_gpu_temp_c", [], [], None)[-1]
        start = time.process_time()
        page.answer("cpu", "max_gpu_temp_c", [], [], drawn)
        out["whatif_answer_render_cpu_ms"] = round((time.process_time() - start) * 1e3, 1)
    return out


@benchmark("dashboard_whatif")
def dashboard_whatif_benchmark() -> dict:
    """Click on an edit's button to the projection, diff and floor rendered on colossus, against a page switch."""
    from dashboard.app import app_for_hub
    from dashboard.whatif.store import scenario_store
    from ingest.live.runtime import build_hub

    if not Path(CHROMIUM).exists():
        log.warning("no Chromium at %s: what-if edit times not measured", CHROMIUM)
        return {}
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="clustertwin-bench-") as tmp:
        start = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=2)
        hub = build_hub(SITE, f"sqlite:///{Path(tmp) / 'whatif.db'}", record=False, start=start)
        hub.step(datetime.now(UTC))
        app = app_for_hub(hub, tick_ms=60_000)
        scenario_store(hub.view, hub.db, app.server.config).create("bench")
        try:
            with served_in_thread(app) as base:
                results = {"site": SITE, "gpus": hub.state.n_gpus}
                results.update(whatif_server_cpu_ms(app, hub))
                results.update(whatif_figures(base))
        finally:
            hub.db.dispose()
    worst = max(results["whatif_fail_transformer_ms"], results["whatif_convert_row_gb200_ms"])
    results["whatif_budget_ratio"] = round(worst / WHATIF_BUDGET_MS, 2)
    results["whatif_to_page_switch_ratio"] = round(worst / results["page_switch_to_power_ms"], 2)
    return results
