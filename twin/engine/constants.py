"""What several phases of the tick read about the site: the GPU models' constants, groupings, the power topology.

:class:`SiteConstants` is built once per engine from :class:`twin.site.tables.SiteTables`
and never changes; each phase keeps its own constants besides (a phase's own module
says which).  Per-GPU constants that are the same for every GPU of the site are scalars
(numpy broadcasting reads them far faster than arrays).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from twin.engine.groups import Groups
from twin.physics import powertree
from twin.site.tables import SiteTables

SWITCH_POWER_W = 1700.0  # [E] SN5600-class switch with 64 × 800G optics (~15 W each) + ASIC/CPU/fans


def uniform_or_array(values: np.ndarray) -> float | np.ndarray:
    """A scalar when every entry is equal (cheaper broadcasting on the hot path)."""
    return float(values[0]) if values.size and np.all(values == values[0]) else values


def as_ids(values: npt.ArrayLike, n: int, what: str) -> np.ndarray:
    """``values`` as int64 ids in ``0..n-1``; anything else raises ``ValueError`` naming ``what``."""
    ids = np.asarray(values, dtype=np.int64).ravel()
    if ids.size and (ids.min() < 0 or ids.max() >= n):
        raise ValueError(f"{what}: ids must be in 0..{n - 1}")
    return ids


class SiteConstants:
    """The site's GPU-model constants [W, °C, K/W, J/K], groupings (GPUs by node, rack, CDU) and power topology."""

    def __init__(self, s: SiteTables) -> None:
        self.state = s
        self._gpu_models(s)
        self.gpu_cdu = s.rack_cdu[s.gpu_rack].astype(np.int64)
        self.by_cdu = Groups(self.gpu_cdu, s.n_cdus)
        self.uniform_gpus = len({s.gpu_specs[i].name for i in np.unique(s.gpu_spec)}) <= 1
        self.by_node = Groups(s.gpu_node, s.n_nodes)
        self.by_rack = Groups(s.gpu_rack, s.n_racks)
        self.node_by_rack = Groups(s.node_rack, s.n_racks)
        self.gpus_per_node = np.maximum(self.by_node.counts, 1)
        self.gpus_per_rack = self.by_rack.counts
        self.gpus_per_cdu = np.bincount(self.gpu_cdu, minlength=s.n_cdus)
        self.racks_per_cdu = np.bincount(s.rack_cdu, minlength=s.n_cdus)
        self.one_rack_per_cdu = bool(self.racks_per_cdu.max(initial=0) <= 1)
        self.topo = powertree.build_topology(s)
        self.network_mw = s.n_switches * SWITCH_POWER_W / 1e6

    def _gpu_models(self, s: SiteTables) -> None:
        spec = s.gpu_spec_array
        self.tdp_w = uniform_or_array(spec("tdp_w"))
        self.idle_w = uniform_or_array(spec("idle_power_w"))
        self.min_limit_w = uniform_or_array(spec("min_power_limit_w"))
        self.max_clock_mhz = uniform_or_array(spec("max_sm_clock_mhz"))
        self.max_op_c = uniform_or_array(spec("max_operating_temp_c"))
        self.slowdown_c = uniform_or_array(spec("slowdown_temp_c"))
        self.shutdown_c = uniform_or_array(spec("shutdown_temp_c"))
        self.hbm_max_c = uniform_or_array(spec("hbm_max_temp_c"))
        self.r_die_c_per_w = uniform_or_array(spec("r_th_die_c_per_w"))
        self.r_hbm_c_per_w = uniform_or_array(spec("r_th_hbm_c_per_w"))
        self.r_conv_frac = uniform_or_array(spec("r_th_conv_frac"))
        self.hbm_power_frac = uniform_or_array(spec("hbm_power_frac"))
        self.leakage_w_per_k = uniform_or_array(spec("leakage_w_per_k"))
        self.heat_capacity_j_per_k = uniform_or_array(spec("heat_capacity_j_per_k"))
        # the two thermal nodes (twin.physics.thermal.two_node_coefficients): junction and cold plate
        self.junction_heat_capacity_j_per_k = uniform_or_array(
            spec("heat_capacity_j_per_k") * spec("junction_heat_frac")
        )
        self.plate_heat_capacity_j_per_k = uniform_or_array(
            spec("heat_capacity_j_per_k") * (1.0 - spec("junction_heat_frac"))
        )
        # site-wide figures of the GPU models that the tick reads every step
        self.idle_mean_w = float(np.mean(self.idle_w))
        self.heat_capacity_mean_j_per_k = float(np.mean(self.heat_capacity_j_per_k))
        self.max_op_min_c, self.shutdown_min_c = float(np.min(self.max_op_c)), float(np.min(self.shutdown_c))
        self.tdp_max_w = float(np.max(self.tdp_w))
        self.min_limit_min_w, self.min_limit_max_w = float(np.min(self.min_limit_w)), float(np.max(self.min_limit_w))

    def per_gpu(self, values: np.ndarray | float) -> np.ndarray:
        """``values`` (a scalar or per-GPU array) as a read-only per-GPU array."""
        return np.broadcast_to(np.asarray(values, dtype=np.float64), (self.state.n_gpus,))
