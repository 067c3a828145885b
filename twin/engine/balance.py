"""Site power balance: source dispatch with batteries, and what fits in the supply.

Pure functions over per-source arrays, called by the ``site`` phase of the tick.

* dispatch: generation (grid, generators) shares the facility demand in proportion to
  capacity; live batteries with charge cover what generation cannot, and charge from
  spare generation otherwise (state of charge moves by ``P · dt / E``);
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


def dispatch_sources(
    demand_mw: float, source_kind: np.ndarray, source_capacity_mw: np.ndarray, source_energy_mwh: np.ndarray,
    source_live: np.ndarray, battery_soc_frac: np.ndarray, dt_s: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Power of each source [MW] (negative: a battery charging) and the new battery state of charge."""
    battery = source_kind == BATTERY
    gen = source_live & ~battery
    cap = np.where(gen, source_capacity_mw, 0.0)
    gen_total = float(cap.sum())
    out = np.zeros(source_kind.size)
    if gen_total > 0:
        out = cap * min(demand_mw / gen_total, 1.0)
    deficit = demand_mw - float(out.sum())
    spare = gen_total - float(out.sum())  # generation headroom that can charge batteries
    soc = battery_soc_frac.copy()
    charge_mw = 0.0
    for i in np.flatnonzero(battery & source_live):  # batteries are few
        energy = source_energy_mwh[i]
        if deficit > 0 and soc[i] > 0:
            p = min(deficit, source_capacity_mw[i])
            deficit -= p
        elif deficit <= 0 and soc[i] < 1 and energy > 0 and spare - charge_mw > 0:
            p = -min(spare - charge_mw, source_capacity_mw[i])
            charge_mw -= p
        else:
            p = 0.0
        if energy > 0:
            soc[i] = np.clip(soc[i] - p * dt_s / 3600.0 / energy, 0.0, 1.0)
        out[i] = p
    if charge_mw > 0 and gen_total > 0:  # charging power is drawn from generation
        out[gen] = cap[gen] * min((demand_mw + charge_mw) / gen_total, 1.0)
    return out, soc


def generation_capacity_mw(
    source_kind: np.ndarray, source_capacity_mw: np.ndarray, source_live: np.ndarray, battery_soc_frac: np.ndarray,
) -> tuple[float, float]:
    """Capacity of the usable sources [MW] (live; batteries only with charge), and after losing the largest."""
    battery = source_kind == BATTERY
    usable = source_live & (~battery | (np.nan_to_num(battery_soc_frac, nan=0.0) > 0.0))
    capacity = float(source_capacity_mw[usable].sum())
    return capacity, capacity - (float(source_capacity_mw[usable].max()) if usable.any() else 0.0)


def site_balance(
    it_mw: float, tree_mw: float, cooling_mw: float, facility_mw: float, capacity_mw: float, n1_capacity_mw: float,
    network_mw: float, overhead_mw: float, it_full_mw: float, it_min_mw: float, n_gpus: int, tdp_w: float,
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
    gpus_full = (int(np.clip(np.floor((capacity_mw - fixed) / per_gpu_full), 0, n_gpus)) if per_gpu_full > 0
                 else n_gpus)
    if f_full <= capacity_mw:
        cap_w, fits = tdp_w, True
    elif f_full > f_min:
        cap_w = min_limit_w + (tdp_w - min_limit_w) * (capacity_mw - f_min) / (f_full - f_min)
        fits = cap_w >= min_limit_w
        cap_w = float(np.clip(cap_w, min_limit_w, tdp_w))
    else:
        cap_w, fits = min_limit_w, f_min <= capacity_mw
    return SiteBalance(
        it_mw=it_mw, distribution_loss_mw=tree_mw - it_mw, cooling_mw=cooling_mw, network_mw=network_mw,
        overhead_mw=overhead_mw, facility_mw=facility_mw, generation_capacity_mw=capacity_mw,
        generation_n1_capacity_mw=n1_capacity_mw, shortfall_mw=max(facility_mw - capacity_mw, 0.0),
        gpus_at_full_power=gpus_full, power_cap_w=float(cap_w), cap_fits=bool(fits))
