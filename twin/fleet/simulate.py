"""The event-driven fleet simulation: submissions, ends, failures, repairs, reservations, DR events.

Time jumps from event to event (a heap; submissions and failures are read from sorted
arrays).  After every batch of events at one instant the quick scheduling pass runs (the
main scheduler, :func:`twin.fleet.scheduler.schedule_pass` with ``full=False``); the full
pass with backfill runs at most every ``bf_interval_s`` while something has changed (every
batch when it is 0), then the power caps are rebalanced.  Per-job physics is evaluated
only when a job's placement or cap changes (:mod:`twin.fleet.lifecycle`).

One loop, :meth:`FleetSim.run_until`, runs both the whole horizon (:meth:`FleetSim.simulate`)
and the live fleet's ticks (``batch_s``: the scheduler once per step, at its end).

For the tick engine (a later coupling): :meth:`FleetSim.gpu_view` says which GPUs run which
job at what cap, and in which phase, at the simulation's present time.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from twin.fleet import events, jobclass, lifecycle, metrics, placement, priority
from twin.fleet import failures as node_failures
from twin.fleet.cluster import new_cluster
from twin.fleet.jobsets import JobSets
from twin.fleet.jobspeed import TrainingRates, node_models
from twin.fleet.limits import quota_table
from twin.fleet.policy import Policy
from twin.fleet.power import PowerAdmission
from twin.fleet.scheduler import schedule_pass
from twin.fleet.state import PENDING, RUNNING, WAITING, advance, new_run, predicted_end, set_reason
from twin.fleet.topology import FleetTopology
from twin.fleet.workload import TOPOLOGIES, JobTable
from twin.training import goodput

PHASES = ("idle", "running", "restarting")
UNKNOWN_GPU_TYPE = 1 << 20  # a GPU type the site does not have: no node matches it


@dataclass(frozen=True)
class SimOptions:
    """What a run simulates besides the scheduler."""

    horizon_s: float
    failures: bool = True
    failure_model: node_failures.FailureModel = node_failures.FailureModel()
    seed: int = 0
    tariff: metrics.HourlySeries | None = None
    carbon: metrics.HourlySeries | None = None
    software_failures_per_job_day: float = goodput.DEFAULT_SOFTWARE_FAILURES_PER_JOB_DAY


@dataclass
class FleetResult:
    """The report of a run (JSON-ready dicts) and the run itself."""

    fleet: dict[str, Any]
    teams: list[dict[str, Any]]
    isolation: list[dict[str, Any]]
    demand_response: list[dict[str, Any]]
    counts: dict[str, Any]
    sim: object = field(repr=False, default=None)


class FleetSim(JobSets):
    """One workload on one site under one policy (its pending and running rows: :class:`JobSets`)."""

    def __init__(self, topo: FleetTopology, table: JobTable, policy: Policy, opts: SimOptions) -> None:
        super().__init__(table.n_jobs)
        self.run = new_run(table, topo, new_cluster(topo), policy)
        self.opts = opts
        self.quota = quota_table(policy, table.team_names, table.qos_names)
        self.node_models = node_models(topo.site, topo.node_gpu_type, topo.node_gpus)
        self.rates = TrainingRates()
        self.factors: dict[int, object] = {}
        self.placed_type = [0] * table.n_jobs  # GPU type of each running job's nodes (set as it is placed)
        self.failure_model = opts.failure_model
        self.rng = np.random.default_rng(opts.seed)
        self.heap: list[tuple[float, int, int, int, int]] = []
        self.seq = 0
        self.counts = dict.fromkeys(("node_failures_count", "software_failures_count", "nodes_excluded_count"), 0)
        self.counts.update(passes_count=0, full_passes_count=0)
        self.node_history: dict[int, list[float]] = {}
        self.dr_reports: list[dict[str, Any]] = []
        self.soft_epoch: dict[int, int] = {}
        self.rec = metrics.Recorder(topo.n_gpus, opts.tariff, opts.carbon)
        self.power = PowerAdmission(self)
        self.it_w = 0.0
        self.last_frag = 0
        self._gpu_type_code = {n: i for i, n in enumerate(topo.gpu_type_names)}
        self._submit_order = np.argsort(table.submit_s, kind="stable")
        # the loop reads these one at a time: Python lists, not array scalars
        self._submit_rows: list[int] = self._submit_order.tolist()
        self._submit_times: list[float] = table.submit_s[self._submit_order].tolist()
        self._next_submit = 0
        self._fails = (
            node_failures.draw_failures(
                self.rng, topo.node_gpu_type, topo.gpu_type_names, opts.horizon_s, self.failure_model
            )
            if opts.failures
            else None
        )
        self._next_fail = 0
        self._usage_t = 0.0  # the fair-share usage was last committed then, at this value [GPU·s]
        self._usage_gpu_s = self.run.acct.team_usage_gpu_s
        self._prio = priority.PriorityCache(table.n_jobs, self.quota.shares)
        self.power_dirty = True
        self.budget_changed = False
        self._last_rebalance = -math.inf
        self.dirty = True  # the events of the instant being processed changed something
        self._last_full_s, self._bf_pending = -math.inf, False  # the last full pass; a backfill wake-up queued
        self._last_sched_s, self._sched_due = -math.inf, False  # the scheduler's last run; a change since
        self.changes_count = 0  # instants whose events changed something, and batched scheduler runs
        self.planned_start_s: dict[int, float] = {}  # the last full pass's reservations (squeue --start)
        self.job_node0 = np.zeros(table.n_jobs, np.int64)  # first node of a running job
        self.job_gpu_type = jobclass.gpu_type_codes(table, self._gpu_type_code, UNKNOWN_GPU_TYPE)
        self.job_k = jobclass.whole_nodes(table, topo, self.job_gpu_type)
        self.special = jobclass.special_jobs(table, policy)
        self.has_limits = bool(policy.quotas) or any(q.grp_gpus or q.max_gpus_per_user for q in policy.qos)
        self.may_preempt = jobclass.may_preempt(table, policy)
        self._site_fits = jobclass.SiteFit(topo)
        self._seed_events()

    @property
    def _fails(self) -> node_failures.FailureDraw | None:
        """The node failures drawn for the run (time order), None without failures."""
        return self._fail_draw

    @_fails.setter
    def _fails(self, draw: node_failures.FailureDraw | None) -> None:
        self._fail_draw = draw
        self._fail_times: list[float] = draw.time_s.tolist() if draw is not None else []

    # --- events --------------------------------------------------------------------------
    def push(self, t: float, kind: int, a: int, b: int) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, kind, a, b))

    def _seed_events(self) -> None:
        pol = self.run.policy
        for r, resv in enumerate(pol.reservations):
            self.push(resv.start_s, events.EV_RESV_START, r, 0)
            self.push(resv.end_s, events.EV_RESV_END, r, 0)
        for d, ev in enumerate(pol.demand_response):
            self.push(ev.start_s, events.EV_DR_START, d, 0)
            self.push(ev.start_s + ev.duration_s, events.EV_DR_END, d, 0)
        for i, (t, _, _) in enumerate(pol.quota_changes):
            self.push(t, events.EV_QUOTA, i, 0)
        events.mark_upcoming(self, 0.0)

    def _next_time(self) -> float:
        t = self.heap[0][0] if self.heap else math.inf
        if self._next_submit < len(self._submit_times):
            t = min(t, self._submit_times[self._next_submit])
        if self._next_fail < len(self._fail_times):
            t = min(t, self._fail_times[self._next_fail])
        return t

    def _process(self, t: float) -> None:
        times, rows = self._submit_times, self._submit_rows
        while self._next_submit < len(times) and times[self._next_submit] <= t:
            self._submit(rows[self._next_submit])
            self._next_submit += 1
        fails, fail_times = self._fails, self._fail_times
        while self._next_fail < len(fail_times) and fail_times[self._next_fail] <= t:
            i = self._next_fail
            self._next_fail += 1
            assert fails is not None  # there are failure times
            events.node_failed(self, int(fails.node[i]), int(fails.cause[i]), float(fails.repair_s[i]), t)
        while self.heap and self.heap[0][0] <= t:
            _, _, kind, a, b = heapq.heappop(self.heap)
            self._dispatch(kind, a, b, t)

    def _dispatch(self, kind: int, a: int, b: int, t: float) -> None:
        """Handle one event; a stale one (an end predicted before a change, a software failure of a job
        that stopped) changes nothing and does not count as a change for the scheduler."""
        run = self.run
        if kind == lifecycle.EV_END:
            if run.status[a] != RUNNING or run.epoch[a] != b:
                return
            _, killed = predicted_end(run, a)
            lifecycle.finish(self, a, t, killed)
        elif kind == events.EV_REPAIRED:
            events.node_repaired(self, a, t)
        elif kind == events.EV_UP:
            events.node_up(self, a, t)
        elif kind == events.EV_RESV_START:
            events.reservation_start(self, a, t)
        elif kind == events.EV_RESV_END:
            events.reservation_end(self, a, t)
        elif kind in (events.EV_DR_START, events.EV_DR_END):
            events.demand_response(self, a, t, kind == events.EV_DR_START)
        elif kind == events.EV_QUOTA:
            events.quota_change(self, a, t)
        elif kind == events.EV_SOFT_FAIL:
            if run.status[a] != RUNNING or self.soft_epoch.get(a) != b:
                return
            events.software_failure(self, a, t)
        self.dirty = True

    # --- the loop ------------------------------------------------------------------------
    def simulate(self) -> FleetResult:
        """Run to the horizon and report."""
        wall0 = time.perf_counter()
        self.run_until(self.opts.horizon_s)
        return self._result(time.perf_counter() - wall0)

    def run_until(
        self, t_s: float, *, batch_s: float | None = None, observe: Callable[[float], None] | None = None
    ) -> None:
        """Apply every event up to and at ``t_s`` [s of simulation time] and schedule; the clock ends at ``t_s``.

        ``batch_s`` None (:meth:`simulate`): the scheduler runs after every batch of events at one
        instant: the quick pass, the full pass with backfill when ``bf_interval_s`` has passed, the
        power rebalance.  Stepping a run in steps of any length gives the schedule of one run.
        ``batch_s`` given (the live ticks, like Slurm's ``defer``): the events apply as they come,
        but the scheduler runs once, at ``t_s``, when something changed since its last run and
        at least ``batch_s`` seconds passed since then; the jobs it starts start at the step's
        end, not at the event that let them.  ``observe(t)`` is called after the events of each
        instant and at ``t_s``, after the scheduler.  Past ``opts.horizon_s`` no failure is drawn.
        """
        if t_s < self.run.now_s:
            raise ValueError(f"run_until({t_s} s): the simulation is already at {self.run.now_s} s")
        while True:
            t = self._next_time()
            if t > t_s:
                break
            self._advance_clock(t)
            self.dirty = False
            self._process(t)
            if observe is not None:
                observe(t)
            if not self.dirty:
                continue
            self.changes_count += 1
            if batch_s is None:
                self._schedule(t)
            else:
                self._sched_due = True
        self._advance_clock(t_s, commit=False)
        if batch_s is not None and self._sched_due and t_s - self._last_sched_s >= batch_s:
            self._advance_clock(t_s)  # the pass changes the GPUs held from here on
            self._schedule(t_s)
            self.changes_count += 1
        if observe is not None:
            observe(t_s)

    def _schedule(self, t: float) -> None:
        """The quick pass, the full pass when due, the power rebalance (after the events at ``t``)."""
        pol = self.run.policy
        self._sched_due, self._last_sched_s = False, t
        full_due = t - self._last_full_s >= pol.bf_interval_s
        if not full_due and self.n_pending and self._quick_pass_may_start():
            self._pass(t, full=False)
        if full_due and self.n_pending:
            self._pass(t, full=True)
            self._last_full_s, self._bf_pending = t, False
        elif not self._bf_pending:
            self.push(self._last_full_s + pol.bf_interval_s, events.EV_BACKFILL, 0, 0)
            self._bf_pending = True
        if self.power_dirty and (self.budget_changed or t - self._last_rebalance >= pol.power_rebalance_s):
            self.rebalance(t)
            self.power_dirty = self.budget_changed = False
            self._last_rebalance = t
        self._levels()

    def _quick_pass_may_start(self) -> bool:
        """Whether the main scheduler could start anything now: free GPUs, or a pending job that may preempt."""
        cl = self.run.cluster
        if np.count_nonzero(cl.free_hist[1:]) or not self.run.topo.uniform_nodes:
            return True
        return bool(self.pending and self.may_preempt[self.pending_rows()].any())

    def _pass(self, t: float, full: bool) -> None:
        res = schedule_pass(self, t, full)
        self.counts["passes_count"] += 1
        if full:
            self.counts["full_passes_count"] += 1
            self.last_frag = res.fragmented_gpus
            self.planned_start_s = res.expected_start_s
        self.run.reason_code[res.rows] = res.codes
        for j in res.started:
            self.planned_start_s.pop(j, None)

    def _advance_clock(self, t: float, commit: bool = True) -> None:
        """Move the clock to ``t``: the fleet signals integrated, the fair-share usage decayed and topped up.

        The usage is integrated from the last committed instant (an event, a pass) with the GPUs
        held since: ``commit=False`` (a step's end) shows its value at ``t`` but keeps that instant,
        so that how a run is stepped does not change it (the decay and the top-up do not commute).
        """
        self.rec.advance(t)
        run = self.run
        dt = t - self._usage_t
        if dt > 0:
            a = run.acct
            a.team_usage_gpu_s = priority.decay(self._usage_gpu_s, dt, run.policy.decay_half_life_s) + a.team_gpus * dt
            if commit:
                self._usage_gpu_s, self._usage_t = a.team_usage_gpu_s, t
        run.now_s = t

    def _levels(self) -> None:
        run = self.run
        alloc = run.cluster.n_alloc_gpus
        it_w = self.power.it_power_w() if not (run.policy.idle_nodes_off and self.power.mode != "off") else self.it_w
        self.rec.set_levels(float(alloc), float(self.n_pending), float(self.last_frag), self.power.facility_mw(it_w))

    # --- jobs ----------------------------------------------------------------------------
    def _submit(self, j: int) -> None:
        run = self.run
        if run.status[j] != WAITING:
            return  # a dependency already failed: the job never runs
        tab = run.table
        k = int(self.job_k[j])
        if not self._site_fits.fits(int(self.job_gpu_type[j]), TOPOLOGIES[tab.topology[j]], int(tab.n_gpus[j]), k):
            lifecycle.never(self, j, "PartitionNodeLimit")
            self.counts["jobs_too_large_count"] = self.counts.get("jobs_too_large_count", 0) + 1
            return
        run.status[j] = PENDING
        set_reason(run, j, "Dependency" if run.deps_left[j] > 0 else "None")
        self.pending_add(j)
        self.dirty = True

    def request(self, j: int) -> tuple[placement.Request, int]:
        """The placement request of job ``j`` now, and the whole nodes it takes (0: shares a node)."""
        tab, run = self.run.table, self.run
        req = placement.Request(
            n_gpus=int(tab.n_gpus[j]),
            topology=TOPOLOGIES[tab.topology[j]],
            segment_nodes=int(tab.segment_nodes[j]),
            exclusive=bool(tab.exclusive[j]),
            gpu_type=int(self.job_gpu_type[j]),
            resv=self._job_resv(j),
            end_s=run.now_s + float(tab.wall_s[j]),
        )
        return req, int(self.job_k[j])

    def _job_resv(self, j: int) -> int:
        pol = self.run.policy
        if not pol.reservations:
            return -1
        user = self.run.table.user_names[self.run.table.user[j]]
        now = self.run.now_s
        for r, resv in enumerate(pol.reservations):
            if not resv.maintenance and user in resv.users and resv.start_s <= now < resv.end_s:
                return r
        return -1

    def note_priorities(self, now: float, rows: np.ndarray) -> None:
        """A pass at ``now`` over ``rows``: the priorities due take their inputs now (see :meth:`noted_priorities`)."""
        self._prio.note(self.run, now, rows)

    def noted_priorities(self) -> np.ndarray:
        """Priorities, indexed by row, of every row noted so far, each as of the instant it was noted."""
        return self._prio.resolve(self.run, self.quota)

    def node_planned_free(self, node: int, now: float) -> float:
        """When every job on ``node`` has reached its wall time (now if none)."""
        run = self.run
        first = int(run.topo.node_first_gpu[node])
        jobs = run.cluster.gpu_job[first : first + int(run.topo.node_gpus[node])]
        jobs = jobs[jobs >= 0]
        if jobs.size == 0:
            return now
        return float((run.last_start_s[jobs] + run.table.wall_s[jobs]).max())

    def power_blocked(self, rows: np.ndarray) -> np.ndarray:
        """Mask of ``rows`` whose floor power does not fit the budget now."""
        if self.power.mode == "off":
            return np.zeros(rows.size, bool)
        return self.power.blocked(rows)

    def start(self, j: int, gpus: np.ndarray, t: float) -> None:
        lifecycle.start(self, j, gpus, t)

    def preempt(self, j: int, t: float) -> None:
        lifecycle.requeue(self, j, t, "preempted")

    # --- hooks from lifecycle ------------------------------------------------------------
    def on_start(self, j: int, t: float) -> None:
        self.power_dirty = True
        self.pending_discard(j)
        self.running_add(j)
        gpus = self.run.gpus[j]
        assert gpus is not None  # placed by the caller
        self.job_node0[j] = int(self.run.topo.site.gpu_node[gpus[0]])
        self.schedule_software_failure(j, t)

    def on_end(self, j: int, t: float) -> None:
        self.power_dirty = True
        self.running_discard(j)
        self.dirty = True

    def on_requeue(self, j: int, t: float, why: str, lost: float) -> None:
        self.power_dirty = True
        self.running_discard(j)
        self.pending_add(j)
        self.dirty = True

    def on_never(self, j: int) -> None:
        self.pending_discard(j)

    def power_joined(self, j: int, t: float) -> None:
        self.power.joined(j)

    def power_left(self, j: int, t: float) -> None:
        self.it_w -= float(self.run.node_power_w[j])
        self.run.node_power_w[j] = 0.0
        self.power.left(j)

    def power_admits(self, j: int) -> bool:
        return self.power.mode == "off" or self.power.admits(j)

    def schedule_software_failure(self, j: int, t: float) -> None:
        """Draw job ``j``'s next software interruption (pretraining jobs only, [Llama3-2024] Table 5)."""
        rate = self.opts.software_failures_per_job_day
        if not self.opts.failures or rate <= 0 or self.run.table.kind[j] != 0:
            return
        self.soft_epoch[j] = self.soft_epoch.get(j, 0) + 1
        self.push(t + self.rng.exponential(86_400.0 / rate), events.EV_SOFT_FAIL, j, self.soft_epoch[j])

    def rebalance(self, t: float) -> list[int]:
        """Re-set the power caps for the budget now; requeue what does not fit; returns the requeued jobs."""
        changed, drop = self.power.rebalance(t)
        for j in drop:
            lifecycle.requeue(self, j, t, "preempted")
            set_reason(self.run, j, "PowerCap")
        for j in changed:
            if self.run.status[j] == RUNNING:
                lifecycle.refresh(self, j, t)
        return drop

    # --- for the engine ------------------------------------------------------------------
    def gpu_view(self) -> dict[str, np.ndarray]:
        """Which GPUs run which job at what cap, now: per-GPU job row and cap, per-job phase code."""
        run = self.run
        gj = run.cluster.gpu_job
        cap = np.where(gj >= 0, run.cap_w[np.maximum(gj, 0)], math.inf)
        phase = np.where(run.status == RUNNING, np.where(run.resume_s > run.now_s, 2, 1), 0).astype(np.int8)
        return {"gpu_job": gj, "gpu_cap_w": cap, "job_phase_code": phase}

    def _result(self, wall_s: float) -> FleetResult:
        run = self.run
        for j in np.flatnonzero(run.status == RUNNING).tolist():
            advance(run, j, run.now_s)
        fleet = metrics.fleet_report(run, self.rec, wall_s)
        util = float((run.done_s * run.table.n_gpus).sum()) / max(run.topo.n_gpus * max(self.rec.t, 1e-9), 1e-9)
        fleet["utilisation_frac"] = util
        fleet.update({k: v for k, v in self.counts.items()})
        return FleetResult(
            fleet=fleet,
            teams=metrics.team_rows(run),
            isolation=run.cluster.isolation(),
            demand_response=self.dr_reports,
            counts=dict(self.counts),
            sim=self,
        )
