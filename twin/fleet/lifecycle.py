"""Start, re-rate, stop and requeue jobs of a :class:`twin.fleet.simulate.FleetSim`.

Every change of a job's placement or cap re-evaluates its physics (:mod:`twin.fleet.jobspeed`)
and re-predicts its end; the end event carries the job's ``epoch``, so an end predicted
before a change is ignored when it comes.
"""

from __future__ import annotations

import math

import numpy as np

from twin.fleet import jobspeed
from twin.fleet.state import (
    DONE,
    KILLED,
    NEVER,
    PENDING,
    RUNNING,
    FleetRun,
    Sim,
    account,
    advance,
    predicted_end,
    saved_progress,
    set_reason,
)

EV_END = 1  # the job's predicted end (completion or wall-time kill)


def job_model(sim: Sim, j: int) -> jobspeed.NodeModel:
    """The node model of running job ``j``'s GPUs (its first GPU's node: :func:`placed`)."""
    return sim.node_models[sim.placed_type[j]]


def placed(sim: Sim, j: int, gpu_ids: np.ndarray) -> None:
    """Job ``j`` now holds ``gpu_ids`` (sorted): its GPUs and the GPU type of its first GPU's node."""
    run = sim.run
    run.gpus[j] = gpu_ids
    sim.placed_type[j] = int(run.topo.node_gpu_type[run.topo.site.gpu_node[gpu_ids[0]]])


def job_rate(sim: Sim, j: int, model: jobspeed.NodeModel) -> jobspeed.JobRate:
    """Physics of running job ``j`` at its placement and cap on ``model`` (its :func:`job_model`)."""
    run = sim.run
    gpus = run.gpus[j]
    training = run.table.jobs[j].training
    util = float(run.table.util_frac[j])
    n = int(run.table.n_gpus[j])
    if training is None:
        return jobspeed.kind_rate(model, util, float(run.cap_w[j]), n)
    factors = sim.factors.get(j)
    if factors is None:
        factors = jobspeed.placement_factors(run.topo.site, training, gpus)
        sim.factors[j] = factors
    return sim.rates.rate(model, training, float(run.cap_w[j]), factors, util)


def refresh(sim: Sim, j: int, t: float) -> None:
    """Re-evaluate job ``j``'s speed and power now (placement or cap changed) and re-predict its end."""
    run = sim.run
    advance(run, j, t)
    model = job_model(sim, j)
    r = job_rate(sim, j, model)
    tab = run.table
    run.speed_frac[j] = r.speed_frac
    run.fabric_frac[j] = r.fabric_factor_dp_frac
    sim.it_w += r.node_power_w - run.node_power_w[j]
    run.node_power_w[j] = r.node_power_w
    run.idle_power_w[j] = jobspeed.idle_share_power_w(model, int(tab.n_gpus[j]))
    tau, write = tab.checkpoint_interval_s[j], tab.checkpoint_write_s[j]
    run.rate_frac[j] = r.speed_frac if tau <= 0 or write <= 0 else tau / (tau / r.speed_frac + write)
    if tab.jobs[j].training is not None:
        step_tokens = r.tokens_per_s / max(r.speed_frac, 1e-12)
        run.ideal_tokens_per_s[j] = step_tokens
    reschedule_end(sim, j)


def reschedule_end(sim: Sim, j: int) -> None:
    """Push job ``j``'s predicted end under a new epoch."""
    run = sim.run
    run.epoch[j] += 1
    end, _ = predicted_end(run, j)
    if math.isfinite(end):
        sim.push(end, EV_END, j, int(run.epoch[j]))


def start(sim: Sim, j: int, gpu_ids: np.ndarray, t: float) -> None:
    """Start pending job ``j`` on ``gpu_ids`` at ``t`` (a restart pays its checkpoint restore first)."""
    run = sim.run
    run.cluster.allocate(j, gpu_ids)
    placed(sim, j, gpu_ids)
    run.n_alloc[j] = gpu_ids.size
    restarted = not math.isnan(run.first_start_s[j])
    if not restarted:
        run.first_start_s[j] = t
    else:
        run.restarts[j] += 1
    run.status[j] = RUNNING
    run.last_start_s[j] = t
    run.last_update_s[j] = t
    run.resume_s[j] = t + (run.table.restore_s[j] if restarted and run.done_s[j] > 0 else 0.0)
    run.reason_code[j] = 0
    account(run, j, +1)
    sim.factors.pop(j, None)
    sim.power_joined(j, t)
    refresh(sim, j, t)
    sim.on_start(j, t)


def _release(sim: Sim, j: int, t: float) -> None:
    run = sim.run
    advance(run, j, t)
    account(run, j, -1)
    run.cluster.release(run.gpus[j])
    run.gpus[j] = None
    run.n_alloc[j] = 0
    run.epoch[j] += 1
    run.idle_power_w[j] = 0.0
    sim.factors.pop(j, None)
    sim.power_left(j, t)


def finish(sim: Sim, j: int, t: float, killed: bool) -> None:
    """Job ``j`` ran its work (or its wall time ran out): free its GPUs, release its dependents."""
    run = sim.run
    _release(sim, j, t)
    run.status[j] = KILLED if killed else DONE
    run.end_s[j] = t
    ok = not killed and run.table.jobs[j].end_state == "completed"
    for d in run.dependents[j]:
        if ok:
            run.deps_left[d] -= 1
        elif run.status[d] in (PENDING, 0):
            never(sim, d, "DependencyNeverSatisfied")
    sim.on_end(j, t)


def never(sim: Sim, j: int, why: str) -> None:
    """Job ``j`` can never run (too large for the site, or a dependency failed); its dependents neither."""
    run = sim.run
    if run.status[j] == NEVER:
        return
    if run.status[j] == PENDING:
        sim.on_never(j)
    run.status[j] = NEVER
    set_reason(run, j, why)
    for d in run.dependents[j]:
        never(sim, d, "DependencyNeverSatisfied")


def requeue(sim: Sim, j: int, t: float, why: str) -> float:
    """Stop running job ``j`` and put it back in the queue; it keeps only its checkpointed progress.

    ``why`` is ``preempted`` or ``failed``; returns the progress lost [s].
    """
    run = sim.run
    _release(sim, j, t)
    lost = rollback(run, j)
    run.status[j] = PENDING
    set_reason(run, j, "Preempted" if why == "preempted" else "NodeFail")
    if why == "preempted":
        run.preemptions[j] += 1
    sim.on_requeue(j, t, why, lost)
    return lost


def rollback(run: FleetRun, j: int) -> float:
    """Roll job ``j`` back to its last checkpoint; returns the progress lost [s]."""
    saved = saved_progress(run, j)
    lost = max(run.done_s[j] - saved, 0.0)
    run.done_s[j] = saved
    run.tokens[j] = max(run.tokens[j] - lost * run.ideal_tokens_per_s[j], 0.0)
    run.lost_work_s[j] += lost
    return lost


def start_running(sim: Sim, placed: dict[int, np.ndarray]) -> None:
    """Before ``sim.simulate()``: jobs already running at time 0 (a queue read from a live scheduler).

    Each row of ``placed`` must be submitted at 0; it is submitted and started now on exactly
    its GPU ids (free ones), runs for its ``run_s`` and is planned by the scheduler with its
    ``wall_s`` (both counted from now).
    """
    for j, gpus in placed.items():
        sim._submit(j)
        if sim.run.status[j] == PENDING:
            start(sim, j, np.asarray(gpus, dtype=np.int64), 0.0)
