"""Synthetic telemetry: a simulated plant (a twin engine with injected faults) read through noisy sensors.

The *plant* is a :class:`twin.engine.tick.TwinEngine` of the same site driven by a
training workload and the active :mod:`ingest.synthetic.faults`; what operators would read off
it — integer DCGM temperatures, noisy power, occasional dropouts, XID codes, CDU flows
and pump counts, feed power — goes into the :class:`ingest.live.readings.ReadingsBuffer`
like any real source's readings.  The live twin never sees the plant's internals, only
these readings, so a fault the twin cannot know about (a degrading thermal interface)
shows up as measured temperatures departing from the twin's prediction.

Seeded and reproducible: the same seed, site, faults and start give the same readings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from ingest.live.readings import ReadingsBuffer
from ingest.synthetic.faults import Fault
from ingest.synthetic.workload import TrainingWorkload, job_util_frac
from twin.engine.snapshot import GPU_DOWN, GPU_OFF, Snapshot
from twin.engine.tick import TickInputs, TwinEngine
from twin.site.tables import SiteTables
from twin.training import restart

# Sensor models [E]: DCGM prints temperatures as integers [DCGM-Exporter], board power
# with ~1 % averaging noise; one reading in 10,000 goes missing per scrape.
POWER_NOISE_W = 4.0
TEMP_NOISE_C = 0.4
FLOW_NOISE_FRAC = 0.01
DROPOUT_FRAC = 1e-4
# Loss of facility water: supply rises by 20 K over the ~7 min chilled-water ride-through
# of an NVIDIA DSX-class plant [NVIDIA-CDU-Reqs] [S].
FACILITY_LOSS_RISE_K_PER_S = 20.0 / 420.0
FACILITY_LOSS_MAX_C = 60.0
XID_DOWN = {79, 48, 95, 119}  # the GPU stops working until reset [NVIDIA-XID-Catalog]


@dataclass
class SyntheticSource:
    """The synthetic stream of one site (see module docstring)."""

    state: SiteTables
    start: datetime
    seed: int = 0
    faults: list[Fault] = field(default_factory=list)
    workload: TrainingWorkload = field(default_factory=TrainingWorkload)
    job_gpu_ids: np.ndarray | None = None  # GPUs of the training job (default: all)
    power_off_idle_nodes: bool = True  # nodes without job GPUs are powered off, not left idling
    restart_timings: restart.RestartTimings | None = None  # the job stops and restarts when a GPU fails
    name: str = "synthetic"

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)
        self.plant = TwinEngine(self.state, start=self.start, settle=False)  # settled on the first step
        self.in_job = np.ones(self.state.n_gpus, dtype=bool)
        if self.job_gpu_ids is not None:
            self.in_job[:] = False
            self.in_job[np.asarray(self.job_gpu_ids, dtype=np.int64)] = True
        node_busy = np.bincount(self.state.gpu_node, weights=self.in_job, minlength=self.state.n_nodes) > 0
        self.nodes_off = ~node_busy if self.power_off_idle_nodes and not node_busy.all() else None
        self.jitter_frac = self.rng.uniform(0.0, 0.03, self.state.n_gpus)
        self.last_truth: Snapshot | None = None
        self.job_restart = restart.new_state()  # the plant's own job: stops and restarts on a failure
        self.job_swapped = np.zeros(int(self.in_job.sum()), dtype=bool)  # ranks moved to spares (per job GPU)
        self.fleet_util_frac: np.ndarray | None = None  # the fleet's utilisation of GPUs outside the job
        self.fleet_power_limit_w: np.ndarray | None = None  # board limit per GPU the fleet set [W] (None: TDP)
        self._tdp_w = self.state.gpu_spec_array("tdp_w") if self.state.n_gpus else np.zeros(0)
        self.working_gpu_ids: np.ndarray | None = None  # with a fleet: the GPUs of its jobs (shed last)

    def occupy(
        self,
        util_frac: np.ndarray,
        nodes_out: np.ndarray,
        working_gpu_ids: np.ndarray | None = None,
        power_limit_w: np.ndarray | None = None,
    ) -> None:
        """Run the fleet's other jobs: ``util_frac`` per GPU outside the training job, ``nodes_out`` per node
        out of service (powered off unless the training job runs there), ``power_limit_w`` the cap the
        fleet's power manager set per GPU [W] (NaN: none; the training job's GPUs too), which the GPUs
        enforce and report as dcgm-exporter's power limit does.

        ``working_gpu_ids``: the GPUs of every job; a shortfall sheds the racks without them first, as
        the twin that reads the plant does (it is given the same array).  On a site whose operator
        powers off idle nodes (``idle_nodes_off``: colossus on its 43 MW) a node with none of them is
        powered off too; elsewhere idle nodes stay on, ready for work.
        """
        s = self.state
        self.fleet_util_frac = np.asarray(util_frac, dtype=np.float64)
        cap = None if power_limit_w is None else np.asarray(power_limit_w, dtype=np.float64)
        capped = cap is not None and bool(np.isfinite(cap).any())
        self.fleet_power_limit_w = (
            np.where(np.isfinite(cap), np.minimum(cap, self._tdp_w), self._tdp_w) if capped else None
        )
        job_nodes = np.zeros(s.n_nodes, dtype=bool)
        job_nodes[s.gpu_node[self.in_job]] = True
        out = np.asarray(nodes_out, dtype=bool)
        if working_gpu_ids is not None and self.power_off_idle_nodes and s.idle_nodes_off:
            held = np.zeros(s.n_nodes, dtype=bool)
            held[s.gpu_node[np.asarray(working_gpu_ids, dtype=np.int64)]] = True
            out = out | ~held
        out &= ~job_nodes
        self.nodes_off = out if out.any() else None
        self.working_gpu_ids = working_gpu_ids

    # ------------------------------------------------------------------ faults
    def _links_of(self, switch: int) -> np.ndarray:
        s = self.state
        return np.flatnonzero((s.link_a == switch) | (s.link_b == switch))

    def plant_inputs(self, t_s: float, ts: datetime, job_frac: float = 1.0) -> TickInputs:
        """The plant's inputs at ``t_s`` seconds into the stream: workload plus active faults.

        ``job_frac`` scales the job GPUs' utilisation above idle: 0 while the job is stopped
        by a failure, ramping back to 1 while it warms up (the whole-job power dip and surge).
        """
        s = self.state
        util = job_util_frac(self.workload, t_s, self.in_job, self.jitter_frac)
        if self.fleet_util_frac is not None:
            util = np.where(self.in_job, util, self.fleet_util_frac)
        if job_frac < 1.0:
            idle = self.workload.idle_util_frac
            util = np.where(self.in_job, idle + (util - idle) * job_frac, util)
        pumps = s.cdu_spec_array("pumps").copy()
        loop_supply = np.full(len(s.loop_name), np.nan)
        failed_power, failed_sources, failed_links = [], [], []
        r_th_factor = None
        for f in self.faults:
            if not f.active(t_s):
                continue
            since = t_s - f.start_s
            if f.kind == "pump":
                pumps[f.entity_id] = max(pumps[f.entity_id] - (f.value or 1), 0)
            elif f.kind == "cdu":
                pumps[f.entity_id] = 0
            elif f.kind == "facility_water":
                setpoint = s.plant_supply_setpoint_c[s.loop_plant[f.entity_id]]
                rise = (
                    f.value
                    if f.value is not None
                    else min(since * FACILITY_LOSS_RISE_K_PER_S, FACILITY_LOSS_MAX_C - setpoint)
                )
                loop_supply[f.entity_id] = setpoint + rise
            elif f.kind == "feed":
                failed_power.append(f.entity_id)
            elif f.kind == "source":
                failed_sources.append(f.entity_id)
            elif f.kind == "link":
                failed_links.extend(self._links_of(f.entity_id))
            elif f.kind == "link_flap":
                period = f.value or 10.0
                if int(since // period) % 2 == 0:
                    failed_links.extend(self._links_of(f.entity_id))
            elif f.kind == "xid":
                util[f.entity_id] = 0.0
            elif f.kind == "tim":
                growth = 1.0 + (f.value if f.value is not None else 0.5) * since / 3600.0
                if r_th_factor is None:
                    r_th_factor = np.ones(s.n_gpus)
                r_th_factor[s.gpu_rack == f.entity_id] *= growth
        return TickInputs(
            ts=ts,
            gpu_util_frac=util,
            gpu_power_limit_w=self.fleet_power_limit_w,
            nodes_off=self.nodes_off,
            pumps_running_count=pumps,
            loop_supply_temp_c=loop_supply,
            gpu_r_th_factor=r_th_factor,
            failed_power=failed_power,
            failed_sources=failed_sources,
            failed_links=np.unique(np.asarray(failed_links, dtype=np.int64)),
            priority_gpus=self.working_gpu_ids,
        )

    def active_xids(self, t_s: float) -> dict[int, int]:
        """GPU id → XID code of the XID faults active at ``t_s``."""
        return {f.entity_id: int(f.value or 79) for f in self.faults if f.kind == "xid" and f.active(t_s)}

    # ------------------------------------------------------------------- step
    def step(self, ts: datetime, dt_s: float, buffer: ReadingsBuffer) -> Snapshot:
        """Advance the plant to ``ts`` and write what its sensors read into ``buffer``."""
        t_s = (ts - self.start).total_seconds()
        inputs = self.plant_inputs(t_s, ts, self._job_frac(t_s, dt_s))
        if self.last_truth is None:
            self.plant.settle(inputs)
        truth = self.plant.tick(dt_s, inputs)
        self.last_truth = truth
        off = self._nodes_powered_off(truth)
        self.observe(truth, t_s, ts.timestamp(), buffer, off)
        # breaker, source and link status as an EPMS / switch management plane reports it
        buffer.set_failed("power", inputs.failed_power)
        buffer.set_failed("source", inputs.failed_sources)
        buffer.set_failed("link", inputs.failed_links)
        buffer.set_nodes_off(off)
        return truth

    def _nodes_powered_off(self, truth: Snapshot) -> np.ndarray | None:
        """Nodes off on purpose: the ones the plant powered off, and the ones the shortfall policy shed
        (every GPU ``GPU_OFF``).  Their BMCs say so; a shed rack is not a rack of dead GPUs."""
        s = self.state
        gpus = np.bincount(s.gpu_node, minlength=s.n_nodes)
        shed = np.bincount(s.gpu_node, weights=truth.gpu_state == GPU_OFF, minlength=s.n_nodes) >= np.maximum(gpus, 1)
        off = shed if self.nodes_off is None else shed | self.nodes_off
        return off if off.any() else None

    def _job_frac(self, t_s: float, dt_s: float) -> float:
        """The job's throughput share this tick from its restart cycle (1 without ``restart_timings``)."""
        if self.restart_timings is None or not self.in_job.any():
            return 1.0
        ids = np.flatnonzero(self.in_job)
        down = np.zeros(ids.size, dtype=bool)
        if self.last_truth is not None:
            down = self.last_truth.gpu_state[ids] == GPU_DOWN
        xid = np.isin(ids, [g for g, code in self.active_xids(t_s).items() if code in XID_DOWN])
        self.job_restart, tick = restart.step(
            self.job_restart, ids, down & ~self.job_swapped, xid & ~self.job_swapped, dt_s, self.restart_timings
        )
        if tick.phase == "draining":  # the failed ranks move to hot spares
            self.job_swapped |= np.isin(ids, tick.drain_gpu_ids)
        return tick.tokens_frac

    def observe(
        self, truth: Snapshot, t_s: float, now_s: float, buffer: ReadingsBuffer, nodes_off: np.ndarray | None = None
    ) -> None:
        """Noisy, quantised, occasionally missing sensor readings of ``truth`` (``nodes_off``: nodes powered
        off, default the plant's own)."""
        s, rng = self.state, self.rng
        n = s.n_gpus
        gpu_ids = np.arange(n)
        seen = rng.random(n) >= DROPOUT_FRAC
        nodes_off = self.nodes_off if nodes_off is None else nodes_off
        if nodes_off is not None:
            seen &= ~nodes_off[s.gpu_node]  # a powered-off node exports nothing
        xids = self.active_xids(t_s)
        xid = np.zeros(n)
        for g, code in xids.items():
            xid[g] = code
            if code in XID_DOWN:
                seen[g] = False  # fell off the bus: its series disappear from the scrape
        ids = gpu_ids[seen]
        temp = np.round(truth.gpu_temp_c + rng.normal(0, TEMP_NOISE_C, n))
        hbm = np.round(truth.hbm_temp_c + rng.normal(0, TEMP_NOISE_C, n))
        power = np.maximum(truth.gpu_power_w + rng.normal(0, POWER_NOISE_W, n), 0.0)
        clock = np.round(truth.sm_clock_mhz / 15.0) * 15.0  # SM clocks move in 15 MHz bins
        limit = self._tdp_w if self.fleet_power_limit_w is None else self.fleet_power_limit_w
        for metric, values in (
            ("gpu_temp_c", temp),
            ("hbm_temp_c", hbm),
            ("gpu_power_w", power),
            ("gpu_util_frac", truth.gpu_util_frac),
            ("sm_clock_mhz", clock),
            ("power_limit_w", limit),
        ):
            buffer.update("gpu", metric, ids, values[seen], now_s)
        buffer.update("gpu", "last_xid_code", gpu_ids, xid, now_s)  # the exporter keeps the last XID
        cdu_ids = np.arange(s.n_cdus)
        flow = truth.coolant_flow_lpm * (1.0 + rng.normal(0, FLOW_NOISE_FRAC, s.n_cdus))
        buffer.update("cdu", "coolant_flow_lpm", cdu_ids, flow, now_s)
        buffer.update("cdu", "coolant_supply_temp_c", cdu_ids, np.round(truth.coolant_supply_temp_c, 1), now_s)
        buffer.update("cdu", "coolant_return_temp_c", cdu_ids, np.round(truth.coolant_return_temp_c, 1), now_s)
        buffer.update("cdu", "pumps_running_count", cdu_ids, truth.pumps_running_count, now_s)
        buffer.update(
            "cdu", "facility_supply_temp_c", cdu_ids, np.round(truth.loop_supply_temp_c[s.cdu_loop], 1), now_s
        )
        buffer.update("power_element", "feed_power_kw", np.arange(s.n_power), truth.feed_power_kw, now_s)

    def duration_hint_s(self) -> float:
        """Seconds until the last scheduled fault ends (0 when none)."""
        ends = [f.start_s + f.duration_s for f in self.faults if np.isfinite(f.duration_s)]
        return max(ends, default=0.0)
