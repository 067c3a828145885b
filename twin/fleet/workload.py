"""A workload: the jobs of a fleet, as records and as a struct of arrays.

A :class:`FleetJob` is one submission: who (team = account, user, QoS), when
(``submit_s`` from the start of the simulation), how much (GPUs, requested wall time) and
what it runs.  A job either carries a training job file (:class:`twin.training.jobfile.TrainingJob`,
whose step time the twin computes for its placement and power cap) or only a *kind* with a
duration at full speed (evaluation, fine-tuning, debugging, a trace row).  ``run_s`` is the
work in seconds at full speed on an ideal placement; a slower placement or a power cap
stretches it.  ``end_state`` says how a trace row ended (``completed``, ``failed``,
``cancelled``): a failed or cancelled job stops after ``run_s`` of work like a completed one,
the state is kept for the statistics.

:class:`JobTable` is the same workload as numpy arrays (one row per job, dense index ``0..n-1``)
with names interned to small integer codes; the scheduler and the simulation read only the
table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

KINDS = ("pretrain", "finetune", "eval", "debug", "trace")
END_STATES = ("completed", "failed", "cancelled", "timeout")
# Topology requirements: none; one leaf group (array of racks on the same rail leaves); one pod;
# one NVLink block; segments of ``segment_nodes`` nodes, each inside one block.
TOPOLOGIES = ("any", "leaf", "pod", "block", "segment")
MAX_JOBS = 5_000_000


class WorkloadError(ValueError):
    """A job or workload that cannot be simulated (names the job and the field)."""


@dataclass(frozen=True)
class FleetJob:
    """One job of a workload (times in seconds from the simulation start)."""

    job_id: str
    team: str
    user: str
    submit_s: float
    n_gpus: int
    wall_s: float  # requested wall time (the scheduler's estimate; the job is killed past it)
    run_s: float  # work at full speed on an ideal placement [s]
    kind: str = "trace"
    qos: str = "normal"
    training: object = None  # a twin.training.jobfile.TrainingJob, or None
    end_state: str = "completed"
    checkpoint_interval_s: float = 0.0  # 0: no checkpoints (a restart begins from scratch)
    checkpoint_write_s: float = 0.0
    restore_s: float = 0.0  # checkpoint read at each restart
    priority: float = 0.0  # administrator's extra priority (Slurm's nice, negated)
    after_ok: tuple[str, ...] = ()  # job ids that must complete first (Slurm --dependency=afterok)
    topology: str = "any"
    segment_nodes: int = 0  # for topology "segment"
    exclusive: bool = False  # whole nodes even for a job smaller than a node
    gpu_type: str = ""  # catalogue GPU name the job needs; "" = any
    util_frac: float = -1.0  # mean GPU utilisation while running; < 0: the kind's default
    tokens_per_s: float = 0.0  # tokens per second at full speed of a job without a job file (0: none counted)
    full_power: bool = False  # held at full power, never requeued for power (the live twin's own job)

    def __post_init__(self) -> None:
        where = f"job {self.job_id!r}"
        if self.n_gpus <= 0:
            raise WorkloadError(f"{where}: n_gpus must be positive, got {self.n_gpus}")
        for name in (
            "submit_s",
            "wall_s",
            "run_s",
            "checkpoint_interval_s",
            "checkpoint_write_s",
            "restore_s",
            "tokens_per_s",
        ):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise WorkloadError(f"{where}: {name} must be finite and >= 0, got {value}")
        if self.wall_s <= 0 or self.run_s <= 0:
            raise WorkloadError(f"{where}: wall_s and run_s must be positive")
        if self.kind not in KINDS:
            raise WorkloadError(f"{where}: kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.end_state not in END_STATES:
            raise WorkloadError(f"{where}: end_state must be one of {', '.join(END_STATES)}, got {self.end_state!r}")
        if self.topology not in TOPOLOGIES:
            raise WorkloadError(f"{where}: topology must be one of {', '.join(TOPOLOGIES)}, got {self.topology!r}")
        if self.topology == "segment" and self.segment_nodes <= 0:
            raise WorkloadError(f"{where}: topology 'segment' needs segment_nodes > 0")
        if not math.isfinite(self.priority):
            raise WorkloadError(f"{where}: priority must be finite")
        if self.util_frac > 1.0:
            raise WorkloadError(f"{where}: util_frac must be at most 1, got {self.util_frac}")


# [E] mean GPU utilisation by kind while the job runs: pretraining holds the GPUs at their
# power cap (Llama 3 and Colossus run at the 700 W TDP), fine-tuning a little below, evaluation
# and debugging leave them idle much of the time (short kernels, data loading, interactive use).
KIND_UTIL_FRAC = {"pretrain": 1.0, "finetune": 0.9, "eval": 0.6, "debug": 0.3, "trace": 0.8}


def _codes(values: list[str]) -> tuple[np.ndarray, list[str]]:
    """Dense integer codes of ``values`` and the names in code order (first seen first)."""
    names: dict[str, int] = {}
    codes = np.fromiter((names.setdefault(v, len(names)) for v in values), dtype=np.int32, count=len(values))
    return codes, list(names)


@dataclass
class JobTable:
    """The workload as arrays (row ``j`` is ``jobs[j]``); names interned to codes."""

    jobs: list[FleetJob]
    submit_s: np.ndarray  # float64
    n_gpus: np.ndarray  # int64
    wall_s: np.ndarray  # float64
    run_s: np.ndarray  # float64
    kind: np.ndarray  # int8, index into KINDS
    team: np.ndarray  # int32, index into team_names
    user: np.ndarray  # int32, index into user_names
    qos: np.ndarray  # int32, index into qos_names
    priority: np.ndarray  # float64
    checkpoint_interval_s: np.ndarray
    checkpoint_write_s: np.ndarray
    restore_s: np.ndarray
    util_frac: np.ndarray
    tokens_per_s: np.ndarray  # float64, tokens per second at full speed (jobs without a job file)
    topology: np.ndarray  # int8, index into TOPOLOGIES
    segment_nodes: np.ndarray  # int32
    exclusive: np.ndarray  # bool
    gpu_type: list[str]
    team_names: list[str]
    user_names: list[str]
    qos_names: list[str]
    depends_on: list[tuple[int, ...]] = field(default_factory=list)  # row indices of afterok jobs
    index: dict[str, int] = field(default_factory=dict)

    @property
    def n_jobs(self) -> int:
        return len(self.jobs)


def job_table(jobs: list[FleetJob], teams: list[str] | None = None, qos_names: list[str] | None = None) -> JobTable:
    """The :class:`JobTable` of ``jobs``; ``teams``/``qos_names`` fix the code order of known names first.

    Raises :class:`WorkloadError` for duplicate ids, too many jobs or an ``after_ok`` naming
    an unknown job.
    """
    if len(jobs) > MAX_JOBS:
        raise WorkloadError(f"{len(jobs)} jobs: more than the {MAX_JOBS:,} a workload may hold")
    index: dict[str, int] = {}
    for i, job in enumerate(jobs):
        if index.setdefault(job.job_id, i) != i:
            raise WorkloadError(f"job {job.job_id!r} appears twice")
    team_codes, team_names = _codes(list(teams or []) + [j.team for j in jobs])
    qos_codes, qos_list = _codes(list(qos_names or []) + [j.qos for j in jobs])
    user_codes, user_names = _codes([j.user for j in jobs])
    n_pre_t, n_pre_q = len(teams or []), len(qos_names or [])
    depends = []
    for job in jobs:
        missing = [d for d in job.after_ok if d not in index]
        if missing:
            raise WorkloadError(f"job {job.job_id!r}: after_ok names unknown job {missing[0]!r}")
        depends.append(tuple(index[d] for d in job.after_ok))

    def arr(attr: str, dtype: npt.DTypeLike) -> np.ndarray:
        return np.fromiter((getattr(j, attr) for j in jobs), dtype=dtype, count=len(jobs))

    util = arr("util_frac", np.float64)
    kind = np.fromiter((KINDS.index(j.kind) for j in jobs), dtype=np.int8, count=len(jobs))
    default_util = np.array([KIND_UTIL_FRAC[k] for k in KINDS])[kind]
    return JobTable(
        jobs=list(jobs),
        submit_s=arr("submit_s", np.float64),
        n_gpus=arr("n_gpus", np.int64),
        wall_s=arr("wall_s", np.float64),
        run_s=arr("run_s", np.float64),
        kind=kind,
        team=team_codes[n_pre_t:],
        user=user_codes,
        qos=qos_codes[n_pre_q:],
        priority=arr("priority", np.float64),
        checkpoint_interval_s=arr("checkpoint_interval_s", np.float64),
        checkpoint_write_s=arr("checkpoint_write_s", np.float64),
        restore_s=arr("restore_s", np.float64),
        util_frac=np.where(util < 0, default_util, util),
        tokens_per_s=arr("tokens_per_s", np.float64),
        topology=np.fromiter((TOPOLOGIES.index(j.topology) for j in jobs), dtype=np.int8, count=len(jobs)),
        segment_nodes=arr("segment_nodes", np.int32),
        exclusive=arr("exclusive", bool),
        gpu_type=[j.gpu_type for j in jobs],
        team_names=team_names,
        user_names=user_names,
        qos_names=qos_list,
        depends_on=depends,
        index=index,
    )
