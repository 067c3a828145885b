"""Job order: FCFS, shortest requested time first, or Slurm's multifactor priority.

Multifactor ([Slurm-Priority]), each factor in [0, 1]:

* age — time pending over ``PriorityMaxAge`` (7 days), capped at 1;
* fair-share — the classic formula ``F = 2^(−U/S)``: ``U`` the team's share of the decayed
  GPU-seconds used (half-life ``PriorityDecayHalfLife``), ``S`` its normalised shares;
* job size — GPUs over the site's GPUs (``PriorityFavorSmall=NO``);
* QoS — the job's QoS priority over the largest QoS priority;

priority = Σ weight × factor + the job's own ``priority`` (an administrator's adjustment).
Ties (and FCFS) go to the earlier submission, then the lower row.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from twin.fleet.policy import Policy

if TYPE_CHECKING:
    from twin.fleet.limits import QuotaTable
    from twin.fleet.state import FleetRun


def normalised_shares(shares: np.ndarray) -> np.ndarray:
    """Shares over their sum (equal shares when they sum to 0)."""
    s = np.asarray(shares, dtype=np.float64)
    total_s = s.sum()
    return s / total_s if total_s > 0 else np.full_like(s, 1.0 / max(s.size, 1))


def fairshare_factor(usage_gpu_s: np.ndarray, has_shares: np.ndarray, share_div: np.ndarray) -> np.ndarray:
    """``2^(−U/S)`` per team; ``U`` its share of the usage, ``S`` its normalised shares (a team without
    shares gets 0).  ``has_shares``: :func:`normalised_shares` > 0; ``share_div``: those shares, 1 elsewhere
    (kept by the caller: the shares do not change during a run)."""
    usage = np.asarray(usage_gpu_s, dtype=np.float64)
    total_u = np.add.reduce(usage)
    u = usage / total_u if total_u > 0 else np.zeros_like(usage)
    return np.where(has_shares, np.exp2(-u / share_div), 0.0)


def decay(usage_gpu_s: np.ndarray, dt_s: float, half_life_s: float) -> np.ndarray:
    """Usage after ``dt_s`` of exponential decay with ``half_life_s`` (0 = no decay)."""
    if half_life_s <= 0 or dt_s <= 0:
        return usage_gpu_s
    return usage_gpu_s * 0.5 ** (dt_s / half_life_s)


def multifactor(
    policy: Policy,
    now_s: float,
    submit_s: np.ndarray,
    n_gpus: np.ndarray,
    qos_priority: np.ndarray,
    fairshare: np.ndarray,
    own_priority: np.ndarray,
    site_gpus: int,
) -> np.ndarray:
    """Slurm multifactor priority of jobs (arrays aligned per job; ``fairshare`` already per job)."""
    w = policy.weights
    age = np.clip((now_s - submit_s) / max(policy.max_age_s, 1e-9), 0.0, 1.0)
    size = np.minimum(n_gpus / max(site_gpus, 1), 1.0)
    qmax = float(qos_priority.max()) if qos_priority.size else 0.0
    qos = qos_priority / qmax if qmax > 0 else np.zeros_like(qos_priority, dtype=np.float64)
    return w.age * age + w.fairshare * fairshare + w.job_size * size + w.qos * qos + own_priority


def order_index(
    policy: Policy, rows: np.ndarray, submit_s: np.ndarray, wall_s: np.ndarray, prio: np.ndarray | None
) -> np.ndarray:
    """Positions in ``rows`` (job rows; the arrays are indexed by row) that sort it by the policy's ordering."""
    keys: tuple[np.ndarray, ...]
    if policy.ordering == "fcfs":
        keys = (rows, submit_s[rows])
    elif policy.ordering == "sjf":
        keys = (rows, submit_s[rows], wall_s[rows])
    else:
        assert prio is not None  # priority ordering comes with priorities
        keys = (rows, submit_s[rows], -prio[rows])
    return np.lexsort(keys)


