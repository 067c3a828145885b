"""Server-level power: GPU demand from utilisation, node power, PSU efficiency and losses.

Pure numpy functions.

* GPU demand: ``P = P_idle + u · (P_tdp − P_idle)`` — board power rises with the
  fraction of time kernels run (~85 W idle [NVSMI-H100-Capture], at the 700 W cap in
  large-model training [Est-H100-Training-Load]) [E: linear in utilisation].
* node DC load: ``Σ P_gpu + P_base,idle + ū · (P_base,full − P_base,idle)`` with the
  node's mean GPU utilisation ``ū`` (CPUs, NICs, memory, fans follow the job) [E].
* PSU efficiency: 80 PLUS Titanium (230 V internal redundant) points 90 % @ 10 %,
  94 % @ 20 %, 96 % @ 50 %, 91 % @ 100 % load [Wikipedia-80PLUS]
  [P], linearly interpolated in load per PSU, held at the end points outside.
  Redundant PSUs share the load equally.
* node input (AC) power: ``P_dc / η(P_dc / (n_live · P_rating))``.
"""

from __future__ import annotations

import numpy as np

# [Wikipedia-80PLUS] [P]: 80 PLUS Titanium, 230 V internal redundant.
PSU_LOAD_POINTS_FRAC = np.array([0.10, 0.20, 0.50, 1.00])
PSU_EFFICIENCY_POINTS_FRAC = np.array([0.90, 0.94, 0.96, 0.91])


def gpu_demand_power_w(
    util_frac: np.ndarray | float, idle_w: np.ndarray | float, tdp_w: np.ndarray | float
) -> np.ndarray:
    """Board power a GPU would draw at full clocks for utilisation ``util_frac`` [W].

    Utilisation outside [0, 1] is clipped; NaN raises (the caller decides what a missing
    reading means).
    """
    u = np.asarray(util_frac, dtype=np.float64)
    if not np.all(np.isfinite(u)):
        raise ValueError("util_frac: NaN or inf utilisation (fill missing readings before calling)")
    return idle_w + np.clip(u, 0.0, 1.0) * (np.asarray(tdp_w) - idle_w)


def psu_efficiency_frac(load_frac: np.ndarray | float) -> np.ndarray:
    """PSU efficiency at ``load_frac`` of its rated output (80 PLUS Titanium curve, [Wikipedia-80PLUS])."""
    return np.interp(load_frac, PSU_LOAD_POINTS_FRAC, PSU_EFFICIENCY_POINTS_FRAC)


def node_dc_power_w(
    gpu_power_sum_w: np.ndarray,
    mean_util_frac: np.ndarray,
    base_full_w: np.ndarray,
    base_idle_w: np.ndarray,
) -> np.ndarray:
    """DC load of a node: GPU power plus base power scaled by utilisation [W]."""
    u = np.clip(mean_util_frac, 0.0, 1.0)
    return gpu_power_sum_w + base_idle_w + u * (np.asarray(base_full_w) - base_idle_w)


def node_input_power_w(
    dc_power_w: np.ndarray, psus_live: np.ndarray, psu_rating_w: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """AC input power of a node and its PSU efficiency, from DC load and live PSUs.

    Nodes with no live PSU draw nothing.  Returns ``(input_w, efficiency_frac)``.
    """
    live = np.asarray(psus_live, dtype=np.float64)
    if np.any(live < 0):
        raise ValueError("psus_live: must be >= 0")
    with np.errstate(divide="ignore", invalid="ignore"):
        load = np.where(live > 0, dc_power_w / (np.maximum(live, 1.0) * psu_rating_w), 0.0)
    eff = psu_efficiency_frac(load)
    return np.where(live > 0, dc_power_w / eff, 0.0), eff


def node_power_available_w(psus_live: np.ndarray, psu_rating_w: np.ndarray) -> np.ndarray:
    """DC power the live PSUs can deliver [W]; above it the node asserts the GPU power brake."""
    return np.asarray(psus_live, dtype=np.float64) * psu_rating_w
