"""The running fleet: per-job progress, placement, power and accounting, as arrays.

A job's work is measured in seconds at full speed (``run_s``).  While it runs, progress
grows at ``rate_frac`` per wall second: its speed at its placement and cap, less the
blocking checkpoint writes (``τ / (τ/speed + write)`` for an interval ``τ``).  Progress
is saved at every multiple of the checkpoint interval; a failure or a preemption rolls it
back to the last save.  After each restart the job holds its GPUs for ``restore_s`` (and,
after a failure, detection, drain-and-swap and half the warm-up of
:class:`twin.training.restart.RestartTimings`) before it progresses again.

Statuses: ``WAITING`` (not yet submitted), ``PENDING``, ``RUNNING``, ``DONE`` (ran its work;
``end_state`` tells how the trace ended), ``KILLED`` (past its requested wall time), ``NEVER``
(can never run here: larger than the site, or a dependency that failed).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np

from twin.fleet.cluster import ClusterState
from twin.fleet.policy import Policy
from twin.fleet.topology import FleetTopology
from twin.fleet.workload import JobTable

# The running simulation (twin.fleet.simulate.FleetSim) as the event, lifecycle and scheduler functions
# receive it; FleetSim imports those modules, so naming it there would be an import cycle.
Sim: TypeAlias = Any

WAITING, PENDING, RUNNING, DONE, KILLED, NEVER = range(6)
STATUSES = ("waiting", "pending", "running", "done", "killed", "never")
# Pending reasons, in Slurm's words where Slurm has one (squeue %r); PowerCap is ours.
REASONS = (
    "None",
    "Resources",
    "Priority",
    "Dependency",
    "QOSGrpGRES",
    "QOSMaxGRESPerUser",
    "AssocGrpGRES",
    "PowerCap",
    "ReqNodeNotAvail",
    "DependencyNeverSatisfied",
    "Preempted",
    "NodeFail",
    "PartitionNodeLimit",
)
REASON_CODE = {name: i for i, name in enumerate(REASONS)}


@dataclass
class Accounting:
    """GPUs held now per team, user and QoS, and the decayed fair-share usage per team [GPU·s]."""

    team_gpus: np.ndarray
    user_gpus: np.ndarray
    qos_gpus: np.ndarray
    team_usage_gpu_s: np.ndarray
    usage_time_s: float = 0.0


@dataclass
class FleetRun:
    """Everything that changes while a workload runs on a site."""

    table: JobTable
    topo: FleetTopology
    cluster: ClusterState
    policy: Policy
    acct: Accounting
    status: np.ndarray
    first_start_s: np.ndarray
    last_start_s: np.ndarray
    end_s: np.ndarray
    done_s: np.ndarray  # progress [s at full speed] as of last_update_s
    rate_frac: np.ndarray  # progress per wall second while progressing
    resume_s: np.ndarray  # progress resumes at this time (restart overhead before it)
    last_update_s: np.ndarray
    epoch: np.ndarray  # bumps whenever a job's predicted end changes (stale events are dropped)
    cap_w: np.ndarray  # GPU power cap of the job's power group (inf: none)
    speed_frac: np.ndarray
    fabric_frac: np.ndarray
    node_power_w: np.ndarray  # input power of the job's nodes now [W]
    idle_power_w: np.ndarray  # the same while it restarts (GPUs idle)
    ideal_tokens_per_s: np.ndarray  # tokens per second of progress (0 without a training job)
    tokens: np.ndarray
    gpu_s: np.ndarray  # allocated GPU-seconds
    energy_j: np.ndarray
    lost_work_s: np.ndarray  # progress rolled back by failures and preemptions
    overhead_s: np.ndarray  # wall time spent restarting
    preemptions: np.ndarray
    restarts: np.ndarray
    failures: np.ndarray
    n_alloc: np.ndarray  # GPUs allocated (whole nodes for a gang)
    reason_code: np.ndarray  # int8 [n_jobs], index into REASONS
    gpus: list[np.ndarray | None]  # GPU ids per running job, None otherwise
    deps_left: np.ndarray  # afterok dependencies not yet completed
    dependents: list[list[int]] = field(default_factory=list)  # rows waiting on each row
    now_s: float = 0.0

    @property
    def n_jobs(self) -> int:
        return self.table.n_jobs


def new_run(table: JobTable, topo: FleetTopology, cluster: ClusterState, policy: Policy) -> FleetRun:
    """A run before anything was submitted."""
    n = table.n_jobs
    z: Callable[[], np.ndarray] = lambda: np.zeros(n)  # noqa: E731
    nan: Callable[[], np.ndarray] = lambda: np.full(n, math.nan)  # noqa: E731
    dependents: list[list[int]] = [[] for _ in range(n)]
    for j, deps in enumerate(table.depends_on):
        for d in deps:
            dependents[d].append(j)
    acct = Accounting(
        team_gpus=np.zeros(len(table.team_names), np.int64),
        user_gpus=np.zeros(len(table.user_names), np.int64),
        qos_gpus=np.zeros(len(table.qos_names), np.int64),
        team_usage_gpu_s=np.zeros(len(table.team_names)),
    )
    return FleetRun(
        table=table,
        topo=topo,
        cluster=cluster,
        policy=policy,
        acct=acct,
        status=np.zeros(n, np.int8),
        first_start_s=nan(),
        last_start_s=nan(),
        end_s=nan(),
        done_s=z(),
        rate_frac=z(),
        resume_s=z(),
        last_update_s=z(),
        epoch=np.zeros(n, np.int64),
        cap_w=np.full(n, math.inf),
        speed_frac=np.ones(n),
        fabric_frac=np.ones(n),
        node_power_w=z(),
        idle_power_w=z(),
        ideal_tokens_per_s=table.tokens_per_s.copy(),  # a job file's rate replaces it when the job is placed
        tokens=z(),
        gpu_s=z(),
        energy_j=z(),
        lost_work_s=z(),
        overhead_s=z(),
        preemptions=np.zeros(n, np.int32),
        restarts=np.zeros(n, np.int32),
        failures=np.zeros(n, np.int32),
        n_alloc=np.zeros(n, np.int64),
        reason_code=np.zeros(n, np.int8),
        gpus=[None] * n,
        deps_left=np.array([len(d) for d in table.depends_on], np.int32) if n else np.zeros(0, np.int32),
        dependents=dependents,
    )


def set_reason(run: FleetRun, j: int, reason: str) -> None:
    """Record why job ``j`` waits (a name of :data:`REASONS`)."""
    run.reason_code[j] = REASON_CODE[reason]


def reason_of(run: FleetRun, j: int) -> str:
    """Why job ``j`` waits (or why it never ran)."""
    return REASONS[int(run.reason_code[j])]


def effective_rate(speed: float, interval_s: float, write_s: float) -> float:
    """Progress per wall second at ``speed`` with a blocking checkpoint of ``write_s`` every ``interval_s``."""
    if speed <= 0:
        return 0.0
    if interval_s <= 0 or write_s <= 0:
        return speed
    return interval_s / (interval_s / speed + write_s)


def advance(run: FleetRun, j: int, t: float) -> None:
    """Bring job ``j``'s progress, tokens, GPU-seconds and energy up to time ``t``."""
    t0 = run.last_update_s[j]
    if t <= t0:
        return
    resume = run.resume_s[j]
    overhead = max(0.0, min(t, resume) - t0)
    busy = (t - t0) - overhead
    gained = run.rate_frac[j] * busy
    left = run.table.run_s[j] - run.done_s[j]
    gained = min(gained, max(left, 0.0))
    run.done_s[j] += gained
    run.tokens[j] += gained * run.ideal_tokens_per_s[j]
    run.gpu_s[j] += run.n_alloc[j] * (t - t0)
    run.energy_j[j] += run.idle_power_w[j] * overhead + run.node_power_w[j] * busy
    run.overhead_s[j] += overhead
    run.last_update_s[j] = t


