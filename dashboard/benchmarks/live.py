"""Benchmark "dashboard": live-update cost, payload size and browser render times on colossus.

Server side, the live-update callbacks are called directly (as Dash would, without
HTTP) on the colossus live hub and their output is serialised with plotly's JSON
encoder, which is what goes on the wire.  Browser side, the app is served from a thread
and headless Chromium (Playwright) measures the first full render of ``/`` and
``/floor`` (fresh browser context: cold cache) and a rack drill-down click.

"Cold" renders use a fresh browser context (empty HTTP and code cache: every script,
including the vendored plotly.js bundle, is fetched and compiled); "warm" ones reload with
the cache an operator's browser would have.  Browser figures are medians of
``BROWSER_RUNS`` runs (the machine may be shared).
Targets: first render ≤ 2000 ms; live-update callback ≤ 100 ms; ≤ 300 KB per update;
drill-down ≤ 300 ms.
"""

from __future__ import annotations

import json
import logging
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import plotly

from twin.bench import benchmark, best_of

log = logging.getLogger(__name__)
SITE = "colossus"
BROWSER_RUNS = 5  # browser figures are medians of this many runs
CHROMIUM = "/usr/bin/chromium"
CHROME_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextmanager
def served_in_thread(app) -> Iterator[str]:
    """Serve a Dash app from a thread of this process on 127.0.0.1 (a free port); yields its base URL."""
    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", 0, app.server, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=5)


def payload_bytes(output) -> int:
    """Bytes of a callback output serialised as Dash sends it."""
    return len(json.dumps(output, cls=plotly.utils.PlotlyJSONEncoder).encode("utf-8"))


def _timed(func, repeat: int = 5) -> tuple[float, object]:
    """(best wall time in ms of computing and serialising, one output) of ``func``."""
    output = func()
    return best_of(lambda: payload_bytes(_wire(func())), repeat=repeat) * 1000.0, output


def _wire(output):
    """What Dash serialises for a callback's return value."""
    if isinstance(output, dict) and "signature" in output:  # alerts view -> its four outputs
        return [output["summary"], output["active"], output["past"], output["signature"]]
    if isinstance(output, tuple):  # several outputs
        return list(output)
    return output


def callback_figures(app, hub) -> dict:
    """Server time (ms) and payload (bytes) of each live-update callback, on ``hub``'s live view."""
    from dashboard.pages import alerts, floor, overview
    from dashboard.shell.frame import status_view

    view = hub.view
    names = [name for name, _, _ in overview.KPIS]
    hottest = int(max(range(view.state.n_racks), key=lambda r: float(view.latest().rack_max_gpu_temp_c[r])))
    results = {}
    with app.server.test_request_context():
        cases = {
            "overview_update": lambda: overview.overview_update(view, 900, names),
            "floor_update": lambda: floor.floor_update(view, "max_gpu_temp_c"),
            "floor_metric_change": lambda: floor.floor_view(view.state, view.latest(), "rack_power_kw", None),
            "rack_drilldown": lambda: floor.drilldown_outputs(view, hottest),
            "alerts_update": lambda: alerts.alerts_view(view, list(alerts.SEVERITIES), True, actions=hub.alert_actions),
            "shell_update": lambda: status_view(view.latest().ts, view.source_ages()),
        }
        for name, func in cases.items():
            ms, output = _timed(func)
            results[f"{name}_ms"] = round(ms, 2)
            results[f"{name}_bytes"] = payload_bytes(_wire(output))
    results["floor_tick_with_rack_open_bytes"] = (
        results["floor_update_bytes"] + results["rack_drilldown_bytes"] + results["shell_update_bytes"]
    )
    results["overview_tick_bytes"] = results["overview_update_bytes"] + results["shell_update_bytes"]
    return results


def full_trend_overview_bytes(hub) -> int:
    """Overview update bytes with a full 15-minute trend window (the worst case).

    The hub's trend is replaced by 900 one-second copies of its latest snapshot
    (the payload size depends on the number of points, not on their values).
    """
    from dataclasses import replace
    from datetime import timedelta

    from dashboard.pages import overview
    from ingest.live.trend import TrendBuffer

    snap = hub.view.latest()
    full = TrendBuffer()
    for age_s in range(900, -1, -1):
        full.append(replace(snap, ts=snap.ts - timedelta(seconds=age_s)))
    live, hub.latest.trend = hub.latest.trend, full
    try:
        return payload_bytes(overview.overview_update(hub.view, 900, [n for n, _, _ in overview.KPIS]))
    finally:
        hub.latest.trend = live


