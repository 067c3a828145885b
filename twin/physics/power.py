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
* A site may carry its own efficiencies at the same load points (fitted by calibration,
  :func:`fit_psu_efficiency_points`); every function takes them as ``efficiency_points_frac``.
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
    lo, hi = (float(u.min()), float(u.max())) if u.size else (0.0, 0.0)  # NaN and inf show in the extremes
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError("util_frac: NaN or inf utilisation (fill missing readings before calling)")
    if lo < 0.0 or hi > 1.0:
        u = np.clip(u, 0.0, 1.0)
    demand = u * (np.asarray(tdp_w) - idle_w)
    demand += idle_w
    return demand


def psu_efficiency_frac(load_frac: np.ndarray | float, efficiency_points_frac: np.ndarray | None = None) -> np.ndarray:
    """PSU efficiency at ``load_frac`` of its rated output.

    Linear between the efficiencies ``efficiency_points_frac`` at :data:`PSU_LOAD_POINTS_FRAC`
    (default: the 80 PLUS Titanium curve, [Wikipedia-80PLUS]), held at the end points outside.
    """
    points = PSU_EFFICIENCY_POINTS_FRAC if efficiency_points_frac is None else efficiency_points_frac
    return np.interp(load_frac, PSU_LOAD_POINTS_FRAC, points)


def psu_point_weights(load_frac: np.ndarray) -> np.ndarray:
    """Weights ``W`` [n, 4] with ``psu_efficiency_frac(x, e) = W @ e`` for every curve ``e`` (hat functions)."""
    x = np.clip(np.asarray(load_frac, dtype=np.float64), PSU_LOAD_POINTS_FRAC[0], PSU_LOAD_POINTS_FRAC[-1])
    return np.stack(
        [
            np.interp(x, PSU_LOAD_POINTS_FRAC, np.eye(PSU_LOAD_POINTS_FRAC.size)[i])
            for i in range(PSU_LOAD_POINTS_FRAC.size)
        ],
        axis=1,
    )


def fit_psu_efficiency_points(
    load_frac: np.ndarray,
    efficiency_frac: np.ndarray,
    prior_frac: np.ndarray = PSU_EFFICIENCY_POINTS_FRAC,
    prior_weight: float = 1e-3,
) -> np.ndarray:
    """Efficiencies at :data:`PSU_LOAD_POINTS_FRAC` that best explain measured ``efficiency_frac`` at ``load_frac``.

    Least squares of the piecewise-linear curve through the samples, pulled towards
    ``prior_frac`` with weight ``prior_weight · n`` (ridge): a load point the samples cover
    follows them, one they do not reach stays at the prior.  Samples are DC output over AC
    input of a PSU (or of PSUs sharing a load equally); non-finite ones are ignored.
    """
    x, eta = np.asarray(load_frac, dtype=np.float64), np.asarray(efficiency_frac, dtype=np.float64)
    ok = np.isfinite(x) & np.isfinite(eta)
    x, eta = x[ok], eta[ok]
    prior = np.asarray(prior_frac, dtype=np.float64)
    if x.size == 0:
        return prior.copy()
    w = psu_point_weights(x)
    lam = prior_weight * x.size
    a = w.T @ w + lam * np.eye(prior.size)
    return np.linalg.solve(a, w.T @ eta + lam * prior)


def node_dc_power_w(
    gpu_power_sum_w: np.ndarray | float,
    mean_util_frac: np.ndarray | float,
    base_full_w: np.ndarray | float,
    base_idle_w: np.ndarray | float,
) -> np.ndarray:
    """DC load of a node: GPU power plus base power scaled by utilisation [W]."""
    u = np.clip(mean_util_frac, 0.0, 1.0)
    return gpu_power_sum_w + base_idle_w + u * (np.asarray(base_full_w) - base_idle_w)


def node_input_power_w(
    dc_power_w: np.ndarray,
    psus_live: np.ndarray,
    psu_rating_w: np.ndarray | float,
    efficiency_points_frac: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """AC input power of a node and its PSU efficiency, from DC load and live PSUs.

    Nodes with no live PSU draw nothing.  ``efficiency_points_frac``: the site's PSU curve
    (:func:`psu_efficiency_frac`; default the catalogue's).  Returns ``(input_w, efficiency_frac)``.
    """
    live = np.asarray(psus_live, dtype=np.float64)
    if np.any(live < 0):
        raise ValueError("psus_live: must be >= 0")
    with np.errstate(divide="ignore", invalid="ignore"):
        load = np.where(live > 0, dc_power_w / (np.maximum(live, 1.0) * psu_rating_w), 0.0)
    eff = psu_efficiency_frac(load, efficiency_points_frac)
    return np.where(live > 0, dc_power_w / eff, 0.0), eff


def node_power_available_w(psus_live: np.ndarray, psu_rating_w: np.ndarray) -> np.ndarray:
    """DC power the live PSUs can deliver [W]; above it the node asserts the GPU power brake."""
    return np.asarray(psus_live, dtype=np.float64) * psu_rating_w