def predicted_end(run: FleetRun, j: int) -> tuple[float, bool]:
    """When running job ``j`` ends at its present rate, and whether that is its wall-time kill."""
    start_progress = max(run.last_update_s[j], run.resume_s[j])
    left = run.table.run_s[j] - run.done_s[j]
    rate = run.rate_frac[j]
    finish = start_progress + (left / rate if rate > 0 else math.inf)
    kill = run.last_start_s[j] + run.table.wall_s[j]
    return (kill, True) if kill < finish else (finish, False)


def saved_progress(run: FleetRun, j: int) -> float:
    """Progress of job ``j`` kept by its last checkpoint (0 without checkpoints)."""
    tau = run.table.checkpoint_interval_s[j]
    if tau <= 0:
        return 0.0
    return math.floor(run.done_s[j] / tau + 1e-9) * tau


def account(run: FleetRun, j: int, sign: int) -> None:
    """Add (``sign=+1``) or remove (``-1``) job ``j``'s GPUs from its team, user and QoS totals."""
    g = sign * int(run.n_alloc[j])
    a, tab = run.acct, run.table
    a.team_gpus[tab.team[j]] += g
    a.user_gpus[tab.user[j]] += g
    a.qos_gpus[tab.qos[j]] += g


def gpus_by_team(run: FleetRun) -> np.ndarray:
    """GPUs each team holds now."""
    return run.acct.team_gpus


def pending_rows(run: FleetRun) -> np.ndarray:
    """Rows of the pending jobs (submitted, not running, not finished)."""
    return np.flatnonzero(run.status == PENDING)


def running_rows(run: FleetRun) -> np.ndarray:
    """Rows of the running jobs."""
    return np.flatnonzero(run.status == RUNNING)
