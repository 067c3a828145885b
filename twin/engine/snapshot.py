"""One tick's results: what the twin knows and projects about a site at one instant.

:class:`Snapshot` is the contract between the twin engine (``twin/engine/tick.py``), the
synthetic stream and recorders (``ingest/``) and the dashboard (``dashboard/``).
Arrays are indexed by the dense ids of :class:`twin.site.tables.SiteTables`.  NaN means
"unknown" (no reading and no projection), never zero.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from twin.training.jobstatus import JobStatus

__all__ = ["GPU_DOWN", "GPU_OFF", "GPU_OK", "GPU_THROTTLED", "JobStatus", "Snapshot"]

# GPU states in ``gpu_state``: running, throttled, down (a fault: shutdown, XID, dark
# rack), and powered off on purpose by the operator (not a fault, raises no alert).
GPU_OK, GPU_THROTTLED, GPU_DOWN, GPU_OFF = 0, 1, 2, 3


@dataclass
class Snapshot:
    """Site state at ``ts`` (timezone-aware UTC).  Units in names."""

    ts: datetime
    # GPU [n_gpus]
    gpu_temp_c: np.ndarray
    hbm_temp_c: np.ndarray
    gpu_power_w: np.ndarray
    gpu_util_frac: np.ndarray
    sm_clock_mhz: np.ndarray
    throttle_frac: np.ndarray
    gpu_state: np.ndarray  # int8, GPU_OK / GPU_THROTTLED / GPU_DOWN / GPU_OFF
    last_xid_code: np.ndarray  # int16, 0 if none
    # rack [n_racks]
    rack_power_kw: np.ndarray
    rack_max_gpu_temp_c: np.ndarray
    rack_time_to_throttle_s: np.ndarray  # after loss of one CDU pump, inf if never
    # CDU [n_cdus]
    coolant_supply_temp_c: np.ndarray
    coolant_return_temp_c: np.ndarray
    coolant_flow_lpm: np.ndarray
    cdu_heat_kw: np.ndarray
    cdu_capacity_kw: np.ndarray
    pumps_running_count: np.ndarray  # int8
    # facility water loops [n_loops]
    loop_supply_temp_c: np.ndarray
    loop_return_temp_c: np.ndarray
    loop_heat_kw: np.ndarray
    # power tree [n_power]
    feed_power_kw: np.ndarray
    load_frac: np.ndarray  # of usable rating (rating × max_util_frac)
    power_n1_load_frac: np.ndarray  # worst load fraction after any single failure
    # sources [n_sources]
    source_power_mw: np.ndarray
    battery_soc_frac: np.ndarray  # NaN for non-batteries
    # fabric [n_links]
    link_up_flag: np.ndarray  # bool
    link_util_frac: np.ndarray
    # site scalars
    it_power_mw: float
    cooling_power_mw: float
    facility_power_mw: float
    generation_capacity_mw: float
    pue_ratio: float
    outdoor_wet_bulb_c: float
    outdoor_dry_bulb_c: float
    swing_amplitude_mw: float
    swing_ramp_mw_per_s: float
    jobs: list[JobStatus] = field(default_factory=list)
    # shortfall policy and ride-through (site scalars)
    policy_gpu_cap_w: float = float("inf")  # per-GPU limit the shortfall policy set, inf when none
    n_gpus_shed: int = 0  # GPUs in racks the shortfall policy switched off
    unserved_mw: float = 0.0  # demand that sources, batteries and UPSs did not carry
    ups_ride_through_s: float = float("inf")  # time the UPSs carry their present load on battery
    # source name -> seconds since its last good reading (inf when never)
    source_age_s: dict[str, float] = field(default_factory=dict)
    # heat leaving to the atmosphere at the towers, and the rate the site stores heat (GPUs,
    # coolant, plant water): facility power = heat_rejected_mw + heat_stored_mw
    heat_rejected_mw: float = float("nan")
    heat_stored_mw: float = float("nan")
