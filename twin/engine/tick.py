"""The twin engine: one tick composes the physical models into a :class:`Snapshot`.

:class:`TwinEngine` is built once per site (everything static is precomputed there)
and holds the only state that carries over between ticks: GPU die temperatures, the
thermal-shutdown latch, battery state of charge, and the cooling state (CDU pumps and
flow, the temperatures of the secondary loops, facility loops and plant water, the
transport-delay histories, chillers online and restarting, the heat stored).
:meth:`TwinEngine.tick` advances it by ``dt_s`` under
:class:`TickInputs` and returns a :class:`twin.engine.snapshot.Snapshot`.

Each phase is a short method that takes the typed results it needs and returns its own
(the dataclasses of :mod:`twin.engine.phases`); ``tick`` composes them in order and
builds the snapshot from the :class:`~twin.engine.phases.TickResults`.  The phases call
the model functions of :mod:`twin.physics` rather than re-deriving them:

1. ``weather``      :class:`WeatherResult`      outdoor dry/wet bulb from the curve or the inputs;
2. ``power_state``  :class:`PowerStateResult`   live power elements and sources, rack feed shares, dark racks;
3. ``demand``       :class:`DemandResult`       GPU power demand and limit, node PSUs and power brake;
4. ``cooling``      :class:`CoolingResult`      pump fail-over, delayed facility and secondary supply, plates;
5. ``gpu_thermal``  :class:`GpuThermalResult`   leakage, throttling, board power, exact thermal step, HBM;
6. ``it_power``     :class:`ItPowerResult`      node and rack input power (PSU efficiency);
7. ``heat``         :class:`HeatResult`         CDU loop step under supply control, air heat;
8. ``power_tree``   :class:`PowerTreeResult`    roll-up, utilisation, vectorised N-1;
9. ``site``         :class:`SiteResult`         facility loops and plant, cooling power, heat rejected/stored, dispatch;
10. ``fabric``      :class:`FabricResult`       link state and an estimated link utilisation;
11. ``jobs``        :class:`JobsResult`         placed jobs (:mod:`twin.training.sitejob`) and their power shapes
                                                (:mod:`twin.training.jobphases`, cached by job status);
12. ``swing``       ``SwingReport``             swing amplitude/ramp, dominant line and dips of the running jobs'
                                                phases (:mod:`twin.training.phases`) vs what supply can follow;
13. ``projections`` :class:`ProjectionResult`   time to throttle/shutdown after cooling failures, per rack.

Every coolant node steps exactly and passes on what it did not store, so facility power
equals the heat rejected at the towers plus the change of stored heat, every tick.  The
GPUs see the secondary supply predicted with the previous tick's heat (the heat phase
corrects it); the CDUs see the plant's supply of the previous tick, each delayed by its
pipe run.  Approximations are listed in ``docs/physics.md``.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import numpy as np

from twin.engine.balance import BATTERY as _BATTERY
from twin.engine.balance import SiteBalance, site_balance
from twin.engine.groups import Groups
from twin.engine.inputs import DEFAULT_UTIL_FRAC, PlacedJob, TickInputs
from twin.engine.phases import (
    CoolingResult,
    DemandResult,
    FabricResult,
    GpuThermalResult,
    HeatResult,
    ItPowerResult,
    JobsResult,
    PowerStateResult,
    PowerTreeResult,
    ProjectionResult,
    SiteResult,
    SupplyResult,
    TickDetail,
    TickResults,
    WeatherResult,
)
from twin.engine.snapshot import GPU_DOWN, GPU_OFF, GPU_THROTTLED, Snapshot
from twin.physics import (
    cooling,
    fabric,
    failures,
    loops,
    plant,
    policy,
    power,
    powertree,
    sources,
    swing,
    thermal,
    weather,
)
from twin.site import cooling_defaults
from twin.site.tables import SiteTables
from twin.training import phases as job_phases

__all__ = ["PlacedJob", "SiteBalance", "TickDetail", "TickInputs", "TwinEngine", "START_TS", "DEFAULT_UTIL_FRAC"]

log = logging.getLogger(__name__)

# --- modelling constants (each [E] unless cited; see docs/physics.md) ---------------
GPU_FLOW_SHARE_FRAC = 0.8  # [E] share of a rack's secondary flow through GPU cold plates (rest: CPUs, NICs)
BASE_LIQUID_CAPTURE_FRAC = 0.5  # [E] share of non-GPU node power removed by liquid (CPU cold plates)
SWITCH_POWER_W = 1700.0  # [E] SN5600-class switch with 64 × 800G optics (~15 W each) + ASIC/CPU/fans
DEFAULT_STEP_TIME_S = 2.0  # [E] step time of the nominal job (swing period), Uptime: 1–2 s
DEFAULT_COMPUTE_FRAC = 0.85  # [E] share of the step at busy power
CROSS_POD_TRAFFIC_FRAC = 0.5  # [E] share of a pod's uplink traffic that continues to the core
XID_THERMAL_SHUTDOWN = 79  # [NVIDIA-XID-Catalog]: "fallen off the bus", thermal suspect
START_TS = datetime(2024, 7, 22, 9, 20, tzinfo=UTC)  # Colossus training start, 04:20 CDT [Musk-2024-07-22]


def _uniform_or_array(values: np.ndarray) -> float | np.ndarray:
    """A scalar when every entry is equal (cheaper broadcasting on the hot path)."""
    return float(values[0]) if values.size and np.all(values == values[0]) else values


def _as_ids(values, n: int, what: str) -> np.ndarray:
    ids = np.asarray(values, dtype=np.int64).ravel()
    if ids.size and (ids.min() < 0 or ids.max() >= n):
        raise ValueError(f"{what}: ids must be in 0..{n - 1}")
    return ids


class TwinEngine:
    """Per-site tick engine (see module docstring)."""

    def __init__(self, state: SiteTables, start: datetime = START_TS, settle: bool = True) -> None:
        self.state = state
        self.ts = start
        self._precompute_gpu(state)
        self._precompute_cooling(state)
        self._precompute_power(state)
        self._precompute_fabric(state)
        self.weather_curve = weather.load_weather(state.weather)
        # carried state
        self.gpu_temp_c = np.full(state.n_gpus, 30.0)
        self.gpu_down = np.zeros(state.n_gpus, dtype=bool)
        self.gpu_util_frac = np.full(state.n_gpus, DEFAULT_UTIL_FRAC)
        self.gpu_power_w = np.zeros(state.n_gpus)
        self._reset_stores()
        self.source_power_mw = np.zeros(state.n_sources)
        self.sources_live_before = np.ones(state.n_sources, dtype=bool)  # a source that goes down has tripped
        self.policy = policy.PolicyState()
        self._init_cooling_state(state)
        self.detail: TickDetail | None = None
        self._shape_cache: dict = {}  # job phase shapes by job status (twin.training.jobphases)
        self._default_shape = job_phases.profile_stats(
            job_phases.two_phase_profile(DEFAULT_STEP_TIME_S, DEFAULT_COMPUTE_FRAC)
        )
        if settle:
            self.settle(TickInputs(ts=start))

    def settle(self, inputs: TickInputs) -> Snapshot:
        """Reach the steady state under ``inputs`` (long exact steps); batteries and UPSs stay full.

        Two steps, and up to three more while the shortfall policy is still changing its action.
        """
        self._settling = True  # settling is not time: no store drains, no UPS drops its racks
        try:
            for i in range(5):
                before = self.policy.applied
                snap = self.tick(3600.0, inputs)
                if i >= 1 and self.policy.applied.same_as(before):
                    break
        finally:
            self._settling = False
        self._reset_stores()
        return snap

    def _reset_stores(self) -> None:
        """Batteries and UPSs full, no UPS dropped."""
        s = self.state
        self.battery_soc_frac = np.where(s.source_kind == _BATTERY, 1.0, np.nan)
        self.ups_energy_frac = np.where(self.ups_kwh > 0, 1.0, np.nan)
        self.ups_dropped = np.zeros(s.n_power, dtype=bool)
        self.supply_dipped = False  # a source tripped last tick and the rest fell short: every bus dipped

    # --- construction -----------------------------------------------------------------
    def _precompute_gpu(self, s: SiteTables) -> None:
        spec = s.gpu_spec_array
        self.tdp_w = _uniform_or_array(spec("tdp_w"))
        self.idle_w = _uniform_or_array(spec("idle_power_w"))
        self.min_limit_w = _uniform_or_array(spec("min_power_limit_w"))
        self.max_clock_mhz = _uniform_or_array(spec("max_sm_clock_mhz"))
        self.max_op_c = _uniform_or_array(spec("max_operating_temp_c"))
        self.slowdown_c = _uniform_or_array(spec("slowdown_temp_c"))
        self.shutdown_c = _uniform_or_array(spec("shutdown_temp_c"))
        self.hbm_max_c = _uniform_or_array(spec("hbm_max_temp_c"))
        self.r_die_c_per_w = _uniform_or_array(spec("r_th_die_c_per_w"))
        self.r_hbm_c_per_w = _uniform_or_array(spec("r_th_hbm_c_per_w"))
        self.r_conv_frac = _uniform_or_array(spec("r_th_conv_frac"))
        self.hbm_power_frac = _uniform_or_array(spec("hbm_power_frac"))
        self.leakage_w_per_k = _uniform_or_array(spec("leakage_w_per_k"))
        self.heat_capacity_j_per_k = _uniform_or_array(spec("heat_capacity_j_per_k"))
        # site-wide figures of the GPU models that the tick reads every step
        self.idle_mean_w = float(np.mean(self.idle_w))
        self.heat_capacity_mean_j_per_k = float(np.mean(self.heat_capacity_j_per_k))
        self.max_op_min_c, self.shutdown_min_c = float(np.min(self.max_op_c)), float(np.min(self.shutdown_c))
        self.tdp_max_w = float(np.max(self.tdp_w))
        self.min_limit_min_w, self.min_limit_max_w = float(np.min(self.min_limit_w)), float(np.max(self.min_limit_w))
        self.gpu_cdu = s.rack_cdu[s.gpu_rack].astype(np.int64)
        self.by_cdu = Groups(self.gpu_cdu, s.n_cdus)
        self.uniform_gpus = len({s.gpu_specs[i].name for i in np.unique(s.gpu_spec)}) <= 1
        self.by_node = Groups(s.gpu_node, s.n_nodes)
        self.by_rack = Groups(s.gpu_rack, s.n_racks)
        self.node_by_rack = Groups(s.node_rack, s.n_racks)
        self.gpus_per_node = np.maximum(self.by_node.counts, 1)
        self.gpus_per_rack = self.by_rack.counts
        self.gpus_per_cdu = np.bincount(self.gpu_cdu, minlength=s.n_cdus)
        # per-rack GPU constants for projections, the conservative end over the rack's GPUs:
        # highest resistance and idle power, lowest heat capacity and thresholds
        per_gpu = lambda v: np.broadcast_to(np.asarray(v, dtype=np.float64), (s.n_gpus,))  # noqa: E731
        rack_min = lambda v: -self.by_rack.max(-per_gpu(v))  # noqa: E731
        self.rack_r_die_c_per_w = self.by_rack.max(per_gpu(self.r_die_c_per_w))
        self.rack_heat_capacity_j_per_k = rack_min(self.heat_capacity_j_per_k)
        self.rack_idle_w = self.by_rack.max(per_gpu(self.idle_w))
        self.rack_r_conv_frac = _uniform_or_array(self.by_rack.max(per_gpu(self.r_conv_frac)))
        self.rack_max_op_c = rack_min(self.max_op_c)
        self.rack_slowdown_c = rack_min(self.slowdown_c)
        self.rack_shutdown_c = rack_min(self.shutdown_c)

    def _precompute_cooling(self, s: SiteTables) -> None:
        cdu = s.cdu_spec_array
        self.cdu_pumps = cdu("pumps")
        self.cdu_pumps_required = cdu("pumps_required")
        self.cdu_pump_power_w = cdu("pump_power_w")
        self.cdu_design_flow_lpm = cdu("design_flow_lpm")
        self.cdu_approach_k = cdu("approach_k")
        self.cdu_failover_s = cdu("pump_failover_s")
        self.cdu_loop_volume_l = cdu("loop_volume_l")
        specs = s.cdu_specs
        width = max(len(c.capacity_curve_supply_c) for c in specs) if specs else 2
        xs = np.array(
            [np.pad(c.capacity_curve_supply_c, (0, width - len(c.capacity_curve_supply_c)), mode="edge") for c in specs]
        )
        ys = np.array([np.pad(c.capacity_curve_kw, (0, width - len(c.capacity_curve_kw)), mode="edge") for c in specs])
        # padding repeats the last point; nudge repeated x so the curve stays increasing
        xs = xs + np.cumsum(np.diff(xs, prepend=xs[:, :1] - 1.0, axis=1) == 0, axis=1) * 1e-6
        self.cdu_curve_x = xs[s.cdu_spec]
        self.cdu_curve_y = ys[s.cdu_spec]
        coolants = {c.coolant for c in specs}
        if len(coolants) > 1:
            log.warning("several secondary coolants %s; using the first for properties", sorted(coolants))
        self.coolant = specs[0].coolant if specs else "PG25"
        self.cdu_in_rack = np.array([specs[i].placement == "in-rack" for i in s.cdu_spec], dtype=bool)
        self.n_plants, self.n_loops = len(s.plant_name), len(s.loop_name)
        setpoint = s.plant_supply_setpoint_c[s.loop_plant[s.cdu_loop]]
        # the CDU holds its secondary supply at the facility setpoint plus its rated approach
        self.cdu_setpoint_c = setpoint + self.cdu_approach_k
        self.cdu_rated_kw = np.maximum(
            cooling.cdu_capacity_kw(self.cdu_setpoint_c, self.cdu_curve_x, self.cdu_curve_y), 1e-3
        )
        # coolant properties at the setpoints, held constant (they change < 1 % per 10 K), so the
        # stored heat C·T of every node is exact
        self.cdu_cp, self.cdu_rho = cooling.coolant_properties(self.cdu_setpoint_c, self.coolant)
        self.cdu_w_per_k_per_lpm = self.cdu_rho * self.cdu_cp / 60_000.0
        self.cdu_heat_capacity_j_per_k = self.cdu_loop_volume_l / 1e3 * self.cdu_rho * self.cdu_cp
        self.cdu_design_w_per_k = self.cdu_design_flow_lpm * self.cdu_w_per_k_per_lpm
        self.cdu_pipe_l = loops.pipe_volume_l(cdu("supply_pipe_length_m"), cdu("supply_pipe_id_mm"))
        self.plate_design_kg_s = (
            cooling.mass_flow_kg_s(self.cdu_design_flow_lpm, self.cdu_rho)
            * GPU_FLOW_SHARE_FRAC
            / np.maximum(self.gpus_per_cdu, 1)
        )
        self.rack_pumps_required = self.cdu_pumps_required[s.rack_cdu]
        self.rack_loop = s.cdu_loop[s.rack_cdu]
        self.racks_per_cdu = np.bincount(s.rack_cdu, minlength=s.n_cdus)
        self.one_rack_per_cdu = bool(self.racks_per_cdu.max(initial=0) <= 1)
        self.loop_rack_share_frac = np.bincount(self.rack_loop, minlength=self.n_loops) / max(s.n_racks, 1)
        # facility loops: water volume and supply pipe from the site (defaults filled in)
        loop_set = s.plant_supply_setpoint_c[s.loop_plant]
        cp_w, rho_w = cooling.coolant_properties(loop_set, "water")
        self.loop_w_per_k_per_lpm = rho_w * cp_w / 60_000.0
        length = (
            s.loop_pipe_length_m
            if s.loop_pipe_length_m is not None
            else np.full(self.n_loops, cooling_defaults.LOOP_PIPE_LENGTH_M)
        )
        pipe_id = s.loop_pipe_id_mm if s.loop_pipe_id_mm is not None else cooling_defaults.pipe_id_mm(s.loop_flow_lpm)
        volume = s.loop_volume_l if s.loop_volume_l is not None else cooling_defaults.loop_volume_l(length, pipe_id)
        self.loop_heat_capacity_j_per_k = volume / 1e3 * rho_w * cp_w
        self.loop_pipe_l = loops.pipe_volume_l(length, pipe_id)
        # plant: one water node, chillers with a Carnot fraction calibrated at the design lift
        cp_p, rho_p = cooling.coolant_properties(s.plant_supply_setpoint_c, "water")
        plant_flow = np.bincount(s.loop_plant, weights=s.loop_flow_lpm, minlength=self.n_plants)
        plant_l = s.plant_volume_l if s.plant_volume_l is not None else cooling_defaults.plant_volume_l(plant_flow)
        self.plant_heat_capacity_j_per_k = np.maximum(plant_l, 1.0) / 1e3 * rho_p * cp_p
        self.plant_restart_s = (
            s.plant_chiller_restart_s
            if s.plant_chiller_restart_s is not None
            else np.full(self.n_plants, cooling_defaults.CHILLER_RESTART_S)
        )
        self.plant_carnot_frac = plant.carnot_frac_from_rating(
            s.plant_cop, s.plant_supply_setpoint_c, s.plant_design_wet_bulb_c + s.plant_tower_approach_k
        )

    def _init_cooling_state(self, s: SiteTables) -> None:
        """Carried cooling state: pumps and flow, coolant node temperatures, delays, chillers, stored heat."""
        self.cdu_pumps_state = self.cdu_pumps.copy()
        self.cdu_flow_state_lpm = cooling.cdu_flow_lpm(
            self.cdu_pumps, self.cdu_pumps_required, self.cdu_design_flow_lpm
        )
        self.cdu_temp_c = self.cdu_setpoint_c.copy()
        self.cdu_heat_in_w = np.zeros(s.n_cdus)  # heat into each secondary loop over the last step
        self._exchanger_cache = None  # (loop supply and flow, (facility water, capacity, effectiveness))
        self._operating_point_cache = None  # (step, supply, plates) -> per-CDU thermal operating point
        self._plate_cache = None  # secondary flows -> (plate caloric resistance, plate flow ratio)
        self.plant_temp_c = s.plant_supply_setpoint_c.astype(np.float64).copy()
        self.loop_temp_c = self.plant_temp_c[s.loop_plant].copy()
        self.loop_delay = loops.DelayLine(self.plant_temp_c[s.loop_plant])  # plant supply → CDUs
        self.cdu_delay = loops.DelayLine(self.cdu_setpoint_c)  # CDU supply → cold plates
        self.chillers_online = s.plant_chiller_count.astype(np.float64).copy()
        self.chiller_restart_left_s = np.zeros(self.n_plants)
        self.tower_load_frac = np.zeros(self.n_plants)
        self.gpu_heat_cdu_j = self._gpu_heat_by_cdu_j(self.gpu_temp_c)
        self.stored_heat_j = self._stored_heat_j()

    def _gpu_heat_by_cdu_j(self, temp_c: np.ndarray) -> np.ndarray:
        """Heat held by the GPU packages of each CDU, ``Σ C T`` [J] (0 °C reference)."""
        c = self.heat_capacity_j_per_k
        return self.by_cdu.sum(temp_c) * c if np.ndim(c) == 0 else self.by_cdu.sum(temp_c * c)

    def _stored_heat_j(self) -> float:
        """Heat held in GPU packages, secondary coolant, facility water and plant water [J] (0 °C reference)."""
        return float(
            self.gpu_heat_cdu_j.sum()
            + self.cdu_heat_capacity_j_per_k @ self.cdu_temp_c
            + self.loop_heat_capacity_j_per_k @ self.loop_temp_c
            + self.plant_heat_capacity_j_per_k @ self.plant_temp_c
        )

    def _precompute_power(self, s: SiteTables) -> None:
        self.topo = powertree.build_topology(s)
        # chillers are fed from the top-level buses, not from the UPSs (twin.physics.plant)
        self.plant_buses = self.topo.top_down[0] if s.n_power else np.zeros(0, dtype=np.int64)
        self.plant_chillers_by_bus = plant.chillers_by_bus_count(s.plant_chiller_count, self.plant_buses.size)
        n = s.n_sources
        given = lambda a, default: a if np.size(a) == n else np.full(n, default)  # noqa: E731 (tables built in code)
        self.source_step_mw = given(s.source_step_mw, np.inf)
        self.source_derate_frac_per_k = given(s.source_derate_frac_per_k, 0.0)
        self.source_rated_ambient_c = given(s.source_rated_ambient_c, 15.0)
        self.source_efficiency_frac = given(s.source_efficiency_frac, 1.0)
        self.ups_kwh = (
            s.power_ride_through_kwh if np.size(s.power_ride_through_kwh) == s.n_power else np.zeros(s.n_power)
        )
        self.ups_ids = np.flatnonzero(self.ups_kwh > 0)
        self._settling = False
        self.source_live_all = np.ones(s.n_sources, dtype=bool)
        self.network_mw = s.n_switches * SWITCH_POWER_W / 1e6
        # IT power (rack input) with every GPU at TDP / at its minimum limit, full base load:
        # the two points of the linear model behind the power-cap and full-power answers.
        gpus = s.n_gpus
        for name, p in (("it_full_mw", self.tdp_w), ("it_min_mw", self.min_limit_w)):
            gsum = self.by_node.sum(np.broadcast_to(np.asarray(p, dtype=np.float64), (gpus,)))
            dc = power.node_dc_power_w(gsum, 1.0, s.node_base_power_w, s.node_idle_base_power_w)
            ac, _ = power.node_input_power_w(dc, s.node_psus, s.node_psu_rating_w, s.psu_efficiency_points_frac)
            setattr(self, name, float(ac.sum()) / 1e6)

    def _precompute_fabric(self, s: SiteTables) -> None:
        self.leaf_gpus = np.bincount(s.gpu_leaf, minlength=s.n_switches).astype(np.float64)
        self.switch_up_gbps = fabric.switch_uplink_gbps(s)
        self._shed_cache = None  # (shed racks) -> (their nodes, their GPUs)
        self._shed_order_cache = None  # (job GPUs per rack) -> racks in shedding order
        self._tree_cache = None  # (failed elements, live sources) -> (live, feed shares A/B, dark racks), read-only
        self._link_cache = None  # (failed links, inactive GPUs) -> (link up, link utilisation), read-only
        self._uplink_cache = (np.zeros(0, np.int64).tobytes(), self.switch_up_gbps)  # failed links -> capacity

    # --- tick ---------------------------------------------------------------------------
    def tick(self, dt_s: float, inputs: TickInputs | None = None) -> Snapshot:
        """Advance the twin by ``dt_s`` seconds under ``inputs`` and return the snapshot."""
        if not (dt_s >= 0.0 and np.isfinite(dt_s)):
            raise ValueError(f"dt_s: must be a finite number >= 0 (got {dt_s!r})")
        inp = inputs or TickInputs()
        ts = inp.ts if inp.ts is not None else self.ts + timedelta(seconds=dt_s)
        if ts.tzinfo is None:
            raise ValueError("TickInputs.ts: must be timezone-aware (UTC)")
        wx = self._weather(ts, inp)
        ps = self._power_state(inp)
        dem = self._demand(inp, ps)
        cool = self._cooling(dt_s, inp, ps, wx)
        gt = self._gpu_thermal(dt_s, inp, dem, cool)
        itp = self._it_power(ps, dem, gt)
        heat = self._heat(dt_s, cool, gt, itp)
        tree = self._power_tree(ps, itp)
        site = self._site(dt_s, ps, cool, itp, heat, tree, wx, dem, gt)
        fab = self._fabric(inp, dem, gt)
        jobs = self._jobs(inp, gt, fab)
        sw = self._swing(inp, ps, dem, gt, itp, tree, site, jobs)
        share = self._swing_share(sw, ps, site)
        proj = self._projections(inp, ps, cool, gt, itp, heat)
        self.ts = ts
        return self._snapshot(
            TickResults(
                ts, wx, ps, dem, cool, gt, itp, heat, tree, site, fab, jobs.statuses, sw, proj, swing_share=share
            )
        )

    def _weather(self, ts: datetime, inp: TickInputs) -> WeatherResult:
        dry, wet = weather.outdoor_conditions(self.weather_curve, ts, self.state.longitude_deg)
        return WeatherResult(
            dry_bulb_c=dry if inp.outdoor_dry_bulb_c is None else float(inp.outdoor_dry_bulb_c),
            wet_bulb_c=wet if inp.outdoor_wet_bulb_c is None else float(inp.outdoor_wet_bulb_c),
        )

    def _power_state(self, inp: TickInputs) -> PowerStateResult:
        s = self.state
        source_live = self.source_live_all.copy()
        source_live[_as_ids(inp.failed_sources, s.n_sources, "failed_sources")] = False
        failed = _as_ids(inp.failed_power, s.n_power, "failed_power")
        if inp.recover_down_gpus:
            self.ups_dropped[:] = False
        if self.ups_dropped.any():  # an exhausted UPS drops its load like a failed element
            failed = np.union1d(failed, np.flatnonzero(self.ups_dropped))
        key = (failed.tobytes(), source_live.tobytes())
        if self._tree_cache is None or self._tree_cache[0] != key:  # the tree's state holds until something fails
            live = powertree.element_live(self.topo, failed, source_live)
            answer = (live, *powertree.rack_feed_shares(self.topo, live))
            for a in answer:
                a.flags.writeable = False
            self._tree_cache = (key, answer)
        live, share_a, share_b, dark = self._tree_cache[1]
        shed = np.zeros(0, dtype=np.int64)
        if self.policy.applied.racks_shed:
            job_gpus = np.zeros(s.n_racks)
            for gpus in [j.gpu_ids for j in inp.jobs] if inp.priority_gpus is None else [inp.priority_gpus]:
                job_gpus += np.bincount(s.gpu_rack[_as_ids(gpus, s.n_gpus, "priority_gpus")], minlength=s.n_racks)
            key = job_gpus.tobytes()
            if self._shed_order_cache is None or self._shed_order_cache[0] != key:
                self._shed_order_cache = (key, policy.shed_order(job_gpus, s.rack_hall))
            shed = self._shed_order_cache[1][: self.policy.applied.racks_shed]
        return PowerStateResult(
            source_live=source_live,
            power_live=live,
            rack_feed_a_share_frac=share_a,
            rack_feed_b_share_frac=share_b,
            rack_dark=dark,
            rack_shed=shed,
        )

    def _gpu_util(self, inp: TickInputs) -> np.ndarray:
        """Utilisation per GPU from the inputs, a missing reading holding the previous value."""
        n = self.state.n_gpus
        if np.ndim(inp.gpu_util_frac) == 0:
            u = float(inp.gpu_util_frac)
            return np.full(n, min(max(u, 0.0), 1.0)) if np.isfinite(u) else self.gpu_util_frac.copy()
        util = np.asarray(inp.gpu_util_frac, dtype=np.float64)
        if util.shape != (n,):
            raise ValueError(f"gpu_util_frac: expected shape ({n},), got {util.shape}")
        if util.size == 0 or (util.min() >= 0.0 and util.max() <= 1.0):  # in range and finite (NaN fails both)
            return util.copy()
        if not np.isfinite(util).all():
            util = np.where(np.isfinite(util), util, self.gpu_util_frac)
        return np.clip(util, 0.0, 1.0)

    def _gpu_off(
        self, inp: TickInputs, ps: PowerStateResult
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """GPUs without power (dark rack, node switched off), the switched-off nodes and their GPUs (None if none)."""
        s = self.state
        off = self.by_rack.expand(ps.rack_dark) if ps.rack_dark.any() else np.zeros(s.n_gpus, dtype=bool)
        if inp.nodes_off is None and not ps.rack_shed.size:
            return off, None, None
        if inp.nodes_off is None:  # the shortfall policy's shed racks only: kept while the shed set holds
            key = ps.rack_shed.tobytes()
            if self._shed_cache is None or self._shed_cache[0] != key:
                node_off = np.isin(s.node_rack, ps.rack_shed)
                gpu_node_off = self.by_node.expand(node_off)
                gpu_node_off.flags.writeable = False
                self._shed_cache = (key, node_off, gpu_node_off)
            node_off, gpu_node_off = self._shed_cache[1].copy(), self._shed_cache[2]
            return off | gpu_node_off, node_off, gpu_node_off
        node_off = np.asarray(inp.nodes_off, dtype=bool)
        if node_off.shape != (s.n_nodes,):
            raise ValueError(f"nodes_off: expected shape ({s.n_nodes},), got {node_off.shape}")
        if ps.rack_shed.size:  # the shortfall policy powers off the nodes of shed racks (their CDUs keep running)
            node_off = node_off | np.isin(s.node_rack, ps.rack_shed)
        if not node_off.any():
            return off, None, None
        gpu_node_off = self.by_node.expand(node_off)
        return off | gpu_node_off, node_off, gpu_node_off

    def _demand(self, inp: TickInputs, ps: PowerStateResult) -> DemandResult:
        s = self.state
        util = self._gpu_util(inp)
        if inp.gpu_power_demand_w is None:
            demand = power.gpu_demand_power_w(util, self.idle_w, self.tdp_w)
        else:
            demand = np.broadcast_to(np.asarray(inp.gpu_power_demand_w, dtype=np.float64), (s.n_gpus,))
            demand = np.where(np.isfinite(demand), np.maximum(demand, 0.0), self.gpu_power_w)
        limit = (
            self.tdp_w
            if inp.gpu_power_limit_w is None
            else np.clip(inp.gpu_power_limit_w, self.min_limit_w, self.tdp_w)
        )
        operator_limit = limit
        act = self.policy.applied
        if np.isfinite(act.gpu_cap_w):  # the shortfall policy's cap on top of the operator's limit
            limit = np.minimum(limit, max(act.gpu_cap_w, self.min_limit_min_w))
        off, node_off, gpu_node_off = self._gpu_off(inp, ps)
        # node PSUs: failed ones, and half of them when one of two feeds is lost
        psus = s.node_psus.astype(np.float64)
        failed_psus = 0.0 if inp.node_psus_failed is None else np.asarray(inp.node_psus_failed, dtype=np.float64)
        one_feed = ((ps.rack_feed_a_share_frac == 1.0) | (ps.rack_feed_b_share_frac == 1.0)) & (self.topo.feed_b >= 0)
        lost_feed_psus = np.where(one_feed[s.node_rack], np.floor(psus / 2.0), 0.0) if one_feed.any() else 0.0
        psus_live = np.maximum(psus - failed_psus - lost_feed_psus, 0.0)
        # the brake compares the node's need at full base load with what its live PSUs deliver; a
        # scalar limit bounds the need from above, and when the bound fits nowhere is braked
        available = power.node_power_available_w(psus_live, s.node_psu_rating_w)
        brake_node = None
        if np.ndim(limit) == 0:
            bound = power.node_dc_power_w(
                self.gpus_per_node * float(limit), 1.0, s.node_base_power_w, s.node_idle_base_power_w
            )
            if not (bound > available).any():
                brake_node = False
        if brake_node is None:
            node_need = power.node_dc_power_w(
                self.by_node.sum(np.minimum(demand, limit)), 1.0, s.node_base_power_w, s.node_idle_base_power_w
            )
            brake_node = node_need > available
        brake = self.by_node.expand(brake_node) if np.any(brake_node) else False
        if act.brake:
            brake = np.ones(s.n_gpus, dtype=bool)
        return DemandResult(
            gpu_util_frac=util,
            gpu_power_demand_w=demand,
            gpu_power_limit_w=limit,
            gpu_off=off,
            node_off=node_off,
            node_psus_live=psus_live,
            gpu_power_brake=brake,
            node_util_frac=self.by_node.sum(util) / self.gpus_per_node,
            gpu_operator_limit_w=operator_limit,
            gpu_node_off=gpu_node_off,
        )

    def _cooling(self, dt_s: float, inp: TickInputs, ps: PowerStateResult, wx: WeatherResult) -> CoolingResult:
        """Pumps and fail-over, facility and secondary supply after their transport delays, plate resistances."""
        s = self.state
        pumps = (
            self.cdu_pumps.copy()
            if inp.pumps_running_count is None
            else np.asarray(inp.pumps_running_count, dtype=np.float64)
        )
        if self.cdu_in_rack.any() and ps.rack_dark.any():  # an in-rack CDU is powered by its rack
            cdu_dark = np.bincount(s.rack_cdu, weights=ps.rack_dark, minlength=s.n_cdus) >= self.racks_per_cdu
            pumps = np.where(self.cdu_in_rack & cdu_dark, 0.0, pumps)
        flow = loops.pump_flow_lpm(
            self.cdu_flow_state_lpm,
            self.cdu_pumps_state,
            pumps,
            self.cdu_pumps_required,
            self.cdu_design_flow_lpm,
            self.cdu_failover_s,
            dt_s,
        )
        if inp.cdu_flow_lpm is not None:
            measured = np.asarray(inp.cdu_flow_lpm, dtype=np.float64)
            flow = np.where(np.isfinite(measured), np.maximum(measured, 0.0), flow)
        self.cdu_pumps_state, self.cdu_flow_state_lpm = pumps, flow
        loop_flow = s.loop_flow_lpm
        if inp.loop_flow_lpm is not None:
            forced = np.asarray(inp.loop_flow_lpm, dtype=np.float64)
            loop_flow = np.where(np.isfinite(forced), np.maximum(forced, 0.0), loop_flow)
        # facility water: the plant's supply reaches the CDUs after the loop's transport delay
        loop_supply = self.loop_delay.read(loops.transport_delay_s(self.loop_pipe_l, loop_flow))
        if inp.loop_supply_temp_c is not None:
            override = np.asarray(inp.loop_supply_temp_c, dtype=np.float64)
            cooling.coolant_properties(override[np.isfinite(override)], "water")  # raises outside the liquid range
            loop_supply = np.where(np.isfinite(override), override, loop_supply)
        fw, cap_kw, eff = self._cdu_exchangers(loop_supply, loop_flow)
        # secondary supply: predicted for the end of the step with the previous step's heat (the
        # CDU step of the heat phase corrects it), then delayed by the manifold transit
        flow_w_per_k = flow * self.cdu_w_per_k_per_lpm
        setpoint = self.cdu_setpoint_c
        if inp.cdu_supply_setpoint_c is not None:  # an operator's setpoint per CDU (NaN: the design setpoint)
            wanted = np.asarray(inp.cdu_supply_setpoint_c, dtype=np.float64)
            setpoint = np.where(np.isfinite(wanted), wanted, setpoint)
        _, predicted, _ = loops.cdu_loop_step(
            self.cdu_temp_c, self.cdu_heat_in_w, flow_w_per_k, setpoint, fw, eff, self.cdu_heat_capacity_j_per_k, dt_s
        )
        self.cdu_delay.push(predicted, dt_s)
        supply = self.cdu_delay.read(loops.transport_delay_s(self.cdu_pipe_l, flow))
        r_cal_cdu, flow_ratio = self._plates(flow)
        if inp.plant_chillers_running is None:  # chillers on buses that dipped stop (twin.physics.plant)
            available = (
                plant.chillers_powered_count(
                    self.plant_chillers_by_bus, ps.power_live[self.plant_buses], self.supply_dipped
                )
                if self.plant_buses.size
                else s.plant_chiller_count
            )
        else:
            available = np.asarray(inp.plant_chillers_running, dtype=np.float64)
        return CoolingResult(
            pumps_running_count=pumps,
            cdu_flow_lpm=flow,
            cdu_flow_w_per_k=flow_w_per_k,
            cdu_supply_temp_c=supply,
            cdu_setpoint_c=setpoint,
            cdu_facility_temp_c=fw,
            cdu_capacity_kw=cap_kw,
            cdu_effectiveness_frac=eff,
            cdu_coolant_cp_j_per_kg_k=self.cdu_cp,
            cdu_coolant_density_kg_per_m3=self.cdu_rho,
            cdu_plate_r_cal_c_per_w=r_cal_cdu,
            cdu_plate_flow_ratio_frac=flow_ratio,
            loop_supply_temp_c=loop_supply,
            loop_flow_lpm=loop_flow,
            plant_chillers_available_count=np.asarray(available, dtype=np.float64),
            wet_bulb_c=wx.wet_bulb_c,
        )

    def _gpu_r_factor(self, inp: TickInputs) -> np.ndarray | None:
        """Per-GPU multiplier of the die-to-coolant resistance (a degrading interface), None if none given."""
        if inp.gpu_r_th_factor is None:
            return None
        n = self.state.n_gpus
        factor = np.asarray(inp.gpu_r_th_factor, dtype=np.float64)
        if factor.shape != (n,) or not (factor > 0).all():
            raise ValueError(f"gpu_r_th_factor: expected {n} positive factors")
        return factor

    def _plates(self, flow_lpm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Caloric resistance of one GPU plate (inf with no flow) and its flow over design, per CDU;
        recomputed only when the secondary flows change."""
        key = flow_lpm.tobytes()
        if self._plate_cache is None or self._plate_cache[0] != key:
            plate_flow = (
                cooling.mass_flow_kg_s(flow_lpm, self.cdu_rho) * GPU_FLOW_SHARE_FRAC / np.maximum(self.gpus_per_cdu, 1)
            )
            flowing = plate_flow > 0.0
            r_cal = np.full(self.state.n_cdus, np.inf)
            r_cal[flowing] = thermal.caloric_resistance_c_per_w(plate_flow[flowing], self.cdu_cp[flowing])
            self._plate_cache = (key, (r_cal, plate_flow / self.plate_design_kg_s))
        return self._plate_cache[1]

    def _cdu_exchangers(self, loop_supply_c: np.ndarray, loop_flow_lpm: np.ndarray):
        """Facility water, rated-approach capacity and effectiveness per CDU; recomputed only when the
        loops' supply or flow change (the plant holds its setpoint most of the time)."""
        key = loop_supply_c.tobytes() + loop_flow_lpm.tobytes()
        if self._exchanger_cache is None or self._exchanger_cache[0] != key:
            s = self.state
            fw = loop_supply_c[s.cdu_loop]
            # capacity curve: duty at the rated approach, i.e. secondary supply = facility water + approach;
            # floored at 10 % of the rated duty [E] so a CDU far past its curve keeps a finite approach
            cap_kw = np.maximum(
                cooling.cdu_capacity_kw(fw + self.cdu_approach_k, self.cdu_curve_x, self.cdu_curve_y),
                0.1 * self.cdu_rated_kw,
            )
            share = np.minimum(loop_flow_lpm / s.loop_flow_lpm, 1.0)[s.cdu_loop]  # no facility flow: no exchange
            eff = loops.hx_effectiveness_frac(cap_kw * 1e3, self.cdu_design_w_per_k, self.cdu_approach_k) * share
            self._exchanger_cache = (key, (fw, cap_kw, eff))
        return self._exchanger_cache[1]

    def _per_gpu_view(self, r_factor: np.ndarray | None):
        """How per-CDU values meet per-GPU arrays this tick: ``(ex, view)``.

        With one GPU model, no per-GPU degradation and contiguous equal-size CDU groups (every
        reference site), per-GPU arrays are viewed as ``[n_cdus, gpus_per_cdu]`` and per-CDU
        values broadcast as columns (no expansion copies); otherwise per-CDU values are
        expanded to the GPUs.
        """
        w = self.by_cdu.width
        if w and self.uniform_gpus and r_factor is None:
            return (lambda v: v[:, None]), (lambda a: a.reshape(-1, w))
        return self.by_cdu.expand, (lambda a: a)

    def _thermal_operating_point(self, r_factor: np.ndarray | None, cool: CoolingResult, dt_s: float, ex):
        """Supply, total die-to-coolant resistance, HBM rise per watt, SW thermal limit and step decay per GPU.

        The die resistance follows the plate flow (:func:`twin.physics.thermal.die_resistance_c_per_w`).
        With one GPU model and no per-GPU degradation these are per-CDU values (the physics
        functions run on 1,568 CDUs instead of 100k GPUs) spread by ``ex``.  Returns
        ``(supply_c, r_total_c_per_w, hbm_rise_c_per_w, power_limit_w, decay_frac, no_flow_cdu,
        r_die, power_limit_cdu_w)``; ``hbm_rise_c_per_w`` is ``R_cal + f_hbm R_hbm``, the HBM's rise
        over the supply per watt of board power; ``power_limit_cdu_w`` is None off the per-CDU path.
        """
        no_flow_cdu = ~np.isfinite(cool.cdu_plate_r_cal_c_per_w)
        r_cal_cdu = np.where(no_flow_cdu, 0.0, cool.cdu_plate_r_cal_c_per_w)
        ratio = np.where(no_flow_cdu, 1.0, cool.cdu_plate_flow_ratio_frac)
        hbm_k = self.hbm_power_frac * self.r_hbm_c_per_w
        if self.uniform_gpus and r_factor is None:
            key = (
                dt_s,
                cool.cdu_supply_temp_c.tobytes(),
                cool.cdu_plate_r_cal_c_per_w.tobytes(),
                cool.cdu_plate_flow_ratio_frac.tobytes(),
            )
            if self._operating_point_cache is None or self._operating_point_cache[0] != key:
                point = self._cdu_operating_point(cool, dt_s, no_flow_cdu, r_cal_cdu, ratio, hbm_k)
                # every CDU at one operating point (each holds the same setpoint at design flow: a
                # healthy site): scalars, which per-GPU arithmetic reads far faster than columns
                uniform = all(v.min() == v.max() for v in point[:5]) if self.state.n_cdus else False
                self._operating_point_cache = (key, point, uniform)
            _, point, uniform = self._operating_point_cache
            supply, r_tot, hbm_rise, p_lim_cdu, decay, r_die = point
            spread = (lambda v: float(v[0])) if uniform else ex  # noqa: E731
            return (
                spread(supply),
                spread(r_tot),
                spread(hbm_rise),
                spread(p_lim_cdu),
                spread(decay),
                no_flow_cdu,
                r_die,
                p_lim_cdu,
            )
        supply, r_cal = ex(cool.cdu_supply_temp_c), ex(r_cal_cdu)
        r_die = thermal.die_resistance_c_per_w(self.r_die_c_per_w, self.r_conv_frac, ex(ratio))
        if r_factor is not None:
            r_die = r_die * r_factor
        p_lim = np.where(
            ex(no_flow_cdu),
            np.inf,
            thermal.sw_thermal_power_limit_w(
                supply, r_die, self.r_hbm_c_per_w, r_cal, self.max_op_c, self.hbm_max_c, self.hbm_power_frac
            ),
        )
        decay = thermal.decay_frac(thermal.time_constant_s(self.heat_capacity_j_per_k, r_die + r_cal), dt_s)
        return supply, r_die + r_cal, r_cal + hbm_k, p_lim, decay, no_flow_cdu, r_die, None

    def _cdu_operating_point(self, cool: CoolingResult, dt_s: float, no_flow_cdu, r_cal_cdu, ratio, hbm_k):
        """Per-CDU supply, total resistance, HBM rise, SW thermal limit, decay and die resistance (one GPU model).

        Cached by the caller while supply, plate flow and step stay the same (every tick of a
        steady site: the CDUs hold their setpoint).
        """
        r_die = thermal.die_resistance_c_per_w(self.r_die_c_per_w, self.r_conv_frac, ratio)
        p_lim_cdu = np.where(
            no_flow_cdu,
            np.inf,
            thermal.sw_thermal_power_limit_w(
                cool.cdu_supply_temp_c,
                r_die,
                self.r_hbm_c_per_w,
                r_cal_cdu,
                self.max_op_c,
                self.hbm_max_c,
                self.hbm_power_frac,
            ),
        )
        r_tot_cdu = r_die + r_cal_cdu
        decay_cdu = thermal.decay_frac(thermal.time_constant_s(self.heat_capacity_j_per_k, r_tot_cdu), dt_s)
        return cool.cdu_supply_temp_c.copy(), r_tot_cdu, r_cal_cdu + hbm_k, p_lim_cdu, decay_cdu, r_die

    def _throttle(self, dem: DemandResult, demand: np.ndarray, p_lim, p_lim_cdu, view, off: np.ndarray | None):
        """Board power, clock and clock-event mask; the full model runs only on GPUs near a limit.

        ``p_lim`` is the SW thermal limit in the layout of ``view``; ``p_lim_cdu`` the same per
        CDU (or None), from which the GPUs near a limit take theirs.  The clocks of GPUs in
        ``off`` (without power; None: none) may be left unsolved: the caller sets them to 0.
        """
        n = self.state.n_gpus
        temp, limit, util, brake = self.gpu_temp_c, dem.gpu_power_limit_w, dem.gpu_util_frac, dem.gpu_power_brake
        if (
            p_lim_cdu is not None
            and np.ndim(limit) == 0
            and brake is False
            and np.ndim(self.max_op_c) == 0
            and float(p_lim_cdu.min()) >= limit
            and float(temp.max()) < self.max_op_c
        ):
            # every SW thermal limit above the power limit and every die below max operating: of
            # throttle's mechanisms only the power cap can act (e.g. a shortfall policy's cap)
            p, clock, mask = thermal.power_cap_only(demand, float(limit), self.idle_w, None if off is None else ~off)
            limited = bool(mask.any())
        else:
            v = lambda a: view(a) if np.ndim(a) else a  # noqa: E731
            idx = np.flatnonzero(
                thermal.throttle_active(view(demand), v(limit), view(temp), p_lim, self.max_op_c, v(brake))
            )
            limited = idx.size > 0
            if p_lim_cdu is not None:
                per_gpu = lambda idx: p_lim_cdu[self.gpu_cdu[idx]]  # noqa: E731
            else:
                per_gpu = lambda idx: p_lim[idx]  # noqa: E731
            if idx.size > n // 2:  # most GPUs near a limit: the full model on whole arrays
                p, clock, mask = thermal.throttle(
                    demand, limit, self.idle_w, temp, per_gpu(slice(None)), self.max_op_c, self.slowdown_c, util, brake
                )
            else:
                p = np.minimum(demand, limit)
                clock = np.ones(n)
                mask = np.zeros(n, dtype=np.int32)
                if idx.size:
                    sub = lambda v: v[idx] if np.ndim(v) else v  # noqa: E731
                    p[idx], clock[idx], mask[idx] = thermal.throttle(
                        demand[idx],
                        sub(limit),
                        sub(self.idle_w),
                        temp[idx],
                        per_gpu(idx),
                        sub(self.max_op_c),
                        sub(self.slowdown_c),
                        util[idx],
                        sub(brake),
                    )
        idle = util < thermal.IDLE_UTIL_FRAC
        if idle.any():
            mask |= np.where(idle, thermal.CLOCK_EVENT_GPU_IDLE, 0).astype(np.int32)
        return p, clock, mask, limited

    def _gpu_thermal(self, dt_s: float, inp: TickInputs, dem: DemandResult, cool: CoolingResult) -> GpuThermalResult:
        """Leakage, throttle decisions, board power, exact thermal step (adiabatic without flow), HBM, shutdown
        latch, and the heat the packages gave their coolant."""
        s = self.state
        n = s.n_gpus
        if inp.recover_down_gpus and self.gpu_down.any():
            self.gpu_down &= self.gpu_temp_c >= self.max_op_c
        r_factor = self._gpu_r_factor(inp)
        ex, view = self._per_gpu_view(r_factor)
        supply, r_tot, hbm_k, p_lim, decay, no_flow_cdu, r_die, p_lim_cdu = self._thermal_operating_point(
            r_factor, cool, dt_s, ex
        )
        if r_factor is None and self.uniform_gpus:
            rack_r_die = r_die[s.rack_cdu] if self.one_rack_per_cdu else self.by_rack.max(self.by_cdu.expand(r_die))
        else:
            rack_r_die = self.by_rack.max(np.broadcast_to(r_die, (n,)))
        temp = self.gpu_temp_c
        # leakage rises with the die temperature the sensors read now; the power limit holds the total
        demand = dem.gpu_power_demand_w
        if np.any(self.leakage_w_per_k):
            # a cold die leaks less; a GPU drawing nothing (shed, off) leaks nothing
            # (thermal.leakage_power_w added to the demand, in place)
            leak = np.subtract(temp, thermal.LEAKAGE_REF_C)
            leak *= self.leakage_w_per_k
            leak += demand
            demand = np.maximum(leak, 0.0, out=leak)
        off = dem.gpu_off | self.gpu_down
        any_off = bool(off.any())
        p, clock, mask, any_limited = self._throttle(dem, demand, p_lim, p_lim_cdu, view, off if any_off else None)
        if any_off:
            np.copyto(p, 0.0, where=off)  # (a masked copy is cheaper than boolean indexing)
        # thermal.die_temp_steady_c and relax_temp_c, in place (p >= 0 by construction)
        steady = view(p) * r_tot
        steady += supply
        new_temp = view(temp) - steady
        new_temp *= decay
        new_temp += steady
        new_temp = new_temp.reshape(-1)
        if no_flow_cdu.any():  # no flow: adiabatic heating of the package
            nf = np.flatnonzero(self.by_cdu.expand(no_flow_cdu))
            cap = self.heat_capacity_j_per_k[nf] if np.ndim(self.heat_capacity_j_per_k) else self.heat_capacity_j_per_k
            shutdown = self.shutdown_c[nf] if np.ndim(self.shutdown_c) else self.shutdown_c
            new_temp[nf] = thermal.adiabatic_step_c(temp[nf], p[nf], cap, dt_s, shutdown)
            if dt_s > 0:  # the hardware cuts the power at shutdown: the package drew only what it stored
                p[nf] = np.minimum(p[nf], cap * (new_temp[nf] - temp[nf]) / dt_s)
        hbm = view(p) * hbm_k  # thermal.hbm_temp_c on the plate coolant, HBM power = f_hbm · P
        hbm += supply
        hbm = hbm.reshape(-1)
        newly_down = (new_temp >= self.shutdown_c) if float(new_temp.max()) >= self.shutdown_min_c else None
        if newly_down is not None and newly_down.any():
            newly_down &= ~off
            self.gpu_down = self.gpu_down | newly_down
            off = off | newly_down
            any_off = True
        if any_limited:  # GPU_OK is 0: the throttled mask's bytes (0/1) scaled to GPU_THROTTLED are the states
            state = np.less(clock, 0.999).view(np.int8)
            if GPU_THROTTLED != 1:
                state *= np.int8(GPU_THROTTLED)
        else:
            state = np.zeros(n, dtype=np.int8)
        if any_off:
            np.copyto(clock, 0.0, where=off)
            np.copyto(state, GPU_DOWN, where=off)
            if dem.node_off is not None:
                np.copyto(state, GPU_OFF, where=dem.gpu_node_off)
        # heat the packages gave their coolant: power in minus heat stored
        held = self._gpu_heat_by_cdu_j(new_temp)
        gpu_heat = loops.heat_passed_w(self.by_cdu.sum(p), 1.0, self.gpu_heat_cdu_j, held, dt_s)
        self.gpu_heat_cdu_j = held
        self.gpu_temp_c = new_temp
        self.gpu_power_w = p
        self.gpu_util_frac = dem.gpu_util_frac
        return GpuThermalResult(
            gpu_power_w=p,
            gpu_clock_frac=clock,
            gpu_clock_event_mask=mask,
            hbm_temp_c=hbm,
            gpu_state=state,
            gpu_down=off,
            any_gpu_down=any_off,
            rack_r_die_c_per_w=rack_r_die,
            cdu_gpu_heat_w=gpu_heat,
        )

    def _it_power(self, ps: PowerStateResult, dem: DemandResult, gt: GpuThermalResult) -> ItPowerResult:
        s = self.state
        gpu_sum = self.by_node.sum(gt.gpu_power_w)
        node_live = dem.node_psus_live > 0
        dc = power.node_dc_power_w(gpu_sum, dem.node_util_frac, s.node_base_power_w, s.node_idle_base_power_w)
        dark_node = ps.rack_dark[s.node_rack]
        if dem.node_off is not None:
            dark_node = dark_node | dem.node_off
        dc = np.where(dark_node | ~node_live, 0.0, dc)
        ac, _ = power.node_input_power_w(dc, dem.node_psus_live, s.node_psu_rating_w, s.psu_efficiency_points_frac)
        return ItPowerResult(
            node_dc_power_w=dc,
            node_input_power_w=ac,
            rack_power_kw=self.node_by_rack.sum(ac) / 1e3,
            rack_gpu_power_w=self.node_by_rack.sum(gpu_sum),
        )

    def _heat(self, dt_s: float, cool: CoolingResult, gt: GpuThermalResult, itp: ItPowerResult) -> HeatResult:
        """Secondary loops: heat in (GPU packages, CPU plates, pump work) and the CDU step; air heat per loop."""
        s = self.state
        rack_dc = self.node_by_rack.sum(itp.node_dc_power_w)
        base_liquid_w = BASE_LIQUID_CAPTURE_FRAC * (rack_dc - itp.rack_gpu_power_w)
        air_w = itp.rack_power_kw * 1e3 - itp.rack_gpu_power_w - base_liquid_w  # PSU losses, rest of the base
        pump_w = cooling.cdu_pump_power_w(  # pump work ends as heat in the coolant
            cool.pumps_running_count, cool.cdu_flow_lpm, self.cdu_design_flow_lpm, self.cdu_pump_power_w
        )
        heat_in = gt.cdu_gpu_heat_w + np.bincount(s.rack_cdu, weights=base_liquid_w, minlength=s.n_cdus) + pump_w
        temp, supply, out_w = loops.cdu_loop_step(
            self.cdu_temp_c,
            heat_in,
            cool.cdu_flow_w_per_k,
            cool.cdu_setpoint_c,
            cool.cdu_facility_temp_c,
            cool.cdu_effectiveness_frac,
            self.cdu_heat_capacity_j_per_k,
            dt_s,
        )
        self.cdu_temp_c, self.cdu_heat_in_w = temp, heat_in
        self.cdu_delay.correct_last(supply)
        return HeatResult(
            cdu_heat_kw=out_w / 1e3,
            cdu_supply_temp_c=supply,
            cdu_return_temp_c=temp,
            cdu_pump_kw=float(np.sum(pump_w)) / 1e3,
            loop_air_heat_kw=np.bincount(self.rack_loop, weights=air_w, minlength=self.n_loops) / 1e3,
            loop_cdu_heat_kw=np.bincount(s.cdu_loop, weights=out_w, minlength=self.n_loops) / 1e3,
        )

    def _power_tree(self, ps: PowerStateResult, itp: ItPowerResult) -> PowerTreeResult:
        topo = self.topo
        shares = (ps.rack_feed_a_share_frac, ps.rack_feed_b_share_frac)
        load, inp_kw = powertree.rollup(topo, itp.rack_power_kw, *shares)
        worst, worst_by = powertree.n1_worst_load_kw(topo, load, itp.rack_power_kw, *shares, ps.power_live)
        return PowerTreeResult(
            power_load_kw=load,
            power_load_frac=powertree.load_frac(load, topo.usable_kw),
            power_n1_load_kw=worst,
            power_n1_load_frac=powertree.load_frac(worst, topo.usable_kw),
            power_n1_worst_by=worst_by,
            tree_input_kw=float(inp_kw[topo.top_down[0]].sum()),
        )

    def _site(
        self,
        dt_s: float,
        ps: PowerStateResult,
        cool: CoolingResult,
        itp: ItPowerResult,
        heat: HeatResult,
        tree: PowerTreeResult,
        wx: WeatherResult,
        dem: DemandResult,
        gt: GpuThermalResult,
    ) -> SiteResult:
        s = self.state
        it_mw = float(itp.rack_power_kw.sum()) / 1e3
        tree_mw = tree.tree_input_kw / 1e3
        plant_res = self._plant(dt_s, cool, heat, (tree_mw - it_mw) + self.network_mw + s.site_overhead_mw)
        cool_kw = plant_res["cooling_kw"]
        cooling_mw = cool_kw["total_kw"] / 1e3
        facility = tree_mw + cooling_mw + self.network_mw + s.site_overhead_mw
        sup = self._sources(dt_s, facility, tree_mw, ps, tree, wx)
        capacity = float(sup.dispatch.capacity_mw.sum())
        n1_capacity = capacity - (float(sup.dispatch.capacity_mw.max()) if s.n_sources else 0.0)
        balance = site_balance(
            it_mw,
            tree_mw,
            cooling_mw,
            facility,
            capacity,
            n1_capacity,
            self.network_mw,
            s.site_overhead_mw,
            self.it_full_mw,
            self.it_min_mw,
            s.n_gpus,
            self.tdp_max_w,
            self.min_limit_max_w,
        )
        in_force = self.policy.applied
        self._policy_step(dt_s, facility - capacity * (1.0 - policy.MARGIN_FRAC), facility, it_mw, ps, itp, dem, gt)
        return SiteResult(
            cooling_kw=cool_kw,
            it_mw=it_mw,
            cooling_mw=cooling_mw,
            facility_mw=facility,
            source_power_mw=sup.dispatch.source_power_mw,
            battery_soc_frac=self.battery_soc_frac,
            balance=balance,
            supply=sup,
            policy_in_force=in_force,
            policy=self.policy,
            **{k: v for k, v in plant_res.items() if k != "cooling_kw"},
        )

    def _sources(
        self,
        dt_s: float,
        facility_mw: float,
        tree_mw: float,
        ps: PowerStateResult,
        tree: PowerTreeResult,
        wx: WeatherResult,
    ) -> SupplyResult:
        """Generator units, batteries and UPSs carry the facility load (:mod:`twin.physics.sources`)."""
        s = self.state
        cap = sources.derated_capacity_mw(
            s.source_capacity_mw, self.source_derate_frac_per_k, self.source_rated_ambient_c, wx.dry_bulb_c
        )
        d = sources.dispatch(
            facility_mw,
            s.source_kind,
            cap,
            ps.source_live,
            self.source_power_mw,
            self.source_step_mw,
            s.source_ramp_mw_per_s,
            s.source_energy_mwh,
            self.source_efficiency_frac,
            self.battery_soc_frac,
            dt_s,
        )
        ups = self.ups_ids
        ups_load_kw = np.where(ps.power_live[ups], tree.power_load_kw[ups], 0.0)
        ups_mw, ups_frac = sources.ups_discharge(
            min(d.unmet_mw, tree_mw), ups_load_kw, self.ups_kwh[ups], self.ups_energy_frac[ups], dt_s
        )
        # a trip the others cannot pick up dips every bus: the chillers stop from the next tick
        tripped = bool((self.sources_live_before & ~ps.source_live).any())
        self.supply_dipped = tripped and d.unmet_mw > 0.0 and not self._settling
        self.sources_live_before = ps.source_live
        if not self._settling:
            self.battery_soc_frac = d.battery_soc_frac
            self.ups_energy_frac[ups] = ups_frac
            if d.unmet_mw - ups_mw > 1e-9:  # UPSs with nothing left while the sources fall short drop their racks
                self.ups_dropped[ups] |= (ups_frac <= 0.0) & (ups_load_kw > 0.0)
        self.source_power_mw = d.source_power_mw
        unserved = d.unmet_mw - ups_mw
        return SupplyResult(
            dispatch=d,
            ups_power_mw=ups_mw,
            unserved_mw=unserved if unserved > 1e-9 else 0.0,
            ups_ride_through_s=sources.ride_through_s(self.ups_kwh[ups], self.ups_energy_frac[ups], ups_load_kw),
        )

    def _policy_step(
        self,
        dt_s: float,
        over_mw: float,
        facility_mw: float,
        it_mw: float,
        ps: PowerStateResult,
        itp: ItPowerResult,
        dem: DemandResult,
        gt: GpuThermalResult,
    ) -> None:
        """Decide the shortfall policy's action for the next ticks (:mod:`twin.physics.policy`)."""
        s = self.state
        act = self.policy.applied
        if over_mw <= 0.0 and not act.active:
            self.policy = policy.advance(self.policy, policy.PolicyAction(), s.policy_response_s, dt_s)
            return
        fixed = self.network_mw + s.site_overhead_mw
        node_dc = float(itp.node_dc_power_w.sum())
        psu = float(itp.node_input_power_w.sum()) / node_dc if node_dc > 0 else 1.0
        k = (facility_mw - fixed) / it_mw * psu if it_mw > 0 else 1.0  # facility MW per MW of GPU board power
        live_racks = max(s.n_racks - int(np.count_nonzero(ps.rack_dark)) - ps.rack_shed.size, 1)
        rack_mw = (facility_mw - fixed) / live_racks
        uncapped = None
        if policy.reads_gpu_demand(s.shortfall_policy, act):
            uncapped = np.minimum(dem.gpu_power_demand_w, dem.gpu_operator_limit_w)
            if gt.any_gpu_down:
                np.copyto(uncapped, 0.0, where=gt.gpu_down)
        wanted = policy.wanted_action(
            s.shortfall_policy,
            over_mw,
            k,
            float(itp.rack_gpu_power_w.sum()) / 1e6,
            uncapped,
            self.min_limit_min_w,
            self.tdp_max_w,
            rack_mw,
            act,
        )
        self.policy = policy.advance(self.policy, wanted, s.policy_response_s, dt_s)

    def _plant(self, dt_s: float, cool: CoolingResult, heat: HeatResult, indoor_mw: float) -> dict:
        """Facility loops and plant step; cooling power by part, heat rejected and stored.

        ``indoor_mw`` is the heat released indoors outside the racks (distribution losses,
        switches, site overhead), taken up by air handlers on the facility loops in
        proportion to their racks [E].
        """
        s = self.state
        loop_w_per_k = cool.loop_flow_lpm * self.loop_w_per_k_per_lpm
        facility_pumps_kw = cooling.pump_power_kw(
            cool.loop_flow_lpm, cooling.FACILITY_PUMP_HEAD_KPA, cooling.FACILITY_PUMP_EFF_FRAC
        )
        loop_in_w = (
            heat.loop_cdu_heat_kw + heat.loop_air_heat_kw + facility_pumps_kw
        ) * 1e3 + indoor_mw * 1e6 * self.loop_rack_share_frac
        loop_temp, to_plant_w = loops.facility_loop_step(
            self.loop_temp_c, loop_in_w, loop_w_per_k, cool.loop_supply_temp_c, self.loop_heat_capacity_j_per_k, dt_s
        )
        self.loop_temp_c = loop_temp
        plant_in_w = np.bincount(s.loop_plant, weights=to_plant_w, minlength=self.n_plants)
        plant_w_per_k = np.bincount(s.loop_plant, weights=loop_w_per_k, minlength=self.n_plants)
        plant_return = np.bincount(s.loop_plant, weights=loop_w_per_k * loop_temp, minlength=self.n_plants)
        plant_return = np.where(plant_w_per_k > 0, plant_return / np.maximum(plant_w_per_k, 1e-300), self.plant_temp_c)
        self.chillers_online, self.chiller_restart_left_s = plant.chillers_online_count(
            self.chillers_online,
            cool.plant_chillers_available_count,
            self.chiller_restart_left_s,
            self.plant_restart_s,
            dt_s,
        )
        tower_c = cool.wet_bulb_c + plant.tower_approach_k(
            self.tower_load_frac, cool.wet_bulb_c, s.plant_tower_approach_k, s.plant_design_wet_bulb_c
        )
        temp, econ_w, chill_w = plant.plant_step(
            self.plant_temp_c,
            plant_in_w,
            plant_return,
            plant_w_per_k,
            s.plant_supply_setpoint_c,
            tower_c,
            self.chillers_online * s.plant_chiller_kw * 1e3,
            self.plant_heat_capacity_j_per_k,
            dt_s,
        )
        self.plant_temp_c = temp
        self.loop_delay.push(temp[s.loop_plant], dt_s)
        plr = plant.staged_part_load_frac(chill_w, s.plant_chiller_kw * 1e3, self.chillers_online)
        cop = plant.chiller_cop(s.plant_supply_setpoint_c, tower_c, s.plant_cop, plr)
        tower_kw = (econ_w + chill_w + chill_w / cop) / 1e3  # compressor work leaves through the towers too
        self.tower_load_frac = tower_kw / np.maximum(s.plant_capacity_kw, 1e-9)
        cool_kw = cooling.cooling_power_kw(heat.cdu_pump_kw, facility_pumps_kw, tower_kw, chill_w / 1e3, cop)
        stored = self._stored_heat_j()
        heat_stored_mw = (stored - self.stored_heat_j) / dt_s / 1e6 if dt_s > 0 else 0.0
        self.stored_heat_j = stored
        return dict(
            cooling_kw=cool_kw,
            loop_heat_kw=to_plant_w / 1e3,
            loop_return_temp_c=loop_temp,
            plant_supply_temp_c=temp,
            plant_economiser_kw=econ_w / 1e3,
            plant_chiller_kw=chill_w / 1e3,
            plant_chillers_online_count=self.chillers_online.copy(),
            plant_cop_ratio=cop,
            heat_rejected_mw=float(tower_kw.sum() + cool_kw["tower_fans_kw"]) / 1e3,
            heat_stored_mw=heat_stored_mw,
        )

    def _uplink_gbps(self, failed: np.ndarray, up: np.ndarray) -> np.ndarray:
        """Surviving uplink capacity per switch, recomputed only when the failed links change."""
        key = failed.tobytes()
        if self._uplink_cache[0] != key:
            self._uplink_cache = (key, fabric.switch_uplink_gbps(self.state, up))
        return self._uplink_cache[1]

    def _fabric(self, inp: TickInputs, dem: DemandResult, gt: GpuThermalResult) -> FabricResult:
        """Link state from the inputs and an estimated utilisation (:func:`twin.physics.fabric.uplink_util_frac`).

        Both depend only on the failed links and on which GPUs are active, which change seldom:
        the answer is kept (read-only) until either changes.
        """
        s = self.state
        failed = _as_ids(inp.failed_links, s.n_links, "failed_links")
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

    def _jobs(self, inp: TickInputs, gt: GpuThermalResult, fab: FabricResult) -> JobsResult:
        """Status of the placed jobs and the shape of their power through the phases (cached by status)."""
        if not inp.jobs:
            return JobsResult(statuses=[], power_shapes=[])
        from twin.training import jobphases, sitejob  # imported only when jobs are placed

        statuses, shapes = [], []
        for job in inp.jobs:
            res = sitejob.evaluate_site_job(self.state, job.spec, job.gpu_ids, gt.gpu_clock_frac, fab.link_up_flag)
            statuses.append(res.status)
            shapes.append(jobphases.cached_job_shape(self._shape_cache, self.state, job.spec, res))
        return JobsResult(statuses=statuses, power_shapes=shapes)

    @staticmethod
    def _mean_w(busy_w, running: np.ndarray | None, ids: np.ndarray | None) -> float:
        """Mean busy power over the running GPUs of ``ids`` (all GPUs when None)."""
        if np.ndim(busy_w) == 0:
            return float(busy_w)
        if ids is not None and ids.size > 1 and ids[-1] - ids[0] == ids.size - 1 and np.all(np.diff(ids) == 1):
            ids = slice(int(ids[0]), int(ids[-1]) + 1)  # contiguous placement: a view, no gather
        values = busy_w if ids is None else busy_w[ids]
        n_running = values.size if running is None else int(np.count_nonzero(running if ids is None else running[ids]))
        return float(np.sum(values)) / n_running if n_running else 0.0

    def _swing(
        self,
        inp: TickInputs,
        ps: PowerStateResult,
        dem: DemandResult,
        gt: GpuThermalResult,
        itp: ItPowerResult,
        tree: PowerTreeResult,
        site: SiteResult,
        jobs: JobsResult,
    ) -> swing.SwingReport:
        """Swing of the running jobs from their phase shapes at the throttled busy power (see docs/physics.md)."""
        s = self.state
        n_run = s.n_gpus - (int(np.count_nonzero(gt.gpu_down)) if gt.any_gpu_down else 0)
        cap = np.minimum(dem.gpu_power_limit_w, self.tdp_w)
        idle = self.idle_mean_w
        swing_jobs = inp.swing_jobs
        if swing_jobs is None:
            throttled = gt.gpu_clock_frac < 0.999  # down GPUs (clock 0) included: their power is 0
            n_throttled = int(np.count_nonzero(throttled))
            if n_throttled == s.n_gpus and not jobs.statuses:  # every GPU capped or down: busy power is board power
                busy = float(itp.rack_gpu_power_w.sum()) / n_run if n_run else 0.0
            else:
                busy = np.where(throttled, gt.gpu_power_w, cap) if n_throttled else cap
            running = ~gt.gpu_down if gt.any_gpu_down and np.ndim(busy) else None
            if jobs.statuses:
                swing_jobs = [
                    swing.SwingJob(int(st.gpu_ids.size), self._mean_w(busy, running, st.gpu_ids), idle, shape)
                    for st, shape in zip(jobs.statuses, jobs.power_shapes)
                    if shape is not None
                ]
            else:
                swing_jobs = (
                    [swing.SwingJob(n_run, self._mean_w(busy, running, None), idle, self._default_shape)]
                    if n_run
                    else []
                )
        node_dc = float(itp.node_dc_power_w.sum())
        rack_kw = float(itp.rack_power_kw.sum())
        k_node = (float(itp.node_input_power_w.sum()) / node_dc if node_dc > 0 else 1.0) * (
            tree.tree_input_kw / rack_kw if rack_kw > 0 else 1.0
        )
        return swing.project_swing(
            swing_jobs,
            s.source_kind,
            s.source_capacity_mw,
            s.source_ramp_mw_per_s,
            site.source_power_mw,
            ps.source_live,
            site.battery_soc_frac,
            k_node,
            alignment=inp.swing_alignment,
        )

    def _swing_share(self, sw: swing.SwingReport, ps: PowerStateResult, site: SiteResult) -> sources.SwingShare:
        """Share of the swing each source carries, against its limits (:func:`twin.physics.sources.swing_share`)."""
        s, d = self.state, site.supply.dispatch
        cap = np.where(s.source_kind == _BATTERY, s.source_capacity_mw, d.capacity_mw)  # bursts: full rating
        return sources.swing_share(
            sw.amplitude_mw,
            sw.ramp_mw_per_s,
            sw.phase_s,
            s.source_kind,
            cap,
            d.source_power_mw,
            ps.source_live,
            self.source_step_mw,
            s.source_ramp_mw_per_s,
            s.source_energy_mwh,
            self.source_efficiency_frac,
            d.battery_soc_frac,
        )

    def _projections(
        self,
        inp: TickInputs,
        ps: PowerStateResult,
        cool: CoolingResult,
        gt: GpuThermalResult,
        itp: ItPowerResult,
        heat: HeatResult,
    ) -> ProjectionResult:
        """Per-rack times to throttle/shutdown after each cooling failure (inf for dark racks)."""
        s = self.state
        rack_temp = self.by_rack.max(self.gpu_temp_c)
        rack_p = self.by_rack.max(gt.gpu_power_w)
        rack_cdu = s.rack_cdu
        supply = cool.cdu_supply_temp_c[rack_cdu]
        r_cal = cool.cdu_plate_r_cal_c_per_w[rack_cdu]
        r_cal = np.where(np.isfinite(r_cal), r_cal, 0.0)
        cp, rho = cool.cdu_coolant_cp_j_per_kg_k[rack_cdu], cool.cdu_coolant_density_kg_per_m3[rack_cdu]
        args = (rack_temp, rack_p, self.rack_idle_w)
        limits = (self.rack_max_op_c, self.rack_slowdown_c, self.rack_shutdown_c)
        out = {}
        out["pump_loss_throttle_s"], out["pump_loss_shutdown_s"] = failures.pump_loss(
            *args,
            supply,
            gt.rack_r_die_c_per_w,
            r_cal,
            self.rack_r_conv_frac,
            cool.cdu_plate_flow_ratio_frac[rack_cdu],
            self.rack_heat_capacity_j_per_k,
            cp,
            rho,
            cool.pumps_running_count[rack_cdu],
            self.rack_pumps_required,
            self.cdu_failover_s[rack_cdu],
            *limits,
        )
        out["cdu_loss_throttle_s"], out["cdu_loss_shutdown_s"] = failures.cdu_loss(
            *args, self.rack_heat_capacity_j_per_k, cp, rho, *limits
        )
        if self.one_rack_per_cdu:  # in-rack CDUs
            cdu_temp_max = np.full(s.n_cdus, -np.inf)
            cdu_temp_max[rack_cdu] = rack_temp
        else:
            cdu_temp_max = np.full(s.n_cdus, -np.inf)
            np.maximum.at(cdu_temp_max, rack_cdu, rack_temp)
        gpu_mean = np.bincount(rack_cdu, weights=itp.rack_gpu_power_w, minlength=s.n_cdus) / np.maximum(
            self.gpus_per_cdu, 1
        )
        cdu_thr, cdu_shut = failures.facility_water_loss(
            cdu_temp_max,
            cool.cdu_supply_temp_c,
            self.cdu_heat_in_w,
            gpu_mean,
            self.idle_mean_w,
            self.gpus_per_cdu,
            self.heat_capacity_mean_j_per_k,
            self.cdu_loop_volume_l,
            cool.cdu_coolant_cp_j_per_kg_k,
            cool.cdu_coolant_density_kg_per_m3,
            self.max_op_min_c,
            self.shutdown_min_c,
        )
        out["facility_loss_throttle_s"], out["facility_loss_shutdown_s"] = cdu_thr[rack_cdu], cdu_shut[rack_cdu]
        out["excursion_throttle_s"], out["excursion_shutdown_s"] = failures.supply_excursion(
            rack_temp,
            rack_p,
            self.rack_idle_w,
            supply,
            inp.supply_excursion_k,
            gt.rack_r_die_c_per_w + r_cal,
            self.rack_heat_capacity_j_per_k,
            self.rack_max_op_c,
            self.rack_shutdown_c,
        )
        if ps.rack_dark.any():
            out = {key: np.where(ps.rack_dark, np.inf, value) for key, value in out.items()}
        return ProjectionResult(times_s=out, rack_max_gpu_temp_c=rack_temp)

    # --- snapshot -------------------------------------------------------------------------
    def _snapshot(self, res: TickResults) -> Snapshot:
        s = self.state
        gt, site, tree, cool, heat, sw = res.gpu_thermal, res.site, res.power_tree, res.cooling, res.heat, res.swing
        it_mw, facility = site.it_mw, site.facility_mw
        self.detail = TickDetail(
            clock_event_mask=gt.gpu_clock_event_mask,
            dark_racks=np.flatnonzero(res.power_state.rack_dark).astype(np.int32),
            power_live=res.power_state.power_live,
            source_live=res.power_state.source_live,
            power_n1_worst_by=tree.power_n1_worst_by,
            power_headroom_kw=self.topo.usable_kw - tree.power_load_kw,
            power_n1_headroom_kw=self.topo.usable_kw - tree.power_n1_load_kw,
            balance=site.balance,
            swing=sw,
            cooling_kw=site.cooling_kw,
            projections_s=res.projections.times_s,
            supply=site.supply,
            policy_in_force=site.policy_in_force,
            policy=site.policy,
            swing_share=res.swing_share,
            racks_shed=res.power_state.rack_shed,
        )
        xid = np.zeros(s.n_gpus, dtype=np.int16)
        if self.gpu_down.any():
            xid[self.gpu_down & ~res.demand.gpu_off] = XID_THERMAL_SHUTDOWN
        util = res.demand.gpu_util_frac
        return Snapshot(
            ts=self.ts,
            gpu_temp_c=self.gpu_temp_c,
            hbm_temp_c=gt.hbm_temp_c,
            gpu_power_w=gt.gpu_power_w,
            gpu_util_frac=np.where(gt.gpu_down, 0.0, util) if gt.any_gpu_down else util,
            sm_clock_mhz=gt.gpu_clock_frac * self.max_clock_mhz,
            throttle_frac=gt.gpu_clock_frac,
            gpu_state=gt.gpu_state,
            last_xid_code=xid,
            rack_power_kw=res.it_power.rack_power_kw,
            rack_max_gpu_temp_c=res.projections.rack_max_gpu_temp_c,
            rack_time_to_throttle_s=res.projections.times_s["pump_loss_throttle_s"],
            cdu_supply_temp_c=heat.cdu_supply_temp_c,
            cdu_return_temp_c=heat.cdu_return_temp_c,
            cdu_flow_lpm=cool.cdu_flow_lpm,
            cdu_heat_kw=heat.cdu_heat_kw,
            cdu_capacity_kw=cool.cdu_capacity_kw,
            pumps_running_count=cool.pumps_running_count.astype(np.int8),
            loop_supply_temp_c=cool.loop_supply_temp_c,
            loop_return_temp_c=site.loop_return_temp_c,
            loop_heat_kw=site.loop_heat_kw,
            power_load_kw=tree.power_load_kw,
            power_load_frac=tree.power_load_frac,
            power_n1_load_frac=tree.power_n1_load_frac,
            source_power_mw=site.source_power_mw,
            battery_soc_frac=site.battery_soc_frac.copy(),
            link_up_flag=res.fabric.link_up_flag,
            link_util_frac=res.fabric.link_util_frac,
            it_power_mw=it_mw,
            cooling_power_mw=site.cooling_mw,
            facility_power_mw=facility,
            generation_capacity_mw=site.balance.generation_capacity_mw,
            # PUE counts network switches as IT equipment (The Green Grid, PUE: a comprehensive
            # examination of the metric, WP#49, 2012: IT equipment = compute, storage, network)
            pue_ratio=facility / (it_mw + self.network_mw) if it_mw > 0 else float("nan"),
            outdoor_wet_bulb_c=res.weather.wet_bulb_c,
            outdoor_dry_bulb_c=res.weather.dry_bulb_c,
            swing_amplitude_mw=sw.amplitude_mw,
            swing_ramp_mw_per_s=sw.ramp_mw_per_s,
            jobs=res.jobs,
            policy_gpu_cap_w=site.policy_in_force.gpu_cap_w,
            n_gpus_shed=int(self.gpus_per_rack[res.power_state.rack_shed].sum()),
            unserved_mw=site.supply.unserved_mw,
            ups_ride_through_s=site.supply.ups_ride_through_s,
            heat_rejected_mw=site.heat_rejected_mw,
            heat_stored_mw=site.heat_stored_mw,
        )
