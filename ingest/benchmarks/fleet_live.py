"""Benchmark of the live fleet's cost on the tick (``clustertwin bench --only live_fleet``).

Two hubs on colossus with the synthetic source and no recording, one without the fleet
(the peer) and one with it, stepped ``steps`` times at 1 Hz after a warm-up tick.  The two
are interleaved step by step (which goes first alternates), so that other processes on the
cores weigh on both alike.  Reported, with and without the fleet: the median and the mean
of the whole step and of its clock phase (the fleet's advance, the occupancy handed to the
synthetic plant and the plant's step: :attr:`ingest.live.hub.StepTiming.synthetic_ms`),
their differences (target: the fleet adds ≤ 1 ms) with the standard error of the mean
difference, the fleet's own share (:attr:`ingest.live.fleet.LiveFleet.last_advance_ms`:
median, mean, 95th percentile, max) and the one-off cost of building it (workload,
simulation warm-up).
"""

from __future__ import annotations

import math
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
def live_fleet_benchmark(site: str = "colossus", steps: int = 300) -> dict:
    """Step and clock phase with and without the fleet (median, mean, difference), the fleet's own share."""
    with tempfile.TemporaryDirectory(prefix="clustertwin-bench-") as tmp:
        bare = build_hub(site, f"sqlite:///{Path(tmp) / 'a.db'}", start=T0, seed=1, record=False, fleet=False)
        t0 = time.perf_counter()
        with_fleet = build_hub(site, f"sqlite:///{Path(tmp) / 'b.db'}", start=T0, seed=1, record=False)
        build_s = time.perf_counter() - t0
        bare.step(T0)  # the first tick settles the twin: not measured
        with_fleet.step(T0)
        fleet = with_fleet.ticker.fleet
        a, b, f = _Steps(), _Steps(), []
        for i in range(steps):
            ts = T0 + timedelta(seconds=i + 1)
            for hub, out in ((bare, a), (with_fleet, b)) if i % 2 == 0 else ((with_fleet, b), (bare, a)):
                hub.step(ts)
                out.add(hub.timing)
            f.append(fleet.last_advance_ms)
        frame = fleet.frame()
        bare.db.dispose()
        with_fleet.db.dispose()
    return {
        "site": site,
        "steps_count": steps,
        **_compare("step", a.total, b.total),
        **_compare("clock_phase", a.clock, b.clock),
        "with_to_without_ratio": round(float(np.median(b.total) / np.median(a.total)), 3),
        "fleet_advance_median_ms": round(float(np.median(f)), 3),
        "fleet_advance_mean_ms": round(float(np.mean(f)), 3),
        "fleet_advance_p95_ms": round(float(np.percentile(f, 95)), 3),
        "fleet_advance_max_ms": round(float(np.max(f)), 2),
        "fleet_budget_ratio": round(float(np.mean(f)) / BUDGET_MS, 2),
        "fleet_build_s": round(build_s, 1),
        "fleet_warmup_ms": round(fleet.warmup_ms, 0),
        "running_jobs_count": frame.count("running"),
        "pending_jobs_count": frame.count("pending"),
        "gpus_allocated_count": int((frame.gpu_job >= 0).sum()),
        "gpus_count": frame.n_gpus,
    }


class _Steps:
    """Whole-step and clock-phase times of one hub [ms]."""

    def __init__(self) -> None:
        self.total: list[float] = []
        self.clock: list[float] = []

    def add(self, timing) -> None:
        self.total.append(timing.total_ms)
        self.clock.append(timing.synthetic_ms)


def _compare(name: str, without: list[float], with_: list[float]) -> dict:
    """Median and mean without and with the fleet, their differences, the standard error of the mean's [ms]."""
    x, y = np.asarray(without), np.asarray(with_)
    se = math.sqrt(x.var(ddof=1) / x.size + y.var(ddof=1) / y.size) if x.size > 1 else math.nan
    return {
        f"{name}_without_fleet_median_ms": round(float(np.median(x)), 2),
        f"{name}_with_fleet_median_ms": round(float(np.median(y)), 2),
        f"{name}_fleet_added_median_ms": round(float(np.median(y) - np.median(x)), 2),
        f"{name}_without_fleet_mean_ms": round(float(x.mean()), 2),
        f"{name}_with_fleet_mean_ms": round(float(y.mean()), 2),
        f"{name}_fleet_added_mean_ms": round(float(y.mean() - x.mean()), 2),
        f"{name}_fleet_added_mean_se_ms": round(se, 2) if math.isfinite(se) else None,
    }
