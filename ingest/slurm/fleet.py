"""A live Slurm queue on the fleet model: the source's records as fleet jobs, nodes and a policy at "now".

:func:`map_snapshot` is the one mapping from :mod:`ingest.sources.slurm_records` onto
:mod:`twin.fleet` (``workload.FleetJob``, the node states of ``cluster.ClusterState``,
``policy.Policy``); :mod:`ingest.slurm.predict` runs the fleet scheduler forward from it.
Time 0 of the fleet is the instant of the read.

* **Partitions**: partitions that share nodes form a *group*, scheduled on its own: Slurm's
  main scheduler and its backfill treat partitions apart, and a job can use only its
  partition's nodes.  Partitions of one group that do not hold the same nodes are planned
  on the union of their nodes (a note says so).  Inside a group a higher ``PriorityTier``
  is scheduled first ([Slurm-Sched]): ``tier × 2³²`` is added to a job's priority.
  ``MaxNodes``, ``MaxTime`` and a partition that is not up hold a job for ever
  (``PartitionNodeLimit``, ``PartitionTimeLimit``, ``PartitionDown``).
* **Nodes**: every site node outside the group is out of service for it (``EXCLUDED``); a
  Slurm node that takes no work (drained, down, failing, not responding) is ``DRAIN`` while
  jobs still run on it, else ``DOWN``.  No node comes back within a prediction.
* **Running jobs** hold the GPUs ``gres_detail`` names (the first free ones of their nodes
  where it does not) and run for their expected run time from now
  (:mod:`ingest.slurm.runtime`); the scheduler plans with their time limits, as Slurm's
  backfill does.  A job that has outlived its estimate is expected to end within a second
  until it has run twice its estimate, then it is planned by its limit alone [E].
* **Pending jobs**: GPUs asked for; a job of several nodes that asks for part of each node
  takes its nodes whole (the fleet allocates GPUs or whole nodes; noted), ``--exclusive``
  takes them whole.  A pending array record (``12_[2-5%2]``) becomes one job per task, and
  its ``%N`` throttle a chain: the task ``N`` places later in line (running tasks first)
  starts after it.  A future ``EligibleTime`` (``--begin``) is its submission.
* **Priorities**: Slurm's own, which already weigh every factor.  While jobs wait only the
  age factor grows, by ``PriorityWeightAge / PriorityMaxAge`` per second for every job
  younger than ``PriorityMaxAge``; the fleet's multifactor keeps that weight and sets the
  others to 0.  Ties go to the lower job id, as in Slurm's queue sort.
* **Dependencies**: ``afterok``/``afterany``/``aftercorr``/``after`` on a job still running
  or pending become ``after_ok`` (``after`` is so read as waiting for the end: later than
  Slurm, noted); on a job of another group a cross-group wait the predictor resolves; on a
  job that is gone, nothing.  ``afternotok`` and an ``afterok`` whose job failed hold for
  ever.  ``singleton`` waits for the user's previous job of the same name.
* **Reservations**: the nodes of a future one are held from its start to its end for the
  users of the jobs that name it; of an active one, its nodes that are free now.
* **QoS**: names and priorities, GPU limits where ``AccountingStorageEnforce`` has
  ``limits``, and the QoS each may preempt under ``PreemptType=preempt/qos``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from itertools import chain

import numpy as np

from ingest.slurm.runtime import MIN_RUN_S, RunTimes, estimator
from ingest.sources import slurm_map as sm
from ingest.sources.slurm_config import SchedulerConfig, scheduler_config
from ingest.sources.slurm_records import SlurmJob, SlurmNode, SlurmSnapshot
from twin.fleet.cluster import DOWN, DRAIN, EXCLUDED
from twin.fleet.policy import Policy, PriorityWeights, QosSpec, Reservation
from twin.fleet.topology import FleetTopology
from twin.fleet.workload import FleetJob

TIER_SCALE = 2.0**32  # Slurm priorities are 32-bit: a tier outranks every priority below it
YEAR_S = 365 * 86_400.0  # an unlimited job is planned for a year, as Slurm's backfill does
OVERDUE_FACTOR = 2.0  # [E] a job past its estimate is still expected at once until it ran this many times it
# [E] A node stays allocated (COMPLETING) for a moment after its job's recorded end before the
# scheduler gives it to the next job: on the test cluster (no epilog) the next job's start
# falls in the same or the next whole second of the end, 0.5 s on average.  A site with an
# epilog (health checks) holds its nodes longer: pass its epilog time as ``completing_s``.
COMPLETING_S = 0.5
TRUNCATION_S = (
    0.5  # Slurm's times are whole seconds (truncated): an event at "12:00:05" happened 0.5 s later on average
)
MAX_ARRAY_TASKS = 100_000  # tasks one pending array record may stand for
RUNNING_STATES = frozenset({"running", "completing", "suspended"})
# Pending reasons that hold a job until someone acts ([Slurm-Sched] squeue(1) reasons)
NEVER_REASONS = frozenset(
    {
        "JobHeldUser",
        "JobHeldAdmin",
        "PartitionNodeLimit",
        "PartitionTimeLimit",
        "PartitionDown",
        "PartitionInactive",
        "PartitionConfig",
        "DependencyNeverSatisfied",
        "InvalidAccount",
        "InvalidQOS",
        "BadConstraints",
        "AccountNotAllowed",
        "QOSNotAllowed",
    }
)
WAIT_KINDS = frozenset({"afterok", "afterany", "aftercorr", "afterburstbuffer", "after"})


@dataclass
class JobRow:
    """One modelled job (or array task): the Slurm record and what the twin assumed for it."""

    key: str  # display id of the job or task ("12", "12_4")
    job: SlurmJob
    running: bool
    run_s: float  # expected run time from now [s] (running: what is left)
    run_from: str  # "history" or "time_limit"
    wall_s: float  # the time limit the scheduler plans with, from now [s]


@dataclass
class FleetGroup:
    """One group of partitions that share nodes, as the fleet scheduler sees it at time 0."""

    partitions: tuple[str, ...]
    nodes: np.ndarray  # site node ids of the group
    jobs: list[FleetJob]
    rows: list[JobRow]  # rows[i] is jobs[i]
    running: dict[int, np.ndarray]  # row → GPU ids it holds now
    out_of_service: list[tuple[np.ndarray, int, str]]  # (site nodes, fleet node state, reason)
    policy: Policy
    cross_deps: dict[int, tuple[str, ...]] = field(default_factory=dict)  # row → keys of other groups' jobs


@dataclass
class FleetMapping:
    """A read mapped onto the fleet: its groups, and the jobs that cannot start or are not modelled."""

    now: datetime
    config: SchedulerConfig
    topo: FleetTopology
    groups: list[FleetGroup]
    never: dict[str, str]  # pending key → why it cannot start (a Slurm reason)
    left_out: dict[str, str]  # key → why the fleet model does not hold it
    notes: list[str]


def map_snapshot(
    snapshot: SlurmSnapshot,
    topo: FleetTopology,
    *,
    now: datetime | None = None,
    run_times: RunTimes | None = None,
    completing_s: float = COMPLETING_S,
) -> FleetMapping:
    """The fleet's view of ``snapshot`` on the site of ``topo`` at ``now`` (default: the read's time).

    ``run_times`` gives a job's expected run time (default: its history in the read, see
    :func:`ingest.slurm.runtime.estimator`; ``None`` from it means its time limit);
    ``completing_s`` is how long a node stays held after its job ends [s].
    """
    now = now or snapshot.read_at or datetime.now(UTC)
    config = scheduler_config(snapshot.config)
    runs = run_times or estimator(snapshot.jobs, "history")
    ctx = _Context(snapshot, topo, now, config, runs, max(float(completing_s), 0.0))
    for job in sorted(snapshot.jobs, key=lambda j: (j.job_id, j.array_task_id or -1)):
        if job.state in RUNNING_STATES:
            ctx.add_running(job)
        elif job.state == "pending":
            ctx.add_pending(job)
    ctx.resolve_dependencies()
    groups = [ctx.group(g) for g in range(len(ctx.group_parts))]
    return FleetMapping(now, config, topo, groups, ctx.never, ctx.left_out, ctx.notes)


def _node_ids(topo: FleetTopology, nodes: list[SlurmNode]) -> dict[str, int]:
    """Slurm node name → site node id (the read's own mapping, else the site's names)."""
    ids = {name: i for i, name in enumerate(topo.site.node_name)}
    for n in nodes:
        if n.node_id >= 0:
            ids[n.name] = n.node_id
    return ids


def _partition_groups(snapshot: SlurmSnapshot, ids: dict[str, int]) -> tuple[list[list[str]], list[set[int]]]:
    """Partitions joined where they share nodes: (names per group, site node ids per group)."""
    parts = [(p.name, {ids[n] for n in p.node_names if n in ids}) for p in snapshot.partitions]
    if not parts:
        known = {ids[n.name] for n in snapshot.nodes if n.name in ids}
        return [[]], [known]
    names: list[list[str]] = []
    sets: list[set[int]] = []
    for name, nodes in parts:
        hit = [g for g, s in enumerate(sets) if s & nodes]
        merged_names, merged = [name], set(nodes)
        for g in reversed(hit):
            merged_names = names.pop(g) + merged_names
            merged |= sets.pop(g)
        names.append(merged_names)
        sets.append(merged)
    return names, sets


class _Context:
    """The mapping while it walks the jobs of one read."""

    def __init__(self, snapshot: SlurmSnapshot, topo: FleetTopology, now: datetime, config, run_times, completing_s):
        self.snapshot, self.topo, self.now, self.config, self.run_times = snapshot, topo, now, config, run_times
        self.completing_s = completing_s
        self.ids = _node_ids(topo, snapshot.nodes)
        self.group_parts, node_sets = _partition_groups(snapshot, self.ids)
        self.group_nodes = [np.array(sorted(s), dtype=np.int64) for s in node_sets]
        self.group_gpn = [
            int(topo.node_gpus[n].max()) if n.size else int(topo.node_gpus.max()) for n in self.group_nodes
        ]
        self.node_group = np.full(topo.n_nodes, -1, np.int64)
        for g, nodes in enumerate(self.group_nodes):
            self.node_group[nodes] = g
        self.part_group = {p: g for g, names in enumerate(self.group_parts) for p in names}
        self.partitions = {p.name: p for p in snapshot.partitions}
        self.never: dict[str, str] = {}
        self.left_out: dict[str, str] = {}
        self.notes: list[str] = []
        self.rows: list[list[JobRow]] = [[] for _ in self.group_parts]
        self.fleet_jobs: list[list[FleetJob]] = [[] for _ in self.group_parts]
        self.running: list[dict[int, np.ndarray]] = [{} for _ in self.group_parts]
        self.deps: list[dict[int, list[str]]] = [{} for _ in self.group_parts]
        self.throttle: dict[str, tuple[int, list[str]]] = {}  # array id → (limit, keys in line)
        self.where: dict[str, tuple[int, int]] = {}  # key → (group, row)
        self.taken = np.zeros(topo.n_gpus, bool)
        self._overlap_notes()

    def _overlap_notes(self) -> None:
        for names in self.group_parts:
            sets = {frozenset(self.ids[n] for n in self.partitions[p].node_names if n in self.ids) for p in names}
            if len(sets) > 1:
                self.notes.append(f"partitions {', '.join(names)} share some nodes: planned on all of their nodes")

    # --- placing a job in a group --------------------------------------------------------
    def _group_of(self, job: SlurmJob) -> int | None:
        if len(self.group_parts) == 1 and not self.group_parts[0]:
            return 0
        for p in job.partition.split(","):
            if p in self.part_group:
                return self.part_group[p]
        return None

    def _add(self, g: int, row: JobRow, fleet: FleetJob, gpus: np.ndarray | None = None) -> int:
        i = len(self.rows[g])
        self.rows[g].append(row)
        self.fleet_jobs[g].append(fleet)
        if gpus is not None:
            self.running[g][i] = gpus
        self.where[row.key] = (g, i)
        return i

    def _fleet_job(self, row: JobRow, n_gpus: int, exclusive: bool, submit_s: float = 0.0) -> FleetJob:
        job = row.job
        tier = self.partitions[job.partition].priority_tier if job.partition in self.partitions else 1
        return FleetJob(
            job_id=row.key,
            team=job.account or "-",
            user=job.user or "-",
            qos=job.qos or "normal",
            submit_s=submit_s,
            n_gpus=n_gpus,
            wall_s=max(row.wall_s, 1e-3) + self.completing_s,
            run_s=max(min(row.run_s, row.wall_s), 1e-3) + self.completing_s,
            priority=tier * TIER_SCALE + float(job.priority or 0.0),
            exclusive=exclusive,
        )

    # --- running jobs ----------------------------------------------------------------------
    def add_running(self, job: SlurmJob) -> None:
        key = job.display_id
        g = self._group_of(job)
        if g is None and job.node_names and job.node_names[0] in self.ids:
            g = int(self.node_group[self.ids[job.node_names[0]]])
            g = g if g >= 0 else None
        gpus = self._running_gpus(job)
        if g is None or gpus is None:
            self.left_out[key] = "runs on nodes the site does not have" if g is not None else "partition not read"
            if gpus is None and g is not None and not (job.n_gpus_allocated or job.n_gpus_requested):
                self.left_out[key] = "holds no GPUs"
            return
        elapsed = (self.now - job.started_at).total_seconds() - TRUNCATION_S if job.started_at else 0.0
        limit = job.time_limit_s or self._partition_max_s(job) or YEAR_S
        wall = max(limit - elapsed, MIN_RUN_S)
        run, run_from = self._remaining(job, elapsed, wall)
        row = JobRow(key, job, True, run, run_from, wall)
        exclusive = bool(job.exclusive_flag) or gpus.size >= self.topo.node_gpus[0] * max(len(job.node_names), 1)
        self.taken[gpus] = True
        self._add(g, row, self._fleet_job(row, int(gpus.size), exclusive), gpus)
        if job.array_job_id is not None:
            self.throttle.setdefault(str(job.array_job_id), (0, []))[1].append(key)

    def _remaining(self, job: SlurmJob, elapsed: float, wall: float) -> tuple[float, str]:
        """Expected run time left [s] and where it comes from (see the module docstring)."""
        if job.state == "completing":
            return 0.0, "history"  # its nodes are released within completing_s
        est = self.run_times(job)
        if est is None or job.state == "suspended" or elapsed >= OVERDUE_FACTOR * est:
            return wall, "time_limit"
        return min(max(est - elapsed, MIN_RUN_S if elapsed >= est else 0.05), wall), "history"

    def _running_gpus(self, job: SlurmJob) -> np.ndarray | None:
        """Site GPU ids a running job holds: gres_detail's indices, else the first free GPUs of each node."""
        nids = [self.ids.get(n, -1) for n in job.node_names]
        if not nids or min(nids) < 0:
            return None
        topo, nodes = self.topo, np.array(nids, dtype=np.int64)
        idx = job.gpu_indices
        if len(idx) == len(nids) and all(idx):  # gres_detail names each node's GPUs: one vectorised look
            lens = np.array([len(t) for t in idx], dtype=np.int64)
            flat = np.fromiter(chain.from_iterable(idx), dtype=np.int64, count=int(lens.sum()))
            ids = np.repeat(topo.node_first_gpu[nodes], lens) + flat
            if (flat < np.repeat(topo.node_gpus[nodes], lens)).all() and not self.taken[ids].any():
                ids = np.unique(ids)
                return ids if ids.size == flat.size else self._gpus_by_node(job, nids)
        return self._gpus_by_node(job, nids)

    def _gpus_by_node(self, job: SlurmJob, nids: list[int]) -> np.ndarray | None:
        """Node by node: the named GPUs that are free, topped up with the node's first free ones."""
        topo = self.topo
        total = job.n_gpus_allocated or job.n_gpus_requested
        per_node = -(-total // len(nids)) if total else 0
        out: list[int] = []
        for i, nid in enumerate(nids):
            first, count = int(topo.node_first_gpu[nid]), int(topo.node_gpus[nid])
            want = job.gpu_indices[i] if i < len(job.gpu_indices) else ()
            if job.exclusive_flag and not want:
                want = tuple(range(count))
            ids = [first + k for k in want if k < count and not self.taken[first + k]]
            need = len(want) if want else per_node
            if len(ids) < need:
                ids += [first + k for k in range(count) if not self.taken[first + k] and first + k not in ids][
                    : need - len(ids)
                ]
            out.extend(ids)
        return np.array(sorted(out), dtype=np.int64) if out else None

    def _partition_max_s(self, job: SlurmJob) -> float | None:
        part = self.partitions.get(job.partition.split(",")[0])
        return part.max_time_s if part is not None else None

    # --- pending jobs ----------------------------------------------------------------------
    def add_pending(self, job: SlurmJob) -> None:
        keys = self._task_keys(job)
        why = self._never_reason(job)
        if why:
            for key in keys:
                self.never[key] = why
            return
        g = self._group_of(job)
        request = self._request(job, g)
        if g is None or request is None:
            for key in keys:
                self.left_out[key] = "partition not read" if g is None else "asks for no GPUs"
            return
        n_gpus, exclusive = request
        wall = job.time_limit_s or self._partition_max_s(job) or YEAR_S
        est = self.run_times(job)
        eligible = (job.eligible_at - self.now).total_seconds() if job.eligible_at else 0.0
        for key in keys:
            row = JobRow(key, job, False, est if est is not None else wall, "history" if est else "time_limit", wall)
            i = self._add(g, row, self._fleet_job(row, n_gpus, exclusive, max(eligible, 0.0)))
            self.deps[g][i] = []
        if job.array_job_id is not None and job.array_tasks:
            limit, line = self.throttle.setdefault(str(job.array_job_id), (0, []))
            self.throttle[str(job.array_job_id)] = (max(limit, _throttle(job.array_tasks)), line + keys)

    def _task_keys(self, job: SlurmJob) -> list[str]:
        if job.array_job_id is None or not job.array_tasks:
            return [job.display_id]
        tasks = _array_task_ids(job.array_tasks)
        if len(tasks) > MAX_ARRAY_TASKS:
            self.notes.append(f"array {job.display_id}: {len(tasks)} tasks, only the first {MAX_ARRAY_TASKS:,} kept")
        return [f"{job.array_job_id}_{t}" for t in tasks[:MAX_ARRAY_TASKS]] or [job.display_id]

    def _never_reason(self, job: SlurmJob) -> str:
        """Why a pending job cannot start until someone acts ("" when it can)."""
        if job.reason in NEVER_REASONS:
            return job.reason
        if job.priority == 0:
            return "JobHeldAdmin"
        part = self.partitions.get(job.partition.split(",")[0])
        if part is None:
            return ""
        if part.state != "up":
            return "PartitionDown" if part.state == "down" else "PartitionInactive"
        if part.max_nodes_per_job_count is not None and job.n_nodes_requested > part.max_nodes_per_job_count:
            return "PartitionNodeLimit"
        if part.max_time_s is not None and job.time_limit_s is not None and job.time_limit_s > part.max_time_s:
            return "PartitionTimeLimit"
        return ""

    def _request(self, job: SlurmJob, g: int | None) -> tuple[int, bool] | None:
        """GPUs and exclusivity of a pending job on the fleet, or None when it asks for no GPUs."""
        if g is None or job.n_gpus_requested <= 0:
            return None
        gpn = self.group_gpn[g]
        n_nodes, g_req = max(job.n_nodes_requested, 1), job.n_gpus_requested
        if job.exclusive_flag:
            return max(n_nodes, -(-g_req // gpn)) * gpn, True
        if n_nodes > 1:
            if g_req < n_nodes * gpn:
                self.notes.append(f"job {job.display_id}: {g_req} GPUs on {n_nodes} nodes planned as whole nodes")
            return n_nodes * gpn, True
        return g_req, False

    # --- dependencies ------------------------------------------------------------------------
    def resolve_dependencies(self) -> None:
        """after_ok edges, cross-group waits, and holds for dependencies that cannot be met."""
        by_id: dict[int, list[str]] = {}
        for key, (g, i) in self.where.items():
            job = self.rows[g][i].job
            by_id.setdefault(job.job_id, []).append(key)
            if job.array_job_id is not None:
                by_id.setdefault(job.array_job_id, []).append(key)
        for key in self.never:
            by_id.setdefault(int(key.split("_")[0]), []).append(key)
        for g, deps in enumerate(self.deps):
            for i in list(deps):
                self._dependencies_of(g, i, by_id)
        self._throttle_chains()
        changed = True
        while changed:  # a job waiting on one that cannot start cannot start either
            changed = False
            for g, deps in enumerate(self.deps):
                for i, keys in deps.items():
                    key = self.rows[g][i].key
                    if key not in self.never and any(k in self.never for k in keys):
                        self.never[key] = "DependencyNeverSatisfied"
                        changed = True

    def _dependencies_of(self, g: int, i: int, by_id: dict[int, list[str]]) -> None:
        row = self.rows[g][i]
        for kind, ids, status in sm.dependency_clauses(row.job.dependency):
            if kind == "afternotok" or (status == "failed" and kind in ("afterok", "aftercorr")):
                self.never[row.key] = "DependencyNeverSatisfied"
            elif kind == "singleton":
                prev = self._previous_of_name(row)
                if prev:
                    self.deps[g][i].append(prev)
            elif kind in WAIT_KINDS:
                if kind == "after":
                    self.notes.append(f"job {row.key}: 'after' read as waiting for the end of its jobs")
                for job_id in ids:
                    self.deps[g][i].extend(k for k in by_id.get(job_id, ()) if k != row.key)

    def _previous_of_name(self, row: JobRow) -> str:
        best, best_id = "", -1
        for key, (g, i) in self.where.items():
            other = self.rows[g][i].job
            if (other.user, other.name) == (row.job.user, row.job.name) and best_id < other.job_id < row.job.job_id:
                best, best_id = key, other.job_id
        return best

    def _throttle_chains(self) -> None:
        """A ``%N`` array throttle: each task waits for the task N places before it (running ones first)."""
        for limit, line in self.throttle.values():
            if limit <= 0:
                continue
            running = sorted(
                (k for k in line if self.rows[self.where[k][0]][self.where[k][1]].running),
                key=lambda k: self.rows[self.where[k][0]][self.where[k][1]].run_s,
            )
            order = running + [k for k in line if k not in set(running)]
            for q in range(limit, len(order)):
                g, i = self.where[order[q]]
                if i in self.deps[g]:
                    self.deps[g][i].append(order[q - limit])

    # --- the group -----------------------------------------------------------------------------
    def group(self, g: int) -> FleetGroup:
        """Group ``g`` without the jobs that cannot start, its dependencies as row edges."""
        keep = [i for i, row in enumerate(self.rows[g]) if row.key not in self.never]
        new = {old: i for i, old in enumerate(keep)}
        rows = [self.rows[g][i] for i in keep]
        jobs, cross = [], {}
        for old in keep:
            job, keys = self.fleet_jobs[g][old], self.deps[g].get(old, [])
            same = tuple(dict.fromkeys(k for k in keys if self.where.get(k, (-1,))[0] == g))
            other = tuple(dict.fromkeys(k for k in keys if k in self.where and self.where[k][0] != g))
            jobs.append(replace(job, after_ok=same) if same else job)
            if other:
                cross[new[old]] = other
        return FleetGroup(
            partitions=tuple(self.group_parts[g]),
            nodes=self.group_nodes[g],
            jobs=jobs,
            rows=rows,
            running={new[i]: gpus for i, gpus in self.running[g].items() if i in new},
            out_of_service=self._out_of_service(g),
            policy=self._policy(g),
            cross_deps=cross,
        )

    def _out_of_service(self, g: int) -> list[tuple[np.ndarray, int, str]]:
        inside = np.zeros(self.topo.n_nodes, bool)
        inside[self.group_nodes[g]] = True
        out = [(np.flatnonzero(~inside), EXCLUDED, "not in partition " + ",".join(self.group_parts[g]))]
        for n in self.snapshot.nodes:
            nid = self.ids.get(n.name, -1)
            if nid < 0 or not inside[nid] or n.schedulable_flag:
                continue
            busy = n.n_gpus_allocated > 0 or n.state == "draining"
            out.append((np.array([nid]), DRAIN if busy else DOWN, n.reason or n.state))
        return out

    def _policy(self, g: int) -> Policy:
        cfg = self.config
        return Policy(
            ordering="priority",
            backfill="conservative" if cfg.backfill_flag else "none",
            placement=cfg.topology,
            weights=PriorityWeights(
                age=cfg.priority_weights.get("age", 0.0) if cfg.multifactor_flag else 0.0,
                fairshare=0.0,
                job_size=0.0,
                qos=0.0,
            ),
            qos=self._qos(),
            preemption=cfg.preempt_type == "qos",
            reclaim=False,
            bf_interval_s=cfg.bf_interval_s,
            bf_max_job_test=cfg.bf_max_job_test_count,
            queue_depth=cfg.queue_depth_count,
            priority_calc_period_s=cfg.priority_calc_period_s,
            max_age_s=cfg.priority_max_age_s,
            power="off",
            reservations=self._reservations(g),
        )

    def _qos(self) -> tuple[QosSpec, ...]:
        names = {q.name for q in self.snapshot.qos} | {"normal"}
        enforce = bool(self.config.limits_enforced_flag)
        preempting = self.config.preempt_type == "qos"
        specs = [
            QosSpec(
                name=q.name,
                priority=float(q.priority),
                preempt=tuple(p for p in q.preempt if p in names and p != q.name) if preempting else (),
                grp_gpus=(q.group_gpus_limit_count or 0) if enforce else 0,
                max_gpus_per_user=(q.per_user_gpus_limit_count or 0) if enforce else 0,
            )
            for q in self.snapshot.qos
        ]
        if "normal" not in {q.name for q in specs}:
            specs.append(QosSpec("normal"))
        return tuple(specs)

    def _reservations(self, g: int) -> tuple[Reservation, ...]:
        inside = set(self.group_nodes[g].tolist())
        out = []
        for r in self.snapshot.reservations:
            if r.start_at is None or r.end_at is None:
                continue
            start_s, end_s = (r.start_at - self.now).total_seconds(), (r.end_at - self.now).total_seconds()
            nodes = [self.ids[n] for n in r.node_names if n in self.ids and self.ids[n] in inside]
            if start_s <= 0:  # active: the nodes it holds free now (its busy ones are the jobs' it runs)
                nodes = [n for n in nodes if not self.taken[self.topo.node_gpu_ids(np.array([n]))].any()]
            users = tuple(sorted({row.job.user for row in self.rows[g] if row.job.reservation == r.name}))
            if end_s > max(start_s, 0.0) and nodes:
                out.append(Reservation(r.name, max(start_s, 0.0), end_s, tuple(nodes), maintenance=False, users=users))
        return tuple(out)


def _array_task_ids(spec: str) -> list[int]:
    """``2-5%2`` or ``3,5,7-9:2`` → task ids (a step after ``:``; the ``%`` throttle dropped)."""
    body = spec.split("%")[0]
    out: list[int] = []
    for part in body.split(","):
        rng, _, step = part.partition(":")
        lo, _, hi = rng.partition("-")
        if not lo.strip().isdigit() or (hi and not hi.strip().isdigit()):
            continue
        a, b = int(lo), int(hi or lo)
        s = int(step) if step.strip().isdigit() and int(step) > 0 else 1
        out.extend(range(a, min(b, a + MAX_ARRAY_TASKS * s) + 1, s))
        if len(out) > MAX_ARRAY_TASKS:
            break
    return out


def _throttle(spec: str) -> int:
    """The ``%N`` of an array's task spec (0: none)."""
    _, sep, n = spec.partition("%")
    return int(n) if sep and n.strip().isdigit() else 0
