"""Site power balance: what fits in the supply.

Pure functions, called by the ``site`` phase of the tick (the dispatch of the sources
themselves is :func:`twin.physics.sources.dispatch`).

* capacity of recorded sources (:func:`generation_capacity_mw`, the replay view): live
  sources at their rating, batteries while charged;
* balance: facility power is taken as linear in IT power between two precomputed
  points (every GPU at TDP, every GPU at its minimum power limit), which gives the
  number of GPUs that fit at full power and the per-GPU cap that lets all of them run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.site.tables import SOURCE_KINDS

BATTERY = SOURCE_KINDS.index("battery")


@dataclass
class SiteBalance:
    """Site supply and demand [MW] and what fits in the supply."""

    it_mw: float
    distribution_loss_mw: float
    cooling_mw: float
    network_mw: float
    overhead_mw: float
    facility_mw: float
    generation_capacity_mw: float
    generation_n1_capacity_mw: float  # after losing the largest live source
    shortfall_mw: float
    gpus_at_full_power: int  # GPUs that can run at TDP within the supply (others off)
    power_cap_w: float  # per-GPU limit that lets all running GPUs fit, clipped to [min, TDP]
    cap_fits: bool  # the clipped cap actually fits


def generation_capacity_mw(
    source_kind: np.ndarray,
    source_capacity_mw: np.ndarray,
    source_live: np.ndarray,
    battery_soc_frac: np.ndarray,
) -> tuple[float, float]:
    """Rated capacity of the usable sources [MW] (live; batteries only with charge), and after losing the largest.

    The engine's own capacity is derated and counts batteries at the power they sustain
    (:func:`twin.physics.sources.dispatch`); this is for recorded states without that detail.
    """
    battery = source_kind == BATTERY
    usable = source_live & (~battery | (np.nan_to_num(battery_soc_frac, nan=0.0) > 0.0))
    capacity = float(source_capacity_mw[usable].sum())
    return capacity, capacity - (float(source_capacity_mw[usable].max()) if usable.any() else 0.0)


def site_balance(
    it_mw: float,
    tree_mw: float,
    cooling_mw: float,
    facility_mw: float,
    capacity_mw: float,
    n1_capacity_mw: float,
    network_mw: float,
    overhead_mw: float,
    it_full_mw: float,
    it_min_mw: float,
    n_gpus: int,
    tdp_w: float,
    min_limit_w: float,
) -> SiteBalance:
    """Balance of the site now, and what fits in ``capacity_mw`` (see module docstring).

    ``tree_mw`` is the power-tree input (IT plus distribution losses); ``it_full_mw`` and
    ``it_min_mw`` the IT power with every GPU at ``tdp_w`` and at ``min_limit_w``.
    """
    chain = tree_mw / it_mw if it_mw > 0 else 1.0  # facility-side MW per MW at the racks
    cool_ratio = cooling_mw / it_mw if it_mw > 0 else 0.0
    fixed = network_mw + overhead_mw
    per_it = chain + cool_ratio  # facility MW per IT MW
    f_full = it_full_mw * per_it + fixed
    f_min = it_min_mw * per_it + fixed
    per_gpu_full = (f_full - fixed) / max(n_gpus, 1)
    gpus_full = int(np.clip(np.floor((capacity_mw - fixed) / per_gpu_full), 0, n_gpus)) if per_gpu_full > 0 else n_gpus
    if f_full <= capacity_mw:
        cap_w, fits = tdp_w, True
    elif f_full > f_min:
        cap_w = min_limit_w + (tdp_w - min_limit_w) * (capacity_mw - f_min) / (f_full - f_min)
        fits = cap_w >= min_limit_w
        cap_w = float(np.clip(cap_w, min_limit_w, tdp_w))
    else:
        cap_w, fits = min_limit_w, f_min <= capacity_mw
    return SiteBalance(
        it_mw=it_mw,
        distribution_loss_mw=tree_mw - it_mw,
        cooling_mw=cooling_mw,
        network_mw=network_mw,
        overhead_mw=overhead_mw,
        facility_mw=facility_mw,
        generation_capacity_mw=capacity_mw,
        generation_n1_capacity_mw=n1_capacity_mw,
        shortfall_mw=max(facility_mw - capacity_mw, 0.0),
        gpus_at_full_power=gpus_full,
        power_cap_w=float(cap_w),
        cap_fits=bool(fits),
    )
