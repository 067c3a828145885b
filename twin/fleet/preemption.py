"""Which running jobs a blocked job may requeue to start: QoS preemption and quota reclaim.

* QoS ([Slurm-Preempt], ``PreemptType=preempt/qos``, ``PreemptMode=REQUEUE``): a job may
  requeue running jobs of the QoS its own QoS lists in ``preempt``;
* reclaim ([Kueue-Docs], ``reclaimWithinCohort``): a job of a team that stays within its
  nominal quota may requeue jobs of teams of its cohort that hold more than their nominal
  quota (borrowed GPUs); a team stops being a victim once it no longer borrows (jobs are
  whole, so the last victim may take it below its nominal, as in Kueue).

Victims are taken lowest QoS priority first, then the most recently started (least work
lost), until the whole nodes they free and the free ones hold the job; if they cannot,
nobody is preempted.  A requeued job keeps only its checkpointed progress
(:func:`twin.fleet.lifecycle.requeue`) and pays its restore time when it starts again.
"""

from __future__ import annotations

import numpy as np

from twin.fleet.limits import borrowing
from twin.fleet.state import RUNNING, Sim


def _candidates(sim: Sim, j: int) -> tuple[np.ndarray, np.ndarray]:
    """Running jobs ``j`` may requeue, and which of them only by reclaim (so only borrowed GPUs)."""
    run = sim.run
    tab, q = run.table, sim.quota
    running = np.flatnonzero(run.status == RUNNING)
    if running.size == 0:
        return running, running.astype(bool)
    mask = np.zeros(running.size, bool)
    preempts = run.policy.qos_spec(tab.qos_names[tab.qos[j]]).preempt
    if preempts:
        codes = [tab.qos_names.index(n) for n in preempts if n in tab.qos_names]
        mask |= np.isin(tab.qos[running], codes)
    team = tab.team[j]
    within = q.nominal[team] >= 0 and run.acct.team_gpus[team] + tab.n_gpus[j] <= q.nominal[team]
    if run.policy.reclaim and within and q.cohort[team] >= 0:
        lenders = (q.cohort == q.cohort[team]) & (borrowing(q, run.acct.team_gpus) > 0)
        reclaim = lenders[tab.team[running]] & ~mask
        mask |= reclaim
    else:
        reclaim = np.zeros(running.size, bool)
    return running[mask], reclaim[mask]


def victims(sim: Sim, j: int, now: float) -> list[int]:
    """Running jobs to requeue so that job ``j`` can start now ([] if it may not or it would not help)."""
    cand, by_reclaim = _candidates(sim, j)
    if cand.size == 0:
        return []
    run = sim.run
    tab, q = run.table, sim.quota
    idx = np.lexsort((-run.last_start_s[cand], q.qos_priority[tab.qos[cand]]))
    order, by_reclaim = cand[idx], by_reclaim[idx]
    req, k = sim.request(j)
    gpn = int(run.topo.node_gpus.max())
    have = int(run.cluster.whole_free().sum()) if k else int(run.cluster.node_free[run.cluster.usable()].max(initial=0))
    need = k if k else req.n_gpus
    borrowed = borrowing(q, run.acct.team_gpus).astype(np.int64).copy()
    chosen: list[int] = []
    for v, reclaim_only in zip(order.tolist(), by_reclaim.tolist()):
        if have >= need:
            break
        t = tab.team[v]
        if reclaim_only and borrowed[t] <= 0:
            continue  # the team no longer borrows: it keeps the rest of its nominal quota
        borrowed[t] -= run.n_alloc[v]
        chosen.append(v)
        have += int(run.n_alloc[v]) // gpn if k else int(run.n_alloc[v])
    return chosen if have >= need else []
