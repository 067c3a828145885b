"""One scheduling pass: the queue, the nodes and the policy in; starts, preemptions and reasons out.

The pass walks the pending jobs in the policy's order ([Slurm-Sched]):

1. a job waiting on a dependency is skipped (``Dependency``); one over a QoS, user or team
   limit is skipped (``QOSGrpGRES``, ``QOSMaxGRESPerUser``, ``AssocGrpGRES``); one whose power
   the site cannot grant even at its lowest cap is skipped (``PowerCap``); none of these
   holds up the jobs behind it;
2. a job that the placement can put on free GPUs now starts (gang: all its GPUs or none);
3. the first job that cannot start waits with ``Resources``.  Without backfill the pass stops
   there and every job behind it waits with ``Priority``.  With backfill (only in a *full*
   pass; the quick pass at each event stops at the first blocked job, like Slurm's main
   scheduler between backfill cycles) that job gets a reservation in the availability
   profile (:mod:`twin.fleet.backfill`), and so does every later blocked job under
   conservative backfill; a later job starts only if it fits now and delays no reservation,
   else it waits with ``Priority`` (or ``Resources`` when it does not fit now at all);
4. a blocked job whose QoS may preempt, or whose team reclaims lent quota, requeues the
   victims :mod:`twin.fleet.preemption` chooses and starts in their place.

Fragmentation: a blocked job that needs no more GPUs than sit free on usable nodes is
held back by the topology (node boundaries, leaves, blocks); the pass reports those free
GPUs (``fragmented_gpus``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from twin.fleet import backfill, placement, preemption, priority
from twin.fleet.limits import limit_reason
from twin.fleet.state import RUNNING, pending_rows


@dataclass
class PassResult:
    """What one pass did and why the others wait."""

    started: list[int] = field(default_factory=list)
    preempted: list[int] = field(default_factory=list)
    reasons: dict[int, str] = field(default_factory=dict)  # row → pending reason, for every job left pending
    expected_start_s: dict[int, float] = field(default_factory=dict)  # reservations made (squeue --start)
    fragmented_gpus: int = 0
    tested_count: int = 0


class _Free:
    """Free capacity counters used to skip placements that cannot succeed."""

    def __init__(self, sim) -> None:
        self.sim = sim
        self.refresh()

    def refresh(self) -> None:
        cl = self.sim.run.cluster
        usable = cl.usable()
        self.free_gpus = int(cl.node_free[usable].sum())
        whole = usable & (cl.node_free == cl.topo.node_gpus)
        self.whole = int(whole.sum())
        self.max_shared = int(cl.node_free[usable].max()) if usable.any() else 0

    def may_fit(self, req: placement.Request, k: int) -> bool:
        if req.resv >= 0 or req.gpu_type >= 0:
            return True
        return (self.whole >= k) if k else (self.max_shared >= req.n_gpus)


def _profile(sim, now: float) -> tuple[backfill.Profile, np.ndarray]:
    run = sim.run
    cl = run.cluster
    ends = np.where(run.status == RUNNING, run.last_start_s + run.table.wall_s, now)
    free_at = backfill.node_free_at(now, cl.gpu_job, cl.topo.node_first_gpu, ends, cl.usable())
    prof = backfill.Profile(now, free_at)
    for nodes, start_s, end_s in sim.upcoming_reservations(now):
        ok = nodes[np.isfinite(free_at[nodes])]
        prof.take(max(start_s, now), end_s, int(ok.size))
    return prof, free_at


def _fits_profile(prof, free_at, gpus, k: int, now: float, end: float, sim) -> bool:
    if k:
        return prof.min_free(now, end) >= k
    node = int(sim.run.topo.site.gpu_node[gpus[0]])
    f = max(free_at[node], now)
    return f >= end or prof.min_free(f, end) >= 1


def _take_profile(prof, free_at, gpus, k: int, now: float, end: float, sim) -> None:
    if k:
        prof.take(now, end, k)
        nodes = np.unique(sim.run.topo.site.gpu_node[gpus])
    else:
        nodes = np.array([sim.run.topo.site.gpu_node[gpus[0]]])
        f = max(free_at[nodes[0]], now)
        if f < end:
            prof.take(f, end, 1)
    free_at[nodes] = np.maximum(free_at[nodes], end)


def schedule_pass(sim, now: float, full: bool = True) -> PassResult:
    """Run one pass at ``now`` on ``sim`` (a :class:`twin.fleet.simulate.FleetSim`); starts jobs through it."""
    run = sim.run
    tab, pol, q, acct = run.table, run.policy, sim.quota, run.acct
    out = PassResult()
    rows = pending_rows(run)
    if rows.size == 0:
        return out
    ordered = priority.order(pol, rows, tab.submit_s, tab.wall_s, sim.priorities(now))
    free = _Free(sim)
    backfilling = full and pol.backfill != "none"
    max_resv = 0 if not backfilling else (1 if pol.backfill == "easy" else pol.bf_max_job_test)
    prof, free_at, n_resv, blocked = None, None, 0, False
    for pos, j in enumerate(ordered.tolist()):
        if run.deps_left[j] > 0:
            out.reasons[j] = "Dependency"
            continue
        g = int(tab.n_gpus[j])
        why = limit_reason(q, acct.team_gpus, acct.user_gpus, acct.qos_gpus, tab.team[j], tab.user[j], tab.qos[j], g)
        if why:
            out.reasons[j] = why
            continue
        if not sim.power_admits(j):
            out.reasons[j] = "PowerCap"
            continue
        if blocked and not backfilling:
            _wait_rest(out, ordered[pos:], run, "Priority")
            break
        if not full and out.tested_count >= pol.queue_depth:
            _wait_rest(out, ordered[pos:], run, None)
            break
        out.tested_count += 1
        req, k = sim.request(j)
        gpus = placement.place(run.cluster, req, pol.placement) if free.may_fit(req, k) else None
        end = now + float(tab.wall_s[j])
        if gpus is not None and prof is not None and not _fits_profile(prof, free_at, gpus, k, now, end, sim):
            out.reasons[j] = "Priority"
            continue
        if gpus is None and pol.preemption and out.tested_count <= pol.queue_depth:
            gpus = _preempt_for(sim, j, req, now, out)
        if gpus is not None:
            sim.start(j, gpus, now)
            out.started.append(j)
            free.refresh()
            if prof is not None:
                _take_profile(prof, free_at, gpus, k, now, end, sim)
            continue
        if g <= free.free_gpus:
            out.fragmented_gpus = max(out.fragmented_gpus, free.free_gpus)
        out.reasons[j] = "Priority" if blocked else "Resources"
        blocked = True
        if backfilling and n_resv < max_resv:
            if prof is None:
                prof, free_at = _profile(sim, now)
            nodes = max(k, 1)
            at = prof.earliest(now, float(tab.wall_s[j]), nodes)
            if math.isfinite(at):
                prof.take(at, at + float(tab.wall_s[j]), nodes)
                out.expected_start_s[j] = at
            n_resv += 1
    return out


def _wait_rest(out: PassResult, rest: np.ndarray, run, reason: str | None) -> None:
    """Every job of ``rest`` keeps waiting: with ``reason``, or (None) with the reason it had."""
    for j in rest.tolist():
        if j not in out.reasons:
            out.reasons[j] = reason or run.reason[j] or "Priority"


def _preempt_for(sim, j: int, req: placement.Request, now: float, out: PassResult):
    """Requeue the victims that make room for ``j`` and place it; None if there are none or it still does not fit."""
    victims = preemption.victims(sim, j, now)
    if not victims:
        return None
    for v in victims:
        sim.preempt(v, now)
        out.preempted.append(v)
    return placement.place(sim.run.cluster, req, sim.run.policy.placement)
