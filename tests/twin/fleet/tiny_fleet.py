"""Tiny fleets to check schedules by hand: the 8-node tiny site with one leaf group per rack and two pods.

Nodes 0–7, two per rack (racks 0–3); leaf group = rack; pod 0 = racks 0, 1, pod 1 = racks 2, 3;
8 GPUs per node, 64 GPUs.  :func:`sim` runs jobs given as ``(id, gpus, submit_s, run_s, wall_s, extra)``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tests.twin.tiny_site import tiny_site
from twin.fleet.policy import Policy
from twin.fleet.simulate import FleetSim, SimOptions
from twin.fleet.topology import fleet_topology
from twin.fleet.workload import FleetJob, job_table


def tiny_fleet_site(**kw):
    """The tiny site with leaf groups per rack and two pods (see the module docstring)."""
    s = tiny_site(**kw)
    pods = s.switch_pod.copy()
    pods[2:4] = 1  # leaves L2, L3 in pod 1
    return dataclasses.replace(s, rack_array=np.arange(4, dtype=np.int32), switch_pod=pods)


def job(job_id, gpus, submit_s, run_s, wall_s=None, **extra) -> FleetJob:
    extra.setdefault("team", "t")
    extra.setdefault("user", "u")
    return FleetJob(job_id=job_id, submit_s=submit_s, n_gpus=gpus, run_s=run_s, wall_s=wall_s or run_s, **extra)


def make_sim(jobs, policy: Policy | None = None, horizon_s: float = 10_000.0, site=None, failures=False, **opts):
    policy = policy or Policy(ordering="fcfs", backfill="easy", placement="flat", power="off", bf_interval_s=0.0)
    state = site if site is not None else tiny_fleet_site()
    table = job_table(jobs, teams=[q.team for q in policy.quotas], qos_names=[q.name for q in policy.qos])
    return FleetSim(fleet_topology(state), table, policy, SimOptions(horizon_s=horizon_s, failures=failures, **opts))


def starts(sim) -> dict[str, float]:
    """Job id → first start time."""
    tab = sim.run.table
    return {j.job_id: float(sim.run.first_start_s[i]) for i, j in enumerate(tab.jobs)}


def ends(sim) -> dict[str, float]:
    tab = sim.run.table
    return {j.job_id: float(sim.run.end_s[i]) for i, j in enumerate(tab.jobs)}
