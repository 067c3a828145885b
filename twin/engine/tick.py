"""The twin engine: one tick composes the physical models into a :class:`Snapshot`.

:class:`TwinEngine` is built once per site (everything static is precomputed there)
and holds the only state that carries over between ticks: GPU die temperatures, the
thermal-shutdown latch, battery state of charge, and the heat the cooling plant saw in
the previous tick.  :meth:`TwinEngine.tick` advances it by ``dt_s`` under
:class:`TickInputs` and returns a :class:`twin.engine.snapshot.Snapshot`.

Each phase is a short method that takes the typed results it needs and returns its own
(the dataclasses of :mod:`twin.engine.phases`); ``tick`` composes them in order and
builds the snapshot from the :class:`~twin.engine.phases.TickResults`.  The phases call
the model functions of :mod:`twin.physics` rather than re-deriving them:

1. ``weather``      :class:`WeatherResult`      outdoor dry/wet bulb from the curve or the inputs;
2. ``power_state``  :class:`PowerStateResult`   live power elements and sources, rack feed shares, dark racks;
3. ``demand``       :class:`DemandResult`       GPU power demand and limit, node PSUs and power brake;
4. ``cooling``      :class:`CoolingResult`      CDU flow and secondary supply, facility supply from the plant;
5. ``gpu_thermal``  :class:`GpuThermalResult`   throttling, board power, exact thermal step, HBM;
6. ``it_power``     :class:`ItPowerResult`      node and rack input power (PSU efficiency);
7. ``heat``         :class:`HeatResult`         CDU heat and return, facility loop heat and return;
8. ``power_tree``   :class:`PowerTreeResult`    roll-up, utilisation, vectorised N-1;
9. ``site``         :class:`SiteResult`         cooling power, source dispatch, battery, balance, PUE;
10. ``fabric``      :class:`FabricResult`       link state and an estimated link utilisation;
11. ``jobs``        list of ``JobStatus``       placed jobs (:mod:`twin.training.sitejob`);
12. ``swing``       ``SwingReport``             swing amplitude/ramp of the running jobs vs what supply can follow;
13. ``projections`` :class:`ProjectionResult`   time to throttle/shutdown after cooling failures, per rack.

The cooling side sees the heat of the previous tick (a one-tick lag; plant and loop
time constants are minutes).  Approximations are listed in ``docs/physics.md``.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone

import numpy as np

from twin.engine.balance import BATTERY as _BATTERY
from twin.engine.balance import SiteBalance, dispatch_sources, generation_capacity_mw, site_balance
from twin.engine.groups import Groups
from twin.engine.inputs import DEFAULT_UTIL_FRAC, PlacedJob, TickInputs
from twin.engine.phases import (
    CoolingResult,
    DemandResult,
    FabricResult,
    GpuThermalResult,
    HeatResult,
    ItPowerResult,
    PowerStateResult,
    PowerTreeResult,
    ProjectionResult,
    SiteResult,
    TickDetail,
    TickResults,
    WeatherResult,
)
from twin.engine.snapshot import GPU_DOWN, GPU_OFF, GPU_THROTTLED, JobStatus, Snapshot
from twin.physics import cooling, fabric, failures, power, powertree, swing, thermal, weather
from twin.site.tables import SiteTables

__all__ = ["PlacedJob", "SiteBalance", "TickDetail", "TickInputs", "TwinEngine", "START_TS", "DEFAULT_UTIL_FRAC"]

log = logging.getLogger(__name__)

# --- modelling constants (each [E] unless cited; see docs/physics.md) ---------------
GPU_FLOW_SHARE_FRAC = 0.8  # [E] share of a rack's secondary flow through GPU cold plates (rest: CPUs, NICs)
BASE_LIQUID_CAPTURE_FRAC = 0.5  # [E] share of non-GPU node power removed by liquid (CPU cold plates)
SWITCH_POWER_W = 1700.0  # [E] SN5600-class switch with 64 × 800G optics (~15 W each) + ASIC/CPU/fans
COMM_POWER_FRAC = 0.15  # [E] GPU dynamic power kept during communication phases (NCCL kernels)
DEFAULT_STEP_TIME_S = 2.0  # [E] step time of the nominal job (swing period), Uptime: 1–2 s
DEFAULT_COMPUTE_FRAC = 0.85  # [E] share of the step at busy power
CROSS_POD_TRAFFIC_FRAC = 0.5  # [E] share of a pod's uplink traffic that continues to the core
XID_THERMAL_SHUTDOWN = 79  # [NVIDIA-XID-Catalog]: "fallen off the bus", thermal suspect
START_TS = datetime(2024, 7, 22, 9, 20, tzinfo=timezone.utc)  # Colossus training start, 04:20 CDT [Musk-2024-07-22]


def _swing_job(status: JobStatus, busy_w: float, comm_w: float) -> swing.SwingJob:
    """Swing profile of a placed job: busy during compute (incl. throttle loss), near idle otherwise."""
    busy_s = status.breakdown_s.get("compute", 0.0) + status.breakdown_s.get("throttle_loss", 0.0)
    frac = min(max(busy_s / status.step_time_s, 0.0), 1.0) if status.step_time_s > 0 else 1.0
    return swing.SwingJob(int(status.gpu_ids.size), float(status.step_time_s), frac, busy_w, comm_w)


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
        self.battery_soc_frac = np.where(state.source_kind == _BATTERY, 1.0, np.nan)
        self.prev_cdu_heat_kw = self.cdu_rated_kw * 0.5
        self.prev_plant_heat_kw = np.zeros(len(state.plant_name))
        self.detail: TickDetail | None = None
        if settle:
            self.settle(TickInputs(ts=start))

    def settle(self, inputs: TickInputs) -> Snapshot:
        """Reach the steady state under ``inputs`` (two long exact steps); batteries stay full."""
        for _ in range(2):
            snap = self.tick(3600.0, inputs)
        self.battery_soc_frac = np.where(self.state.source_kind == _BATTERY, 1.0, np.nan)  # settling is not time
        return snap

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
        self.heat_capacity_j_per_k = _uniform_or_array(spec("heat_capacity_j_per_k"))
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
        xs = np.array([np.pad(c.capacity_curve_supply_c, (0, width - len(c.capacity_curve_supply_c)), mode="edge")
                       for c in specs])
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
        # nominal duty: capacity at facility setpoint + approach (for the approach model)
        setpoint = s.plant_supply_setpoint_c[s.loop_plant[s.cdu_loop]]
        self.cdu_rated_kw = cooling.cdu_capacity_kw(setpoint + self.cdu_approach_k, self.cdu_curve_x, self.cdu_curve_y)
        self.cdu_rated_kw = np.maximum(self.cdu_rated_kw, 1e-3)
        self.rack_pumps_required = self.cdu_pumps_required[s.rack_cdu]
        self.n_plants = len(s.plant_name)
        self.plant_flow_lpm = np.bincount(s.loop_plant, weights=s.loop_flow_lpm, minlength=self.n_plants)
        self.rack_loop = s.cdu_loop[s.rack_cdu]
        self.racks_per_cdu = np.bincount(s.rack_cdu, minlength=s.n_cdus)

    def _precompute_power(self, s: SiteTables) -> None:
        self.topo = powertree.build_topology(s)
        self.source_live_all = np.ones(s.n_sources, dtype=bool)
        self.network_mw = s.n_switches * SWITCH_POWER_W / 1e6
        # IT power (rack input) with every GPU at TDP / at its minimum limit, full base load:
        # the two points of the linear model behind the power-cap and full-power answers.
        gpus = s.n_gpus
        for name, p in (("it_full_mw", self.tdp_w), ("it_min_mw", self.min_limit_w)):
            gsum = self.by_node.sum(np.broadcast_to(np.asarray(p, dtype=np.float64), (gpus,)))
            dc = power.node_dc_power_w(gsum, 1.0, s.node_base_power_w, s.node_idle_base_power_w)
            ac, _ = power.node_input_power_w(dc, s.node_psus, s.node_psu_rating_w)
            setattr(self, name, float(ac.sum()) / 1e6)

    def _precompute_fabric(self, s: SiteTables) -> None:
        self.leaf_gpus = np.bincount(s.gpu_leaf, minlength=s.n_switches).astype(np.float64)
        self.switch_up_gbps = fabric.switch_uplink_gbps(s)
        self._link_cache = None  # (failed links, switch utilisation) -> link utilisation
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
        cool = self._cooling(inp, ps, wx)
        gt = self._gpu_thermal(dt_s, inp, dem, cool)
        itp = self._it_power(ps, dem, gt)
        heat = self._heat(cool, itp)
        tree = self._power_tree(ps, itp)
        site = self._site(dt_s, ps, cool, itp, heat, tree)
        fab = self._fabric(inp, dem, gt)
        jobs = self._jobs(inp, gt, fab)
        sw = self._swing(inp, ps, dem, gt, itp, tree, site, jobs)
        proj = self._projections(inp, ps, cool, gt, itp, heat)
        self.ts = ts
        return self._snapshot(TickResults(ts, wx, ps, dem, cool, gt, itp, heat, tree, site, fab, jobs, sw, proj))

    def _weather(self, ts: datetime, inp: TickInputs) -> WeatherResult:
        dry, wet = weather.outdoor_conditions(self.weather_curve, ts, self.state.longitude_deg)
        return WeatherResult(
            dry_bulb_c=dry if inp.outdoor_dry_bulb_c is None else float(inp.outdoor_dry_bulb_c),
            wet_bulb_c=wet if inp.outdoor_wet_bulb_c is None else float(inp.outdoor_wet_bulb_c))

    def _power_state(self, inp: TickInputs) -> PowerStateResult:
        s = self.state
        source_live = self.source_live_all.copy()
        source_live[_as_ids(inp.failed_sources, s.n_sources, "failed_sources")] = False
        failed = _as_ids(inp.failed_power, s.n_power, "failed_power")
        live = powertree.element_live(self.topo, failed, source_live)
        share_a, share_b, dark = powertree.rack_feed_shares(self.topo, live)
        return PowerStateResult(source_live=source_live, power_live=live, rack_feed_a_share_frac=share_a,
                                rack_feed_b_share_frac=share_b, rack_dark=dark)

    def _gpu_util(self, inp: TickInputs) -> np.ndarray:
        """Utilisation per GPU from the inputs, a missing reading holding the previous value."""
        n = self.state.n_gpus
        if np.ndim(inp.gpu_util_frac) == 0:
            u = float(inp.gpu_util_frac)
            return np.full(n, min(max(u, 0.0), 1.0)) if np.isfinite(u) else self.gpu_util_frac.copy()
        util = np.asarray(inp.gpu_util_frac, dtype=np.float64)
        if util.shape != (n,):
            raise ValueError(f"gpu_util_frac: expected shape ({n},), got {util.shape}")
        if not np.isfinite(util).all():
            util = np.where(np.isfinite(util), util, self.gpu_util_frac)
        return np.clip(util, 0.0, 1.0)

    def _gpu_off(self, inp: TickInputs, ps: PowerStateResult) -> tuple[np.ndarray, np.ndarray | None]:
        """GPUs without power (dark rack, node switched off) and the switched-off nodes (None if none)."""
        s = self.state
        off = self.by_rack.expand(ps.rack_dark) if ps.rack_dark.any() else np.zeros(s.n_gpus, dtype=bool)
        if inp.nodes_off is None:
            return off, None
        node_off = np.asarray(inp.nodes_off, dtype=bool)
        if node_off.shape != (s.n_nodes,):
            raise ValueError(f"nodes_off: expected shape ({s.n_nodes},), got {node_off.shape}")
        if not node_off.any():
            return off, None
        return off | self.by_node.expand(node_off), node_off

    def _demand(self, inp: TickInputs, ps: PowerStateResult) -> DemandResult:
        s = self.state
        util = self._gpu_util(inp)
        if inp.gpu_power_demand_w is None:
            demand = power.gpu_demand_power_w(util, self.idle_w, self.tdp_w)
        else:
            demand = np.broadcast_to(np.asarray(inp.gpu_power_demand_w, dtype=np.float64), (s.n_gpus,))
            demand = np.where(np.isfinite(demand), np.maximum(demand, 0.0), self.gpu_power_w)
        limit = self.tdp_w if inp.gpu_power_limit_w is None else np.clip(inp.gpu_power_limit_w, self.min_limit_w,
                                                                           self.tdp_w)
        off, node_off = self._gpu_off(inp, ps)
        # node PSUs: failed ones, and half of them when one of two feeds is lost
        psus = s.node_psus.astype(np.float64)
        failed_psus = 0.0 if inp.node_psus_failed is None else np.asarray(inp.node_psus_failed, dtype=np.float64)
        one_feed = ((ps.rack_feed_a_share_frac == 1.0) | (ps.rack_feed_b_share_frac == 1.0)) & (self.topo.feed_b >= 0)
        lost_feed_psus = np.where(one_feed[s.node_rack], np.floor(psus / 2.0), 0.0) if one_feed.any() else 0.0
        psus_live = np.maximum(psus - failed_psus - lost_feed_psus, 0.0)
        # the brake compares the node's need at full base load with what its live PSUs deliver
        node_need = power.node_dc_power_w(self.by_node.sum(np.minimum(demand, limit)), 1.0, s.node_base_power_w,
                                          s.node_idle_base_power_w)
        brake_node = node_need > power.node_power_available_w(psus_live, s.node_psu_rating_w)
        return DemandResult(
            gpu_util_frac=util, gpu_power_demand_w=demand, gpu_power_limit_w=limit, gpu_off=off, node_off=node_off,
            node_psus_live=psus_live, gpu_power_brake=self.by_node.expand(brake_node) if brake_node.any() else False,
            node_util_frac=self.by_node.sum(util) / self.gpus_per_node)

    def _cooling(self, inp: TickInputs, ps: PowerStateResult, wx: WeatherResult) -> CoolingResult:
        s = self.state
        pumps = self.cdu_pumps.copy() if inp.pumps_running_count is None else np.asarray(inp.pumps_running_count,
                                                                                         dtype=np.float64)
        if self.cdu_in_rack.any() and ps.rack_dark.any():  # an in-rack CDU is powered by its rack
            cdu_dark = np.bincount(s.rack_cdu, weights=ps.rack_dark, minlength=s.n_cdus) >= self.racks_per_cdu
            pumps = np.where(self.cdu_in_rack & cdu_dark, 0.0, pumps)
        flow = cooling.cdu_flow_lpm(pumps, self.cdu_pumps_required, self.cdu_design_flow_lpm)
        if inp.cdu_flow_lpm is not None:
            measured = np.asarray(inp.cdu_flow_lpm, dtype=np.float64)
            flow = np.where(np.isfinite(measured), np.maximum(measured, 0.0), flow)
        # facility supply from the plant (previous tick's heat), optionally overridden
        plant_supply, chiller_kw, _ = cooling.plant_supply_temp_c(
            self.prev_plant_heat_kw, self.plant_flow_lpm, s.plant_supply_setpoint_c, wx.wet_bulb_c,
            s.plant_tower_approach_k, s.plant_capacity_kw,
            s.plant_chiller_count if inp.plant_chillers_running is None else inp.plant_chillers_running,
            s.plant_chiller_kw)
        loop_supply = plant_supply[s.loop_plant]
        if inp.loop_supply_temp_c is not None:
            override = np.asarray(inp.loop_supply_temp_c, dtype=np.float64)
            loop_supply = np.where(np.isfinite(override), override, loop_supply)
        fw = loop_supply[s.cdu_loop]
        # capacity at the secondary supply the facility water allows; floored at 10 % of the
        # rated duty [E] so a CDU far past its curve shows a large but finite approach
        cap_now = cooling.cdu_capacity_kw(fw + self.cdu_approach_k, self.cdu_curve_x, self.cdu_curve_y)
        cap_now = np.maximum(cap_now, 0.1 * self.cdu_rated_kw)
        cdu_supply = cooling.cdu_supply_temp_c(fw, self.prev_cdu_heat_kw, cap_now, self.cdu_approach_k)
        if inp.cdu_supply_setpoint_c is not None:  # a CDU set warmer than its facility water allows
            cdu_supply = np.fmax(cdu_supply, np.asarray(inp.cdu_supply_setpoint_c, dtype=np.float64))
        cp, rho = cooling.coolant_properties(cdu_supply, self.coolant)
        # caloric resistance of one GPU plate; no flow → inf (the thermal phase steps those adiabatically)
        plate_flow = cooling.mass_flow_kg_s(flow, rho) * GPU_FLOW_SHARE_FRAC / np.maximum(self.gpus_per_cdu, 1)
        flowing = plate_flow > 0.0
        r_cal_cdu = np.full(s.n_cdus, np.inf)
        r_cal_cdu[flowing] = thermal.caloric_resistance_c_per_w(plate_flow[flowing], cp[flowing])
        return CoolingResult(
            pumps_running_count=pumps, cdu_flow_lpm=flow, cdu_supply_temp_c=cdu_supply,
            cdu_capacity_kw=cooling.cdu_capacity_kw(cdu_supply, self.cdu_curve_x, self.cdu_curve_y),
            cdu_coolant_cp_j_per_kg_k=cp, cdu_coolant_density_kg_per_m3=rho, cdu_plate_r_cal_c_per_w=r_cal_cdu,
            loop_supply_temp_c=loop_supply, plant_chiller_kw=chiller_kw)

    def _gpu_r_die(self, inp: TickInputs) -> np.ndarray | float:
        """Die-to-coolant resistance per GPU (catalogue × the degradation factor of the inputs)."""
        if inp.gpu_r_th_factor is None:
            return self.r_die_c_per_w
        n = self.state.n_gpus
        factor = np.asarray(inp.gpu_r_th_factor, dtype=np.float64)
        if factor.shape != (n,) or not (factor > 0).all():
            raise ValueError(f"gpu_r_th_factor: expected {n} positive factors")
        return self.r_die_c_per_w * factor

    def _thermal_operating_point(self, r_die: np.ndarray | float, cool: CoolingResult, dt_s: float):
        """Per-GPU supply, caloric resistance, SW thermal power limit and step decay.

        With one GPU model and no per-GPU degradation these are per-CDU values expanded to
        the GPUs (the physics functions run on 1,568 CDUs instead of 100k GPUs).  Returns
        ``(supply_c, r_cal_c_per_w, power_limit_w, decay_frac, no_flow_cdu)``.
        """
        ex = self.by_cdu.expand
        no_flow_cdu = ~np.isfinite(cool.cdu_plate_r_cal_c_per_w)
        r_cal_cdu = np.where(no_flow_cdu, 0.0, cool.cdu_plate_r_cal_c_per_w)
        supply, r_cal = ex(cool.cdu_supply_temp_c), ex(r_cal_cdu)
        if self.uniform_gpus and r_die is self.r_die_c_per_w:
            p_lim_cdu = thermal.sw_thermal_power_limit_w(cool.cdu_supply_temp_c, r_die, self.r_hbm_c_per_w,
                                                         r_cal_cdu, self.max_op_c, self.hbm_max_c)
            tau_cdu = thermal.time_constant_s(self.heat_capacity_j_per_k, r_die + r_cal_cdu)
            p_lim = ex(np.where(no_flow_cdu, np.inf, p_lim_cdu))
            decay = ex(thermal.decay_frac(tau_cdu, dt_s))
        else:
            p_lim = np.where(ex(no_flow_cdu), np.inf, thermal.sw_thermal_power_limit_w(
                supply, r_die, self.r_hbm_c_per_w, r_cal, self.max_op_c, self.hbm_max_c))
            decay = thermal.decay_frac(thermal.time_constant_s(self.heat_capacity_j_per_k, r_die + r_cal), dt_s)
        return supply, r_cal, p_lim, decay, no_flow_cdu

    def _throttle(self, dem: DemandResult, p_lim: np.ndarray):
        """Board power, clock and clock-event mask; the full model runs only on GPUs near a limit."""
        n = self.state.n_gpus
        temp, demand, limit, util, brake = (self.gpu_temp_c, dem.gpu_power_demand_w, dem.gpu_power_limit_w,
                                            dem.gpu_util_frac, dem.gpu_power_brake)
        p = np.minimum(demand, limit)
        need = thermal.throttle_active(demand, limit, temp, p_lim, self.max_op_c, brake)
        clock = np.ones(n)
        mask = np.zeros(n, dtype=np.int32)
        idx = np.flatnonzero(need)
        if idx.size > n // 2:  # most GPUs near a limit: the full model on whole arrays
            p, clock, mask = thermal.throttle(demand, limit, self.idle_w, temp, p_lim, self.max_op_c,
                                              self.slowdown_c, util, brake)
        elif idx.size:
            sub = (lambda v: v[idx] if np.ndim(v) else v)  # noqa: E731
            p[idx], clock[idx], mask[idx] = thermal.throttle(
                demand[idx], sub(limit), sub(self.idle_w), temp[idx], p_lim[idx], sub(self.max_op_c),
                sub(self.slowdown_c), util[idx], sub(brake))
        idle = util < thermal.IDLE_UTIL_FRAC
        if idle.any():
            mask |= np.where(idle, thermal.CLOCK_EVENT_GPU_IDLE, 0).astype(np.int32)
        return p, clock, mask, idx.size > 0

    def _gpu_thermal(self, dt_s: float, inp: TickInputs, dem: DemandResult, cool: CoolingResult) -> GpuThermalResult:
        """Throttle decisions, board power, exact thermal step (adiabatic without flow), HBM, shutdown latch."""
        n = self.state.n_gpus
        if inp.recover_down_gpus and self.gpu_down.any():
            self.gpu_down &= self.gpu_temp_c >= self.max_op_c
        r_die = self._gpu_r_die(inp)
        rack_r_die = self.rack_r_die_c_per_w if r_die is self.r_die_c_per_w else self.by_rack.max(r_die)
        supply, r_cal, p_lim, decay, no_flow_cdu = self._thermal_operating_point(r_die, cool, dt_s)
        temp = self.gpu_temp_c
        p, clock, mask, any_limited = self._throttle(dem, p_lim)
        off = dem.gpu_off | self.gpu_down
        any_off = bool(off.any())
        if any_off:
            p[off] = 0.0
        steady = thermal.die_temp_steady_c(p, supply, r_die, r_cal)
        new_temp = thermal.relax_temp_c(temp, steady, decay)
        if no_flow_cdu.any():  # no flow: adiabatic heating of the package
            nf = np.flatnonzero(self.by_cdu.expand(no_flow_cdu))
            cap = self.heat_capacity_j_per_k[nf] if np.ndim(self.heat_capacity_j_per_k) else self.heat_capacity_j_per_k
            shutdown = self.shutdown_c[nf] if np.ndim(self.shutdown_c) else self.shutdown_c
            new_temp[nf] = thermal.adiabatic_step_c(temp[nf], p[nf], cap, dt_s, shutdown)
        # HBM against the catalogue resistances (a degraded die interface does not change the HBM's)
        hbm = thermal.hbm_temp_c(new_temp, thermal.plate_coolant_temp_c(p, supply, r_cal), self.r_die_c_per_w,
                                 self.r_hbm_c_per_w)
        newly_down = new_temp >= self.shutdown_c
        if newly_down.any():
            newly_down &= ~off
            self.gpu_down = self.gpu_down | newly_down
            off = off | newly_down
            any_off = True
        state = np.zeros(n, dtype=np.int8)
        if any_limited:
            state[clock < 0.999] = GPU_THROTTLED
        if any_off:
            clock[off] = 0.0
            state[off] = GPU_DOWN
            if dem.node_off is not None:
                state[self.by_node.expand(dem.node_off)] = GPU_OFF
        self.gpu_temp_c = new_temp
        self.gpu_power_w = p
        self.gpu_util_frac = dem.gpu_util_frac
        return GpuThermalResult(gpu_power_w=p, gpu_clock_frac=clock, gpu_clock_event_mask=mask, hbm_temp_c=hbm,
                                gpu_state=state, gpu_down=off, any_gpu_down=any_off, rack_r_die_c_per_w=rack_r_die)

    def _it_power(self, ps: PowerStateResult, dem: DemandResult, gt: GpuThermalResult) -> ItPowerResult:
        s = self.state
        gpu_sum = self.by_node.sum(gt.gpu_power_w)
        node_live = dem.node_psus_live > 0
        dc = power.node_dc_power_w(gpu_sum, dem.node_util_frac, s.node_base_power_w, s.node_idle_base_power_w)
        dark_node = ps.rack_dark[s.node_rack]
        if dem.node_off is not None:
            dark_node = dark_node | dem.node_off
        dc = np.where(dark_node | ~node_live, 0.0, dc)
        ac, _ = power.node_input_power_w(dc, dem.node_psus_live, s.node_psu_rating_w)
        return ItPowerResult(node_dc_power_w=dc, node_input_power_w=ac, rack_power_kw=self.node_by_rack.sum(ac) / 1e3,
                             rack_gpu_power_w=self.node_by_rack.sum(gpu_sum))

    def _heat(self, cool: CoolingResult, itp: ItPowerResult) -> HeatResult:
        """Liquid heat per CDU (GPUs and part of the base power), air and pump heat to the facility loops."""
        s = self.state
        rack_dc = self.node_by_rack.sum(itp.node_dc_power_w)
        rack_gpu = itp.rack_gpu_power_w
        liquid_w = rack_gpu + BASE_LIQUID_CAPTURE_FRAC * (rack_dc - rack_gpu)
        air_w = itp.rack_power_kw * 1e3 - liquid_w  # PSU losses and the rest of the base power
        cdu_heat_kw = np.bincount(s.rack_cdu, weights=liquid_w, minlength=s.n_cdus) / 1e3
        flowing = cool.cdu_flow_lpm > 0
        rise = np.zeros(s.n_cdus)
        rise[flowing] = cooling.coolant_delta_t_k(cdu_heat_kw[flowing] * 1e3, cool.cdu_flow_lpm[flowing],
                                                  cool.cdu_supply_temp_c[flowing], self.coolant)
        pump_w = cool.pumps_running_count * self.cdu_pump_power_w
        loop_heat_kw = np.bincount(s.cdu_loop, weights=cdu_heat_kw, minlength=len(s.loop_name))
        loop_heat_kw += np.bincount(self.rack_loop, weights=air_w, minlength=len(s.loop_name)) / 1e3
        loop_heat_kw += np.bincount(s.cdu_loop, weights=pump_w, minlength=len(s.loop_name)) / 1e3  # pump work is heat
        loop_rise = cooling.coolant_delta_t_k(loop_heat_kw * 1e3, s.loop_flow_lpm, cool.loop_supply_temp_c, "water")
        plant_heat = np.bincount(s.loop_plant, weights=loop_heat_kw, minlength=self.n_plants)
        self.prev_cdu_heat_kw = cdu_heat_kw
        self.prev_plant_heat_kw = plant_heat
        return HeatResult(cdu_heat_kw=cdu_heat_kw, cdu_return_temp_c=cool.cdu_supply_temp_c + rise,
                          cdu_pump_kw=float(np.sum(pump_w)) / 1e3, loop_heat_kw=loop_heat_kw,
                          loop_return_temp_c=cool.loop_supply_temp_c + loop_rise, plant_heat_kw=plant_heat)

    def _power_tree(self, ps: PowerStateResult, itp: ItPowerResult) -> PowerTreeResult:
        topo = self.topo
        shares = (ps.rack_feed_a_share_frac, ps.rack_feed_b_share_frac)
        load, inp_kw = powertree.rollup(topo, itp.rack_power_kw, *shares)
        worst, worst_by = powertree.n1_worst_load_kw(topo, load, itp.rack_power_kw, *shares, ps.power_live)
        return PowerTreeResult(
            power_load_kw=load, power_load_frac=powertree.load_frac(load, topo.usable_kw), power_n1_load_kw=worst,
            power_n1_load_frac=powertree.load_frac(worst, topo.usable_kw), power_n1_worst_by=worst_by,
            tree_input_kw=float(inp_kw[topo.top_down[0]].sum()))

    def _site(self, dt_s: float, ps: PowerStateResult, cool: CoolingResult, itp: ItPowerResult, heat: HeatResult,
              tree: PowerTreeResult) -> SiteResult:
        s = self.state
        cool_kw = cooling.cooling_power_kw(heat.cdu_pump_kw, s.loop_flow_lpm, heat.plant_heat_kw,
                                           cool.plant_chiller_kw, s.plant_cop)
        it_mw = float(itp.rack_power_kw.sum()) / 1e3
        tree_mw = tree.tree_input_kw / 1e3
        cooling_mw = cool_kw["total_kw"] / 1e3
        facility = tree_mw + cooling_mw + self.network_mw + s.site_overhead_mw
        source_mw, soc = dispatch_sources(facility, s.source_kind, s.source_capacity_mw, s.source_energy_mwh,
                                          ps.source_live, self.battery_soc_frac, dt_s)
        self.battery_soc_frac = soc
        capacity, n1_capacity = generation_capacity_mw(s.source_kind, s.source_capacity_mw, ps.source_live, soc)
        balance = site_balance(it_mw, tree_mw, cooling_mw, facility, capacity, n1_capacity, self.network_mw,
                               s.site_overhead_mw, self.it_full_mw, self.it_min_mw, s.n_gpus,
                               float(np.max(self.tdp_w)), float(np.max(self.min_limit_w)))
        return SiteResult(cooling_kw=cool_kw, it_mw=it_mw, cooling_mw=cooling_mw, facility_mw=facility,
                          source_power_mw=source_mw, battery_soc_frac=soc, balance=balance)

    def _uplink_gbps(self, failed: np.ndarray, up: np.ndarray) -> np.ndarray:
        """Surviving uplink capacity per switch, recomputed only when the failed links change."""
        key = failed.tobytes()
        if self._uplink_cache[0] != key:
            self._uplink_cache = (key, fabric.switch_uplink_gbps(self.state, up))
        return self._uplink_cache[1]

    def _fabric(self, inp: TickInputs, dem: DemandResult, gt: GpuThermalResult) -> FabricResult:
        """Link state from the inputs and an estimated utilisation (:func:`twin.physics.fabric.uplink_util_frac`)."""
        s = self.state
        failed = _as_ids(inp.failed_links, s.n_links, "failed_links")
        up = np.ones(s.n_links, dtype=bool)
        up[failed] = False
        if s.n_links == 0:
            return FabricResult(link_up_flag=up, link_util_frac=np.zeros(0))
        cap = self._uplink_gbps(failed, up)
        util = dem.gpu_util_frac
        if gt.any_gpu_down or util.min() <= thermal.IDLE_UTIL_FRAC:
            active = (util > thermal.IDLE_UTIL_FRAC) & ~gt.gpu_down
            gpus = np.bincount(s.gpu_leaf, weights=active, minlength=s.n_switches)
        else:
            gpus = self.leaf_gpus
        sw_util = fabric.uplink_util_frac(s, gpus, cap, 1.0 - DEFAULT_COMPUTE_FRAC, CROSS_POD_TRAFFIC_FRAC)
        key = (failed.tobytes(), sw_util.tobytes())
        if self._link_cache is None or self._link_cache[0] != key:
            link_util = sw_util[s.link_a]
            if failed.size:
                link_util[failed] = 0.0
            self._link_cache = (key, link_util)
        return FabricResult(link_up_flag=up, link_util_frac=self._link_cache[1].copy())

    def _jobs(self, inp: TickInputs, gt: GpuThermalResult, fab: FabricResult) -> list[JobStatus]:
        if not inp.jobs:
            return []
        from twin.training import sitejob  # imported only when jobs are placed

        return [sitejob.evaluate_site_job(self.state, job.spec, job.gpu_ids, gt.gpu_clock_frac, fab.link_up_flag).status
                for job in inp.jobs]

    def _swing(self, inp: TickInputs, ps: PowerStateResult, dem: DemandResult, gt: GpuThermalResult,
               itp: ItPowerResult, tree: PowerTreeResult, site: SiteResult, jobs: list[JobStatus]) -> swing.SwingReport:
        s = self.state
        n_run = s.n_gpus - (int(np.count_nonzero(gt.gpu_down)) if gt.any_gpu_down else 0)
        limit = dem.gpu_power_limit_w
        busy = float(np.mean(np.minimum(limit, self.tdp_w))) if np.ndim(limit) else float(
            np.minimum(limit, np.mean(self.tdp_w)))
        idle = float(np.mean(self.idle_w))
        comm = float(power.gpu_demand_power_w(COMM_POWER_FRAC, idle, busy))  # communication: near idle
        swing_jobs = inp.swing_jobs
        if swing_jobs is None and jobs:
            swing_jobs = [_swing_job(st, busy, comm) for st in jobs if np.isfinite(st.step_time_s)]
        if swing_jobs is None:
            swing_jobs = [swing.SwingJob(n_run, DEFAULT_STEP_TIME_S, DEFAULT_COMPUTE_FRAC, busy, comm)] if n_run else []
        node_dc = float(itp.node_dc_power_w.sum())
        rack_kw = float(itp.rack_power_kw.sum())
        k_node = (float(itp.node_input_power_w.sum()) / node_dc if node_dc > 0 else 1.0) * (
            tree.tree_input_kw / rack_kw if rack_kw > 0 else 1.0)
        return swing.project_swing(swing_jobs, s.source_kind, s.source_capacity_mw, s.source_ramp_mw_per_s,
                                   site.source_power_mw, ps.source_live, site.battery_soc_frac, k_node)

    def _projections(self, inp: TickInputs, ps: PowerStateResult, cool: CoolingResult, gt: GpuThermalResult,
                     itp: ItPowerResult, heat: HeatResult) -> ProjectionResult:
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
            *args, supply, gt.rack_r_die_c_per_w, r_cal, self.rack_heat_capacity_j_per_k, cp, rho,
            cool.pumps_running_count[rack_cdu], self.rack_pumps_required, self.cdu_failover_s[rack_cdu], *limits)
        out["cdu_loss_throttle_s"], out["cdu_loss_shutdown_s"] = failures.cdu_loss(
            *args, self.rack_heat_capacity_j_per_k, cp, rho, *limits)
        cdu_temp_max = np.full(s.n_cdus, -np.inf)
        np.maximum.at(cdu_temp_max, rack_cdu, rack_temp)
        gpu_mean = np.bincount(rack_cdu, weights=itp.rack_gpu_power_w, minlength=s.n_cdus) / np.maximum(
            self.gpus_per_cdu, 1)
        cdu_thr, cdu_shut = failures.facility_water_loss(
            cdu_temp_max, cool.cdu_supply_temp_c, heat.cdu_heat_kw * 1e3, gpu_mean, np.mean(self.idle_w),
            self.gpus_per_cdu, np.mean(self.heat_capacity_j_per_k), self.cdu_loop_volume_l,
            cool.cdu_coolant_cp_j_per_kg_k, cool.cdu_coolant_density_kg_per_m3, np.min(self.max_op_c),
            np.min(self.shutdown_c))
        out["facility_loss_throttle_s"], out["facility_loss_shutdown_s"] = cdu_thr[rack_cdu], cdu_shut[rack_cdu]
        out["excursion_throttle_s"], out["excursion_shutdown_s"] = failures.supply_excursion(
            rack_temp, rack_p, self.rack_idle_w, supply, inp.supply_excursion_k, gt.rack_r_die_c_per_w + r_cal,
            self.rack_heat_capacity_j_per_k, self.rack_max_op_c, self.rack_shutdown_c)
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
            power_live=res.power_state.power_live, source_live=res.power_state.source_live,
            power_n1_worst_by=tree.power_n1_worst_by,
            power_headroom_kw=self.topo.usable_kw - tree.power_load_kw,
            power_n1_headroom_kw=self.topo.usable_kw - tree.power_n1_load_kw, balance=site.balance, swing=sw,
            cooling_kw=site.cooling_kw, projections_s=res.projections.times_s)
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
            cdu_supply_temp_c=cool.cdu_supply_temp_c,
            cdu_return_temp_c=heat.cdu_return_temp_c,
            cdu_flow_lpm=cool.cdu_flow_lpm,
            cdu_heat_kw=heat.cdu_heat_kw,
            cdu_capacity_kw=cool.cdu_capacity_kw,
            pumps_running_count=cool.pumps_running_count.astype(np.int8),
            loop_supply_temp_c=cool.loop_supply_temp_c,
            loop_return_temp_c=heat.loop_return_temp_c,
            loop_heat_kw=heat.loop_heat_kw,
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
        )
