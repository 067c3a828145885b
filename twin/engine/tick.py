"""The twin engine: one tick composes the physical models into a :class:`Snapshot`.

:class:`TwinEngine` is built once per site (everything static is precomputed there)
and holds the only state that carries over between ticks: GPU die temperatures, the
thermal-shutdown latch, battery state of charge, and the heat the cooling plant saw in
the previous tick.  :meth:`TwinEngine.tick` advances it by ``dt_s`` under
:class:`TickInputs` and returns a :class:`twin.engine.snapshot.Snapshot`.

Tick phases, in order (each a short method):

1. ``weather``      outdoor dry/wet bulb from the curve or the inputs;
2. ``power_state``  live power elements and sources, rack feed shares, dark racks;
3. ``demand``       GPU power demand and limit, node PSUs and power brake;
4. ``cooling``      CDU flow and secondary supply, facility supply from the plant;
5. ``gpu_thermal``  throttling decision, board power, exact thermal step, HBM;
6. ``it_power``     node and rack input power (PSU efficiency);
7. ``heat``         CDU heat and return, facility loop heat and return;
8. ``power_tree``   roll-up, utilisation, vectorised N-1;
9. ``site``         cooling power, source dispatch, battery, balance, PUE;
10. ``fabric``      link state and an estimated link utilisation;
11. ``jobs``        JobStatus of placed jobs (:mod:`twin.training.sitejob`);
12. ``swing``       swing amplitude/ramp of the running jobs vs what supply can follow;
13. ``projections`` time to throttle/shutdown after cooling failures, per rack.

The cooling side sees the heat of the previous tick (a one-tick lag; plant and loop
time constants are minutes).  Approximations are listed in ``docs/physics.md``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import numpy as np

from twin.physics import cooling, failures, power, powertree, swing, thermal, weather
from twin.engine.snapshot import GPU_DOWN, GPU_OFF, GPU_THROTTLED, JobStatus, Snapshot
from twin.site.tables import SOURCE_KINDS, TIER_LEAF, TIER_SPINE, SiteTables

log = logging.getLogger(__name__)

# --- modelling constants (each [E] unless cited; see docs/physics.md) ---------------
GPU_FLOW_SHARE_FRAC = 0.8  # [E] share of a rack's secondary flow through GPU cold plates (rest: CPUs, NICs)
BASE_LIQUID_CAPTURE_FRAC = 0.5  # [E] share of non-GPU node power removed by liquid (CPU cold plates)
SWITCH_POWER_W = 1700.0  # [E] SN5600-class switch with 64 × 800G optics (~15 W each) + ASIC/CPU/fans
COMM_POWER_FRAC = 0.15  # [E] GPU dynamic power kept during communication phases (NCCL kernels)
DEFAULT_UTIL_FRAC = 0.9  # nominal training load (GPU_UTIL 90–100 % [Est-H100-Training-Load])
DEFAULT_STEP_TIME_S = 2.0  # [E] step time of the nominal job (swing period), Uptime: 1–2 s
DEFAULT_COMPUTE_FRAC = 0.85  # [E] share of the step at busy power
CROSS_POD_TRAFFIC_FRAC = 0.5  # [E] share of a pod's uplink traffic that continues to the core
XID_THERMAL_SHUTDOWN = 79  # [NVIDIA-XID-Catalog]: "fallen off the bus", thermal suspect
START_TS = datetime(2024, 7, 22, 9, 20, tzinfo=timezone.utc)  # Colossus training start, 04:20 CDT [Musk-2024-07-22]
_BATTERY = SOURCE_KINDS.index("battery")


@dataclass
class PlacedJob:
    """A training job (:class:`twin.training.jobfile.TrainingJob`) on site GPUs."""

    spec: object
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
    cdu_flow_lpm: np.ndarray | None = None  # measured secondary flow per CDU (NaN = use the pump model)
    loop_supply_temp_c: np.ndarray | None = None  # facility supply override per loop (NaN = plant model)
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
    jobs: list[PlacedJob] = field(default_factory=list)
    supply_excursion_k: float = 5.0  # ΔT of the projected supply-temperature excursion
    recover_down_gpus: bool = False  # clear the thermal-shutdown latch of GPUs that cooled down


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
    swing: swing.SwingReport
    cooling_kw: dict[str, float]
    projections_s: dict[str, np.ndarray]  # per rack: <scenario>_throttle_s / _shutdown_s


class _Groups:
    """Sum/max of per-member values by group, via reduceat on a precomputed order."""

    def __init__(self, group: np.ndarray, n_groups: int) -> None:
        group = np.asarray(group, dtype=np.int64)
        self.group = group
        self.sorted = bool(np.all(np.diff(group) >= 0))
        self.order = None if self.sorted else np.argsort(group, kind="stable")
        g = group if self.sorted else group[self.order]
        counts = np.bincount(g, minlength=n_groups)
        self.counts = counts
        self.nonempty = np.flatnonzero(counts > 0)
        self.starts = np.concatenate(([0], np.cumsum(counts)[:-1]))[self.nonempty]
        self.n_groups = n_groups
        self.all_nonempty = self.nonempty.size == n_groups
        # equal-size contiguous groups → reshape (fastest)
        self.width = int(counts[0]) if (self.sorted and n_groups and np.all(counts == counts[0])) else 0

    def _reduce(self, values: np.ndarray, ufunc, fill: float) -> np.ndarray:
        if self.width:
            return ufunc.reduce(values.reshape(self.n_groups, self.width), axis=1)
        v = values if self.order is None else values[self.order]
        if self.all_nonempty:
            return ufunc.reduceat(v, self.starts)
        out = np.full(self.n_groups, fill, dtype=np.float64)
        if self.nonempty.size:
            out[self.nonempty] = ufunc.reduceat(v, self.starts)
        return out

    def sum(self, values: np.ndarray) -> np.ndarray:
        return self._reduce(np.asarray(values, dtype=np.float64), np.add, 0.0)

    def expand(self, values: np.ndarray) -> np.ndarray:
        """Per-group values spread to the members (``values[group]``)."""
        if self.width:
            return np.repeat(values, self.width)
        if self.sorted:
            return np.repeat(values, self.counts)
        return values[self.group]

    def max(self, values: np.ndarray) -> np.ndarray:
        return self._reduce(np.asarray(values, dtype=np.float64), np.maximum, np.nan)


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
        self.r_die = _uniform_or_array(spec("r_th_die_c_per_w"))
        self.r_hbm = _uniform_or_array(spec("r_th_hbm_c_per_w"))
        self.heat_cap = _uniform_or_array(spec("heat_capacity_j_per_k"))
        self.gpu_cdu = s.rack_cdu[s.gpu_rack].astype(np.int64)
        self.by_cdu = _Groups(self.gpu_cdu, s.n_cdus)
        self.uniform_gpus = len({s.gpu_specs[i].name for i in np.unique(s.gpu_spec)}) <= 1
        self.hbm_ratio = np.asarray(self.r_hbm) / self.r_die  # HBM rise over the die rise above the coolant
        self.by_node = _Groups(s.gpu_node, s.n_nodes)
        self.by_rack = _Groups(s.gpu_rack, s.n_racks)
        self.node_by_rack = _Groups(s.node_rack, s.n_racks)
        self.gpus_per_node = np.maximum(self.by_node.counts, 1)
        self.gpus_per_rack = self.by_rack.counts
        self.gpus_per_cdu = np.bincount(self.gpu_cdu, minlength=s.n_cdus)
        # per-rack GPU constants for projections, the conservative end over the rack's GPUs:
        # highest resistance and idle power, lowest heat capacity and thresholds
        per_gpu = lambda v: np.broadcast_to(np.asarray(v, dtype=np.float64), (s.n_gpus,))  # noqa: E731
        rack_min = lambda v: -self.by_rack.max(-per_gpu(v))  # noqa: E731
        self.rack_r_die = self.by_rack.max(per_gpu(self.r_die))
        self.rack_heat_cap = rack_min(self.heat_cap)
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
        self.switch_up_gbps = np.bincount(s.link_a, weights=s.link_gbps, minlength=s.n_switches)
        self.leaf_ids = np.flatnonzero(s.switch_tier == TIER_LEAF)
        self.spine_ids = np.flatnonzero(s.switch_tier == TIER_SPINE)
        self.n_pods = int(s.switch_pod.max()) + 1 if s.n_switches else 0
        self.leaf_pod = np.maximum(s.switch_pod[self.leaf_ids], 0)
        self.spine_pod = np.maximum(s.switch_pod[self.spine_ids], 0)
        self.spines_per_pod = np.maximum(np.bincount(self.spine_pod, minlength=self.n_pods), 1)
        self._link_cache = None

    # --- tick ---------------------------------------------------------------------------
    def tick(self, dt_s: float, inputs: TickInputs | None = None) -> Snapshot:
        """Advance the twin by ``dt_s`` seconds under ``inputs`` and return the snapshot."""
        if not (dt_s >= 0.0 and np.isfinite(dt_s)):
            raise ValueError(f"dt_s: must be a finite number >= 0 (got {dt_s!r})")
        inp = inputs or TickInputs()
        ts = inp.ts if inp.ts is not None else self.ts + timedelta(seconds=dt_s)
        if ts.tzinfo is None:
            raise ValueError("TickInputs.ts: must be timezone-aware (UTC)")
        r = {"ts": ts}  # results of the phases, by name
        self._phase_weather(inp, r)
        self._phase_power_state(inp, r)
        self._phase_demand(inp, r)
        self._phase_cooling(inp, r)
        self._phase_gpu_thermal(dt_s, inp, r)
        self._phase_it_power(r)
        self._phase_heat(r)
        self._phase_power_tree(r)
        self._phase_site(dt_s, inp, r)
        self._phase_fabric(inp, r)
        self._phase_jobs(inp, r)
        self._phase_swing(inp, r)
        self._phase_projections(inp, r)
        self.ts = ts
        return self._snapshot(r)

    def _phase_weather(self, inp: TickInputs, r: dict) -> None:
        dry, wet = weather.outdoor_conditions(self.weather_curve, r["ts"], self.state.longitude_deg)
        r["dry_bulb_c"] = dry if inp.outdoor_dry_bulb_c is None else float(inp.outdoor_dry_bulb_c)
        r["wet_bulb_c"] = wet if inp.outdoor_wet_bulb_c is None else float(inp.outdoor_wet_bulb_c)

    def _phase_power_state(self, inp: TickInputs, r: dict) -> None:
        s = self.state
        source_live = self.source_live_all.copy()
        source_live[_as_ids(inp.failed_sources, s.n_sources, "failed_sources")] = False
        failed = _as_ids(inp.failed_power, s.n_power, "failed_power")
        live = powertree.element_live(self.topo, failed, source_live)
        share_a, share_b, dark = powertree.rack_feed_shares(self.topo, live)
        r.update(source_live=source_live, power_live=live, share_a=share_a, share_b=share_b, dark_rack=dark)

    def _phase_demand(self, inp: TickInputs, r: dict) -> None:
        s = self.state
        n = s.n_gpus
        if np.ndim(inp.gpu_util_frac) == 0:
            u = float(inp.gpu_util_frac)
            util = np.full(n, min(max(u, 0.0), 1.0)) if np.isfinite(u) else self.gpu_util_frac.copy()
        else:
            util = np.asarray(inp.gpu_util_frac, dtype=np.float64)
            if util.shape != (n,):
                raise ValueError(f"gpu_util_frac: expected shape ({n},), got {util.shape}")
            if not np.isfinite(util).all():  # missing reading: hold the previous value
                util = np.where(np.isfinite(util), util, self.gpu_util_frac)
            util = np.clip(util, 0.0, 1.0)
        if inp.gpu_power_demand_w is None:
            demand = self.idle_w + util * (self.tdp_w - self.idle_w)
        else:
            demand = np.broadcast_to(np.asarray(inp.gpu_power_demand_w, dtype=np.float64), (n,))
            demand = np.where(np.isfinite(demand), np.maximum(demand, 0.0), self.gpu_power_w)
        limit = self.tdp_w if inp.gpu_power_limit_w is None else np.clip(inp.gpu_power_limit_w, self.min_limit_w,
                                                                           self.tdp_w)
        dark = r["dark_rack"]
        off = self.by_rack.expand(dark) if dark.any() else np.zeros(n, dtype=bool)
        node_off = None
        if inp.nodes_off is not None:
            node_off = np.asarray(inp.nodes_off, dtype=bool)
            if node_off.shape != (s.n_nodes,):
                raise ValueError(f"nodes_off: expected shape ({s.n_nodes},), got {node_off.shape}")
            if node_off.any():
                off = off | self.by_node.expand(node_off)
            else:
                node_off = None
        # node PSUs: failed ones, and half of them when one of two feeds is lost
        psus = s.node_psus.astype(np.float64)
        failed_psus = 0.0 if inp.node_psus_failed is None else np.asarray(inp.node_psus_failed, dtype=np.float64)
        one_feed = ((r["share_a"] == 1.0) | (r["share_b"] == 1.0)) & (self.topo.feed_b >= 0)
        lost_feed_psus = np.where(one_feed[s.node_rack], np.floor(psus / 2.0), 0.0) if one_feed.any() else 0.0
        psus_live = np.maximum(psus - failed_psus - lost_feed_psus, 0.0)
        node_need = self.by_node.sum(np.minimum(demand, limit)) + s.node_base_power_w
        brake_node = node_need > power.node_power_available_w(psus_live, s.node_psu_rating_w)
        brake = self.by_node.expand(brake_node) if brake_node.any() else False
        r.update(util=util, demand=demand, limit=limit, gpu_off=off, node_off=node_off, psus_live=psus_live,
                 brake=brake,
                 node_util=self.by_node.sum(util) / self.gpus_per_node)

    def _phase_cooling(self, inp: TickInputs, r: dict) -> None:
        s = self.state
        pumps = self.cdu_pumps.copy() if inp.pumps_running_count is None else np.asarray(inp.pumps_running_count,
                                                                                         dtype=np.float64)
        if self.cdu_in_rack.any() and r["dark_rack"].any():  # an in-rack CDU is powered by its rack
            cdu_dark = np.bincount(s.rack_cdu, weights=r["dark_rack"], minlength=s.n_cdus) >= self.racks_per_cdu
            pumps = np.where(self.cdu_in_rack & cdu_dark, 0.0, pumps)
        flow = cooling.cdu_flow_lpm(pumps, self.cdu_pumps_required, self.cdu_design_flow_lpm)
        if inp.cdu_flow_lpm is not None:
            measured = np.asarray(inp.cdu_flow_lpm, dtype=np.float64)
            flow = np.where(np.isfinite(measured), np.maximum(measured, 0.0), flow)
        # facility supply from the plant (previous tick's heat), optionally overridden
        plant_supply, chiller_used, free = cooling.plant_supply_temp_c(
            self.prev_plant_heat_kw, self.plant_flow_lpm, s.plant_supply_setpoint_c, r["wet_bulb_c"],
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
        cp, rho = cooling.coolant_properties(cdu_supply, self.coolant)
        # caloric resistance of one GPU plate; no flow → inf (handled by the thermal phase)
        plate_flow = cooling.mass_flow_kg_s(flow, rho) * GPU_FLOW_SHARE_FRAC / np.maximum(self.gpus_per_cdu, 1)
        flowing = plate_flow > 0.0
        r_cal_cdu = np.full(s.n_cdus, np.inf)
        r_cal_cdu[flowing] = thermal.caloric_resistance_c_per_w(plate_flow[flowing], cp[flowing])
        r.update(pumps=pumps, cdu_flow=flow, cdu_supply=cdu_supply, loop_supply=loop_supply, cp=cp, rho=rho,
                 r_cal_cdu=r_cal_cdu, plant_supply=plant_supply, chiller_used=chiller_used, free_cooling=free,
                 cdu_capacity=cooling.cdu_capacity_kw(cdu_supply, self.cdu_curve_x, self.cdu_curve_y))

    def _phase_gpu_thermal(self, dt_s: float, inp: TickInputs, r: dict) -> None:
        """Throttle decisions (full model only for GPUs near a limit), board power, exact thermal step."""
        n = self.state.n_gpus
        if inp.recover_down_gpus and self.gpu_down.any():
            self.gpu_down &= self.gpu_temp_c >= self.max_op_c
        ex = self.by_cdu.expand
        no_flow_cdu = ~np.isfinite(r["r_cal_cdu"])
        r_cal_cdu = np.where(no_flow_cdu, 0.0, r["r_cal_cdu"])
        r_die = self.r_die
        if inp.gpu_r_th_factor is not None:
            factor = np.asarray(inp.gpu_r_th_factor, dtype=np.float64)
            if factor.shape != (n,) or not (factor > 0).all():
                raise ValueError(f"gpu_r_th_factor: expected {n} positive factors")
            r_die = self.r_die * factor
        r["rack_r_die"] = self.rack_r_die if r_die is self.r_die else self.by_rack.max(r_die)
        if self.uniform_gpus and r_die is self.r_die:  # per-CDU quantities, expanded to GPUs
            r_tot_cdu = r_die + r_cal_cdu
            p_lim_cdu = thermal.sw_thermal_power_limit_w(r["cdu_supply"], r_die, self.r_hbm, r_cal_cdu,
                                                         self.max_op_c, self.hbm_max_c)
            decay_cdu = thermal.decay_frac(self.heat_cap * r_tot_cdu, dt_s)
            r_tot, p_lim, decay = ex(r_tot_cdu), ex(np.where(no_flow_cdu, np.inf, p_lim_cdu)), ex(decay_cdu)
            supply, r_cal = ex(r["cdu_supply"]), ex(r_cal_cdu)
        else:
            supply, r_cal = ex(r["cdu_supply"]), ex(r_cal_cdu)
            r_tot = r_die + r_cal
            p_lim = np.where(ex(no_flow_cdu), np.inf, thermal.sw_thermal_power_limit_w(
                supply, r_die, self.r_hbm, r_cal, self.max_op_c, self.hbm_max_c))
            decay = thermal.decay_frac(self.heat_cap * r_tot, dt_s)
        temp = self.gpu_temp_c
        demand, limit, util, brake = r["demand"], r["limit"], r["util"], r["brake"]
        p = np.minimum(demand, limit)
        need = (p_lim < p) | (temp >= self.max_op_c) | (demand > limit) | brake
        clock = np.ones(n)
        mask = np.zeros(n, dtype=np.int32)
        idx = np.flatnonzero(need)
        if idx.size > n // 2:  # most GPUs near a limit: the full model on whole arrays
            p, clock, mask = thermal.throttle(demand, limit, self.idle_w, temp, p_lim, self.max_op_c,
                                              self.slowdown_c, util, brake)
        elif idx.size:  # the full throttle model only where a limit is near
            sub = (lambda v: v[idx] if np.ndim(v) else v)  # noqa: E731
            p[idx], clock[idx], mask[idx] = thermal.throttle(
                demand[idx], sub(limit), sub(self.idle_w), temp[idx], p_lim[idx], sub(self.max_op_c),
                sub(self.slowdown_c), util[idx], sub(brake))
        idle = util < thermal.IDLE_UTIL_FRAC
        if idle.any():
            mask |= np.where(idle, thermal.CLOCK_EVENT_GPU_IDLE, 0).astype(np.int32)
        off = r["gpu_off"] | self.gpu_down
        any_off = bool(off.any())
        if any_off:
            p[off] = 0.0
        steady = supply + p * r_tot
        new_temp = steady + (temp - steady) * decay
        if no_flow_cdu.any():  # no flow: adiabatic heating of the package
            nf = np.flatnonzero(ex(no_flow_cdu))
            cap = self.heat_cap[nf] if np.ndim(self.heat_cap) else self.heat_cap
            new_temp[nf] = thermal.adiabatic_step_c(temp[nf], p[nf], cap, dt_s)
        local = supply + p * r_cal
        hbm = local + (new_temp - local) * self.hbm_ratio
        newly_down = new_temp >= self.shutdown_c
        if newly_down.any():
            newly_down &= ~off
            self.gpu_down = self.gpu_down | newly_down
            off = off | newly_down
            any_off = True
        state = np.zeros(n, dtype=np.int8)
        if idx.size:
            state[clock < 0.999] = GPU_THROTTLED
        if any_off:
            clock[off] = 0.0
            state[off] = GPU_DOWN
            if r["node_off"] is not None:
                state[self.by_node.expand(r["node_off"])] = GPU_OFF
        self.gpu_temp_c = new_temp
        self.gpu_power_w = p
        self.gpu_util_frac = util
        r.update(gpu_power=p, clock=clock, mask=mask, hbm=hbm, gpu_state=state, down=off, any_down=any_off,
                 r_cal_gpu=r_cal, gpu_supply=supply)

    def _phase_it_power(self, r: dict) -> None:
        s = self.state
        gpu_sum = self.by_node.sum(r["gpu_power"])
        node_live = r["psus_live"] > 0
        dc = power.node_dc_power_w(gpu_sum, r["node_util"], s.node_base_power_w, s.node_idle_base_power_w)
        dark_node = r["dark_rack"][s.node_rack]
        if r["node_off"] is not None:
            dark_node = dark_node | r["node_off"]
        dc = np.where(dark_node | ~node_live, 0.0, dc)
        ac, eff = power.node_input_power_w(dc, r["psus_live"], s.node_psu_rating_w)
        rack_w = self.node_by_rack.sum(ac)
        r.update(node_dc=dc, node_ac=ac, rack_power_kw=rack_w / 1e3, rack_gpu_w=self.node_by_rack.sum(gpu_sum))

    def _phase_heat(self, r: dict) -> None:
        s = self.state
        rack_dc = self.node_by_rack.sum(r["node_dc"])
        rack_gpu = r["rack_gpu_w"]
        liquid_w = rack_gpu + BASE_LIQUID_CAPTURE_FRAC * (rack_dc - rack_gpu)
        air_w = r["rack_power_kw"] * 1e3 - liquid_w  # PSU losses and the rest of the base power
        cdu_heat_kw = np.bincount(s.rack_cdu, weights=liquid_w, minlength=s.n_cdus) / 1e3
        flow = r["cdu_flow"]
        with np.errstate(divide="ignore", invalid="ignore"):
            rise = np.where(flow > 0, cdu_heat_kw * 1e3 / (cooling.mass_flow_kg_s(flow, r["rho"]) * r["cp"]), 0.0)
        pump_kw = float(np.sum(r["pumps"] * self.cdu_pump_power_w)) / 1e3
        loop_heat_kw = np.bincount(s.cdu_loop, weights=cdu_heat_kw, minlength=len(s.loop_name))
        loop_heat_kw += np.bincount(self.rack_loop, weights=air_w, minlength=len(s.loop_name)) / 1e3
        loop_heat_kw += np.bincount(s.cdu_loop, weights=r["pumps"] * self.cdu_pump_power_w,
                                    minlength=len(s.loop_name)) / 1e3  # pump work ends up as heat
        loop_rise = cooling.coolant_delta_t_k(loop_heat_kw * 1e3, s.loop_flow_lpm, r["loop_supply"], "water")
        plant_heat = np.bincount(s.loop_plant, weights=loop_heat_kw, minlength=self.n_plants)
        self.prev_cdu_heat_kw = cdu_heat_kw
        self.prev_plant_heat_kw = plant_heat
        r.update(cdu_heat_kw=cdu_heat_kw, cdu_return=r["cdu_supply"] + rise, loop_heat_kw=loop_heat_kw,
                 loop_return=r["loop_supply"] + loop_rise, plant_heat_kw=plant_heat, cdu_pump_kw=pump_kw,
                 air_heat_kw=float(air_w.sum()) / 1e3)

    def _phase_power_tree(self, r: dict) -> None:
        topo = self.topo
        load, inp_kw = powertree.rollup(topo, r["rack_power_kw"], r["share_a"], r["share_b"])
        worst, worst_by = powertree.n1_worst_load_kw(topo, load, r["rack_power_kw"], r["share_a"], r["share_b"],
                                                     r["power_live"])
        roots = topo.top_down[0]
        r.update(power_load_kw=load, power_load_frac=powertree.load_frac(load, topo.usable_kw),
                 power_n1_load_frac=powertree.load_frac(worst, topo.usable_kw), power_n1_by=worst_by,
                 power_n1_load_kw=worst,
                 tree_input_kw=float(inp_kw[roots].sum()))

    def _phase_site(self, dt_s: float, inp: TickInputs, r: dict) -> None:
        s = self.state
        cool = cooling.cooling_power_kw(r["cdu_pump_kw"], s.loop_flow_lpm, r["plant_heat_kw"], r["chiller_used"],
                                        s.plant_cop)
        it_mw = float(r["rack_power_kw"].sum()) / 1e3
        tree_mw = r["tree_input_kw"] / 1e3
        cooling_mw = cool["total_kw"] / 1e3
        facility = tree_mw + cooling_mw + self.network_mw + s.site_overhead_mw
        source_mw, soc = self._dispatch(facility, r["source_live"], dt_s)
        live = r["source_live"]
        battery = s.source_kind == _BATTERY
        usable = live & (~battery | (np.nan_to_num(soc, nan=0.0) > 0.0))
        capacity = float(s.source_capacity_mw[usable].sum())
        n1_capacity = capacity - (float(s.source_capacity_mw[usable].max()) if usable.any() else 0.0)
        r.update(cooling_kw=cool, it_mw=it_mw, cooling_mw=cooling_mw, facility_mw=facility, source_mw=source_mw,
                 soc=soc, balance=self._balance(it_mw, tree_mw, cooling_mw, facility, capacity, n1_capacity, r))

    def _dispatch(self, demand_mw: float, source_live: np.ndarray, dt_s: float) -> tuple[np.ndarray, np.ndarray]:
        """Share demand over live sources: generation by capacity, batteries cover the rest or charge."""
        s = self.state
        battery = s.source_kind == _BATTERY
        gen = source_live & ~battery
        cap = np.where(gen, s.source_capacity_mw, 0.0)
        gen_total = float(cap.sum())
        out = np.zeros(s.n_sources)
        if gen_total > 0:
            out = cap * min(demand_mw / gen_total, 1.0)
        deficit = demand_mw - float(out.sum())
        spare = gen_total - float(out.sum())  # generation headroom that can charge batteries
        soc = self.battery_soc_frac.copy()
        charge_mw = 0.0
        for i in np.flatnonzero(battery & source_live):  # batteries are few
            energy = s.source_energy_mwh[i]
            if deficit > 0 and soc[i] > 0:
                p = min(deficit, s.source_capacity_mw[i])
                deficit -= p
            elif deficit <= 0 and soc[i] < 1 and energy > 0 and spare - charge_mw > 0:
                p = -min(spare - charge_mw, s.source_capacity_mw[i])
                charge_mw -= p
            else:
                p = 0.0
            if energy > 0:
                soc[i] = np.clip(soc[i] - p * dt_s / 3600.0 / energy, 0.0, 1.0)
            out[i] = p
        if charge_mw > 0 and gen_total > 0:  # charging power is drawn from generation
            out[gen] = cap[gen] * min((demand_mw + charge_mw) / gen_total, 1.0)
        self.battery_soc_frac = soc
        return out, soc

    def _balance(self, it_mw, tree_mw, cooling_mw, facility_mw, capacity_mw, n1_capacity_mw, r) -> SiteBalance:
        s = self.state
        chain = tree_mw / it_mw if it_mw > 0 else 1.0  # facility-side MW per MW at the racks
        cool_ratio = cooling_mw / it_mw if it_mw > 0 else 0.0
        fixed = self.network_mw + s.site_overhead_mw
        per_it = chain + cool_ratio  # facility MW per IT MW
        f_full = self.it_full_mw * per_it + fixed
        f_min = self.it_min_mw * per_it + fixed
        n = s.n_gpus
        per_gpu_full = (f_full - fixed) / max(n, 1)
        gpus_full = int(np.clip(np.floor((capacity_mw - fixed) / per_gpu_full), 0, n)) if per_gpu_full > 0 else n
        tdp = float(np.max(self.tdp_w)) if np.ndim(self.tdp_w) else self.tdp_w
        min_lim = float(np.max(self.min_limit_w)) if np.ndim(self.min_limit_w) else self.min_limit_w
        if f_full <= capacity_mw:
            cap_w, fits = tdp, True
        elif f_full > f_min:
            cap_w = min_lim + (tdp - min_lim) * (capacity_mw - f_min) / (f_full - f_min)
            fits = cap_w >= min_lim
            cap_w = float(np.clip(cap_w, min_lim, tdp))
        else:
            cap_w, fits = min_lim, f_min <= capacity_mw
        return SiteBalance(
            it_mw=it_mw, distribution_loss_mw=tree_mw - it_mw, cooling_mw=cooling_mw, network_mw=self.network_mw,
            overhead_mw=s.site_overhead_mw, facility_mw=facility_mw, generation_capacity_mw=capacity_mw,
            generation_n1_capacity_mw=n1_capacity_mw, shortfall_mw=max(facility_mw - capacity_mw, 0.0),
            gpus_at_full_power=gpus_full, power_cap_w=float(cap_w), cap_fits=bool(fits))

    def _phase_swing(self, inp: TickInputs, r: dict) -> None:
        s = self.state
        n_run = s.n_gpus - (int(np.count_nonzero(r["down"])) if r["any_down"] else 0)
        jobs = inp.swing_jobs
        busy = float(np.mean(np.minimum(r["limit"], self.tdp_w))) if np.ndim(r["limit"]) else float(
            np.minimum(r["limit"], np.mean(self.tdp_w)))
        idle = float(np.mean(self.idle_w))
        comm = idle + COMM_POWER_FRAC * (busy - idle)
        if jobs is None and r["jobs"]:
            jobs = [_swing_job(st, busy, comm) for st in r["jobs"] if np.isfinite(st.step_time_s)]
        if jobs is None:
            jobs = [swing.SwingJob(n_run, DEFAULT_STEP_TIME_S, DEFAULT_COMPUTE_FRAC, busy, comm)] if n_run else []
        node_dc = float(r["node_dc"].sum())
        k_node = (float(r["node_ac"].sum()) / node_dc if node_dc > 0 else 1.0) * (
            r["tree_input_kw"] / float(r["rack_power_kw"].sum()) if r["rack_power_kw"].sum() > 0 else 1.0)
        r["swing"] = swing.project_swing(jobs, s.source_kind, s.source_capacity_mw, s.source_ramp_mw_per_s,
                                         r["source_mw"], r["source_live"], r["soc"], k_node)

    def _phase_projections(self, inp: TickInputs, r: dict) -> None:
        s = self.state
        rack_temp = self.by_rack.max(self.gpu_temp_c)
        rack_p = self.by_rack.max(r["gpu_power"])
        rack_cdu = s.rack_cdu
        supply = r["cdu_supply"][rack_cdu]
        r_cal = r["r_cal_cdu"][rack_cdu]
        r_cal = np.where(np.isfinite(r_cal), r_cal, 0.0)
        cp, rho = r["cp"][rack_cdu], r["rho"][rack_cdu]
        args = (rack_temp, rack_p, self.rack_idle_w)
        limits = (self.rack_max_op_c, self.rack_slowdown_c, self.rack_shutdown_c)
        out = {}
        out["pump_loss_throttle_s"], out["pump_loss_shutdown_s"] = failures.pump_loss(
            *args, supply, r["rack_r_die"], r_cal, self.rack_heat_cap, cp, rho, r["pumps"][rack_cdu],
            self.rack_pumps_required, self.cdu_failover_s[rack_cdu], *limits)
        out["cdu_loss_throttle_s"], out["cdu_loss_shutdown_s"] = failures.cdu_loss(
            *args, self.rack_heat_cap, cp, rho, *limits)
        cdu_temp_max = np.full(s.n_cdus, -np.inf)
        np.maximum.at(cdu_temp_max, rack_cdu, rack_temp)
        gpu_mean = np.bincount(rack_cdu, weights=r["rack_gpu_w"], minlength=s.n_cdus) / np.maximum(self.gpus_per_cdu, 1)
        cdu_thr, cdu_shut = failures.facility_water_loss(
            cdu_temp_max, r["cdu_supply"], r["cdu_heat_kw"] * 1e3, gpu_mean, np.mean(self.idle_w), self.gpus_per_cdu,
            np.mean(self.heat_cap), self.cdu_loop_volume_l, r["cp"], r["rho"], np.min(self.max_op_c),
            np.min(self.shutdown_c))
        out["facility_loss_throttle_s"], out["facility_loss_shutdown_s"] = cdu_thr[rack_cdu], cdu_shut[rack_cdu]
        out["excursion_throttle_s"], out["excursion_shutdown_s"] = failures.supply_excursion(
            rack_temp, rack_p, self.rack_idle_w, supply, inp.supply_excursion_k, r["rack_r_die"] + r_cal,
            self.rack_heat_cap, self.rack_max_op_c, self.rack_shutdown_c)
        dark = r["dark_rack"]
        if dark.any():
            for key in out:
                out[key] = np.where(dark, np.inf, out[key])
        r["projections"] = out
        r["rack_max_temp"] = rack_temp

    def _phase_fabric(self, inp: TickInputs, r: dict) -> None:
        """Link state from the inputs and an estimated utilisation (switch level, see docs/physics.md).

        Active GPUs offer ``nic_gbps × (1 − compute_frac)`` averaged over a step; a leaf
        spreads it over its live uplinks; a pod's leaf traffic spreads evenly over its
        spines, which forward ``CROSS_POD_TRAFFIC_FRAC`` of it over their live uplinks.
        """
        s = self.state
        failed = _as_ids(inp.failed_links, s.n_links, "failed_links")
        up = np.ones(s.n_links, dtype=bool)
        up[failed] = False
        if s.n_links == 0:
            r.update(link_up_flag=up, link_util=np.zeros(0))
            return
        cap = self.switch_up_gbps - np.bincount(s.link_a[failed], weights=s.link_gbps[failed],
                                                minlength=s.n_switches)
        if r["any_down"] or r["util"].min() <= thermal.IDLE_UTIL_FRAC:
            active = (r["util"] > thermal.IDLE_UTIL_FRAC) & ~r["down"]
            gpus = np.bincount(s.gpu_leaf, weights=active, minlength=s.n_switches)
        else:
            gpus = self.leaf_gpus
        carried = gpus * (s.nic_gbps * (1.0 - DEFAULT_COMPUTE_FRAC))
        pod_up = np.bincount(self.leaf_pod, weights=carried[self.leaf_ids], minlength=self.n_pods)
        received = pod_up[self.spine_pod] / self.spines_per_pod[self.spine_pod]
        carried[self.spine_ids] = received * CROSS_POD_TRAFFIC_FRAC
        with np.errstate(divide="ignore", invalid="ignore"):
            sw_util = np.minimum(np.where(cap > 0, carried / cap, 0.0), 1.0)
        key = (failed.tobytes(), sw_util.tobytes())
        if self._link_cache is None or self._link_cache[0] != key:
            util = sw_util[s.link_a]
            if failed.size:
                util[failed] = 0.0
            self._link_cache = (key, util)
        r.update(link_up_flag=up, link_util=self._link_cache[1].copy())

    def _phase_jobs(self, inp: TickInputs, r: dict) -> None:
        statuses: list[JobStatus] = []
        if inp.jobs:
            from twin.training import sitejob  # imported only when jobs are placed

            for job in inp.jobs:
                res = sitejob.evaluate_site_job(self.state, job.spec, job.gpu_ids, r["clock"], r["link_up_flag"])
                statuses.append(res.status)
        r["jobs"] = statuses

    # --- snapshot -------------------------------------------------------------------------
    def _snapshot(self, r: dict) -> Snapshot:
        s = self.state
        it_mw, facility = r["it_mw"], r["facility_mw"]
        sw = r["swing"]
        self.detail = TickDetail(
            clock_event_mask=r["mask"], dark_racks=np.flatnonzero(r["dark_rack"]).astype(np.int32),
            power_live=r["power_live"], source_live=r["source_live"], power_n1_worst_by=r["power_n1_by"],
            power_headroom_kw=self.topo.usable_kw - r["power_load_kw"],
            power_n1_headroom_kw=self.topo.usable_kw - r["power_n1_load_kw"], balance=r["balance"], swing=sw,
            cooling_kw=r["cooling_kw"], projections_s=r["projections"])
        xid = np.zeros(s.n_gpus, dtype=np.int16)
        if self.gpu_down.any():
            xid[self.gpu_down & ~r["gpu_off"]] = XID_THERMAL_SHUTDOWN
        return Snapshot(
            ts=self.ts,
            gpu_temp_c=self.gpu_temp_c,
            hbm_temp_c=r["hbm"],
            gpu_power_w=r["gpu_power"],
            gpu_util_frac=np.where(r["down"], 0.0, r["util"]) if r["any_down"] else r["util"],
            sm_clock_mhz=r["clock"] * self.max_clock_mhz,
            throttle_frac=r["clock"],
            gpu_state=r["gpu_state"],
            last_xid_code=xid,
            rack_power_kw=r["rack_power_kw"],
            rack_max_gpu_temp_c=r["rack_max_temp"],
            rack_time_to_throttle_s=r["projections"]["pump_loss_throttle_s"],
            cdu_supply_temp_c=r["cdu_supply"],
            cdu_return_temp_c=r["cdu_return"],
            cdu_flow_lpm=r["cdu_flow"],
            cdu_heat_kw=r["cdu_heat_kw"],
            cdu_capacity_kw=r["cdu_capacity"],
            pumps_running_count=r["pumps"].astype(np.int8),
            loop_supply_temp_c=r["loop_supply"],
            loop_return_temp_c=r["loop_return"],
            loop_heat_kw=r["loop_heat_kw"],
            power_load_kw=r["power_load_kw"],
            power_load_frac=r["power_load_frac"],
            power_n1_load_frac=r["power_n1_load_frac"],
            source_power_mw=r["source_mw"],
            battery_soc_frac=r["soc"].copy(),
            link_up_flag=r["link_up_flag"],
            link_util_frac=r["link_util"],
            it_power_mw=it_mw,
            cooling_power_mw=r["cooling_mw"],
            facility_power_mw=facility,
            generation_capacity_mw=r["balance"].generation_capacity_mw,
            # PUE counts network switches as IT equipment (The Green Grid, PUE: a comprehensive
            # examination of the metric, WP#49, 2012: IT equipment = compute, storage, network)
            pue_ratio=facility / (it_mw + self.network_mw) if it_mw > 0 else float("nan"),
            outdoor_wet_bulb_c=r["wet_bulb_c"],
            outdoor_dry_bulb_c=r["dry_bulb_c"],
            swing_amplitude_mw=sw.amplitude_mw,
            swing_ramp_mw_per_s=sw.ramp_mw_per_s,
            jobs=r["jobs"],
        )