_SCALAR_ROWS = 8  # up to this many rows to compute, priorities are worked out one by one


class PriorityCache:
    """Multifactor priorities by job row, recomputed for every pending job each ``PriorityCalcPeriod``
    (Slurm's ``PriorityCalcPeriod``) and for a job that joined the queue since, at its first pass.

    A pass notes its rows (:meth:`note`): the rows due get their inputs of that instant (its time
    and the fair-share usage then) and are worked out only when a pass needs an order
    (:meth:`resolve`), from those inputs, in the batches they were noted in: the same values as
    computing them at once, without the cost in the passes (most of them) that have one job to try.
    """

    def __init__(self, n_jobs: int, shares: np.ndarray) -> None:
        self.value = np.zeros(n_jobs)
        self.valid = np.zeros(n_jobs, bool)
        self.t_s = -math.inf
        self.s_norm = normalised_shares(shares)
        self._pos = self.s_norm > 0
        self._s_div = np.where(self._pos, self.s_norm, 1.0)
        self._due: list[tuple[float, np.ndarray, np.ndarray]] = []  # (time, team usage then, rows) to work out

    def note(self, run: FleetRun, now: float, rows: np.ndarray) -> None:
        """A pass at ``now`` over ``rows``: those due (a new calc period, or new in the queue) take their inputs now.

        The usage array is kept by reference: the simulation replaces it at every step, never changes it in place.
        """
        period = run.policy.priority_calc_period_s
        if now - self.t_s >= period or period <= 0:
            self.valid[:] = False
            self.t_s = now
            self._due.clear()  # their rows are due again, at their next pass
        if rows.size <= _SCALAR_ROWS:  # a short queue: looked up one by one
            valid = self.valid
            due = [j for j in rows.tolist() if not valid[j]]
            if not due:
                return
            rows = np.array(due, np.int64)
        else:
            rows = rows[~self.valid[rows]]
        if rows.size:
            self.valid[rows] = True
            self._due.append((now, run.acct.team_usage_gpu_s, rows))

    def resolve(self, run: FleetRun, q: QuotaTable) -> np.ndarray:
        """Priorities (indexed by row) with every noted row worked out at the instant it was noted."""
        for now, usage, rows in self._due:
            self._compute(run, q, now, usage, rows)
        self._due.clear()
        return self.value

    def _compute(self, run: FleetRun, q: QuotaTable, now: float, usage: np.ndarray, rows: np.ndarray) -> None:
        tab = run.table
        fs_team = fairshare_factor(usage, self._pos, self._s_div)
        if rows.size <= _SCALAR_ROWS:
            self._few(run, q, now, rows.tolist(), fs_team)
            return
        self.value[rows] = multifactor(
            run.policy,
            now,
            tab.submit_s[rows],
            tab.n_gpus[rows],
            q.qos_priority[tab.qos[rows]],
            fs_team[tab.team[rows]],
            tab.priority[rows],
            run.topo.n_gpus,
        )

    def _few(self, run: FleetRun, q: QuotaTable, now: float, rows: list[int], fs_team: np.ndarray) -> None:
        """:func:`multifactor` for a few rows in Python floats: the same operations in the same order,
        so the same values, without the cost of a dozen array expressions on one element."""
        tab, pol = run.table, run.policy
        w = pol.weights
        max_age, site = max(pol.max_age_s, 1e-9), max(run.topo.n_gpus, 1)
        qos_p = [float(q.qos_priority[tab.qos[j]]) for j in rows]
        qmax = max(qos_p)
        for j, qp in zip(rows, qos_p):
            age = min(max((now - float(tab.submit_s[j])) / max_age, 0.0), 1.0)
            size = min(int(tab.n_gpus[j]) / site, 1.0)
            qos = qp / qmax if qmax > 0 else 0.0
            fs = float(fs_team[tab.team[j]])
            self.value[j] = w.age * age + w.fairshare * fs + w.job_size * size + w.qos * qos + float(tab.priority[j])
