"""Static tables of a loaded site (struct of arrays): dense integer ids, index maps, ratings.

A site file (``data/sites/*.toml``) describes halls, rows, racks, power, cooling and
fabric compactly; :func:`twin.site.load.load_site` expands it into the arrays below.
Every entity kind has dense ids ``0..n-1``; ``<kind>_<other>`` arrays map an entity
to the id of its parent of kind ``other`` (``gpu_rack[g]`` is the rack of GPU ``g``).
Names are kept in parallel lists for display and for ingest's inventory mapping.
Arrays are read-only after loading; what changes tick to tick lives in the engine
(:class:`twin.engine.tick.TwinEngine`) and its results in separate arrays.

Units are in the names (see :mod:`twin.quantities`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from twin.arrays import FloatArray, IntArray

if TYPE_CHECKING:
    from twin.site.design import DesignFinding
    from twin.site.schema import SiteFile

# Power-element kinds, upstream to downstream.
POWER_KINDS = ("switchgear", "transformer", "ups", "busway")
# Source kinds.
SOURCE_KINDS = ("grid", "generator", "battery")
# Fabric tiers.
TIER_LEAF, TIER_SPINE, TIER_CORE = 0, 1, 2


@dataclass(frozen=True)
class GpuSpec:
    """Catalogue entry of one GPU type (all figures cited in ``data/catalogue.toml``)."""

    name: str
    tdp_w: float
    min_power_limit_w: float
    idle_power_w: float
    peak_bf16_tflops: float
    max_sm_clock_mhz: float
    max_operating_temp_c: float
    slowdown_temp_c: float
    shutdown_temp_c: float
    hbm_max_temp_c: float
    r_th_die_c_per_w: float
    r_th_hbm_c_per_w: float
    heat_capacity_j_per_k: float
    hbm_gb: float
    nvlink_gbps: float
    hbm_gbyte_per_s: float = 0.0  # HBM bandwidth [GB/s]; 0 = not given
    r_th_conv_frac: float = 0.5  # convective share of r_th_die_c_per_w at design plate flow
    hbm_power_frac: float = 0.15  # HBM share of board power
    leakage_w_per_k: float = 0.0  # static power rise per K of die temperature [W/K]
    junction_heat_frac: float = 0.05  # die, package and plate base share of heat_capacity_j_per_k (junction node)
    failures_per_1000_gpu_days: float = 0.8125  # hardware interruptions of a job; default RSC-1's 6.50 per 8-GPU node
    gemm_efficiency_frac: float = 0.80  # share of peak a large BF16 GEMM sustains at the TDP clock


@dataclass(frozen=True)
class CduSpec:
    """Catalogue entry of one CDU type.

    ``capacity_curve_supply_c`` / ``capacity_curve_kw`` are points of heat capacity
    against secondary supply temperature; interpolate linearly between them.
    """

    name: str
    placement: str  # "in-rack" or "in-row"
    capacity_curve_supply_c: tuple[float, ...]
    capacity_curve_kw: tuple[float, ...]
    pumps: int
    pumps_required: int
    pump_power_w: float
    design_flow_lpm: float
    approach_k: float
    pump_failover_s: float
    coolant: str
    loop_volume_l: float
    height_u: int = 0  # rack units taken by an in-rack CDU
    supply_pipe_length_m: float = 2.5  # CDU outlet to the farthest cold plate
    supply_pipe_id_mm: float = 40.0  # inner diameter of that run
    description: str = ""


@dataclass
class SiteTables:
    """All entities of one site as parallel numpy arrays (see module docstring)."""

    name: str
    description: str
    source_file: str

    # --- catalogue --------------------------------------------------------------
    gpu_specs: list[GpuSpec]
    cdu_specs: list[CduSpec]

    # --- compute ----------------------------------------------------------------
    hall_name: list[str]
    row_name: list[str]
    row_hall: np.ndarray  # int32 [n_rows]

    rack_name: list[str]
    rack_row: np.ndarray  # int32 [n_racks]
    rack_hall: np.ndarray  # int32 [n_racks]
    rack_x_m: np.ndarray  # float64 [n_racks], floor position of the rack centre
    rack_y_m: np.ndarray  # float64 [n_racks]
    rack_orientation_deg: np.ndarray  # float64 [n_racks], 0 = front faces +y
    rack_array: np.ndarray  # int32 [n_racks], array (pod of racks sharing leaf switches)
    rack_type: list[str]
    rack_cdu: np.ndarray  # int32 [n_racks], CDU cooling the rack
    rack_feed_a: np.ndarray  # int32 [n_racks], busway id of the A feed
    rack_feed_b: np.ndarray  # int32 [n_racks], busway id of the B feed, -1 if single-fed
    rack_rated_kw: np.ndarray  # float64 [n_racks], nameplate IT input

    node_name: list[str]  # hostnames, used by ingest's inventory mapping
    node_bmc: list[str]  # BMC address (host[:port]) per node
    node_rack: np.ndarray  # int32 [n_nodes]
    node_slot: np.ndarray  # int32 [n_nodes], position in the rack from the bottom (0-based)
    node_psus: np.ndarray  # int32 [n_nodes], PSUs installed
    node_psus_required: np.ndarray  # int32 [n_nodes], PSUs needed to run at full power
    node_psu_rating_w: np.ndarray  # float64 [n_nodes], rating of one PSU
    node_base_power_w: np.ndarray  # float64 [n_nodes], CPU+memory+NIC+fans at full load, excl. GPUs
    node_idle_base_power_w: np.ndarray  # float64 [n_nodes], same at idle

    gpu_node: np.ndarray  # int32 [n_gpus]
    gpu_rack: np.ndarray  # int32 [n_gpus]
    gpu_index: np.ndarray  # int32 [n_gpus], index on the node (0..7) = rail
    gpu_spec: IntArray  # int16 [n_gpus], index into gpu_specs

    # --- cooling ----------------------------------------------------------------
    plant_name: list[str]
    plant_capacity_kw: np.ndarray  # float64 [n_plants], heat rejection at design wet bulb
    plant_supply_setpoint_c: np.ndarray  # float64 [n_plants], facility water supply setpoint
    plant_design_wet_bulb_c: np.ndarray  # float64 [n_plants]
    plant_tower_approach_k: np.ndarray  # float64 [n_plants], tower approach to wet bulb
    plant_chiller_count: np.ndarray  # int32 [n_plants]
    plant_chiller_kw: np.ndarray  # float64 [n_plants], capacity of one chiller
    plant_cop: np.ndarray  # float64 [n_plants], chiller coefficient of performance
    loop_name: list[str]
    loop_plant: np.ndarray  # int32 [n_loops]
    loop_capacity_kw: np.ndarray  # float64 [n_loops]
    loop_flow_lpm: np.ndarray  # float64 [n_loops], design facility-water flow
    cdu_name: list[str]
    cdu_loop: np.ndarray  # int32 [n_cdus]
    cdu_spec: IntArray  # int16 [n_cdus], index into cdu_specs

    # --- power ------------------------------------------------------------------
    source_name: list[str]
    source_kind: np.ndarray  # int8 [n_sources], index into SOURCE_KINDS
    source_capacity_mw: np.ndarray  # float64 [n_sources], deliverable power
    source_energy_mwh: np.ndarray  # float64 [n_sources], battery energy (0 otherwise)
    source_ramp_mw_per_s: np.ndarray  # float64 [n_sources], how fast output can follow load
    source_bus: np.ndarray  # int32 [n_sources], power element (a switchgear) it feeds

    power_name: list[str]
    power_kind: np.ndarray  # int8 [n_power], index into POWER_KINDS
    power_parent: np.ndarray  # int32 [n_power], upstream element, -1 for switchgear
    power_side: np.ndarray  # int8 [n_power], 0 = A path, 1 = B path
    power_rating_kw: np.ndarray  # float64 [n_power], nameplate (kVA × pf for AC gear)
    power_max_util_frac: np.ndarray  # float64 [n_power], usable fraction of the rating
    power_efficiency_frac: np.ndarray  # float64 [n_power], conversion efficiency at the element
    power_voltage_v: np.ndarray  # float64 [n_power]
    power_phases: np.ndarray  # int8 [n_power]
    power_depth: np.ndarray  # int8 [n_power], 0 for switchgear, parents before children

    # --- fabric -----------------------------------------------------------------
    switch_name: list[str]
    switch_tier: np.ndarray  # int8 [n_switches], TIER_LEAF/SPINE/CORE
    switch_pod: np.ndarray  # int32 [n_switches], pod of a leaf/spine, -1 for core
    switch_plane: np.ndarray  # int32 [n_switches], spine plane (spine index in pod) / core group
    switch_ports: np.ndarray  # int32 [n_switches]
    link_a: np.ndarray  # int32 [n_links], lower-tier switch
    link_b: np.ndarray  # int32 [n_links], upper-tier switch
    link_gbps: np.ndarray  # float64 [n_links]
    gpu_leaf: np.ndarray  # int32 [n_gpus], leaf switch of the GPU's NIC
    nic_gbps: float  # per-GPU NIC rate
    fabric_rails: int
    fabric_pod_gpus: int  # GPUs in one full-bisection pod
    fabric_leaf_oversubscription: float  # down:up at the leaf
    fabric_spine_oversubscription: float  # down:up at the spine
    endpoint_name: list[str] = field(default_factory=list)  # storage / front-end endpoints
    endpoint_kind: list[str] = field(default_factory=list)
    endpoint_gbps: np.ndarray = field(default_factory=lambda: np.zeros(0))
    endpoint_switch: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))

    # --- sources, UPS and shortfall policy (defaults: every unit takes any step, no derating) --
    source_step_mw: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [n_sources] load acceptance
    source_iso_class: list[str] = field(default_factory=list)  # ISO 8528-5 class per source, "" if none
    source_derate_frac_per_k: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [n_sources]
    source_rated_ambient_c: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [n_sources]
    source_efficiency_frac: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [n_sources] round trip
    power_ride_through_kwh: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [n_power] UPS energy
    shortfall_policy: str = "cap"  # cap | power_brake | shed
    policy_response_s: float = 5.0  # time from a shortfall to the policy acting
    idle_nodes_off: bool = False  # the operator powers off nodes without work
    nominal_frequency_hz: float = 60.0
    # the island's frequency model and the grid contract per source, NaN where not given
    source_inertia_h_s: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [n_sources] H [s]
    source_droop_frac: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [n_sources]
    source_governor_s: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [n_sources] lag [s]
    source_overspeed_trip_frac: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [n_sources]
    source_export_limit_mw: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [n_sources] grid
    source_short_circuit_mva: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [n_sources] grid
    source_voltage_change_max_frac: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [n_sources] grid

    # --- site ---------------------------------------------------------------------
    latitude_deg: float = 0.0
    longitude_deg: float = 0.0
    weather: str = "memphis"  # key of the daily weather curve in data/weather.toml
    site_overhead_mw: float = 0.0  # lighting, offices, front-end network and storage
    default_job: str = ""  # job file name in data/jobs/ placed by the live twin
    storage_write_gbps: float = 16_000.0  # checkpoint storage, aggregate write [Gbit/s]
    storage_read_gbps: float = 56_000.0  # aggregate read [Gbit/s]
    storage_node_gbps: float = 400.0  # per-node storage NIC [Gbit/s]
    storage_share_frac: float = 1.0  # share of the storage one job gets beside other jobs
    # PSU efficiency at the load points of twin.physics.power.PSU_LOAD_POINTS_FRAC; None: the
    # catalogue curve (80 PLUS Titanium).  Set by a site file's [calibration] block.
    psu_efficiency_points_frac: np.ndarray | None = None
    # design load of each rack (GPUs at TDP + nodes' full non-GPU power) and what the design
    # checks found (twin.site.design.DesignFinding; warnings only, errors stop the load)
    rack_full_kw: np.ndarray = field(default_factory=lambda: np.zeros(0))
    design_findings: list[DesignFinding] = field(default_factory=list)
    site_model: SiteFile | None = None  # the twin.site.schema.SiteFile it was built from (what-if edits apply to it)

    # --- cooling dynamics (None: defaults of twin.site.cooling_defaults) -----------
    loop_pipe_length_m: np.ndarray | None = None  # float64 [n_loops], one-way run
    loop_pipe_id_mm: np.ndarray | None = None  # float64 [n_loops]
    loop_volume_l: np.ndarray | None = None  # float64 [n_loops], water in the loop
    plant_volume_l: np.ndarray | None = None  # float64 [n_plants], headers and storage
    plant_chiller_restart_s: np.ndarray | None = None  # float64 [n_plants]

    # ------------------------------------------------------------------------------
    @property
    def n_gpus(self) -> int:
        return int(self.gpu_node.size)

    @property
    def n_nodes(self) -> int:
        return int(self.node_rack.size)

    @property
    def n_racks(self) -> int:
        return int(self.rack_row.size)

    @property
    def n_cdus(self) -> int:
        return int(self.cdu_loop.size)

    @property
    def n_power(self) -> int:
        return int(self.power_parent.size)

    @property
    def n_sources(self) -> int:
        return int(self.source_bus.size)

    @property
    def n_switches(self) -> int:
        return int(self.switch_tier.size)

    @property
    def n_links(self) -> int:
        return int(self.link_a.size)

    def gpu_spec_array(self, attr: str) -> FloatArray:
        """Per-GPU array of a catalogue attribute, e.g. ``gpu_spec_array("tdp_w")``."""
        values = np.array([getattr(s, attr) for s in self.gpu_specs], dtype=np.float64)
        return values[self.gpu_spec]

    def cdu_spec_array(self, attr: str) -> FloatArray:
        """Per-CDU array of a scalar catalogue attribute."""
        values = np.array([getattr(s, attr) for s in self.cdu_specs], dtype=np.float64)
        return values[self.cdu_spec]
