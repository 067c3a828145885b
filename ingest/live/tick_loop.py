"""The tick loop of the live twin: readings in, one twin tick, the measured values over it, the jobs' throughput.

:class:`TickLoop` owns the twin engine of one site, the latest readings of every source
(:class:`ingest.live.readings.ReadingsBuffer`) and the placed jobs
(:class:`ingest.live.job_runs.JobRuns`).  :meth:`TickLoop.advance` moves its clock and
steps the synthetic plant; :meth:`TickLoop.tick` turns the fresh readings into twin
inputs, ticks the twin, lays the measured GPU values over its prediction and evaluates
the jobs.  Recording, alerts and publication are the hub's other parts
(:mod:`ingest.live.hub`).
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime

import numpy as np

from ingest.live.alert_rules import SiteFacts
from ingest.live.fleet import LiveFleet
from ingest.live.job_runs import JobRuns
from ingest.live.pollers import Poller
from ingest.live.readings import ReadingsBuffer
from ingest.synthetic.plant import XID_DOWN, SyntheticSource
from twin.engine.snapshot import GPU_DOWN, GPU_OFF, GPU_THROTTLED, Snapshot
from twin.engine.tick import PlacedJob, TickInputs, TwinEngine
from twin.physics.thermal import HW_SLOWDOWN_CLOCK_FRAC
from twin.site.tables import SiteTables

READING_MAX_AGE_S = 30.0  # readings older than this are stale: the twin falls back on its model
# [E] a powered GPU draws at least its idle power; one measured below half of it is not running
# (shut down, fallen off the bus), whatever the twin's own state says
DEAD_POWER_FRAC = 0.5


def enforced_limits_w(limit_w: np.ndarray, tdp_w: np.ndarray) -> np.ndarray | None:
    """The GPUs' enforced power limits [W] from their readings (NaN: none fresh), or None when no GPU is
    limited below its TDP (the twin then takes its uniform path).  A GPU without a fresh limit reading
    (powered off, dropped from a scrape) runs at its TDP."""
    known = np.isfinite(limit_w)
    if not (limit_w[known] < tdp_w[known]).any():
        return None
    return np.where(known, limit_w, tdp_w)


class TickLoop:
    """Readings → twin tick → snapshot, for one site (see module docstring).

    ``last_ts`` is the time of the last tick made or adopted (None before the first);
    ``predicted_gpu_temp_c`` the twin's own GPU temperatures of the last tick [°C],
    before the measured ones replaced them.
    """

    def __init__(
        self,
        state: SiteTables,
        *,
        start: datetime,
        synthetic: SyntheticSource | None = None,
        pollers: list[Poller] | None = None,
        jobs: list[PlacedJob] | None = None,
        fleet: LiveFleet | None = None,
    ) -> None:
        self.state = state
        self.synthetic = synthetic
        self.pollers = pollers or []
        self.reading_max_age_s = READING_MAX_AGE_S
        self.twin = TwinEngine(state, start=start, settle=False)  # settled on the first tick's readings
        self.buffer = ReadingsBuffer(state)
        self.jobs = JobRuns(state, jobs or [])
        self.fleet = fleet  # the fleet model beside the tick (None: the placed jobs only)
        self._working_gpus: np.ndarray | None = None  # with the fleet: the GPUs of its jobs and of the placed ones
        self.predicted_gpu_temp_c: np.ndarray | None = None
        self.last_ts: datetime | None = None
        self._settled = False  # the twin engine settles on the first tick this process runs
        self._synthetic_ok_s = float("-inf")
        self._gpu_idle_w = state.gpu_spec_array("idle_power_w")
        self._gpu_tdp_w = state.gpu_spec_array("tdp_w")
        self._gpu_slowdown_c = state.gpu_spec_array("slowdown_temp_c")

    def advance(self, ts: datetime) -> float | None:
        """Move the clock to ``ts`` and step the synthetic plant: the tick's length [s].

        None when ``ts`` is not later than the last tick (nothing to do).
        """
        dt_s = 1.0 if self.last_ts is None else max((ts - self.last_ts).total_seconds(), 0.0)
        if self.last_ts is not None and dt_s == 0.0:
            return None
        self.last_ts = ts
        if self.fleet is not None and self.fleet.advance(ts):
            occ = self.fleet.occupancy
            self._working_gpus = self._gpus_with_work(occ.gpu_job)
            if self.synthetic is not None:
                self.synthetic.occupy(occ.gpu_util_frac, occ.nodes_out, self._working_gpus, occ.gpu_power_limit_w)
        if self.synthetic is not None:
            self.synthetic.step(ts, dt_s, self.buffer)
            self._synthetic_ok_s = ts.timestamp()
        return dt_s

    def tick(self, ts: datetime, dt_s: float) -> Snapshot:
        """The twin ticked ``dt_s`` seconds to ``ts`` on the fresh readings, measured values laid over, jobs evaluated."""
        now_s = ts.timestamp()
        inputs = self._inputs(ts, now_s)
        if not self._settled:
            self.twin.settle(inputs)
            self._settled = True
        snap = self._overlay(self.twin.tick(dt_s, inputs), now_s)
        snap.jobs = self.jobs.evaluate(ts, snap, dt_s)
        for poller in self.pollers:  # a scheduler source charges each job and team for the tick
            ledger = getattr(poller, "ledger", None)
            if ledger is not None:
                ledger.observe(ts, snap.gpu_power_w, snap.gpu_state)
        return snap

    def follow(self, ts: datetime) -> bool:
        """Take a leader's tick at ``ts`` as this loop's last one; False when it is not newer."""
        if self.last_ts is not None and ts <= self.last_ts:
            return False
        self.last_ts = ts
        return True

    def facts(self, snap: Snapshot) -> SiteFacts:
        """What the alert rules need beyond the snapshot; remembers each job's best throughput."""
        best = self.jobs.remember_best(snap.jobs)
        detail = self.twin.detail
        return SiteFacts(
            power_live=detail.power_live,
            source_live=detail.source_live,
            job_best_tokens_per_s=best,
            generation=detail.generation,
        )

    def source_ages(self, now_s: float | None = None) -> dict[str, float]:
        """Seconds since each source's last good reading (inf when never)."""
        now_s = time.time() if now_s is None else now_s
        ages = {p.name: now_s - p.last_ok_s for p in self.pollers}
        if self.synthetic is not None:
            ages[self.synthetic.name] = now_s - self._synthetic_ok_s
        return ages

    def _inputs(self, ts: datetime, now_s: float) -> TickInputs:
        """Twin inputs from the readings (NaN where nothing fresh: the twin keeps its model)."""
        b, s = self.buffer, self.state
        cur = lambda kind, metric: b.current(kind, metric, now_s, self.reading_max_age_s)  # noqa: E731
        pumps = cur("cdu", "pumps_running_count")
        installed = s.cdu_spec_array("pumps")
        facility = cur("cdu", "facility_supply_temp_c")
        loop_supply = np.full(len(s.loop_name), np.nan)
        seen = np.isfinite(facility)
        if seen.any():
            sums = np.bincount(s.cdu_loop[seen], weights=facility[seen], minlength=len(s.loop_name))
            counts = np.bincount(s.cdu_loop[seen], minlength=len(s.loop_name))
            loop_supply = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
        limit = cur("gpu", "power_limit_w")
        util, nodes_off = cur("gpu", "gpu_util_frac"), b.nodes_off()
        if self.fleet is not None and self.fleet.occupancy is not None and self.synthetic is None:
            util, limit, nodes_off = self._fleet_inputs(util, limit, nodes_off)
        return TickInputs(
            ts=ts,
            gpu_util_frac=util,
            gpu_power_limit_w=enforced_limits_w(limit, self._gpu_tdp_w),
            pumps_running_count=np.where(np.isfinite(pumps), pumps, installed).astype(np.int64),
            coolant_flow_lpm=cur("cdu", "coolant_flow_lpm"),
            loop_supply_temp_c=loop_supply,
            failed_power=b.failed("power"),
            failed_sources=b.failed("source"),
            failed_links=b.failed("link"),
            nodes_off=nodes_off,
            jobs=self.jobs.placed,  # the placed jobs' phases drive the swing
            priority_gpus=self._working_gpus,  # with a fleet, a shortfall sheds the racks without its jobs first
        )

    def _gpus_with_work(self, gpu_job: np.ndarray) -> np.ndarray:
        """GPU ids of the fleet's jobs and of the placed jobs (one array per occupancy: the twin keys on it)."""
        busy = gpu_job >= 0
        for job in self.jobs.placed:
            busy[job.gpu_ids] = True
        return np.flatnonzero(busy)

    def _fleet_inputs(self, util: np.ndarray, limit: np.ndarray, nodes_off: np.ndarray | None) -> tuple:
        """Real sources: the fleet's occupancy where no fresh reading says otherwise (utilisation, power
        caps, nodes out).  The synthetic plant runs the occupancy itself, so its readings already say it."""
        occ = self.fleet.occupancy
        util = np.where(np.isfinite(util), util, occ.gpu_util_frac)
        limit = np.where(np.isfinite(limit), limit, occ.gpu_power_limit_w)
        nodes_off = occ.nodes_out if nodes_off is None else nodes_off | occ.nodes_out
        return util, limit, nodes_off

    def _overlay(self, snap: Snapshot, now_s: float) -> Snapshot:
        """Measured GPU values replace the twin's where fresh; the prediction is kept aside.

        GPU health follows the measured numbers the pages show: a GPU drawing less than
        :data:`DEAD_POWER_FRAC` of its idle power is down, one measured at or above its
        slowdown temperature is throttled to the hardware-slowdown clock.
        """
        cur = lambda metric: self.buffer.current("gpu", metric, now_s, self.reading_max_age_s)  # noqa: E731
        self.predicted_gpu_temp_c = snap.gpu_temp_c.copy()
        temp, power, hbm, xid = cur("gpu_temp_c"), cur("gpu_power_w"), cur("hbm_temp_c"), cur("last_xid_code")
        gpu_temp = np.where(np.isfinite(temp), temp, snap.gpu_temp_c)
        last_xid_code = np.where(np.isfinite(xid), xid, snap.last_xid_code).astype(np.int16)
        powered = snap.gpu_state != GPU_OFF
        dead = powered & np.isfinite(power) & (power < DEAD_POWER_FRAC * self._gpu_idle_w)
        down = np.isin(last_xid_code, list(XID_DOWN)) | (snap.gpu_state == GPU_DOWN) | dead
        hot = powered & ~down & np.isfinite(temp) & (temp >= self._gpu_slowdown_c)
        gpu_state = np.where(down, GPU_DOWN, np.where(hot, GPU_THROTTLED, snap.gpu_state)).astype(np.int8)
        throttle = np.where(hot, np.minimum(snap.throttle_frac, HW_SLOWDOWN_CLOCK_FRAC), snap.throttle_frac)
        rack_max = self.twin.by_rack.max(np.where(np.isfinite(gpu_temp), gpu_temp, -np.inf))
        return replace(
            snap,
            gpu_temp_c=gpu_temp,
            hbm_temp_c=np.where(np.isfinite(hbm), hbm, snap.hbm_temp_c),
            gpu_power_w=np.where(down, 0.0, np.where(np.isfinite(power), power, snap.gpu_power_w)),
            last_xid_code=last_xid_code,
            gpu_state=gpu_state,
            throttle_frac=np.where(down, 0.0, throttle),
            rack_max_gpu_temp_c=np.where(np.isfinite(rack_max), rack_max, np.nan),
            source_age_s=self.source_ages(now_s),
        )
