"""The fabric phase: link state from the inputs and an estimated link utilisation.

:meth:`FabricPhase.run` → :class:`FabricResult`.  Both depend only on the failed links and
on which GPUs are active, which change seldom: the answer is kept (read-only) until
either changes.  Utilisation is :func:`twin.physics.fabric.uplink_util_frac` of the
nominal job's communication share.
"""

from __future__ import annotations

import numpy as np

from twin.engine.constants import SiteConstants, as_ids
from twin.engine.inputs import TickInputs
from twin.engine.phases import DemandResult, FabricResult, GpuThermalResult
from twin.physics import fabric, thermal

DEFAULT_COMPUTE_FRAC = 0.85  # [E] share of the nominal job's step at busy power (the rest communicates)
CROSS_POD_TRAFFIC_FRAC = 0.5  # [E] share of a pod's uplink traffic that continues to the core


class FabricPhase:
    """Link state and estimated utilisation (see module docstring)."""

    def __init__(self, const: SiteConstants) -> None:
        self.const = const
        s = const.state
        self.leaf_gpus = np.bincount(s.gpu_leaf, minlength=s.n_switches).astype(np.float64)
        self.switch_up_gbps = fabric.switch_uplink_gbps(s)
        self._link_cache: tuple[tuple[bytes, bytes | None], np.ndarray, np.ndarray] | None = (
            None  # (failed links, inactive GPUs) -> (link up, link utilisation), read-only
        )
        self._uplink_cache = (np.zeros(0, np.int64).tobytes(), self.switch_up_gbps)  # failed links -> capacity

    def _uplink_gbps(self, failed: np.ndarray, up: np.ndarray) -> np.ndarray:
        """Surviving uplink capacity per switch, recomputed only when the failed links change."""
        key = failed.tobytes()
        if self._uplink_cache[0] != key:
            self._uplink_cache = (key, fabric.switch_uplink_gbps(self.const.state, up))
        return self._uplink_cache[1]

    def run(self, inp: TickInputs, dem: DemandResult, gt: GpuThermalResult) -> FabricResult:
        """Links up and their estimated utilisation under the inputs' failed links and the active GPUs."""
        s = self.const.state
        failed = as_ids(inp.failed_links, s.n_links, "failed_links")
        if s.n_links == 0:
            return FabricResult(link_up_flag=np.ones(0, dtype=bool), link_util_frac=np.zeros(0))
        util = dem.gpu_util_frac
        inactive = None
        if gt.any_gpu_down or util.min() <= thermal.IDLE_UTIL_FRAC:
            inactive = (util <= thermal.IDLE_UTIL_FRAC) | gt.gpu_down
        key = (failed.tobytes(), None if inactive is None else np.packbits(inactive).tobytes())
        if self._link_cache is None or self._link_cache[0] != key:
            up = np.ones(s.n_links, dtype=bool)
            up[failed] = False
            cap = self._uplink_gbps(failed, up)
            gpus = self.leaf_gpus
            if inactive is not None:
                gpus = gpus - np.bincount(s.gpu_leaf[inactive], minlength=s.n_switches)
            sw_util = fabric.uplink_util_frac(s, gpus, cap, 1.0 - DEFAULT_COMPUTE_FRAC, CROSS_POD_TRAFFIC_FRAC)
            link_util = sw_util[s.link_a]
            if failed.size:
                link_util[failed] = 0.0
            up.flags.writeable = link_util.flags.writeable = False
            self._link_cache = (key, up, link_util)
        return FabricResult(link_up_flag=self._link_cache[1], link_util_frac=self._link_cache[2])
