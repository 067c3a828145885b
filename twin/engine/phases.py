"""Typed results of the tick phases: one small dataclass per phase, units in the field names.

:meth:`twin.engine.tick.TwinEngine.tick` runs its phases in order (one module each under
:mod:`twin.engine`); each phase takes the results it needs and returns its own (see
``docs/physics.md``).  Arrays are indexed by
the dense ids of :class:`twin.site.tables.SiteTables`; the prefix names the entity
(``gpu_``, ``node_``, ``rack_``, ``cdu_``, ``loop_``, ``plant_``, ``power_``,
``source_``, ``link_``).  Per-GPU values that are the same for every GPU of a site may
be scalars (numpy broadcasting).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from twin.engine.balance import SiteBalance
from twin.physics.island import GenerationChecks
from twin.physics.policy import PolicyAction, PolicyState
from twin.physics.sources import Dispatch, SwingShare
from twin.physics.swing import ProfileStats, SwingReport
from twin.training.jobstatus import JobStatus


@dataclass(frozen=True)
class WeatherResult:
    """Outdoor air at the site [°C]."""

    dry_bulb_c: float
    wet_bulb_c: float


@dataclass(frozen=True)
class PowerStateResult:
    """Which power sources and elements are live, and how racks draw on their feeds."""

    source_live: np.ndarray  # bool [n_sources]
    power_live: np.ndarray  # bool [n_power]
    rack_feed_a_share_frac: np.ndarray  # [n_racks] share of the rack's load on its A feed
    rack_feed_b_share_frac: np.ndarray  # [n_racks] share on its B feed (0 single-fed)
    rack_dark: np.ndarray  # bool [n_racks]: neither feed live
    rack_shed: np.ndarray = field(
        default_factory=lambda: np.zeros(0, np.int64)
    )  # racks whose nodes the policy powers off
    idle_racks_count: int = 0  # racks holding no GPU of a placed job (shed first), 0 without jobs
    rack_idle_flag: np.ndarray | None = None  # bool [n_racks]: holds no GPU of a placed job (None without jobs)


@dataclass(frozen=True)
class DemandResult:
    """What the GPUs ask for and what may be drawn: utilisation, demand, limits, PSUs."""

    gpu_util_frac: np.ndarray  # [n_gpus], missing readings held, clipped to 0–1
    gpu_power_demand_w: np.ndarray  # [n_gpus] board power at full clocks
    gpu_power_limit_w: np.ndarray | float  # enforced board limit (scalar when uniform)
    gpu_off: np.ndarray  # bool [n_gpus]: in a dark rack or a node switched off
    node_off: np.ndarray | None  # bool [n_nodes] switched off by the operator, None if none
    node_psus_live: np.ndarray  # [n_nodes] PSUs that can deliver power
    gpu_power_brake: np.ndarray | bool  # bool [n_gpus] (or False): node asserts the power brake
    node_util_frac: np.ndarray  # [n_nodes] mean GPU utilisation
    gpu_operator_limit_w: np.ndarray | float | None = None  # limit the operator set, before the shortfall policy
    gpu_node_off: np.ndarray | None = None  # bool [n_gpus]: on a switched-off node (node_off spread), None if none


@dataclass(frozen=True)
class CoolingResult:
    """What the GPUs see this tick: secondary flow and supply, plate resistances (per CDU)."""

    pumps_running_count: np.ndarray  # float [n_cdus]
    coolant_flow_lpm: np.ndarray  # [n_cdus] secondary flow (after pump fail-over)
    cdu_flow_w_per_k: np.ndarray  # [n_cdus] secondary heat-capacity flow ṁ cp
    coolant_supply_temp_c: np.ndarray  # [n_cdus] secondary supply reaching the cold plates (delayed)
    cdu_setpoint_c: np.ndarray  # [n_cdus] secondary supply setpoint the valve holds this tick
    cdu_facility_temp_c: np.ndarray  # [n_cdus] facility water reaching the CDU (delayed)
    cdu_capacity_kw: np.ndarray  # [n_cdus] rated-approach duty at that facility water
    cdu_effectiveness_frac: np.ndarray  # [n_cdus] exchanger effectiveness, secondary side
    cdu_coolant_cp_j_per_kg_k: np.ndarray  # [n_cdus]
    cdu_coolant_density_kg_per_m3: np.ndarray  # [n_cdus]
    cdu_plate_r_cal_c_per_w: np.ndarray  # [n_cdus] caloric resistance of one GPU plate, inf with no flow
    cdu_plate_flow_ratio_frac: np.ndarray  # [n_cdus] GPU plate flow over its design flow
    loop_supply_temp_c: np.ndarray  # [n_loops] facility supply reaching the loop's CDUs (delayed)
    loop_flow_lpm: np.ndarray  # [n_loops] facility flow
    plant_chillers_available_count: np.ndarray  # [n_plants] chillers with power and not failed
    wet_bulb_c: float  # outdoor wet bulb the towers see


@dataclass(frozen=True)
class GpuThermalResult:
    """Throttling, board power and temperatures after this tick's thermal step."""

    gpu_power_w: np.ndarray  # [n_gpus] board power (0 when down or off)
    gpu_clock_frac: np.ndarray  # [n_gpus] clock fraction (0 when down or off)
    gpu_clock_event_mask: np.ndarray  # int32 [n_gpus], NVML bit layout
    hbm_temp_c: np.ndarray  # [n_gpus]
    gpu_state: np.ndarray  # int8 [n_gpus], GPU_OK / GPU_THROTTLED / GPU_DOWN / GPU_OFF
    gpu_down: np.ndarray  # bool [n_gpus]: not running (shut down, dark, or switched off)
    any_gpu_down: bool
    rack_r_die_c_per_w: np.ndarray  # [n_racks] highest die-to-coolant resistance in the rack
    cdu_gpu_heat_w: np.ndarray  # [n_cdus] heat the GPU packages gave their coolant over the tick


