"""Site aggregates the pages display: KPI figures, hottest racks, per-rack floor metrics.

Pure functions of (:class:`SiteTables`, :class:`Snapshot`) returning small arrays or
dicts — aggregation happens here, on the server, so the browser gets one value per
rack (or per site), never per GPU, except in a single rack's drill-down.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dashboard.analysis.equipment import cdu_lost
from dashboard.present.ordering import order_by
from twin.engine.snapshot import GPU_DOWN, GPU_OFF, GPU_OK, GPU_THROTTLED, Snapshot
from twin.site.tables import SiteTables

TTT_CAP_S = 3600.0  # time-to-throttle beyond this shows as "≥ 60 min"
N1_LIMIT_FRAC = 1.0  # worst post-failure load above this fails N-1


@dataclass(frozen=True)
class FloorMetric:
    """A per-rack quantity the floor plan can colour racks by."""

    key: str
    label: str
    unit: str
    colorscale: str
    higher_is_better: bool
    decimals: int


FLOOR_METRICS: tuple[FloorMetric, ...] = (
    FloorMetric("max_gpu_temp_c", "Max GPU temperature", "°C", "Viridis", False, 1),
    FloorMetric("rack_power_kw", "Rack power", "kW", "Viridis", False, 1),
    FloorMetric("coolant_delta_t_k", "Coolant ΔT (return − supply)", "K", "Viridis", False, 1),
    FloorMetric("cdu_headroom_kw", "CDU headroom", "kW", "Cividis", True, 1),
    FloorMetric("time_to_throttle_s", "Time to throttle after a pump loss", "s", "Cividis", True, 0),
)
FLOOR_METRIC_BY_KEY = {m.key: m for m in FLOOR_METRICS}
DEFAULT_FLOOR_METRIC = "max_gpu_temp_c"


def rack_metrics(state: SiteTables, snapshot: Snapshot) -> dict[str, np.ndarray]:
    """Every floor metric as one float array per rack (NaN unknown; time-to-throttle capped)."""
    cdu = state.rack_cdu
    delta_t = snapshot.coolant_return_temp_c - snapshot.coolant_supply_temp_c
    # a lost CDU (too few pumps) removes nothing: its headroom is minus the heat it should carry
    capacity = np.where(cdu_lost(state, snapshot), 0.0, snapshot.cdu_capacity_kw)
    headroom = capacity - snapshot.cdu_heat_kw
    ttt = np.minimum(np.asarray(snapshot.rack_time_to_throttle_s, dtype=np.float64), TTT_CAP_S)
    return {
        "max_gpu_temp_c": np.asarray(snapshot.rack_max_gpu_temp_c, dtype=np.float64),
        "rack_power_kw": np.asarray(snapshot.rack_power_kw, dtype=np.float64),
        "coolant_delta_t_k": delta_t[cdu],
        "cdu_headroom_kw": headroom[cdu],
        "time_to_throttle_s": ttt,
    }


def metric_range(state: SiteTables, key: str) -> tuple[float, float]:
    """Fixed colour range of a floor metric, so colours mean the same from tick to tick."""
    if key == "max_gpu_temp_c":  # up to the shutdown temperature: 89 °C and 92 °C must not look alike
        shutdown = max((s.shutdown_temp_c for s in state.gpu_specs), default=95.0)
        return 25.0, float(shutdown)
    if key == "rack_power_kw":
        return 0.0, float(np.max(state.rack_rated_kw, initial=1.0))
    if key == "coolant_delta_t_k":
        return 0.0, 15.0
    if key == "cdu_headroom_kw":
        top = max((max(s.capacity_curve_kw) for s in state.cdu_specs), default=100.0)
        return 0.0, float(top)
    if key == "time_to_throttle_s":
        return 0.0, 900.0
    raise KeyError(f"unknown floor metric {key!r}")


def gpu_counts(snapshot: Snapshot) -> dict[str, int]:
    """GPUs running normally, throttled, down (a fault) and powered off on purpose."""
    counts = np.bincount(np.asarray(snapshot.gpu_state, dtype=np.int64), minlength=4)
    return {
        "ok": int(counts[GPU_OK]),
        "throttled": int(counts[GPU_THROTTLED]),
        "down": int(counts[GPU_DOWN]),
        "off": int(counts[GPU_OFF]),
    }


def gpus_running(snapshot: Snapshot, gpu_job: np.ndarray | None = None) -> tuple[int, int]:
    """(GPUs running a job, GPUs allocated to one) at the snapshot.

    Allocated: per ``gpu_job`` (the fleet's job per GPU, -1 free) when a fleet runs beside the tick,
    else the snapshot's placed jobs.  Running: allocated and neither down nor powered off (a
    throttled GPU still runs its job).
    """
    state = np.asarray(snapshot.gpu_state)
    if gpu_job is not None:
        allocated = np.asarray(gpu_job) >= 0
    else:
        allocated = np.zeros(state.size, bool)
        for job in snapshot.jobs:
            allocated[job.gpu_ids] = True
    up = (state != GPU_DOWN) & (state != GPU_OFF)
    return int(np.count_nonzero(allocated & up)), int(np.count_nonzero(allocated))


def n1_status(state: SiteTables, snapshot: Snapshot) -> dict:
    """N-1 check of the power tree: elements whose worst post-failure load exceeds the limit."""
    n1 = np.asarray(snapshot.power_n1_load_frac, dtype=np.float64)
    over = np.flatnonzero(np.nan_to_num(n1, nan=0.0) > N1_LIMIT_FRAC)
    worst = int(np.nanargmax(n1)) if n1.size and np.isfinite(n1).any() else -1
    return {
        "ok": over.size == 0,
        "elements_over": [state.power_name[i] for i in over],
        "worst_name": state.power_name[worst] if worst >= 0 else "",
        "worst_frac": float(n1[worst]) if worst >= 0 else math.nan,
    }


def jobs_summary(snapshot: Snapshot) -> dict[str, float]:
    """Site-wide training throughput: tokens/s, goodput tokens/s and GPU-weighted MFU."""
    jobs = snapshot.jobs
    if not jobs:
        return {"tokens_per_s": math.nan, "goodput_tokens_per_s": math.nan, "mfu_frac": math.nan, "jobs": 0}
    weights = np.array([max(len(j.gpu_ids), 1) for j in jobs], dtype=np.float64)
    return {
        "tokens_per_s": float(sum(j.tokens_per_s for j in jobs)),
        "goodput_tokens_per_s": float(sum(j.goodput_tokens_per_s for j in jobs)),
        "mfu_frac": float(np.average([j.mfu_frac for j in jobs], weights=weights)),
        "jobs": len(jobs),
    }


def hottest_racks(state: SiteTables, snapshot: Snapshot, count: int = 10) -> list[dict]:
    """The ``count`` racks with the highest max GPU temperature, hottest first, ties by name."""
    temps = np.asarray(snapshot.rack_max_gpu_temp_c, dtype=np.float64)
    order = order_by([-temps], state.rack_name)[:count]  # hottest first, ties by name (NaN last)
    return [
        {
            "rack": int(r),
            "name": state.rack_name[r],
            "hall": state.hall_name[state.rack_hall[r]],
            "max_gpu_temp_c": float(temps[r]),
            "rack_power_kw": float(snapshot.rack_power_kw[r]),
            "time_to_throttle_s": float(snapshot.rack_time_to_throttle_s[r]),
        }
        for r in order
        if np.isfinite(temps[r])
    ]
