"""When will each pending Slurm job start?  The fleet scheduler run forward from the live queue.

:func:`predict` maps a read (:func:`ingest.slurm.fleet.map_snapshot`) and, per group of
partitions, runs :class:`twin.fleet.simulate.FleetSim` from time 0 (the read) with the
controller's own configuration: multifactor order on Slurm's priorities, the main
scheduler at every event (``default_queue_depth`` jobs), conservative backfill every
``bf_interval`` up to ``bf_max_job_test`` reservations, jobs planned by their time limits
and ending after their expected run times.  Groups are run in the order their
cross-group dependencies need (a job waiting on another group's job is submitted when
that job is predicted to end).  Each pending job gets a predicted start (``None`` when it
cannot start: held, over a partition limit, waiting on such a job, or beyond the horizon)
and its place in the predicted start order, beside Slurm's own ``expected_start_at``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

import numpy as np

from ingest.slurm.fleet import COMPLETING_S, FleetGroup, FleetMapping, map_snapshot
from ingest.slurm.plan import plan_group
from ingest.slurm.runtime import RunTimes
from ingest.sources.slurm_records import SlurmSnapshot, record_json
from twin.fleet import lifecycle
from twin.fleet.simulate import FleetSim, SimOptions
from twin.fleet.topology import FleetTopology
from twin.fleet.workload import job_table

HORIZON_S = 400 * 86_400.0  # starts further out than this are not predicted
METHODS = ("auto", "simulate", "plan")
# [E] "auto" simulates a group whose running jobs plus twice its pending jobs (its events) stay
# within this; every event runs a scheduling pass over the whole site (a few ms on colossus's
# 12,544 nodes), so beyond it the one-pass plan (ingest.slurm.plan) keeps a poll within ~1 s
SIMULATE_MAX_EVENTS = 400


@dataclass
class JobPrediction:
    """One pending job (or array task): Slurm's estimate and the twin's prediction."""

    key: str
    job_id: int
    partition: str
    reason: str
    priority: float | None
    expected_start_at: datetime | None  # Slurm's (squeue --start)
    predicted_start_at: datetime | None  # the twin's; None: cannot start (see why_not)
    predicted_order: int | None  # 1 = predicted to start first
    run_estimate_s: float | None
    run_estimate_from: str  # history | time_limit
    why_not: str = ""

    def as_dict(self) -> dict:
        out = record_json(self)
        out["predicted_wait_s"] = None
        return out


@dataclass
class Prediction:
    """Predicted starts of every pending job of one read."""

    now: datetime
    jobs: list[JobPrediction]
    scheduler: dict
    left_out: dict[str, str]
    notes: list[str]
    groups_count: int
    predict_s: float = 0.0
    sim_counts: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        """JSON-ready (``ingest once --source slurm --predict --json`` prints it as ``prediction``)."""
        rows = []
        for j in self.jobs:
            row = j.as_dict()
            if j.predicted_start_at is not None:
                row["predicted_wait_s"] = (j.predicted_start_at - self.now).total_seconds()
            rows.append(row)
        return {
            "predicted_at": self.now.isoformat().replace("+00:00", "Z"),
            "scheduler": self.scheduler,
            "groups_count": self.groups_count,
            "n_jobs_predicted": sum(1 for j in self.jobs if j.predicted_start_at is not None),
            "n_jobs_never": sum(1 for j in self.jobs if j.predicted_start_at is None),
            "n_jobs_left_out": len(self.left_out),
            "left_out": dict(list(self.left_out.items())[:20]),
            "notes": self.notes[:20],
            "predict_s": round(self.predict_s, 4),
            "jobs": rows,
        }


def predict(
    snapshot: SlurmSnapshot,
    topo: FleetTopology,
    *,
    now: datetime | None = None,
    run_times: RunTimes | None = None,
    method: str = "auto",
    completing_s: float = COMPLETING_S,
) -> Prediction:
    """Predicted start of every pending job of ``snapshot`` on the site of ``topo`` (see module docstring).

    ``method``: ``simulate`` (the fleet's event simulation), ``plan`` (one conservative
    backfill pass, :mod:`ingest.slurm.plan`) or ``auto`` (simulate a group of at most
    :data:`SIMULATE_MAX_EVENTS` events, plan a larger one).
    """
    if method not in METHODS:
        raise ValueError(f"prediction method {method!r}: expected one of {', '.join(METHODS)}")
    t0 = time.perf_counter()
    mapping = map_snapshot(snapshot, topo, now=now, run_times=run_times, completing_s=completing_s)
    starts: dict[str, float] = {}
    ends: dict[str, float] = {}
    counts: dict[str, int] = {"simulated_groups_count": 0, "planned_groups_count": 0}
    for g in _group_order(mapping):
        group = mapping.groups[g]
        n_pending = sum(1 for row in group.rows if not row.running)
        events = len(group.running) + 2 * n_pending
        if method == "plan" or (method == "auto" and events > SIMULATE_MAX_EVENTS):
            group_starts, group_ends = plan_group(group, mapping.topo, ends)
            starts.update(group_starts)
            ends.update(group_ends)
            counts["planned_groups_count"] += 1
            continue
        sim = _run_group(mapping, group, ends)
        run = sim.run
        for i, row in enumerate(group.rows):
            if not row.running:
                starts[row.key] = float(run.first_start_s[i])
            ends[row.key] = float(run.end_s[i])
        for k, v in sim.counts.items():
            counts[k] = counts.get(k, 0) + int(v)
        counts["simulated_groups_count"] += 1
    jobs = _job_predictions(mapping, starts)
    return Prediction(
        now=mapping.now,
        jobs=jobs,
        scheduler=mapping.config.as_dict(),
        left_out=mapping.left_out,
        notes=mapping.notes,
        groups_count=len(mapping.groups),
        predict_s=time.perf_counter() - t0,
        sim_counts=counts,
    )


def _group_order(mapping: FleetMapping) -> list[int]:
    """Groups in an order where each runs after the groups its jobs wait on (cycles: index order, noted)."""
    owner = {row.key: g for g, group in enumerate(mapping.groups) for row in group.rows}
    needs = [{owner[k] for keys in group.cross_deps.values() for k in keys if k in owner} for group in mapping.groups]
    order: list[int] = []
    left = set(range(len(mapping.groups)))
    while left:
        ready = sorted(g for g in left if not (needs[g] - set(order)))
        if not ready:
            mapping.notes.append("partition groups wait on each other in a cycle: the later ones' waits are ignored")
            ready = [min(left)]
        order.extend(ready)
        left -= set(ready)
    return order


def _run_group(mapping: FleetMapping, group: FleetGroup, ends: dict[str, float]) -> FleetSim:
    """The fleet simulation of one group from time 0, its cross-group waits resolved from ``ends``."""
    jobs = list(group.jobs)
    for i, keys in group.cross_deps.items():
        known = [ends[k] for k in keys if k in ends]
        at = max(known, default=0.0)
        if known and not all(math.isfinite(t) for t in known):
            at = HORIZON_S * 2  # it waits on a job that never ends: beyond the horizon
        jobs[i] = replace(jobs[i], submit_s=max(jobs[i].submit_s, at))
    table = job_table(jobs, qos_names=[q.name for q in group.policy.qos])
    sim = FleetSim(mapping.topo, table, group.policy, SimOptions(horizon_s=HORIZON_S, failures=False))
    cluster = sim.run.cluster
    for nodes, state, reason in group.out_of_service:
        if nodes.size:
            cluster.set_state(nodes, state, 0.0, reason)
    lifecycle.start_running(sim, group.running)
    sim.simulate()
    return sim


def _job_predictions(mapping: FleetMapping, starts: dict[str, float]) -> list[JobPrediction]:
    """One prediction per pending job or task, ordered by predicted start (then Slurm's queue order)."""
    out = []
    for group in mapping.groups:
        for row in group.rows:
            if row.running:
                continue
            at = starts.get(row.key, math.nan)
            job = row.job
            out.append(
                JobPrediction(
                    key=row.key,
                    job_id=job.job_id,
                    partition=job.partition,
                    reason=job.reason,
                    priority=job.priority,
                    expected_start_at=job.expected_start_at,
                    predicted_start_at=mapping.now + timedelta(seconds=at) if math.isfinite(at) else None,
                    predicted_order=None,
                    run_estimate_s=row.run_s,
                    run_estimate_from=row.run_from,
                    why_not="" if math.isfinite(at) else "beyond the horizon or waiting on a job that cannot start",
                )
            )
    for key, why in mapping.never.items():
        out.append(JobPrediction(key, int(key.split("_")[0]), "", why, None, None, None, None, None, "", why))
    timed = sorted(
        (p for p in out if p.predicted_start_at is not None),
        key=lambda p: (p.predicted_start_at, -(p.priority or 0.0), p.job_id, p.key),
    )
    for rank, p in enumerate(timed, 1):
        p.predicted_order = rank
    untimed = [p for p in out if p.predicted_start_at is None]
    return timed + sorted(untimed, key=lambda p: (p.job_id, p.key))


def order_accuracy(predicted: dict[str, float], actual: dict[str, float]) -> float:
    """Share of job pairs whose start order the prediction gets right (Kendall-style concordant pairs).

    Times are seconds on any common clock; only keys with both times finite count.  Pairs
    that really started in the same second are left out (Slurm's times are whole seconds,
    so their order is not observable); a predicted tie counts half.  ``nan`` when no pair
    can be judged.  Time O(n²), memory O(n).
    """
    keys = [k for k in actual if k in predicted and math.isfinite(predicted[k]) and math.isfinite(actual[k])]
    p = np.array([predicted[k] for k in keys])
    a = np.array([actual[k] for k in keys])
    total, pairs = 0.0, 0
    for i in range(len(keys) - 1):
        da = np.sign(a[i + 1 :] - a[i])
        dp = np.sign(p[i + 1 :] - p[i])
        judged = da != 0
        total += float(np.where(dp == da, 1.0, np.where(dp == 0, 0.5, 0.0))[judged].sum())
        pairs += int(judged.sum())
    return total / pairs if pairs else math.nan


def start_errors_s(predicted: dict[str, float], actual: dict[str, float]) -> np.ndarray:
    """|predicted − actual| start [s] of every key with both times finite."""
    keys = [k for k in actual if k in predicted and math.isfinite(predicted[k]) and math.isfinite(actual[k])]
    return np.array([abs(predicted[k] - actual[k]) for k in keys], dtype=np.float64)
