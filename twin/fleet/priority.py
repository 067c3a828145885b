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

import numpy as np

from twin.fleet.policy import Policy


def fairshare_factor(usage_gpu_s: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """``2^(−U/S)`` per team; ``U`` usage share, ``S`` normalised shares (a team without shares gets 0)."""
    usage = np.asarray(usage_gpu_s, dtype=np.float64)
    s = np.asarray(shares, dtype=np.float64)
    total_u, total_s = usage.sum(), s.sum()
    u = usage / total_u if total_u > 0 else np.zeros_like(usage)
    s_norm = s / total_s if total_s > 0 else np.full_like(s, 1.0 / max(s.size, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(s_norm > 0, np.exp2(-u / np.where(s_norm > 0, s_norm, 1.0)), 0.0)
    return f


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


def order(policy: Policy, rows: np.ndarray, submit_s: np.ndarray, wall_s: np.ndarray, prio: np.ndarray) -> np.ndarray:
    """``rows`` sorted by the policy's ordering (arrays indexed by row)."""
    if policy.ordering == "fcfs":
        keys = (rows, submit_s[rows])
    elif policy.ordering == "sjf":
        keys = (rows, submit_s[rows], wall_s[rows])
    else:
        keys = (rows, submit_s[rows], -prio[rows])
    return rows[np.lexsort(keys)]
