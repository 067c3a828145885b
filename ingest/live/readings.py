"""Latest readings per entity, merged from every source, as dense arrays for the twin.

Sources write what they measured (canonical metric, dense entity ids, values, time);
the live step reads one array per metric with NaN where nothing fresh is known.
Values older than ``max_age_s`` read as NaN: stale is not current.
"""

from __future__ import annotations

import threading

import numpy as np

from twin.site.tables import SiteTables

# metrics kept per entity kind (canonical names, twin/quantities.py)
TRACKED: dict[str, tuple[str, ...]] = {
    "gpu": (
        "gpu_temp_c",
        "hbm_temp_c",
        "gpu_power_w",
        "gpu_util_frac",
        "sm_clock_mhz",
        "last_xid_code",
        "power_limit_w",
    ),
    "cdu": (
        "coolant_supply_temp_c",
        "coolant_return_temp_c",
        "coolant_flow_lpm",
        "pumps_running_count",
        "facility_supply_temp_c",
    ),
    "power_element": ("feed_power_kw",),
}


# equipment whose status (breaker open, source tripped, link down) a source reports
FAILED_KINDS = ("power", "source", "link")


class ReadingsBuffer:
    """Thread-safe latest value and time per (entity kind, metric, entity)."""

    def __init__(self, state: SiteTables) -> None:
        sizes = {"gpu": state.n_gpus, "cdu": state.n_cdus, "power_element": state.n_power}
        self._values = {(k, m): np.full(sizes[k], np.nan) for k, ms in TRACKED.items() for m in ms}
        self._times = {key: np.full(arr.size, -np.inf) for key, arr in self._values.items()}
        self._failed: dict[str, np.ndarray] = {k: np.zeros(0, np.int64) for k in FAILED_KINDS}
        self._nodes_off: np.ndarray | None = None
        self._lock = threading.Lock()

    def update(self, kind: str, metric: str, ids: np.ndarray, values: np.ndarray, t_s: float | np.ndarray) -> int:
        """Store readings; returns how many were stored (untracked metrics are ignored)."""
        key = (kind, metric)
        if key not in self._values:
            return 0
        ids = np.asarray(ids, dtype=np.int64)
        ok = (ids >= 0) & (ids < self._values[key].size)
        with self._lock:
            self._values[key][ids[ok]] = np.asarray(values, dtype=np.float64)[ok] if np.ndim(values) else values
            self._times[key][ids[ok]] = np.asarray(t_s)[ok] if np.ndim(t_s) else t_s
        return int(ok.sum())

    def current(self, kind: str, metric: str, now_s: float, max_age_s: float) -> np.ndarray:
        """Values no older than ``max_age_s`` at ``now_s``; NaN elsewhere."""
        key = (kind, metric)
        with self._lock:
            values, times = self._values[key].copy(), self._times[key].copy()
        values[now_s - times > max_age_s] = np.nan
        return values

    def set_failed(self, kind: str, ids) -> None:
        """Replace the set of ``kind`` entities a status source reports as failed."""
        if kind not in self._failed:
            raise KeyError(f"unknown status kind {kind!r} (known: {FAILED_KINDS})")
        with self._lock:
            self._failed[kind] = np.unique(np.asarray(ids, dtype=np.int64))

    def failed(self, kind: str) -> np.ndarray:
        """Ids of ``kind`` entities reported failed."""
        with self._lock:
            return self._failed[kind].copy()

    def set_nodes_off(self, mask: np.ndarray | None) -> None:
        """Nodes the operator powered off (bool per node), as the cluster manager reports them."""
        with self._lock:
            self._nodes_off = None if mask is None else np.asarray(mask, dtype=bool).copy()

    def nodes_off(self) -> np.ndarray | None:
        """Bool per node powered off on purpose, or None when no source reports it."""
        with self._lock:
            return None if self._nodes_off is None else self._nodes_off.copy()
