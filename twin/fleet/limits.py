"""Limits a job must pass before it may start, whatever the free GPUs: QoS, user and team quotas.

* QoS ``GrpTRES=gres/gpu=N`` — all running jobs of the QoS together ([Slurm-QOS]); pending
  reason ``QOSGrpGRES``;
* QoS ``MaxTRESPerUser=gres/gpu=N`` — one user's running jobs in the QoS; ``QOSMaxGRESPerUser``;
* team quota as a Kueue ClusterQueue ([Kueue-Docs]): a team may hold its nominal quota, and
  more by borrowing the unused nominal quota of its cohort (up to its borrowing limit); a
  job over both waits with ``AssocGrpGRES`` (Slurm's word for an account's group limit).
  Teams without a ClusterQueue are not limited.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from twin.fleet.policy import Policy

LIMIT_REASONS = ("", "QOSGrpGRES", "QOSMaxGRESPerUser", "AssocGrpGRES")
SCALAR_BELOW = 8  # queues up to this long are checked job by job


@dataclass(frozen=True)
class QuotaTable:
    """Quota arrays per team code (``nominal < 0``: no ClusterQueue)."""

    nominal: np.ndarray  # int64 GPUs
    cohort: np.ndarray  # int32, -1 none
    borrow_limit: np.ndarray  # int64, -1 no limit
    shares: np.ndarray  # float64 fair-share shares
    qos_grp: np.ndarray  # int64 per QoS code, 0 none
    qos_user: np.ndarray  # int64 per QoS code, 0 none
    qos_priority: np.ndarray  # float64 per QoS code

    @functools.cached_property
    def cohort_members(self) -> dict[int, np.ndarray]:
        """Cohort code → its member teams' codes (the cohorts do not change during a run)."""
        return {int(c): np.flatnonzero(self.cohort == c) for c in np.unique(self.cohort[self.cohort >= 0]).tolist()}


def quota_table(policy: Policy, team_names: list[str], qos_names: list[str]) -> QuotaTable:
    """Arrays of the policy's quotas and QoS limits over the workload's team and QoS codes."""
    by_team = {q.team: q for q in policy.quotas}
    cohorts: dict[str, int] = {}
    n = len(team_names)
    nominal = np.full(n, -1, np.int64)
    cohort = np.full(n, -1, np.int32)
    limit = np.full(n, -1, np.int64)
    shares = np.ones(n)
    for i, name in enumerate(team_names):
        q = by_team.get(name)
        if q is None:
            continue
        nominal[i] = q.nominal_gpus
        cohort[i] = cohorts.setdefault(q.cohort, len(cohorts)) if q.cohort else -1
        limit[i] = q.borrowing_limit_gpus
        shares[i] = q.shares or max(q.nominal_gpus, 1)
    specs = [policy.qos_spec(name) for name in qos_names]
    return QuotaTable(
        nominal=nominal,
        cohort=cohort,
        borrow_limit=limit,
        shares=shares,
        qos_grp=np.array([s.grp_gpus for s in specs], np.int64),
        qos_user=np.array([s.max_gpus_per_user for s in specs], np.int64),
        qos_priority=np.array([s.priority for s in specs], np.float64),
    )


def cohort_room(q: QuotaTable, team_gpus: np.ndarray, team: int) -> int:
    """Unused nominal quota in ``team``'s cohort (GPUs), counting every member."""
    c = q.cohort[team]
    if c < 0:
        return max(int(q.nominal[team] - team_gpus[team]), 0)
    members = q.cohort_members[int(c)]
    return int(np.add.reduce(q.nominal[members])) - int(np.add.reduce(team_gpus[members]))


def limit_reason(
    q: QuotaTable,
    team_gpus: np.ndarray,
    user_gpus: np.ndarray,
    qos_gpus: np.ndarray,
    team: int,
    user: int,
    qos: int,
    g: int,
) -> str:
    """The Slurm pending reason that holds a job of ``g`` GPUs back, or "" if it may start."""
    grp = q.qos_grp[qos]
    if grp > 0 and qos_gpus[qos] + g > grp:
        return "QOSGrpGRES"
    per_user = q.qos_user[qos]
    if per_user > 0 and user_gpus[user] + g > per_user:
        return "QOSMaxGRESPerUser"
    nominal = q.nominal[team]
    if nominal < 0 or team_gpus[team] + g <= nominal:
        return ""
    borrow = team_gpus[team] + g - nominal
    if q.cohort[team] < 0 or (q.borrow_limit[team] >= 0 and borrow > q.borrow_limit[team]):
        return "AssocGrpGRES"
    return "" if g <= cohort_room(q, team_gpus, team) else "AssocGrpGRES"


def borrowing(q: QuotaTable, team_gpus: np.ndarray) -> np.ndarray:
    """GPUs each team holds above its nominal quota (0 for teams without a quota)."""
    return np.where(q.nominal >= 0, np.maximum(team_gpus - q.nominal, 0), 0)


def limit_codes(
    q: QuotaTable,
    team_gpus: np.ndarray,
    user_gpus: np.ndarray,
    qos_gpus: np.ndarray,
    team: np.ndarray,
    user: np.ndarray,
    qos: np.ndarray,
    g: np.ndarray,
) -> np.ndarray:
    """:func:`limit_reason` for many jobs at once, as codes: 0 none, 1 QOSGrpGRES, 2 QOSMaxGRESPerUser, 3 AssocGrpGRES."""
    if g.size <= SCALAR_BELOW:  # a short queue: job by job costs less than the array expressions
        return np.array(
            [
                LIMIT_REASONS.index(limit_reason(q, team_gpus, user_gpus, qos_gpus, t, u, s, n))
                for t, u, s, n in zip(team.tolist(), user.tolist(), qos.tolist(), g.tolist())
            ],
            np.int8,
        )
    out = np.zeros(g.size, np.int8)
    grp = q.qos_grp[qos]
    out[(grp > 0) & (qos_gpus[qos] + g > grp)] = 1
    per_user = q.qos_user[qos]
    out[(out == 0) & (per_user > 0) & (user_gpus[user] + g > per_user)] = 2
    nominal = q.nominal[team]
    over = (out == 0) & (nominal >= 0) & (team_gpus[team] + g > nominal)
    if over.any():
        borrow = team_gpus[team] + g - nominal
        limit = q.borrow_limit[team]
        cohort = q.cohort[team]
        n_cohorts = int(q.cohort.max()) + 1 if q.cohort.size and q.cohort.max() >= 0 else 0
        has = q.cohort >= 0
        room_c = np.bincount(q.cohort[has], weights=(q.nominal - team_gpus)[has], minlength=n_cohorts)
        room = np.where(cohort >= 0, room_c[np.maximum(cohort, 0)] if n_cohorts else 0, 0)
        blocked = (cohort < 0) | ((limit >= 0) & (borrow > limit)) | (g > room)
        out[over & blocked] = 3
    return out
