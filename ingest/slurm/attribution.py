"""Telemetry attributed to Slurm jobs and teams: GPU-hours, energy and throttled time.

The scheduler says which GPUs each job holds (its nodes, and ``gres_detail``'s indices on
each node); the twin says what every GPU drew and whether it was throttled.  Joined, they
give each job's and each team's (its Slurm account's) use of the site, as Meta's GPU
Cluster Monitoring does with Slurm's metadata.

The API, all pure functions of numpy arrays (no Python loop over GPUs):

* :func:`gpu_owners` — one Slurm read and the GPUs of each site node
  (``Inventory.node_gpu_count``, or ``np.bincount(site.gpu_node)``) → :class:`GpuOwners`: for every site GPU the row of
  the running job that holds it (``-1``: none), and each row's job, user and team;
* :func:`attribute` — one interval of ``dt_s`` seconds with the GPUs' board power [W] and
  states (:data:`twin.engine.snapshot.GPU_THROTTLED` …) → :class:`Usage` per job row;
  :meth:`Usage.add` sums intervals (same owners);
* :func:`by_team` — a :class:`Usage` summed per team;
* :class:`Ledger` — the running sums of a live twin: the Slurm poller keeps one
  (``poller.ledger``, :mod:`ingest.live.slurm_poller`) and calls :meth:`Ledger.set_owners`
  on each good read; the hub calls :meth:`Ledger.observe` with each tick's ``ts``,
  ``gpu_power_w`` and ``gpu_state`` (a snapshot's values are held until the next one);
  :meth:`Ledger.report` is the JSON of both tables.

Definitions.  A job's GPU-hours are the hours its GPUs were allocated to it, whatever they
did (what Slurm charges); its energy is the GPU board power integrated over those hours
(the GPUs only: node, network and cooling overheads are not shared out here); its
throttled GPU-hours are the allocated GPU-hours in state throttled, its down GPU-hours in
state down.  A GPU whose power is unknown (NaN) adds GPU-hours but no energy; those hours
are counted apart (``unmetered_gpu_h``) so that the energy is never silently low.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from ingest.sources.slurm_records import SlurmJob, SlurmSnapshot

GPU_THROTTLED, GPU_DOWN = 1, 2  # twin.engine.snapshot's GPU states (ingest does not import the engine)
J_PER_KWH = 3.6e6
S_PER_H = 3600.0
HOLDING_STATES = frozenset({"running", "completing", "suspended"})
MAX_GAP_S = 60.0  # Ledger.observe: a gap longer than this between snapshots is not integrated (the hub stopped)


@dataclass(frozen=True)
class GpuOwners:
    """Which job holds each GPU at one Slurm read: ``gpu_row[g]`` is a row of the job tuples, -1 for none."""

    gpu_row: np.ndarray  # int32 [n_gpus]
    job_ids: tuple[str, ...]  # display ids ("12", "12_4")
    users: tuple[str, ...]
    teams: tuple[str, ...]  # Slurm accounts ("-" when none)
    read_at: datetime | None = None

    @property
    def n_jobs(self) -> int:
        return len(self.job_ids)


def _job_gpus(job: SlurmJob, node_first_gpu: np.ndarray, node_gpus: np.ndarray, ids: dict[str, int]) -> np.ndarray:
    """Site GPU ids of one running job: ``gres_detail``'s indices where given, else its share of each node."""
    nids = [ids.get(n, -1) for n in job.node_names]
    out: list[np.ndarray] = []
    total = job.n_gpus_allocated or job.n_gpus_requested
    per_node = -(-total // len(nids)) if nids and total else 0
    for i, nid in enumerate(nids):
        if nid < 0:
            continue
        count = int(node_gpus[nid])
        if i < len(job.gpu_indices) and job.gpu_indices[i]:
            idx = np.array([k for k in job.gpu_indices[i] if k < count], dtype=np.int64)
        else:
            idx = np.arange(count if job.exclusive_flag or not per_node else min(per_node, count), dtype=np.int64)
        out.append(node_first_gpu[nid] + idx)
    return np.concatenate(out) if out else np.zeros(0, np.int64)


def gpu_owners(snapshot: SlurmSnapshot, node_gpus: np.ndarray, node_names: Sequence[str] = ()) -> GpuOwners:
    """The job→GPU mapping of ``snapshot`` on a site whose dense nodes hold ``node_gpus`` GPUs each.

    Slurm node names are resolved by the read's own mapping (``SlurmNode.node_id``, set when
    the source was given the site's inventory), else by ``node_names`` (the site's names in
    dense order).  GPU ids are node-major, as the site's tables number them.

    Jobs that hold GPUs (running, completing, suspended) on nodes the site knows get a row;
    a GPU claimed by two jobs (a stale read) goes to the later job id.  Where a job's
    ``gres_detail`` does not say which GPUs of a node it holds, it is given the node's first
    ones (a job on a shared node may then be charged a neighbour's GPU: noted by Slurm's
    data, not fixable here).
    """
    node_gpus = np.asarray(node_gpus, dtype=np.int64)
    node_first_gpu = np.concatenate(([0], np.cumsum(node_gpus)[:-1])).astype(np.int64)
    ids = {name: i for i, name in enumerate(node_names)}
    for n in snapshot.nodes:
        if n.node_id >= 0:
            ids[n.name] = n.node_id
    gpu_row = np.full(int(node_gpus.sum()), -1, np.int32)
    job_ids: list[str] = []
    users: list[str] = []
    teams: list[str] = []
    for job in sorted(snapshot.jobs, key=lambda j: (j.job_id, j.array_task_id or -1)):
        if job.state not in HOLDING_STATES:
            continue
        gpus = _job_gpus(job, node_first_gpu, node_gpus, ids)
        if gpus.size == 0:
            continue
        gpu_row[gpus] = len(job_ids)
        job_ids.append(job.display_id)
        users.append(job.user or "-")
        teams.append(job.team or "-")
    return GpuOwners(gpu_row, tuple(job_ids), tuple(users), tuple(teams), snapshot.read_at)


@dataclass
class Usage:
    """Per job row of a :class:`GpuOwners`: GPU-seconds, joules, throttled, down and unmetered GPU-seconds."""

    owners: GpuOwners
    gpu_s: np.ndarray
    energy_j: np.ndarray
    throttled_gpu_s: np.ndarray
    down_gpu_s: np.ndarray
    unmetered_gpu_s: np.ndarray

    @classmethod
    def zeros(cls, owners: GpuOwners) -> Usage:
        z = np.zeros(owners.n_jobs)
        return cls(owners, z.copy(), z.copy(), z.copy(), z.copy(), z.copy())

    def add(self, other: Usage) -> Usage:
        """The sum of two usages of the same owners."""
        if other.owners is not self.owners:
            raise ValueError("usages of different job→GPU mappings cannot be added row by row")
        return Usage(
            self.owners,
            self.gpu_s + other.gpu_s,
            self.energy_j + other.energy_j,
            self.throttled_gpu_s + other.throttled_gpu_s,
            self.down_gpu_s + other.down_gpu_s,
            self.unmetered_gpu_s + other.unmetered_gpu_s,
        )


def attribute(owners: GpuOwners, gpu_power_w: np.ndarray, gpu_state: np.ndarray, dt_s: float) -> Usage:
    """One interval of ``dt_s`` [s] during which each GPU drew ``gpu_power_w`` [W] in ``gpu_state``, per job."""
    if not dt_s >= 0:
        raise ValueError(f"interval must be 0 or more seconds, not {dt_s}")
    row = owners.gpu_row
    if gpu_power_w.shape != row.shape or gpu_state.shape != row.shape:
        raise ValueError(
            f"power {gpu_power_w.shape} and states {gpu_state.shape} must have one value per GPU {row.shape}"
        )
    held = row >= 0
    r = row[held]
    power = gpu_power_w[held]
    state = gpu_state[held]
    metered = np.isfinite(power)
    n = owners.n_jobs

    def per_job(weights) -> np.ndarray:
        return np.bincount(r, weights=weights, minlength=n)[:n] * dt_s

    return Usage(
        owners,
        gpu_s=per_job(None) if r.size else np.zeros(n),
        energy_j=per_job(np.where(metered, power, 0.0)),
        throttled_gpu_s=per_job((state == GPU_THROTTLED).astype(np.float64)),
        down_gpu_s=per_job((state == GPU_DOWN).astype(np.float64)),
        unmetered_gpu_s=per_job((~metered).astype(np.float64)),
    )


def _rows(gpu_s, energy_j, throttled_s, down_s, unmetered_s, extra: list[dict]) -> list[dict]:
    out = []
    for i in range(len(extra)):
        out.append(
            {
                **extra[i],
                "allocated_gpu_h": float(gpu_s[i]) / S_PER_H,
                "gpu_energy_kwh": float(energy_j[i]) / J_PER_KWH,
                "throttled_gpu_h": float(throttled_s[i]) / S_PER_H,
                "throttled_frac": float(throttled_s[i] / gpu_s[i]) if gpu_s[i] > 0 else 0.0,
                "down_gpu_h": float(down_s[i]) / S_PER_H,
                "unmetered_gpu_h": float(unmetered_s[i]) / S_PER_H,
            }
        )
    return out


def by_job(usage: Usage) -> list[dict]:
    """One row per job: ``job_id``, ``user``, ``team`` and the figures (see the module docstring)."""
    o = usage.owners
    extra = [{"job_id": o.job_ids[i], "user": o.users[i], "team": o.teams[i]} for i in range(o.n_jobs)]
    return _rows(
        usage.gpu_s,
        usage.energy_j,
        usage.throttled_gpu_s,
        usage.down_gpu_s,
        usage.unmetered_gpu_s,
        extra,
    )


def by_team(usage: Usage) -> list[dict]:
    """One row per team (``team``, ``n_jobs``) with its jobs' figures summed, largest GPU-hours first."""
    teams = sorted(set(usage.owners.teams))
    index = np.array([teams.index(t) for t in usage.owners.teams], dtype=np.int64)
    m = len(teams)

    def s(x):
        return np.bincount(index, weights=x, minlength=m) if index.size else np.zeros(m)

    extra = [{"team": t, "n_jobs": int((index == k).sum())} for k, t in enumerate(teams)]
    rows = _rows(
        s(usage.gpu_s),
        s(usage.energy_j),
        s(usage.throttled_gpu_s),
        s(usage.down_gpu_s),
        s(usage.unmetered_gpu_s),
        extra,
    )
    return sorted(rows, key=lambda r: (-r["allocated_gpu_h"], r["team"]))


class Ledger:
    """Running sums per job and team for a live twin: owners from each Slurm read, power from each tick.

    A job keeps its sums across reads (keyed by display id) while it holds GPUs, and for
    ``keep_ended`` reads after it stops holding them (so a finished job's totals stay
    visible for a while).  Memory is bounded by the jobs running plus that tail.
    """

    def __init__(self, keep_ended: int = 360) -> None:
        self.owners: GpuOwners | None = None
        self.keep_ended = keep_ended
        self._totals: dict[str, np.ndarray] = {}  # job id → [gpu_s, energy_j, throttled_s, down_s, unmetered_s]
        self._meta: dict[str, tuple[str, str]] = {}  # job id → (user, team)
        self._idle_reads: dict[str, int] = {}
        self._last: tuple[datetime, np.ndarray, np.ndarray] | None = None

    def set_owners(self, owners: GpuOwners) -> None:
        """A new Slurm read: later intervals are charged to its jobs."""
        self.owners = owners
        running = set(owners.job_ids)
        for i, key in enumerate(owners.job_ids):
            self._meta[key] = (owners.users[i], owners.teams[i])
            self._idle_reads.pop(key, None)
        for key in list(self._totals):
            if key not in running:
                self._idle_reads[key] = self._idle_reads.get(key, 0) + 1
                if self._idle_reads[key] > self.keep_ended:
                    del self._totals[key], self._idle_reads[key], self._meta[key]

    def observe(self, ts: datetime, gpu_power_w: np.ndarray, gpu_state: np.ndarray) -> None:
        """A twin snapshot at ``ts``: the interval since the previous one is charged with the previous values."""
        last, self._last = self._last, (ts, np.array(gpu_power_w, dtype=np.float64), np.array(gpu_state))
        if last is None or self.owners is None:
            return
        dt_s = (ts - last[0]).total_seconds()
        if not 0 < dt_s <= MAX_GAP_S or last[1].shape != self.owners.gpu_row.shape:
            return
        u = attribute(self.owners, last[1], last[2], dt_s)
        table = np.stack((u.gpu_s, u.energy_j, u.throttled_gpu_s, u.down_gpu_s, u.unmetered_gpu_s), axis=1)
        for i, key in enumerate(self.owners.job_ids):
            self._totals[key] = self._totals.get(key, 0.0) + table[i]

    def usage(self) -> Usage:
        """The sums so far as a :class:`Usage` (its owners: the jobs with sums, in no GPU order)."""
        keys = list(self._totals)
        owners = GpuOwners(
            np.zeros(0, np.int32),
            tuple(keys),
            tuple(self._meta[k][0] for k in keys),
            tuple(self._meta[k][1] for k in keys),
            self.owners.read_at if self.owners else None,
        )
        t = np.array([self._totals[k] for k in keys]).reshape(len(keys), 5)
        return Usage(owners, t[:, 0].copy(), t[:, 1].copy(), t[:, 2].copy(), t[:, 3].copy(), t[:, 4].copy())

    def report(self) -> dict:
        """``{"jobs": by_job(...), "teams": by_team(...)}`` of the sums so far (JSON-ready, no NaN)."""
        u = self.usage()
        return {"jobs": by_job(u), "teams": by_team(u)}
