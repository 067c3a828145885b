"""The live fleet from a Slurm read: the scheduler's own queue, teams and nodes as a :class:`FleetFrame`.

Jobs are the running and pending ones of the last :class:`ingest.sources.slurm_records.SlurmSnapshot`
(their teams are their accounts, their reasons Slurm's, their predicted start its
``expected_start_at``); a running job's GPUs are spread over its nodes as Slurm counts
them (the first ``n_gpus / n_nodes`` GPUs of each).  Nodes not in service are the ones
Slurm reports down, drained or failing, with the reason and when it was set.  Slurm
keeps no failure stream of its own, so ``failures`` is empty and quotas come from the QoS
group limits when set.
"""

from __future__ import annotations

import math

import numpy as np

from ingest.live.fleet_frame import FleetFrame

RUNNING_STATES = {"running", "completing"}
PENDING_STATES = {"pending", "requeued", "suspended"}
OUT_FLAGS = {"drain": "drained", "fail": "down", "maintenance": "in repair", "not_responding": "down"}


def _ts(dt) -> float:
    return dt.timestamp() if dt is not None else math.nan


def _node_state(node) -> str | None:
    """The nodes view's word for a Slurm node not in service, None when it is."""
    if node.state in ("down", "unknown"):
        return "down"
    for flag in node.state_flags:
        if flag in OUT_FLAGS:
            return OUT_FLAGS[flag]
    if node.state in ("drained", "draining", "drain"):
        return "drained"
    return None


def _place(state, job, gpu_job: np.ndarray, row: int) -> tuple[str, str]:
    nodes = [n for n in job.node_ids if 0 <= n < state.n_nodes]
    if not nodes:
        return "", ""
    per_node = max(1, (job.n_gpus_allocated or 0) // len(nodes))
    first = np.searchsorted(state.gpu_node, np.asarray(nodes))
    for f in first.tolist():
        gpu_job[f : f + per_node] = row
    g = int(first[0])
    hall = state.hall_name[state.rack_hall[state.gpu_rack[g]]]
    return hall, f"pod {int(max(state.switch_pod[state.gpu_leaf[g]], 0))}"


def frame_from_slurm(state, snap) -> FleetFrame:
    """The frame of one Slurm read on ``state``'s node ids."""
    jobs = [j for j in snap.jobs if j.state in RUNNING_STATES | PENDING_STATES]
    gpu_job = np.full(state.n_gpus, -1, np.int64)
    cols: dict[str, list] = {k: [] for k in ("job_id", "team", "user", "kind", "state", "reason", "hall", "pod")}
    nums: dict[str, list] = {k: [] for k in ("n_gpus", "submit_s", "start_s", "expected_start_s", "expected_end_s")}
    for row, j in enumerate(jobs):
        running = j.state in RUNNING_STATES
        hall, pod = _place(state, j, gpu_job, row) if running else ("", "")
        for k, v in (
            ("job_id", j.display_id),
            ("team", j.team),
            ("user", j.user),
            ("kind", j.partition),
            ("state", "running" if running else "pending"),
            ("reason", "" if running else j.reason or "None"),
            ("hall", hall),
            ("pod", pod),
        ):
            cols[k].append(v)
        nums["n_gpus"].append(j.n_gpus_allocated if running else j.n_gpus_requested)
        nums["submit_s"].append(_ts(j.submitted_at))
        nums["start_s"].append(_ts(j.started_at) if running else math.nan)
        nums["expected_start_s"].append(math.nan if running else _ts(j.expected_start_at))
        nums["expected_end_s"].append(_ts(j.expected_end_at) if running else math.nan)
    out = {k: np.array(v, dtype=object) for k, v in cols.items()}
    out.update({k: np.array(v, dtype=np.float64) for k, v in nums.items()})
    out["n_gpus"] = out["n_gpus"].astype(np.int64)
    return FleetFrame(
        ts_s=_ts(snap.read_at),
        source="slurm",
        jobs=out,
        teams=_teams(snap, jobs),
        nodes=_nodes(snap),
        failures={"time_s": np.zeros(0), "node": np.zeros(0, np.int64), "cause": np.zeros(0, object)},
        fragmentation=_fragmentation(snap),
        gpu_job=gpu_job,
        n_gpus=state.n_gpus,
        n_nodes=state.n_nodes,
    )


def _teams(snap, jobs) -> list[dict]:
    names = sorted({a.name for a in snap.accounts} | {j.team for j in jobs if j.team})
    out = []
    for name in names:
        mine = [j for j in jobs if j.team == name]
        out.append(
            {
                "team": name,
                "gpus_now_count": sum(j.n_gpus_allocated for j in mine if j.state in RUNNING_STATES),
                "quota_gpus_count": None,
                "borrowed_gpus_count": 0,
                "gpu_hours_24h": math.nan,
                "gpu_hours_7d": math.nan,
                "preempted_7d_count": sum(1 for j in snap.jobs if j.team == name and j.state == "preempted"),
                "pending_count": sum(1 for j in mine if j.state in PENDING_STATES),
            }
        )
    return out


def _nodes(snap) -> list[dict]:
    out = []
    for n in snap.nodes:
        word = _node_state(n)
        if word is None:
            continue
        out.append(
            {
                "node": n.name,
                "node_id": n.node_id,
                "state": word,
                "reason": n.reason,
                "since_s": _ts(n.reason_set_at),
                "failures_count": 0,
            }
        )
    return out


def _fragmentation(snap) -> dict:
    up = [n for n in snap.nodes if n.schedulable_flag]
    free = np.array([max(n.n_gpus_configured - n.n_gpus_allocated, 0) for n in up], np.int64)
    conf = np.array([n.n_gpus_configured for n in up], np.int64)
    whole = (free == conf) & (conf > 0)
    return {
        "free_gpus_count": int(free.sum()),
        "whole_free_nodes_count": int(whole.sum()),
        "stranded_gpus_count": int(free[(free > 0) & ~whole].sum()),
        "nodes_by_free_gpus": np.bincount(free, minlength=int(conf.max(initial=0)) + 1).tolist() if free.size else [],
        "backfill_fragmented_gpus_count": 0,
    }
