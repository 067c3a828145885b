"""What the world tells the twin for one tick: :class:`TickInputs` and placed jobs.

Defaults describe a nominal site: every element live, nominal utilisation, all pumps,
chillers and PSUs running, weather from the site's curve.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from twin.physics import swing
from twin.training.jobfile import TrainingJob

DEFAULT_UTIL_FRAC = 0.9  # nominal training load (GPU_UTIL 90–100 % [Est-H100-Training-Load])


@dataclass
class PlacedJob:
    """A training job (:class:`twin.training.jobfile.TrainingJob`) on site GPUs."""

    spec: TrainingJob
    gpu_ids: np.ndarray


@dataclass
class TickInputs:
    """What the world tells the twin for one tick.  Defaults: everything nominal.

    Per-GPU arrays may be scalars (broadcast).  NaN utilisation or power demand means
    "no reading": the GPU keeps its previous value.
    """

    ts: datetime | None = None  # instant of the tick; default: previous tick + dt
    gpu_util_frac: np.ndarray | float = DEFAULT_UTIL_FRAC
    gpu_power_demand_w: np.ndarray | float | None = None  # overrides the util-derived demand
    gpu_power_limit_w: np.ndarray | float | None = None  # enforced board limit, default TDP
    pumps_running_count: np.ndarray | None = None  # int per CDU, default all installed pumps
    coolant_flow_lpm: np.ndarray | None = None  # measured secondary flow per CDU (NaN = use the pump model)
    loop_supply_temp_c: np.ndarray | None = None  # facility supply override per loop (NaN = plant model)
    cdu_supply_setpoint_c: np.ndarray | None = None  # secondary supply setpoint per CDU (NaN = none): the CDU
    #                                                  supplies no colder than this
    loop_flow_lpm: np.ndarray | None = None  # facility flow per loop, e.g. 0 after a pump trip (NaN = design)
    plant_chillers_running: np.ndarray | None = None  # default all chillers available
    node_psus_failed: np.ndarray | None = None  # int per node
    nodes_off: np.ndarray | None = None  # bool per node: powered off by the operator (not a fault)
    gpu_r_th_factor: np.ndarray | None = None  # per-GPU multiplier of the die-to-coolant resistance
    #                                            (a degrading thermal interface), default 1
    failed_power: np.ndarray | list[int] = field(default_factory=list)  # power element ids
    failed_sources: np.ndarray | list[int] = field(default_factory=list)  # source ids
    failed_links: np.ndarray | list[int] = field(default_factory=list)  # link ids
    outdoor_dry_bulb_c: float | None = None
    outdoor_wet_bulb_c: float | None = None
    swing_jobs: list[swing.SwingJob] | None = None  # default: from placed jobs, else one job on all GPUs
    swing_alignment: str = swing.DEFAULT_ALIGNMENT  # jobs' steps in phase ("synchronised") or "independent"
    jobs: list[PlacedJob] = field(default_factory=list)
    priority_gpus: np.ndarray | None = None  # GPUs the shortfall policy sheds last (default: the placed jobs')
    supply_excursion_k: float = 5.0  # ΔT of the projected supply-temperature excursion
    recover_down_gpus: bool = False  # clear the thermal-shutdown latch of GPUs that cooled down
