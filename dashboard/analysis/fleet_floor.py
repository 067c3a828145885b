"""What the fleet puts on the floor plan: the team per rack, racks with nodes out of service, one job's racks.

Pure functions of the site and a :class:`ingest.live.fleet_frame.FleetFrame` (the live fleet
model's or Slurm's): per rack the team holding most of its allocated GPUs (racks with no
allocated GPU are "free"), the nodes not in service (down, in repair, lemon, drained) and,
for a job named in the URL, the racks holding its GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.cache import BoundedCache
from twin.site.tables import SiteTables

FREE_LABEL = "free"
_node_index: BoundedCache[tuple[SiteTables, dict[str, int]]] = BoundedCache(4)  # id of a site → node name → id


@dataclass(frozen=True)
class FleetFloor:
    """Per rack: ``team`` index into ``teams`` (the last entry is :data:`FREE_LABEL`), GPUs allocated,
    nodes out of service with their states, and the racks of the highlighted job (None: no job asked for)."""

    teams: list[str]
    team: np.ndarray  # int [n_racks]
    gpus_allocated: np.ndarray  # int [n_racks]
    nodes_out: np.ndarray  # int [n_racks]
    nodes_out_states: list[str]  # per rack: "2 drained, 1 down" or ""
    job: str | None = None
    job_racks: np.ndarray | None = None  # bool [n_racks]
    job_gpus_count: int = 0

    def rack_note(self, rack: int) -> str:
        """The hover line of a rack: its team and GPUs held, nodes out of service."""
        name = self.teams[int(self.team[rack])]
        parts = [f"team {name} · {int(self.gpus_allocated[rack])} GPUs allocated" if name != FREE_LABEL else "free"]
        if self.nodes_out_states[rack]:
            parts.append(self.nodes_out_states[rack])
        return " · ".join(parts)


def _node_ids(state: SiteTables, nodes: list[dict]) -> np.ndarray:
    index = _node_index.get_or_make(
        id(state), lambda: (state, {n: i for i, n in enumerate(state.node_name)}), valid=lambda hit: hit[0] is state
    )[1]
    ids = [int(n["node_id"]) if "node_id" in n else index.get(str(n.get("node", "")), -1) for n in nodes]
    return np.asarray(ids, dtype=np.int64)


def fleet_floor(state: SiteTables, frame, job: str | None = None) -> FleetFloor:
    """The floor's fleet layer of ``frame`` on ``state`` (``job``: the job id to outline, if any)."""
    job_teams = np.asarray(frame.jobs["team"], dtype=object).astype(str)
    teams = [str(t["team"]) for t in frame.teams]  # the fleet's order: the jobs page's team colours
    teams += sorted(set(np.unique(job_teams).tolist()) - set(teams))
    n_teams = len(teams)
    gpu_job = np.asarray(frame.gpu_job, dtype=np.int64)[: state.n_gpus]
    racks = state.gpu_rack[: gpu_job.size]
    busy = gpu_job >= 0
    order = np.argsort(np.asarray(teams, dtype=str))
    job_team = (
        order[np.searchsorted(np.asarray(teams, dtype=str)[order], job_teams)]
        if job_teams.size
        else np.zeros(0, np.int64)
    )
    counts = np.bincount(racks[busy] * n_teams + job_team[gpu_job[busy]], minlength=state.n_racks * n_teams).reshape(
        state.n_racks, max(n_teams, 1)
    )
    allocated = counts.sum(axis=1)
    team = np.where(allocated > 0, counts.argmax(axis=1), n_teams)
    node_ids = _node_ids(state, frame.nodes)
    known = node_ids >= 0
    out_racks = state.node_rack[node_ids[known]]
    nodes_out = np.bincount(out_racks, minlength=state.n_racks)
    states: dict[int, dict[str, int]] = {}  # only the racks with nodes out: a few of 1,568
    for rack, node in zip(out_racks.tolist(), [n for n, k in zip(frame.nodes, known.tolist()) if k]):
        counted = states.setdefault(rack, {})
        counted[node["state"]] = counted.get(node["state"], 0) + 1
    notes = [""] * state.n_racks
    for rack, d in states.items():
        notes[rack] = ", ".join(
            f"{k} node{'s' if k > 1 else ''} {s}" for s, k in sorted(d.items(), key=lambda i: (-i[1], i[0]))
        )
    job_racks, job_gpus = None, 0
    if job:
        rows = np.flatnonzero(frame.jobs["job_id"] == job)
        mine = np.isin(gpu_job, rows) if rows.size else np.zeros(gpu_job.size, dtype=bool)
        job_racks = np.bincount(racks[mine], minlength=state.n_racks) > 0
        job_gpus = int(mine.sum())
    return FleetFloor(teams + [FREE_LABEL], team, allocated, nodes_out, notes, job, job_racks, job_gpus)
