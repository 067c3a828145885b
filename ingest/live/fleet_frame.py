"""What the pages read of the live fleet: one frame of jobs, teams, nodes and failures, as arrays.

A :class:`FleetFrame` is built on demand from the fleet simulation the live hub runs
(:func:`frame_from_sim`) or from the last Slurm read (:func:`frame_from_slurm`); it is
never changed after it is built, so a page may sort, filter and page it while the hub
ticks on.  Times are UTC epoch seconds (NaN: not known); job columns cover the running
and pending jobs only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from twin.fleet import failures as node_failures
from twin.fleet.cluster import NODE_STATES, UP
from twin.fleet.limits import borrowing
from twin.fleet.simulate import FleetSim
from twin.fleet.state import PENDING, REASONS, RUNNING
from twin.fleet.workload import KINDS

JOB_COLUMNS = (
    "job_id",
    "team",
    "user",
    "kind",
    "state",
    "n_gpus",
    "submit_s",
    "start_s",
    "expected_start_s",
    "expected_end_s",
    "reason",
    "hall",
    "pod",
)
# node states the nodes view lists, in the fleet's words → the operator's
NODE_STATE_TEXT = {"down": "down", "check": "in repair", "excluded": "lemon", "drain": "drained"}


@dataclass(frozen=True)
class FleetFrame:
    """The fleet at one instant (see module docstring).

    ``jobs``: column name → array (``JOB_COLUMNS``); ``teams``: one dict per team;
    ``nodes``: the nodes not in service (node, state, reason, since_s, failures_count);
    ``failures``: every node failure so far (time_s, node, cause) as arrays;
    ``gpu_job``: per GPU the row in ``jobs`` of the job running there, -1 free.
    """

    ts_s: float
    source: str  # "fleet model" or "slurm"
    jobs: dict[str, np.ndarray]
    teams: list[dict]
    nodes: list[dict]
    failures: dict[str, np.ndarray]
    fragmentation: dict
    gpu_job: np.ndarray
    n_gpus: int
    n_nodes: int
    node_failures: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    elapsed_s: float = 0.0  # time the failure counts cover

    @property
    def n_jobs(self) -> int:
        return int(self.jobs["job_id"].size)

    def count(self, state: str) -> int:
        return int((self.jobs["state"] == state).sum())


def _place_names(state, gpus: list, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hall and pod of each running row's first GPU."""
    hall = np.full(rows.size, "", object)
    pod = np.full(rows.size, "", object)
    if rows.size == 0:
        return hall, pod
    first = np.array([int(gpus[j][0]) for j in rows.tolist()], np.int64)
    halls = np.asarray(state.hall_name, dtype=object)
    hall = halls[state.rack_hall[state.gpu_rack[first]]]
    pod_id = np.maximum(state.switch_pod[state.gpu_leaf[first]], 0)
    pod = np.char.add("pod ", pod_id.astype(str)).astype(object)
    return hall, pod


