"""Site power balance: what fits in the supply.

Pure functions, and the tick's site-balance phase (:class:`SiteBalancePhase`) that calls
them (the dispatch of the sources themselves is :func:`twin.physics.sources.dispatch`).

* capacity of recorded sources (:func:`generation_capacity_mw`, the replay view): live
  sources at their rating, batteries while charged;
* balance: facility power is taken as linear in IT power between two precomputed
  points (every GPU at TDP, every GPU at its minimum power limit), which gives the
  number of GPUs that fit at full power and the per-GPU cap that lets all of them run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from twin.physics import power
from twin.site.tables import SOURCE_KINDS

if TYPE_CHECKING:
    from twin.engine.constants import SiteConstants
    from twin.physics.sources import Dispatch

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


class SiteBalancePhase:
    """The site-balance phase: facility power from IT, distribution, cooling, network and overhead, and
    what fits in the supply (:func:`site_balance`), then the :class:`~twin.engine.phases.SiteResult`.

    It precomputes the IT power with every GPU at TDP and at its minimum power limit, the two
    points of the linear model behind the power-cap and full-power answers.
    """

    it_full_mw: float  # IT power with every GPU at TDP [MW] (set in __init__)
    it_min_mw: float  # and at its minimum power limit [MW]

    def __init__(self, const: SiteConstants) -> None:
        self.const = const
        s = const.state
        for name, p in (("it_full_mw", const.tdp_w), ("it_min_mw", const.min_limit_w)):
            gsum = const.by_node.sum(const.per_gpu(p))
            dc = power.node_dc_power_w(gsum, 1.0, s.node_base_power_w, s.node_idle_base_power_w)
            ac, _ = power.node_input_power_w(dc, s.node_psus, s.node_psu_rating_w, s.psu_efficiency_points_frac)
            setattr(self, name, float(ac.sum()) / 1e6)

    def fixed_mw(self) -> float:
        """Power of the network switches and the site overhead [MW]: the load that does not follow IT."""
        return self.const.network_mw + self.const.state.site_overhead_mw

    def indoor_mw(self, it_mw: float, tree_mw: float) -> float:
        """Heat released indoors outside the racks: distribution losses, switches, site overhead [MW]."""
        return (tree_mw - it_mw) + self.const.network_mw + self.const.state.site_overhead_mw

    def facility_mw(self, tree_mw: float, cooling_mw: float) -> float:
        """Facility power: the power tree's input, cooling, switches and site overhead [MW]."""
        return tree_mw + cooling_mw + self.const.network_mw + self.const.state.site_overhead_mw

    def balance(
        self, it_mw: float, tree_mw: float, cooling_mw: float, facility_mw: float, dispatch: Dispatch
    ) -> SiteBalance:
        """:func:`site_balance` against the sources' derated capacity in ``dispatch`` (N-1: less the largest)."""
        c = self.const
        s = c.state
        capacity = float(dispatch.capacity_mw.sum())
        n1_capacity = capacity - (float(dispatch.capacity_mw.max()) if s.n_sources else 0.0)
        return site_balance(
            it_mw,
            tree_mw,
            cooling_mw,
            facility_mw,
            capacity,
            n1_capacity,
            c.network_mw,
            s.site_overhead_mw,
            self.it_full_mw,
            self.it_min_mw,
            s.n_gpus,
            c.tdp_max_w,
            c.min_limit_max_w,
        )