@dataclass(frozen=True)
class ItPowerResult:
    """Node and rack power at the PSUs."""

    node_dc_power_w: np.ndarray  # [n_nodes] DC load behind the PSUs
    node_input_power_w: np.ndarray  # [n_nodes] AC input
    rack_power_kw: np.ndarray  # [n_racks] IT input power
    rack_gpu_power_w: np.ndarray  # [n_racks] GPU board power


@dataclass(frozen=True)
class HeatResult:
    """Secondary loops after the tick: heat passed to the facility water, temperatures, air heat."""

    cdu_heat_kw: np.ndarray  # [n_cdus] heat the CDU passed to facility water over the tick
    coolant_supply_temp_c: np.ndarray  # [n_cdus] secondary supply leaving the CDU
    coolant_return_temp_c: np.ndarray  # [n_cdus] mixed secondary coolant
    cdu_pump_kw: float  # electrical power of all CDU pumps
    loop_air_heat_kw: np.ndarray  # [n_loops] rack heat to air (PSU losses, base power not on plates)
    loop_cdu_heat_kw: np.ndarray  # [n_loops] heat of the loop's CDUs
    cdu_heat_in_w: np.ndarray  # [n_cdus] heat into each secondary loop over the tick


@dataclass(frozen=True)
class PowerTreeResult:
    """Power-tree loads and single-failure (N-1) loads."""

    feed_power_kw: np.ndarray  # [n_power] delivered downstream
    load_frac: np.ndarray  # [n_power] of usable rating
    power_n1_load_kw: np.ndarray  # [n_power] worst load after any single failure
    power_n1_load_frac: np.ndarray  # [n_power]
    power_n1_worst_by: np.ndarray  # int32 [n_power] element whose loss gives that load, -1 none
    tree_input_kw: float  # input of the root elements (IT power plus conversion losses)


@dataclass(frozen=True)
class SupplyResult:
    """What the sources, batteries and UPSs delivered this tick."""

    dispatch: Dispatch  # per source: output, state of charge, derated capacity, reach
    ups_power_mw: float  # carried by the UPS batteries (sources and batteries fell short)
    unserved_mw: float  # demand nobody carried
    ups_ride_through_s: float  # time the UPSs would carry their present load on battery


@dataclass(frozen=True)
class PlantResult:
    """Facility loops and plant after the tick: cooling power by part, heat rejected and stored."""

    cooling_kw: dict[str, float]  # by part, see twin.physics.cooling.cooling_power_kw
    loop_heat_kw: np.ndarray  # [n_loops] heat returned to the plant over the tick
    loop_return_temp_c: np.ndarray  # [n_loops]
    plant_supply_temp_c: np.ndarray  # [n_plants] after the tick
    plant_economiser_kw: np.ndarray  # [n_plants] heat the water-side economiser removed
    plant_chiller_kw: np.ndarray  # [n_plants] heat the chillers lifted
    plant_chillers_online_count: np.ndarray  # [n_plants]
    plant_cop_ratio: np.ndarray  # [n_plants] chiller COP at the present lift
    heat_rejected_mw: float  # heat leaving to the atmosphere at the towers (incl. chiller and fan work)
    heat_stored_mw: float  # rate of change of the heat held in GPUs, coolant and plant water


