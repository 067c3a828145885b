"""Normalised Slurm records: jobs, nodes, partitions, QoS and accounts as plain dataclasses.

These are what every Slurm reader (``squeue``/``sinfo``/``scontrol`` text or JSON of any
version, slurmrestd, ``sacct``, the jobcomp file) produces, in ClusterTwin's names:
lower-case state names, times as timezone-aware UTC ``datetime``, durations in seconds,
counts as ``n_*``.  Slurm's own spellings stop in :mod:`ingest.sources.slurm_map`.  A
later mapping onto the fleet model reads only these fields.

Job states: ``pending``, ``running``, ``suspended``, ``completing``, ``completed``,
``cancelled``, ``failed``, ``timeout``, ``node_fail``, ``preempted``, ``boot_fail``,
``deadline``, ``out_of_memory``, ``requeued``, ``unknown``.  Node states: ``idle``,
``allocated``, ``mixed``, ``completing``, ``drained`` (idle and drained), ``draining``
(allocated or mixed and draining), ``down``, ``fail``, ``failing``, ``maint``,
``reserved``, ``powered_down``, ``future``, ``unknown``; the flags Slurm adds
(``drain``, ``not_responding``, ``planned``, ``reboot_requested`` …) are in ``state_flags``.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field, fields
from datetime import datetime

JOB_STATES = (
    "pending",
    "running",
    "suspended",
    "completing",
    "completed",
    "cancelled",
    "failed",
    "timeout",
    "node_fail",
    "preempted",
    "boot_fail",
    "deadline",
    "out_of_memory",
    "requeued",
    "unknown",
)
TERMINAL_JOB_STATES = frozenset(JOB_STATES[4:14])
NODE_STATES = (
    "idle",
    "allocated",
    "mixed",
    "completing",
    "drained",
    "draining",
    "down",
    "fail",
    "failing",
    "maint",
    "reserved",
    "powered_down",
    "future",
    "unknown",
)
SCHEDULABLE_NODE_STATES = frozenset({"idle", "allocated", "mixed", "completing", "reserved"})
_EXAMPLES = 20


@dataclass(slots=True)
class SlurmJob:
    """One job (or one array task) as the scheduler sees it now, or as accounting recorded it.

    ``job_id`` is Slurm's own id of this record; an array task also has ``array_job_id``
    and ``array_task_id``; a pending array record that stands for several tasks has
    ``array_tasks`` (``"2-3%2"``) instead of a task id.  ``time_limit_s`` is ``None``
    when unlimited.  ``started_at``/``ended_at`` are set once they happened;
    ``expected_start_at`` (pending, the backfill scheduler's estimate) and
    ``expected_end_at`` (running: start plus limit) are Slurm's expectations.
    ``nodes`` is the hostlist Slurm gave, ``node_names`` its expansion and ``node_ids``
    the site's dense node ids of those names that the site knows (empty without a site).
    ``gpu_indices`` holds, per name of ``node_names``, the GPU indices the job holds there
    (``gres_detail``'s ``IDX:0-3``; empty when the source does not say).  ``exclusive_flag``
    is 1 for a job that takes its nodes whole (``--exclusive``); ``reservation`` names the
    advance reservation it runs in.
    """

    job_id: int
    name: str = ""
    user: str = ""
    account: str = ""
    partition: str = ""
    qos: str = ""
    state: str = "unknown"
    state_flags: tuple[str, ...] = ()
    reason: str = ""
    array_job_id: int | None = None
    array_task_id: int | None = None
    array_tasks: str = ""
    submitted_at: datetime | None = None
    eligible_at: datetime | None = None
    started_at: datetime | None = None
    expected_start_at: datetime | None = None
    ended_at: datetime | None = None
    expected_end_at: datetime | None = None
    time_limit_s: float | None = None
    n_nodes_requested: int = 0
    n_nodes_allocated: int = 0
    n_gpus_requested: int = 0
    n_gpus_allocated: int = 0
    n_cpus_allocated: int = 0
    nodes: str = ""
    node_names: tuple[str, ...] = ()
    node_ids: tuple[int, ...] = ()
    dependency: str = ""
    depends_on: tuple[int, ...] = ()
    priority: float | None = None  # larger runs first (squeue -O priority prints it normalised to 0–1)
    exit_code: int | None = None
    gpu_indices: tuple[tuple[int, ...], ...] = ()
    exclusive_flag: int = 0
    reservation: str = ""

    @property
    def team(self) -> str:
        """The team a job counts against: its Slurm account (sites name accounts after teams)."""
        return self.account

    @property
    def display_id(self) -> str:
        """``12345``, ``12340_7`` for an array task, ``12340_[2-3%2]`` for pending array tasks."""
        if self.array_job_id is None:
            return str(self.job_id)
        if self.array_task_id is not None:
            return f"{self.array_job_id}_{self.array_task_id}"
        return f"{self.array_job_id}_[{self.array_tasks}]" if self.array_tasks else str(self.job_id)


@dataclass(slots=True)
class SlurmNode:
    """One node: state with its reason, and GPUs from its GRES (configured, allocated, drained).

    ``node_id`` is the site's dense id of the node, ``-1`` when there is no site or the
    site does not know the name.  ``reason_set_at``/``reason_set_by`` are when and by whom
    the reason was set (``scontrol update … Reason=…``).
    """

    name: str
    state: str = "unknown"
    state_flags: tuple[str, ...] = ()
    reason: str = ""
    reason_set_at: datetime | None = None
    reason_set_by: str = ""
    partitions: tuple[str, ...] = ()
    gpu_type: str = ""
    n_gpus_configured: int = 0
    n_gpus_allocated: int = 0
    n_gpus_drained: int = 0
    n_cpus_configured: int = 0
    n_cpus_allocated: int = 0
    node_id: int = -1

    @property
    def schedulable_flag(self) -> int:
        """1 when the scheduler may start work here (not down, drained, failing or unresponsive)."""
        bad_flags = {"drain", "not_responding", "fail", "maintenance", "powered_down", "powering_down"}
        return int(self.state in SCHEDULABLE_NODE_STATES and not bad_flags & set(self.state_flags))


@dataclass(slots=True)
class SlurmPartition:
    """A partition: its nodes (hostlist and expansion), state, limits and priority tier."""

    name: str
    state: str = "up"
    nodes: str = ""
    node_names: tuple[str, ...] = ()
    default_flag: int = 0
    qos: str = ""
    max_time_s: float | None = None
    max_nodes_per_job_count: int | None = None
    priority_tier: int = 1
    n_nodes: int = 0
    n_cpus: int = 0
    n_gpus: int = 0
    preempt_mode: str = ""


@dataclass(slots=True)
class SlurmQos:
    """A QoS (``sacctmgr show qos``): priority, preemption and GPU limits (``None``: no limit)."""

    name: str
    priority: int = 0
    preempt: tuple[str, ...] = ()
    preempt_mode: str = ""
    flags: tuple[str, ...] = ()
    max_wall_s: float | None = None
    group_gpus_limit_count: int | None = None
    per_user_gpus_limit_count: int | None = None
    per_job_gpus_limit_count: int | None = None
    usage_factor_ratio: float = 1.0


@dataclass(slots=True)
class SlurmReservation:
    """An advance reservation (``scontrol show reservation``): nodes held for users or accounts in a window.

    ``flags`` are Slurm's in lower case (``maint``, ``ignore_jobs``, ``spec_nodes`` …);
    ``state`` is ``active`` or ``inactive`` (not yet started), ``""`` where the source does not
    say (slurmrestd's JSON: the window does).
    """

    name: str
    state: str = "inactive"
    start_at: datetime | None = None
    end_at: datetime | None = None
    nodes: str = ""
    node_names: tuple[str, ...] = ()
    node_ids: tuple[int, ...] = ()
    users: tuple[str, ...] = ()
    accounts: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()


@dataclass(slots=True)
class SlurmAccount:
    """An account (a team) with the users and QoS its associations allow."""

    name: str
    users: tuple[str, ...] = ()
    qos: tuple[str, ...] = ()
    default_qos: str = ""


@dataclass
class SlurmCounts:
    """What happened to one read: records seen, skipped, unknown hosts (first few named)."""

    n_records: int = 0
    n_malformed_records: int = 0
    n_unknown_hosts: int = 0
    unknown_host_names: list[str] = field(default_factory=list)
    n_oversized_hostlists: int = 0
    n_skipped_steps: int = 0

    def add_unknown(self, names: set[str]) -> None:
        self.n_unknown_hosts += len(names)
        for n in sorted(names):
            if len(self.unknown_host_names) >= _EXAMPLES:
                break
            if n not in self.unknown_host_names:
                self.unknown_host_names.append(n)

    def merge(self, other: SlurmCounts) -> SlurmCounts:
        for f in fields(self):
            if isinstance(getattr(self, f.name), int):
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        for n in other.unknown_host_names:
            if len(self.unknown_host_names) < _EXAMPLES and n not in self.unknown_host_names:
                self.unknown_host_names.append(n)
        return self


@dataclass
class SlurmSnapshot:
    """One read of a Slurm cluster: its jobs, nodes, partitions, QoS and accounts."""

    jobs: list[SlurmJob] = field(default_factory=list)
    nodes: list[SlurmNode] = field(default_factory=list)
    partitions: list[SlurmPartition] = field(default_factory=list)
    qos: list[SlurmQos] = field(default_factory=list)
    accounts: list[SlurmAccount] = field(default_factory=list)
    reservations: list[SlurmReservation] = field(default_factory=list)
    counts: SlurmCounts = field(default_factory=SlurmCounts)
    config: dict[str, str] = field(default_factory=dict)  # scontrol show config, Slurm's keys (empty if not read)
    slurm_version: str = ""
    cluster: str = ""
    read_at: datetime | None = None

    def jobs_by_state(self) -> dict[str, int]:
        return dict(sorted(Counter(j.state for j in self.jobs).items()))

    def nodes_by_state(self) -> dict[str, int]:
        return dict(sorted(Counter(n.state for n in self.nodes).items()))


_JSON_OMIT = {"SlurmJob": {"node_names"}, "SlurmPartition": {"node_names"}, "SlurmReservation": {"node_names"}}


def _json_value(v):
    if isinstance(v, datetime):
        return v.isoformat().replace("+00:00", "Z")
    if isinstance(v, tuple):
        return [_json_value(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def record_json(record) -> dict:
    """A record as a JSON-ready dict: times ISO 8601 UTC (``…Z``), tuples as lists, no NaN or inf."""
    omit = _JSON_OMIT.get(type(record).__name__, set())
    out = {f.name: _json_value(getattr(record, f.name)) for f in fields(record) if f.name not in omit}
    if isinstance(record, SlurmJob):
        out["display_id"], out["team"] = record.display_id, record.team
    elif isinstance(record, SlurmNode):
        out["schedulable_flag"] = record.schedulable_flag
    return out


def snapshot_counts(snapshot: SlurmSnapshot) -> dict:
    """The ``counts`` of ``ingest once --source slurm --json``: sizes, counts by state, GPUs, what was skipped."""
    c = snapshot.counts
    return {
        "n_jobs": len(snapshot.jobs),
        "n_nodes": len(snapshot.nodes),
        "n_partitions": len(snapshot.partitions),
        "jobs_by_state": snapshot.jobs_by_state(),
        "nodes_by_state": snapshot.nodes_by_state(),
        "n_gpus_configured": sum(n.n_gpus_configured for n in snapshot.nodes),
        "n_gpus_allocated": sum(n.n_gpus_allocated for n in snapshot.nodes),
        "n_gpus_requested_pending": sum(j.n_gpus_requested for j in snapshot.jobs if j.state == "pending"),
        "n_records": c.n_records,
        "n_malformed_records": c.n_malformed_records,
        "n_unknown_hosts": c.n_unknown_hosts,
        "unknown_host_names": list(c.unknown_host_names),
        "n_oversized_hostlists": c.n_oversized_hostlists,
        "n_skipped_steps": c.n_skipped_steps,
    }


def snapshot_json(snapshot: SlurmSnapshot) -> dict:
    """The whole snapshot as JSON-ready data (what ``ingest once --source slurm --json`` prints)."""
    return {
        "slurm_version": snapshot.slurm_version,
        "read_at": _json_value(snapshot.read_at),
        "counts": snapshot_counts(snapshot),
        "jobs": [record_json(j) for j in snapshot.jobs],
        "nodes": [record_json(n) for n in snapshot.nodes],
        "partitions": [record_json(p) for p in snapshot.partitions],
        "qos": [record_json(q) for q in snapshot.qos],
        "accounts": [record_json(a) for a in snapshot.accounts],
        "reservations": [record_json(r) for r in snapshot.reservations],
    }
