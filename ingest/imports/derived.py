"""What an imported recording implies but does not state: throttling from clocks, hot-rack alerts.

Tools such as ``nvidia-smi`` and ``dcgmi dmon`` record temperatures and SM clocks but no
throttle factor, and a recording carries no alerts.  Without these a replayed GPU at 92 °C
and 1,400 MHz counted as running at full speed and raised nothing.

* :func:`throttle_from_readings` — where a GPU's ``throttle_frac`` is missing and its SM clock
  is known: the clock's share of the GPU type's maximum SM clock when the GPU is throttled
  (at or above its slowdown temperature, or busy — utilisation at least
  :data:`BUSY_UTIL_FRAC` — below its maximum clock: a power or thermal limit), else 1.  An
  idle GPU's low clock is its idle state, not throttling.
* :func:`hot_rack_events` — the alerts the live rules raise for hot racks
  (:mod:`ingest.live.alert_rules`): a rack opens a *warning* when a recorded GPU reaches its
  maximum operating temperature and a *critical* one when a GPU reaches its slowdown
  temperature; an episode ends once every GPU is :data:`GPU_HOT_CLEAR_K` below the threshold.
  One event per episode and severity reached, at the frame it opened.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ingest.live.alert_rules import GPU_HOT_CLEAR_K
from twin.site.tables import SiteTables

BUSY_UTIL_FRAC = 0.5  # [E] a GPU this busy runs at its maximum clock unless a limit holds it down
CLOCK_TOLERANCE_FRAC = 0.98  # [E] clocks within 2 % of the maximum (one or two 15 MHz bins) are full speed


def throttle_from_readings(
    state: SiteTables,
    gpu_temp_c: np.ndarray,
    sm_clock_mhz: np.ndarray,
    gpu_util_frac: np.ndarray,
    throttle_frac: np.ndarray,
) -> np.ndarray:
    """``throttle_frac`` [frame, GPU] with the gaps filled from the clocks (see the module docstring)."""
    max_clock = state.gpu_spec_array("max_sm_clock_mhz")
    slowdown = state.gpu_spec_array("slowdown_temp_c")
    with np.errstate(invalid="ignore"):
        clock_frac = np.clip(sm_clock_mhz / max_clock, 0.0, 1.0)
        hot = gpu_temp_c >= slowdown
        held = (gpu_util_frac >= BUSY_UTIL_FRAC) & (clock_frac < CLOCK_TOLERANCE_FRAC)
    derived = np.where(hot | held, clock_frac, np.where(np.isfinite(clock_frac), 1.0, np.nan))
    return np.where(np.isfinite(throttle_frac), throttle_frac, derived)


def hot_rack_events(state: SiteTables, frame_ts: pd.DatetimeIndex, gpu_temp_c: np.ndarray) -> list[dict]:
    """Hot-rack alert openings of an imported recording (event dicts of the bundle's events table)."""
    recorded = np.flatnonzero(np.isfinite(gpu_temp_c).any(axis=0))
    if recorded.size == 0:
        return []
    order = recorded[np.argsort(state.gpu_rack[recorded], kind="stable")]
    racks = state.gpu_rack[order]
    starts = np.flatnonzero(np.r_[True, racks[1:] != racks[:-1]])
    rack_ids = racks[starts]
    temp = np.where(np.isfinite(gpu_temp_c[:, order]), gpu_temp_c[:, order], -np.inf)
    # each GPU's margin to its thresholds; a rack is as hot as its hottest GPU
    over_op = np.maximum.reduceat(temp - state.gpu_spec_array("max_operating_temp_c")[order], starts, axis=1)
    over_slow = np.maximum.reduceat(temp - state.gpu_spec_array("slowdown_temp_c")[order], starts, axis=1)
    rack_max_c = np.maximum.reduceat(temp, starts, axis=1)
    ts_ms = frame_ts.as_unit("ms").asi8
    events = []
    for severity, over in (("warning", over_op), ("critical", over_slow)):
        for f, k in _openings(over):
            r = int(rack_ids[k])
            events.append(_event(int(ts_ms[f]), severity, state, r, float(rack_max_c[f, k])))
    events.sort(key=lambda e: (e["ts_ms"], e["entity_id"], e["severity"]))
    return events


def _openings(over_k: np.ndarray) -> list[tuple[int, int]]:
    """(frame, column) where an episode opens: the margin reaches 0 with no episode open; an open one
    ends once the margin is below ``-GPU_HOT_CLEAR_K``."""
    out = []
    for k in np.flatnonzero((over_k >= 0).any(axis=0)):
        is_open = False
        for f, over in enumerate(over_k[:, k].tolist()):
            if not is_open and over >= 0:
                is_open = True
                out.append((f, int(k)))
            elif is_open and over < -GPU_HOT_CLEAR_K:
                is_open = False
    return out


def _event(ts_ms: int, severity: str, state: SiteTables, rack: int, rack_max_c: float) -> dict:
    what = "slowdown" if severity == "critical" else "maximum operating"
    return {
        "ts_ms": ts_ms,
        "severity": severity,
        "source": "import",
        "entity_kind": "rack",
        "entity_id": rack,
        "entity_name": state.rack_name[rack],
        "metric": "gpu_temp_c",
        "value": rack_max_c,
        "message": f"a GPU at {rack_max_c:.1f} °C: at or above its {what} temperature",
    }
