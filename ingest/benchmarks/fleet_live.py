"""Benchmark of the live fleet's cost on the tick (``clustertwin bench --only live_fleet``).

Two hubs on colossus with the synthetic source and no recording, one without the fleet
(the peer) and one with it, each stepped ``steps`` times at 1 Hz after a warm-up tick;
the medians of the whole step are compared (target: the fleet adds ≤ 1 ms), with the
fleet's own share (:attr:`ingest.live.fleet.LiveFleet.last_advance_ms`) and the one-off
cost of building it (workload, simulation warm-up).
"""

from __future__ import annotations

import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from ingest.live.runtime import build_hub
from twin.bench import benchmark

T0 = datetime(2024, 7, 22, 15, 0, tzinfo=UTC)
BUDGET_MS = 1.0


@benchmark("live_fleet")
def live_fleet_benchmark(site: str = "colossus", steps: int = 40) -> dict:
    """Median live step with and without the fleet, the difference and ratio, the fleet's own share."""
    with tempfile.TemporaryDirectory(prefix="clustertwin-bench-") as tmp:
        bare = build_hub(site, f"sqlite:///{Path(tmp) / 'a.db'}", start=T0, seed=1, record=False, fleet=False)
        t0 = time.perf_counter()
        with_fleet = build_hub(site, f"sqlite:///{Path(tmp) / 'b.db'}", start=T0, seed=1, record=False)
        build_s = time.perf_counter() - t0
        bare.step(T0)  # the first tick settles the twin: not measured
        with_fleet.step(T0)
        # interleave the two so that other processes on the cores weigh on both alike
        a, b, f = [], [], []
        for k in range(0, steps, 10):
            ta, _ = _steps_from(bare, k, 10)
            tb, tf = _steps_from(with_fleet, k, 10)
            a += ta
            b += tb
            f += tf
        fleet = with_fleet.ticker.fleet
        frame = fleet.frame()
        bare.db.dispose()
        with_fleet.db.dispose()
    med_a, med_b = float(np.median(a)), float(np.median(b))
    return {
        "site": site,
        "step_without_fleet_ms": round(med_a, 2),
        "step_with_fleet_ms": round(med_b, 2),
        "fleet_added_ms": round(med_b - med_a, 2),
        "with_to_without_ratio": round(med_b / med_a, 3),
        "fleet_advance_median_ms": round(float(np.median(f)), 3),
        "fleet_advance_mean_ms": round(float(np.mean(f)), 3),
        "fleet_advance_max_ms": round(float(np.max(f)), 2),
        "fleet_budget_ratio": round(float(np.mean(f)) / BUDGET_MS, 2),
        "fleet_build_s": round(build_s, 1),
        "fleet_warmup_ms": round(fleet.warmup_ms, 0),
        "running_jobs_count": frame.count("running"),
        "pending_jobs_count": frame.count("pending"),
        "gpus_allocated_count": int((frame.gpu_job >= 0).sum()),
        "gpus_count": frame.n_gpus,
    }


def _steps_from(hub, first: int, n: int) -> tuple[list[float], list[float]]:
    totals, fleet = [], []
    for i in range(first, first + n):
        hub.step(T0 + timedelta(seconds=i + 1))
        totals.append(hub.timing.total_ms)
        if hub.ticker.fleet is not None:
            fleet.append(hub.ticker.fleet.last_advance_ms)
    return totals, fleet
