"""Event handlers of the fleet simulation: failures and repairs, reservations, demand response, quotas.

A node failure stops every job on the node through the restart model: the job loses the
progress since its last checkpoint; if free nodes can replace the failed one now (hot
spares), the job goes on on them after detection, drain-and-swap, restore and half the
warm-up (:func:`twin.fleet.failures.restart_overhead_s`); otherwise it goes back to the
queue.  The node is drained (``DOWN``), repaired, health-checked (``CHECK``) and put back
(``UP``), or kept out (``EXCLUDED``) when it is a lemon.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from twin.fleet import failures, lifecycle, placement
from twin.fleet.cluster import CHECK, DOWN, EXCLUDED, UP
from twin.fleet.policy import DemandResponse
from twin.fleet.state import RUNNING, Sim, advance, saved_progress, set_reason
from twin.training import restart

EV_REPAIRED, EV_UP, EV_RESV_START, EV_RESV_END, EV_DR_START, EV_DR_END, EV_QUOTA, EV_SOFT_FAIL, EV_BACKFILL = range(
    2, 11
)


def node_failed(sim: Sim, node: int, cause: int, repair_s: float, t: float) -> None:
    """Node ``node`` fails at ``t`` with ``cause``; its jobs restart on spares or are requeued."""
    cl = sim.run.cluster
    if cl.node_state[node] not in (UP,):
        return  # already out of service
    cl.node_failures[node] += 1
    sim.node_history.setdefault(node, []).append(t)
    jobs = cl.jobs_on_nodes(np.array([node]))
    cl.set_state(node, DOWN, t, f"failed: {failures.CAUSES[cause]}")
    sim.counts["node_failures_count"] += 1
    for j in jobs.tolist():
        _job_hit(sim, int(j), node, cause, t)
    sim.push(t + repair_s, EV_REPAIRED, node, 0)


def _job_hit(sim: Sim, j: int, node: int, cause: int, t: float) -> None:
    run = sim.run
    advance(run, j, t)
    run.failures[j] += 1
    lifecycle.rollback(run, j)
    gpus = run.gpus[j]
    on_node = run.topo.site.gpu_node[gpus] == node
    lost_gpus = gpus[on_node]
    req, k = sim.request(j)
    spare_req = placement.Request(
        n_gpus=int(lost_gpus.size) if k else req.n_gpus, exclusive=bool(k), gpu_type=req.gpu_type, end_s=req.end_s
    )
    run.cluster.release(lost_gpus)
    spare = placement.place(run.cluster, spare_req, "tree") if k else None
    if spare is None or spare.size != lost_gpus.size:
        run.cluster.allocate(j, lost_gpus)  # hand them back so the requeue releases the job whole
        lifecycle.requeue(sim, j, t, "failed")
        return
    run.cluster.allocate(j, spare)
    lifecycle.placed(sim, j, np.sort(np.concatenate([gpus[~on_node], spare])))
    run.restarts[j] += 1
    run.resume_s[j] = t + failures.restart_overhead_s(cause, float(run.table.restore_s[j]))
    sim.factors.pop(j, None)
    sim.power_left(j, t)
    sim.power_joined(j, t)
    lifecycle.refresh(sim, j, t)


def node_repaired(sim: Sim, node: int, t: float) -> None:
    """Repair done: health checks, or kept out as a lemon."""
    cl = sim.run.cluster
    if failures.is_lemon(sim.node_history.get(node, []), t, sim.failure_model):
        cl.set_state(node, EXCLUDED, t, f"lemon: {int(cl.node_failures[node])} failures")
        sim.counts["nodes_excluded_count"] += 1
        return
    cl.set_state(node, CHECK, t, "health check after repair")
    sim.push(t + sim.failure_model.health_check_s, EV_UP, node, 0)


def node_up(sim: Sim, node: int, t: float) -> None:
    cl = sim.run.cluster
    if cl.node_state[node] == CHECK:
        cl.set_state(node, UP, t)


def software_failure(sim: Sim, j: int, t: float) -> None:
    """A software interruption of a running job: rollback and restart in place (no node drained)."""
    run = sim.run
    if run.status[j] != RUNNING:
        return
    advance(run, j, t)
    run.failures[j] += 1
    run.restarts[j] += 1
    lifecycle.rollback(run, j)
    overhead = failures.DETECTION_S["xid"] + float(run.table.restore_s[j]) + 0.5 * restart.DEFAULT_WARMUP_S
    run.resume_s[j] = t + overhead
    sim.counts["software_failures_count"] += 1
    lifecycle.reschedule_end(sim, j)
    sim.schedule_software_failure(j, t)


def reservation_start(sim: Sim, r: int, t: float) -> None:
    """Reservation ``r`` takes its nodes: jobs still on them are requeued."""
    resv = sim.run.policy.reservations[r]
    nodes = np.asarray(resv.nodes, dtype=np.int64)
    cl = sim.run.cluster
    for j in cl.jobs_on_nodes(nodes).tolist():
        lifecycle.requeue(sim, int(j), t, "preempted")
        set_reason(sim.run, int(j), "ReqNodeNotAvail")
    cl.node_resv[nodes] = r
    cl.states_changed()
    mark_upcoming(sim, t)


def reservation_end(sim: Sim, r: int, t: float) -> None:
    resv = sim.run.policy.reservations[r]
    nodes = np.asarray(resv.nodes, dtype=np.int64)
    cl = sim.run.cluster
    held = nodes[cl.node_resv[nodes] == r]
    cl.node_resv[held] = -1
    cl.states_changed()
    mark_upcoming(sim, t)


def demand_response(sim: Sim, d: int, t: float, starting: bool) -> None:
    """A demand-response event starts or ends: new budget, caps rebalanced, jobs requeued if needed."""
    ev = sim.run.policy.demand_response[d]
    power = sim.power
    before = _job_rates(sim, t)
    sim.power_dirty = sim.budget_changed = True
    power.cut_mw = ev.cut_mw if starting else 0.0
    power.target_mw = ev.target_mw if starting else math.inf
    dropped = sim.rebalance(t)
    if starting:
        sim.dr_reports.append(_dr_report(sim, ev, before, dropped, t))


def _job_rates(sim: Sim, t: float) -> dict[int, tuple[float, float, float, float]]:
    """Per running job: speed, tokens/s, cap [W] and the progress a requeue now would roll back [s]."""
    run = sim.run
    out = {}
    for j in sim.running_rows().tolist():
        advance(run, j, t)
        rollback_s = float(run.done_s[j]) - saved_progress(run, j)
        speed = float(run.speed_frac[j])
        out[j] = (speed, speed * float(run.ideal_tokens_per_s[j]), float(run.cap_w[j]), rollback_s)
    return out


def _dr_report(
    sim: Sim, ev: DemandResponse, before: dict[int, tuple[float, float, float, float]], dropped: list[int], t: float
) -> dict[str, Any]:
    """Which jobs the event capped or requeued, and its cost in tokens and GPU-hours over its duration.

    ``dr_tokens_lost_count`` and ``dr_lost_gpu_h`` are what the jobs do not make over the event at the
    caps it sets (a requeued job makes nothing); the progress a requeued job rolls back to its last
    checkpoint is counted apart (``dr_rolled_back_*``).
    """
    run = sim.run
    hours = ev.duration_s / 3600.0
    capped, tokens_lost, gpu_h_lost, rolled_tokens, rolled_gpu_h = [], 0.0, 0.0, 0.0, 0.0
    for j, (speed0, tok0, cap0, rollback_s) in before.items():
        g = int(run.table.n_gpus[j])
        if j in dropped:
            tokens_lost += tok0 * ev.duration_s
            gpu_h_lost += g * hours
            rolled_tokens += rollback_s * float(run.ideal_tokens_per_s[j])
            rolled_gpu_h += rollback_s * g / 3600.0
            continue
        speed1 = float(run.speed_frac[j])
        if speed1 < speed0 - 1e-9:
            capped.append({"job": run.table.jobs[j].job_id, "cap_before_w": cap0, "cap_w": float(run.cap_w[j])})
            tokens_lost += (tok0 - speed1 * run.ideal_tokens_per_s[j]) * ev.duration_s
            gpu_h_lost += g * (1.0 - speed1 / speed0) * hours
    return {
        "start_s": t,
        "duration_s": ev.duration_s,
        "cut_mw": ev.cut_mw,
        "target_mw": ev.target_mw,
        "budget_mw": sim.power.budget_mw(),
        "jobs_capped_count": len(capped),
        "jobs_requeued_count": len(dropped),
        "capped": capped[:50],
        "requeued": [run.table.jobs[j].job_id for j in dropped][:50],
        "dr_tokens_lost_count": tokens_lost,
        "dr_lost_gpu_h": gpu_h_lost,
        "dr_rolled_back_tokens_count": rolled_tokens,
        "dr_rolled_back_gpu_h": rolled_gpu_h,
    }


def quota_change(sim: Sim, i: int, t: float) -> None:
    """A team's nominal quota changes (Helios-style quotas over time)."""
    _, team, nominal = sim.run.policy.quota_changes[i]
    names = sim.run.table.team_names
    if team in names:
        sim.quota.nominal[names.index(team)] = nominal


def mark_upcoming(sim: Sim, t: float) -> None:
    """Mark every node with its next reservation start after ``t`` (placements avoid nodes reserved before
    their end)."""
    cl, pol = sim.run.cluster, sim.run.policy
    cl.node_resv_next_s[:] = math.inf
    cl.node_resv_next[:] = -1
    for r, resv in sorted(enumerate(pol.reservations), key=lambda x: -x[1].start_s):
        if resv.start_s > t:
            nodes = np.asarray(resv.nodes, dtype=np.int64)
            cl.node_resv_next_s[nodes] = resv.start_s
            cl.node_resv_next[nodes] = r
    cl.resv_next_min_s = float(cl.node_resv_next_s.min()) if cl.n_nodes else math.inf
