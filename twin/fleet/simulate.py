"""The event-driven fleet simulation: submissions, ends, failures, repairs, reservations, DR events.

Time jumps from event to event (a heap; submissions and failures are read from sorted
arrays).  After every batch of events at one instant the quick scheduling pass runs (the
main scheduler, :func:`twin.fleet.scheduler.schedule_pass` with ``full=False``); the full
pass with backfill runs at most every ``bf_interval_s`` while something has changed (every
batch when it is 0), then the power caps are rebalanced.  Per-job physics is evaluated
only when a job's placement or cap changes (:mod:`twin.fleet.lifecycle`).

For the tick engine (a later coupling): :meth:`FleetSim.gpu_view` says which GPUs run which
job at what cap, and in which phase, at the simulation's present time.
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass, field

import numpy as np

from twin.fleet import events, lifecycle, metrics, placement, priority
from twin.fleet import failures as node_failures
from twin.fleet.cluster import new_cluster
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

    fleet: dict
    teams: list[dict]
    isolation: list[dict]
    demand_response: list[dict]
    counts: dict
    sim: object = field(repr=False, default=None)


class FleetSim:
    """One workload on one site under one policy."""

    def __init__(self, topo: FleetTopology, table: JobTable, policy: Policy, opts: SimOptions) -> None:
        self.run = new_run(table, topo, new_cluster(topo), policy)
        self.opts = opts
        self.quota = quota_table(policy, table.team_names, table.qos_names)
        self.node_models = node_models(topo.site, topo.node_gpu_type, topo.node_gpus)
        self.rates = TrainingRates()
        self.factors: dict[int, object] = {}
        self.failure_model = opts.failure_model
        self.rng = np.random.default_rng(opts.seed)
        self.heap: list[tuple[float, int, int, int, int]] = []
        self.seq = 0
        self.counts = dict.fromkeys(("node_failures_count", "software_failures_count", "nodes_excluded_count"), 0)
        self.counts.update(passes_count=0, full_passes_count=0)
        self.node_history: dict[int, list[float]] = {}
        self.dr_reports: list[dict] = []
        self.soft_epoch: dict[int, int] = {}
        self.rec = metrics.Recorder(topo.n_gpus, opts.tariff, opts.carbon)
        self.power = PowerAdmission(self)
        self.it_w = 0.0
        self.n_pending = 0
        self.last_frag = 0
        self._gpu_type_code = {n: i for i, n in enumerate(topo.gpu_type_names)}
        self._submit_order = np.argsort(table.submit_s, kind="stable")
        self._next_submit = 0
        self._fails = (
            node_failures.draw_failures(
                self.rng, topo.node_gpu_type, topo.gpu_type_names, opts.horizon_s, self.failure_model
            )
            if opts.failures
            else None
        )
        self._next_fail = 0
        self._usage_t = 0.0
        self.running: set[int] = set()
        self._prio = np.zeros(table.n_jobs)
        self._prio_valid = np.zeros(table.n_jobs, bool)
        self._prio_t = -math.inf
        self.power_dirty = True
        self.budget_changed = False
        self._last_rebalance = -math.inf
        self.job_node0 = np.zeros(table.n_jobs, np.int64)  # first node of a running job
        self.job_k = np.array([self.request(j)[1] for j in range(table.n_jobs)], np.int64)
        # jobs the count shortcuts do not cover (a GPU type, a reservation of their users)
        resv_users = {u for r in policy.reservations if not r.maintenance for u in r.users}
        self.special = np.array(
            [bool(table.gpu_type[j]) or table.user_names[table.user[j]] in resv_users for j in range(table.n_jobs)],
            bool,
        )
        self.has_limits = bool(policy.quotas) or any(q.grp_gpus or q.max_gpus_per_user for q in policy.qos)
        preempting = {q.name for q in policy.qos if q.preempt}
        reclaiming = {q.team for q in policy.quotas if q.cohort} if policy.reclaim else set()
        self.may_preempt = np.array(
            [
                table.qos_names[table.qos[j]] in preempting or table.team_names[table.team[j]] in reclaiming
                for j in range(table.n_jobs)
            ],
            bool,
        )
        self._seed_events()

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
        self.mark_upcoming(0.0)

    def _next_time(self) -> float:
        t = self.heap[0][0] if self.heap else math.inf
        if self._next_submit < self._submit_order.size:
            t = min(t, float(self.run.table.submit_s[self._submit_order[self._next_submit]]))
        if self._fails is not None and self._next_fail < self._fails.time_s.size:
            t = min(t, float(self._fails.time_s[self._next_fail]))
        return t

    def _process(self, t: float) -> None:
        order, tab = self._submit_order, self.run.table
        while self._next_submit < order.size and tab.submit_s[order[self._next_submit]] <= t:
            self._submit(int(order[self._next_submit]))
            self._next_submit += 1
        fails = self._fails
        while fails is not None and self._next_fail < fails.time_s.size and fails.time_s[self._next_fail] <= t:
            i = self._next_fail
            self._next_fail += 1
            events.node_failed(self, int(fails.node[i]), int(fails.cause[i]), float(fails.repair_s[i]), t)
        while self.heap and self.heap[0][0] <= t:
            _, _, kind, a, b = heapq.heappop(self.heap)
            self._dispatch(kind, a, b, t)

    def _dispatch(self, kind: int, a: int, b: int, t: float) -> None:
        run = self.run
        if kind == lifecycle.EV_END:
            if run.status[a] == RUNNING and run.epoch[a] == b:
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
            if run.status[a] == RUNNING and self.soft_epoch.get(a) == b:
                events.software_failure(self, a, t)
        self.dirty = True

    # --- the loop ------------------------------------------------------------------------
    def simulate(self) -> FleetResult:
        """Run to the horizon and report."""
        wall0 = time.perf_counter()
        pol = self.run.policy
        self.dirty, last_full, bf_pending = True, -math.inf, False
        horizon = self.opts.horizon_s
        while True:
            t = self._next_time()
            if t > horizon:
                break
            self._advance_clock(t)
            self.dirty = False
            self._process(t)
            if not self.dirty:
                continue
            full_due = t - last_full >= pol.bf_interval_s
            if not full_due and self.n_pending and self._quick_pass_may_start():
                self._pass(t, full=False)
            if full_due and self.n_pending:
                self._pass(t, full=True)
                last_full, bf_pending = t, False
            elif not bf_pending:
                self.push(last_full + pol.bf_interval_s, events.EV_BACKFILL, 0, 0)
                bf_pending = True
            if self.power_dirty and (self.budget_changed or t - self._last_rebalance >= pol.power_rebalance_s):
                self.rebalance(t)
                self.power_dirty = self.budget_changed = False
                self._last_rebalance = t
            self._levels()
        self._advance_clock(horizon)
        return self._result(time.perf_counter() - wall0)

    def _quick_pass_may_start(self) -> bool:
        """Whether the main scheduler could start anything now: free GPUs, or a pending job that may preempt."""
        cl = self.run.cluster
        if cl.free_hist[1:].any() or not self.run.topo.uniform_nodes:
            return True
        return bool(self.n_pending and self.may_preempt.any() and self.may_preempt[self.run.status == PENDING].any())

    def _pass(self, t: float, full: bool) -> None:
        res = schedule_pass(self, t, full)
        self.counts["passes_count"] += 1
        if full:
            self.counts["full_passes_count"] += 1
            self.last_frag = res.fragmented_gpus
        self.run.reason_code[res.rows] = res.codes

    def _advance_clock(self, t: float) -> None:
        self.rec.advance(t)
        run = self.run
        dt = t - self._usage_t
        if dt > 0:
            a = run.acct
            a.team_usage_gpu_s = priority.decay(a.team_usage_gpu_s, dt, run.policy.decay_half_life_s)
            a.team_usage_gpu_s += a.team_gpus * dt
            self._usage_t = t
        run.now_s = t

    def _levels(self) -> None:
        run = self.run
        alloc = run.cluster.n_alloc_gpus
        it_w = self.power.it_power_w() if not (run.policy.idle_nodes_off and self.power.mode != "off") else self.it_w
        self.rec.set(
            alloc=float(alloc),
            queue=float(self.n_pending),
            frag=float(self.last_frag),
            power_mw=self.power.facility_mw(it_w),
        )

    # --- jobs ----------------------------------------------------------------------------
    def _submit(self, j: int) -> None:
        run = self.run
        if run.status[j] != WAITING:
            return  # a dependency already failed: the job never runs
        req, k = self.request(j)
        fits = self._fits_site(req, k)
        if not fits:
            lifecycle.never(self, j, "PartitionNodeLimit")
            self.counts["jobs_too_large_count"] = self.counts.get("jobs_too_large_count", 0) + 1
            return
        run.status[j] = PENDING
        set_reason(run, j, "Dependency" if run.deps_left[j] > 0 else "None")
        self.n_pending += 1
        self.dirty = True

    def _fits_site(self, req: placement.Request, k: int) -> bool:
        topo = self.run.topo
        mask = topo.node_gpu_type == req.gpu_type if req.gpu_type >= 0 else np.ones(topo.n_nodes, bool)
        if not mask.any():
            return False
        if k == 0:
            return int(topo.node_gpus[mask].max()) >= req.n_gpus
        level = {"leaf": topo.node_leaf, "pod": topo.node_pod}.get(req.topology)
        if level is None:
            return int(mask.sum()) >= k
        return int(np.bincount(level[mask]).max()) >= k

    def request(self, j: int) -> tuple[placement.Request, int]:
        """The placement request of job ``j`` now, and the whole nodes it takes (0: shares a node)."""
        tab, run = self.run.table, self.run
        gt = self._gpu_type_code.get(tab.gpu_type[j], UNKNOWN_GPU_TYPE) if tab.gpu_type[j] else -1
        req = placement.Request(
            n_gpus=int(tab.n_gpus[j]),
            topology=TOPOLOGIES[tab.topology[j]],
            segment_nodes=int(tab.segment_nodes[j]),
            exclusive=bool(tab.exclusive[j]),
            gpu_type=gt,
            resv=self._job_resv(j),
            end_s=run.now_s + float(tab.wall_s[j]),
        )
        sel = np.flatnonzero(run.topo.node_gpu_type == gt) if gt >= 0 else np.zeros(0, np.int64)
        gpn = int(run.topo.node_gpus[sel[0]]) if sel.size else int(run.topo.node_gpus.max())
        return req, placement.nodes_needed(req, gpn)

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

    def priorities(self, now: float, rows: np.ndarray) -> np.ndarray:
        """Multifactor priority, indexed by row, recomputed for every pending job each PriorityCalcPeriod
        (Slurm's ``PriorityCalcPeriod``) and for a job that joined the queue since at its first pass."""
        run = self.run
        tab, q = run.table, self.quota
        period = run.policy.priority_calc_period_s
        if now - self._prio_t >= period or period <= 0:
            self._prio_valid[:] = False
            self._prio_t = now
        rows = rows[~self._prio_valid[rows]]
        if rows.size == 0:
            return self._prio
        self._prio_valid[rows] = True
        fs_team = priority.fairshare_factor(run.acct.team_usage_gpu_s, q.shares)
        out = self._prio
        out[rows] = priority.multifactor(
            run.policy,
            now,
            tab.submit_s[rows],
            tab.n_gpus[rows],
            q.qos_priority[tab.qos[rows]],
            fs_team[tab.team[rows]],
            tab.priority[rows],
            run.topo.n_gpus,
        )
        return out

    def running_rows(self) -> np.ndarray:
        """Rows of the running jobs."""
        return np.fromiter(self.running, dtype=np.int64, count=len(self.running))

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
        return self.power.running_floor_w + self.power.est_floor_w[rows] > self.power.it_budget_w()

    def start(self, j: int, gpus: np.ndarray, t: float) -> None:
        lifecycle.start(self, j, gpus, t)

    def preempt(self, j: int, t: float) -> None:
        lifecycle.requeue(self, j, t, "preempted")

    # --- hooks from lifecycle ------------------------------------------------------------
    def on_start(self, j: int, t: float) -> None:
        self.power_dirty = True
        self.n_pending -= 1
        self.running.add(j)
        self.job_node0[j] = int(self.run.topo.site.gpu_node[self.run.gpus[j][0]])
        self.schedule_software_failure(j, t)

    def on_end(self, j: int, t: float) -> None:
        self.power_dirty = True
        self.running.discard(j)
        self.dirty = True

    def on_requeue(self, j: int, t: float, why: str, lost: float) -> None:
        self.power_dirty = True
        self.running.discard(j)
        self.n_pending += 1
        self.dirty = True

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

    def mark_upcoming(self, t: float) -> None:
        """Mark every node with its next reservation start (placements avoid nodes reserved before their end)."""
        cl, pol = self.run.cluster, self.run.policy
        cl.node_resv_next_s[:] = math.inf
        cl.node_resv_next[:] = -1
        for r, resv in sorted(enumerate(pol.reservations), key=lambda x: -x[1].start_s):
            if resv.start_s > t:
                nodes = np.asarray(resv.nodes, dtype=np.int64)
                cl.node_resv_next_s[nodes] = resv.start_s
                cl.node_resv_next[nodes] = r

    def upcoming_reservations(self, now: float) -> list[tuple[np.ndarray, float, float]]:
        """(nodes, start, end) of the reservations not yet started (for the backfill profile)."""
        return [
            (np.asarray(r.nodes, dtype=np.int64), r.start_s, r.end_s)
            for r in self.run.policy.reservations
            if r.start_s > now
        ]

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