def browser_figures(app, state) -> dict:
    """First full render of / and /floor and a rack drill-down, in headless Chromium (medians, ms)."""
    from playwright.sync_api import sync_playwright

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    results: dict[str, float] = {}
    with served_in_thread(app) as base:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROME_FLAGS)
            for viewport in ((1366, 768), (1920, 1080)):
                tag = f"{viewport[0]}x{viewport[1]}"
                for path, name, ready in (
                    (
                        "/",
                        "overview",
                        "() => document.querySelectorAll('.js-plotly-plot .main-svg').length >= 12"
                        " && document.querySelectorAll('#overview-hot-racks tbody tr').length > 0",
                    ),
                    (
                        "/floor",
                        "floor",
                        "() => document.querySelectorAll('#floor-halls .hm image, #floor-halls .heatmaplayer image')"
                        f".length >= {len(state.hall_name)}",
                    ),
                ):
                    times: dict[str, list[float]] = {"cold": [], "warm": []}
                    for _ in range(BROWSER_RUNS):  # fresh context: cold cache; then a reload with the cache warm
                        context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
                        page = context.new_page()
                        for kind in ("cold", "warm"):
                            start = time.perf_counter()
                            page.goto(base + path)
                            page.wait_for_function(ready, timeout=30_000, polling=20)
                            times[kind].append((time.perf_counter() - start) * 1000.0)
                        context.close()
                    for kind, values in times.items():
                        results[f"first_render_{name}_{tag}_{kind}_ms"] = round(statistics.median(values), 1)
            context = browser.new_context(viewport={"width": 1920, "height": 1080})
            page = context.new_page()
            rack = state.rack_name[state.n_racks // 2]
            page.goto(base + "/floor")
            page.wait_for_function(
                "() => document.querySelectorAll('#floor-halls .hm image, #floor-halls .heatmaplayer image').length > 0"
            )
            drilldown_ms = []
            for attempt in range(BROWSER_RUNS):
                target = state.rack_name[attempt] if attempt else rack
                page.goto(base + "/floor")
                page.wait_for_function(
                    "() => document.querySelectorAll('#floor-halls .hm image, #floor-halls .heatmaplayer image').length > 0"
                )
                start = time.perf_counter()
                # what a click does: set the selected rack; the drill-down callbacks then run
                page.evaluate(
                    """(rack) => { const gd = document.querySelector('#floor-halls .js-plotly-plot');
                                   gd.emit('plotly_click', {points: [{text: rack, curveNumber: 0, pointNumber: [0, 0]}]}); }""",
                    target,
                )
                page.wait_for_function(
                    "(rack) => document.querySelector('#floor-rack-title')?.textContent === 'Rack ' + rack"
                    " && document.querySelectorAll('#floor-rack-gpu-temp table.gpu-grid td').length > 0",
                    arg=target,
                    timeout=30_000,
                    polling=10,
                )
                drilldown_ms.append((time.perf_counter() - start) * 1000.0)
            results["drilldown_click_to_render_ms"] = round(statistics.median(drilldown_ms), 1)
            context.close()
            browser.close()
    return results


@benchmark("dashboard")
def dashboard_benchmark() -> dict:
    """Live-update cost and render times of the dashboard on the colossus site (see module docstring)."""
    from dashboard.app import app_for_hub
    from ingest.live.runtime import start_hub

    with tempfile.TemporaryDirectory() as tmp:
        runtime = start_hub(SITE, f"sqlite:///{Path(tmp) / 'bench.db'}", ("synthetic",))
        try:
            hub = runtime.hub
            deadline = time.monotonic() + 10
            while hub.view.latest() is None and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(3)  # a few ticks of trend and history
            app = app_for_hub(hub)
            results = {"racks": hub.state.n_racks, "gpus": hub.state.n_gpus}
            results.update(callback_figures(app, hub))
            results["overview_update_full_window_bytes"] = full_trend_overview_bytes(hub)
            if Path(CHROMIUM).exists():
                results.update(browser_figures(app, hub.state))
            else:
                log.warning("no Chromium at %s: browser render times not measured", CHROMIUM)
        finally:
            runtime.stop()
    return results