@dataclass(frozen=True)
class SiteResult:
    """Site power: cooling by part, IT and facility totals, source dispatch and batteries, shortfall policy."""

    cooling_kw: dict[str, float]  # by part, see twin.physics.cooling.cooling_power_kw
    it_mw: float
    cooling_mw: float
    facility_mw: float
    source_power_mw: np.ndarray  # [n_sources] (negative: a battery charging)
    battery_soc_frac: np.ndarray  # [n_sources], NaN for non-batteries
    balance: SiteBalance
    loop_heat_kw: np.ndarray  # [n_loops] heat returned to the plant over the tick
    loop_return_temp_c: np.ndarray  # [n_loops]
    plant_supply_temp_c: np.ndarray  # [n_plants] after the tick
    plant_economiser_kw: np.ndarray  # [n_plants] heat the water-side economiser removed
    plant_chiller_kw: np.ndarray  # [n_plants] heat the chillers lifted
    plant_chillers_online_count: np.ndarray  # [n_plants]
    plant_cop_ratio: np.ndarray  # [n_plants] chiller COP at the present lift
    heat_rejected_mw: float  # heat leaving to the atmosphere at the towers (incl. chiller and fan work)
    heat_stored_mw: float  # rate of change of the heat held in GPUs, coolant and plant water
    supply: SupplyResult | None = None
    policy_in_force: PolicyAction = PolicyAction()  # the policy's action during this tick
    policy: PolicyState = PolicyState()  # after this tick: in force from the next tick, and pending


@dataclass(frozen=True)
class FabricResult:
    """Link state and estimated utilisation."""

    link_up_flag: np.ndarray  # bool [n_links]
    link_util_frac: np.ndarray  # [n_links]


@dataclass(frozen=True)
class JobsResult:
    """Placed jobs: their status and the shape of their GPU power through the training phases."""

    statuses: list[JobStatus]
    power_shapes: list[ProfileStats | None]  # per status (None when stalled)


@dataclass(frozen=True)
class ProjectionResult:
    """Per-rack projections after cooling failures, from the hottest GPU of each rack."""

    times_s: dict[str, np.ndarray]  # <scenario>_throttle_s / _shutdown_s, [n_racks], inf if never
    rack_max_gpu_temp_c: np.ndarray  # [n_racks]


@dataclass(frozen=True)
class TickResults:
    """Every phase's result of one tick, in phase order; the snapshot is built from these."""

    ts: datetime
    weather: WeatherResult
    power_state: PowerStateResult
    demand: DemandResult
    cooling: CoolingResult
    gpu_thermal: GpuThermalResult
    it_power: ItPowerResult
    heat: HeatResult
    power_tree: PowerTreeResult
    site: SiteResult
    fabric: FabricResult
    jobs: list[JobStatus]
    swing: SwingReport
    projections: ProjectionResult
    swing_share: SwingShare | None = None
    generation: Callable[[], GenerationChecks] | None = None  # the generation checks, on demand


@dataclass
class TickDetail:
    """Results that the Snapshot contract has no field for (yet)."""

    clock_event_mask: np.ndarray  # int32 per GPU, NVML bit layout
    dark_racks: np.ndarray  # int32 rack ids
    power_live: np.ndarray  # bool per element
    source_live: np.ndarray  # bool per source: not tripped or failed
    power_n1_worst_by: np.ndarray  # int32 per element: element whose loss gives the worst load
    power_headroom_kw: np.ndarray  # per element: rating × max_util_frac − load (negative = overloaded)
    power_n1_headroom_kw: np.ndarray  # per element: usable rating − worst single-failure load
    balance: SiteBalance
    swing: SwingReport
    cooling_kw: dict[str, float]
    projections_s: dict[str, np.ndarray]  # per rack: <scenario>_throttle_s / _shutdown_s
    supply: SupplyResult | None = None  # dispatch per source, UPS and unserved power
    policy_in_force: PolicyAction = PolicyAction()  # shortfall policy's action during the tick
    policy: PolicyState = PolicyState()  # after the tick (in force next, pending)
    swing_share: SwingShare | None = None  # the swing per source against its limits
    racks_shed: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # rack ids shed by the policy
    # reserve, N-1, frequency, rejection and grid contract: worked out when first read (:attr:`generation`)
    # and kept here; the function that works them out is not a field, so a published detail carries
    # the figures once read and never a function
    generation_figures: GenerationChecks | None = None

    def defer_generation(self, checks: Callable[[], GenerationChecks] | None) -> None:
        """Let :attr:`generation` call ``checks`` when first read (None: no generation figures)."""
        self.__dict__["_generation_checks"] = checks

    @property
    def generation(self) -> GenerationChecks | None:
        """The tick's :class:`twin.physics.island.GenerationChecks` (computed on first read, then kept)."""
        checks = self.__dict__.get("_generation_checks")
        if self.generation_figures is None and checks is not None:
            self.generation_figures = checks()
        return self.generation_figures