def frame_from_sim(
    sim: FleetSim, origin_s: float, expected: dict[int, float], teams: list[dict], failures_upto: int
) -> FleetFrame:
    """The frame of a fleet simulation whose time 0 is ``origin_s`` (epoch seconds)."""
    run, tab = sim.run, sim.run.table
    now = run.now_s
    rows = np.flatnonzero((run.status == RUNNING) | (run.status == PENDING))
    running = run.status[rows] == RUNNING
    exp = np.full(rows.size, math.nan)
    if expected:
        pos = {int(j): i for i, j in enumerate(rows.tolist())}
        for j, t in expected.items():
            if j in pos and not running[pos[j]]:
                exp[pos[j]] = origin_s + t
    end = np.where(running, origin_s + run.last_start_s[rows] + tab.wall_s[rows], math.nan)
    hall = np.full(rows.size, "", object)
    pod = np.full(rows.size, "", object)
    hall[running], pod[running] = _place_names(run.topo.site, run.gpus, rows[running])
    reason = np.asarray(REASONS, dtype=object)[run.reason_code[rows]]
    jobs = {
        "job_id": np.array([tab.jobs[j].job_id for j in rows.tolist()], dtype=object),
        "team": np.asarray(tab.team_names, dtype=object)[tab.team[rows]],
        "user": np.asarray(tab.user_names, dtype=object)[tab.user[rows]],
        "kind": np.asarray(KINDS, dtype=object)[tab.kind[rows]],
        "state": np.where(running, "running", "pending").astype(object),
        "n_gpus": np.where(running, run.n_alloc[rows], tab.n_gpus[rows]).astype(np.int64),
        "submit_s": origin_s + tab.submit_s[rows],
        "start_s": np.where(running, origin_s + run.last_start_s[rows], math.nan),
        "expected_start_s": exp,
        "expected_end_s": end,
        "reason": np.where(running, "", reason).astype(object),
        "hall": hall,
        "pod": pod,
    }
    # per GPU: the frame row of its job (the sim's row → the frame's)
    to_frame = np.full(run.n_jobs + 1, -1, np.int64)
    to_frame[rows] = np.arange(rows.size)
    gpu_job = to_frame[run.cluster.gpu_job]  # gpu_job -1 → the sentinel slot, -1
    fails = sim._fails
    upto = min(failures_upto, fails.time_s.size) if fails is not None else 0
    return FleetFrame(
        ts_s=origin_s + now,
        source="fleet model",
        jobs=jobs,
        teams=teams,
        nodes=_sim_nodes(sim, origin_s),
        failures={
            "time_s": origin_s + (fails.time_s[:upto] if upto else np.zeros(0)),
            "node": fails.node[:upto] if upto else np.zeros(0, np.int64),
            "cause": np.asarray(node_failures.CAUSES, dtype=object)[fails.cause[:upto]]
            if upto
            else np.zeros(0, object),
        },
        fragmentation=_sim_fragmentation(sim),
        gpu_job=gpu_job,
        n_gpus=run.topo.n_gpus,
        n_nodes=run.topo.n_nodes,
        node_failures=run.cluster.node_failures.copy(),
        elapsed_s=now,
    )


def _sim_nodes(sim: FleetSim, origin_s: float) -> list[dict]:
    cl = sim.run.cluster
    state = sim.run.topo.site
    out = []
    for n in np.flatnonzero(cl.node_state != UP).tolist():
        out.append(
            {
                "node": state.node_name[n],
                "node_id": n,
                "state": NODE_STATE_TEXT.get(NODE_STATES[int(cl.node_state[n])], NODE_STATES[int(cl.node_state[n])]),
                "reason": cl.node_reason[n] if n < len(cl.node_reason) else "",
                "since_s": origin_s + float(cl.node_since_s[n]),
                "failures_count": int(cl.node_failures[n]),
            }
        )
    return out


def _sim_fragmentation(sim: FleetSim) -> dict:
    """Free GPUs, whole free nodes, free GPUs stranded on partly used nodes, and the free-GPU histogram."""
    cl, topo = sim.run.cluster, sim.run.topo
    usable = cl.node_state == UP
    free = cl.node_free.astype(np.int64)
    whole = usable & (free == topo.node_gpus)
    partial = usable & (free > 0) & ~whole
    return {
        "free_gpus_count": int(free[usable].sum()),
        "whole_free_nodes_count": int(whole.sum()),
        "stranded_gpus_count": int(free[partial].sum()),
        "nodes_by_free_gpus": np.bincount(free[usable], minlength=int(topo.node_gpus.max(initial=0)) + 1).tolist(),
        "backfill_fragmented_gpus_count": int(sim.last_frag),
    }


def team_rows(sim: FleetSim, history) -> list[dict]:
    """Per team: GPUs now against quota, borrowed, GPU-hours over 24 h and 7 days, preemptions over 7 days."""
    run = sim.run
    q = sim.quota
    gpus = run.acct.team_gpus
    borrowed = borrowing(q, gpus)
    h24, h7d = history.gpu_hours(86_400.0), history.gpu_hours(7 * 86_400.0)
    pre7d = history.preemptions(7 * 86_400.0)
    out = []
    for t, name in enumerate(run.table.team_names):
        out.append(
            {
                "team": name,
                "gpus_now_count": int(gpus[t]),
                "quota_gpus_count": int(q.nominal[t]) if q.nominal[t] >= 0 else None,
                "borrowed_gpus_count": int(borrowed[t]),
                "gpu_hours_24h": float(h24[t]) if t < h24.size else 0.0,
                "gpu_hours_7d": float(h7d[t]) if t < h7d.size else 0.0,
                "preempted_7d_count": int(pre7d[t]) if t < pre7d.size else 0,
                "pending_count": int(((run.status == PENDING) & (run.table.team == t)).sum()),
            }
        )
    return out
