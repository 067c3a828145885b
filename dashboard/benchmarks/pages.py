"""Benchmark of the cooling, power, fabric and jobs pages at colossus scale.

Builds a live hub on the colossus site (synthetic source, no recording), steps it twice
and calls each page's view function as its callbacks do — first render of the page
(``full``), a live tick (``patch``) and a drill-down — timing the view plus the JSON
encoding Dash does, and measuring the encoded size.  Targets: ≤ 100 ms server time and
≤ 300 KB per live update.  Wall times (``*_ms``, best of 5) suffer when other processes
share the cores; ``*_cpu_ms`` is the process CPU time of the same calls.
"""

from __future__ import annotations

import importlib
import json
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import plotly

from twin.bench import benchmark, best_of

T0 = datetime(2024, 7, 22, 15, 0, tzinfo=UTC)
CALLBACK_BUDGET_MS = 100.0
UPDATE_BUDGET_KB = 300.0


def _encode(outputs) -> str:
    return json.dumps(list(outputs), cls=plotly.utils.PlotlyJSONEncoder)


def _cpu_best_s(func, repeat: int = 5) -> float:
    """Smallest CPU time of ``repeat`` calls (s): robust to other processes sharing the cores."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        func()
        best = min(best, time.process_time() - start)
    return best


def _measure(view) -> tuple[float, float, float]:
    """(best wall ms, best CPU ms of view + JSON encoding, encoded size in KB)."""
    size_kb = len(_encode(view())) / 1024
    call = lambda: _encode(view())  # noqa: E731
    return best_of(call, repeat=5) * 1e3, _cpu_best_s(call) * 1e3, size_kb


def page_cases(view, pages: dict) -> dict:
    """Name → zero-argument view call, for every measured page state of the live ``view``."""
    cooling, power, fabric, jobs = pages["cooling"], pages["power"], pages["fabric"], pages["jobs"]

    tick = view.latest_tick()
    state, snap, detail = view.state, tick.snapshot, tick.detail
    trend = view.trend(power.TREND_WINDOW_S)
    ups = int(np.flatnonzero(state.power_kind == 2)[0])
    job = jobs.find_job(snap, None)
    shown = jobs.figs.placement_key(state, job) if job is not None else None
    return {
        "cooling_full": lambda: cooling.cooling_view(state, snap, None, detail=detail),
        "cooling_patch": lambda: cooling.cooling_view(state, snap, None, full=False, detail=detail),
        "cooling_loop": lambda: cooling.cooling_view(state, snap, 0, detail=detail),
        "power_full": lambda: power.power_view(state, snap, None, "power_n1_load_frac", detail=detail, trend=trend),
        "power_patch": lambda: power.power_view(
            state, snap, None, "power_n1_load_frac", full=False, detail=detail, trend=trend
        ),
        "power_focus": lambda: power.power_view(state, snap, ups, "power_n1_load_frac", detail=detail, trend=trend),
        "fabric_full": lambda: fabric.fabric_view(state, snap, 0, None),
        "fabric_patch": lambda: fabric.fabric_view(state, snap, 0, 0, full=False),
        "fabric_switch": lambda: fabric.fabric_view(state, snap, 0, 0),
        "jobs_full": lambda: jobs.jobs_view(state, snap, None, None),
        "jobs_patch": lambda: jobs.jobs_view(state, snap, None, None, full=False, shown_placement=shown),
        "jobs_rack": lambda: jobs.jobs_view(state, snap, None, 5),
    }


@benchmark("dashboard_pages")
def dashboard_pages_benchmark(site: str = "colossus") -> dict:
    """Server time (ms) and size (KB) of the four pages' renders, live patches and drill-downs."""
    from dashboard.app import create_app
    from ingest.live.runtime import build_hub

    with tempfile.TemporaryDirectory(prefix="clustertwin-bench-") as tmp:
        hub = build_hub(site, f"sqlite:///{Path(tmp) / 'pages.db'}", start=T0, seed=1, record=False)
        for second in range(60):  # a minute of trend behind the latest snapshot
            hub.step(T0 + timedelta(seconds=second))
        create_app(hub.view)  # registers the pages so their modules can be imported
        pages = {
            name: importlib.import_module(f"dashboard.pages.{name}") for name in ("cooling", "power", "fabric", "jobs")
        }
        result: dict = {
            "site": site,
            "racks": hub.state.n_racks,
            "switches": hub.state.n_switches,
            "links": hub.state.n_links,
            "power_elements": hub.state.n_power,
        }
        for name, view in page_cases(hub.view, pages).items():
            wall_ms, cpu_ms, kb = _measure(view)
            result[f"{name}_ms"] = round(wall_ms, 1)
            result[f"{name}_cpu_ms"] = round(cpu_ms, 1)
            result[f"{name}_kb"] = round(kb, 1)
        hub.db.dispose()
    timings = [v for k, v in result.items() if k.endswith("_ms") and not k.endswith("_cpu_ms")]
    result["worst_callback_cpu_ms"] = max(v for k, v in result.items() if k.endswith("_cpu_ms"))
    live = [v for k, v in result.items() if k.endswith("_patch_kb")]
    result["worst_callback_ms"] = max(timings)
    result["worst_live_update_kb"] = max(live)
    result["callback_budget_ratio"] = round(max(timings) / CALLBACK_BUDGET_MS, 2)
    result["live_update_budget_ratio"] = round(max(live) / UPDATE_BUDGET_KB, 3)
    return result
