"""Benchmark of the live fleet's cost on the tick (``clustertwin bench --only live_fleet``).

Three hubs on colossus with the synthetic source and no recording, stepped ``steps`` times
at 1 Hz after a first tick, interleaved step by step (the order rotates) so that other
processes on the cores weigh on all alike:

* with the fleet;
* the peer: the same site load without the fleet model — built with the fleet, then its
  model replaced by the occupancy after the warm-up, handed to the plant and the twin at
  the first tick and never changed, so both simulate as many busy GPUs, readings and
  alerts;
* a hub without the fleet at all (the placed job only, idle nodes powered off).

Reported: the median and the mean of the whole step and of its clock phase (the fleet's
advance, the occupancy handed to the plant and the plant's step:
:attr:`ingest.live.hub.StepTiming.synthetic_ms`) with the fleet and for the peer, their
differences (target: the fleet adds ≤ 1 ms), the median of the per-instant differences and
the standard error of the mean difference (steps at the same instant paired); the same against the hub without the fleet (``bare_step_*``: that also counts
the twin simulating the busier site); the fleet's own share
(:attr:`ingest.live.fleet.LiveFleet.last_advance_ms`: median, mean, 95th percentile, max)
and the one-off cost of building it (workload, simulation warm-up).
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
    """Step and clock phase with the fleet and without its model (median, mean, difference), the fleet's own share."""
    with tempfile.TemporaryDirectory(prefix="clustertwin-bench-") as tmp:
        url = lambda name: f"sqlite:///{Path(tmp) / name}"  # noqa: E731
        bare = build_hub(site, url("a.db"), start=T0, seed=1, record=False, fleet=False)
        t0 = time.perf_counter()
        with_fleet = build_hub(site, url("b.db"), start=T0, seed=1, record=False)
        build_s = time.perf_counter() - t0
        frozen = build_hub(site, url("c.db"), start=T0, seed=1, record=False)
        occ = with_fleet.ticker.fleet.occupancy  # the plant runs the warm-up's occupancy from the first tick
        with_fleet.ticker.synthetic.occupy(occ.gpu_util_frac.copy(), occ.nodes_out.copy())
        frozen.ticker.fleet = _Frozen(frozen.ticker.fleet.occupancy)
        hubs = [(bare, _Steps()), (with_fleet, _Steps()), (frozen, _Steps())]
        for hub, _ in hubs:
            hub.step(T0)  # the first tick settles the twin: not measured
        fleet = with_fleet.ticker.fleet
        f = []
        for i in range(steps):
            ts = T0 + timedelta(seconds=i + 1)
            for hub, out in hubs[i % 3 :] + hubs[: i % 3]:
                hub.step(ts)
                out.add(hub.timing)
            f.append(fleet.last_advance_ms)
        frame = fleet.frame()
        for hub, _ in hubs:
            hub.db.dispose()
    a, b, c = (out for _, out in hubs)
    return {
        "site": site,
        "steps_count": steps,
        **_compare("step", c.total, b.total),
        **_compare("clock_phase", c.clock, b.clock),
        "with_to_without_ratio": round(float(np.median(b.total) / np.median(c.total)), 3),
        **_compare("bare_step", a.total, b.total),
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


class _Frozen:
    """The peer's fleet: the warm-up's occupancy, handed over at the first tick and never changed."""

    def __init__(self, occupancy) -> None:
        self.occupancy = occupancy
        self._first = True

    def advance(self, ts: datetime) -> bool:
        first, self._first = self._first, False
        return first


class _Steps:
    """Whole-step and clock-phase times of one hub [ms]."""

    def __init__(self) -> None:
        self.total: list[float] = []
        self.clock: list[float] = []

    def add(self, timing) -> None:
        self.total.append(timing.total_ms)
        self.clock.append(timing.synthetic_ms)


def _compare(name: str, without: list[float], with_: list[float]) -> dict:
    """Median and mean without and with the fleet, their differences and the standard error of the mean's,
    from the differences of the steps taken at the same instant (paired: the load of the moment cancels) [ms]."""
    x, y = np.asarray(without), np.asarray(with_)
    d = y - x
    se = float(d.std(ddof=1)) / math.sqrt(d.size) if d.size > 1 else math.nan
    return {
        f"{name}_without_fleet_median_ms": round(float(np.median(x)), 2),
        f"{name}_with_fleet_median_ms": round(float(np.median(y)), 2),
        f"{name}_fleet_added_median_ms": round(float(np.median(y) - np.median(x)), 2),
        f"{name}_without_fleet_mean_ms": round(float(x.mean()), 2),
        f"{name}_with_fleet_mean_ms": round(float(y.mean()), 2),
        f"{name}_fleet_added_mean_ms": round(float(y.mean() - x.mean()), 2),
        f"{name}_fleet_added_mean_se_ms": round(se, 2) if math.isfinite(se) else None,
        f"{name}_fleet_added_paired_median_ms": round(float(np.median(d)), 2),
    }
