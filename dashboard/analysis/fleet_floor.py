"""What the fleet puts on the floor plan: the team and job per rack, racks with nodes out of service, one job's racks.

Pure functions of the site and a :class:`ingest.live.fleet_frame.FleetFrame` (the live fleet
model's or Slurm's): per rack the team and the job holding most of its allocated GPUs (racks
with no allocated GPU are "free"), the nodes not in service (down, in repair, lemon, drained)
with their reason and age and, for a job named in the URL, the racks holding its GPUs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

import numpy as np

from dashboard.present.formatting import fmt_node_age
from twin.cache import BoundedCache
from twin.site.tables import SiteTables

FREE_LABEL = "free"
OTHER_JOBS_LABEL = "other jobs"
NODES_DETAILED = 3  # nodes out of service named in a rack's hover; the rest are counted
REASON_CHARS = 60  # a node's reason in the hover, cut to this many characters
JOBS_COLOURED = 10  # the jobs holding the most racks get a colour each (the dashboard has ten category colours)
_node_index: BoundedCache[tuple[SiteTables, dict[str, int]]] = BoundedCache(4)  # id of a site → node name → id


@dataclass(frozen=True)
class FleetFloor:
    """Per rack: ``team`` index into ``teams`` (the last entry is :data:`FREE_LABEL`), ``job`` index
    into ``jobs`` (the jobs holding the most racks, then :data:`OTHER_JOBS_LABEL` and
    :data:`FREE_LABEL`), the id of the job holding most of its GPUs, GPUs allocated, nodes out of
    service with their states, and the racks of the highlighted job (None: no job asked for)."""

    teams: list[str]
    team: np.ndarray  # int [n_racks]
    jobs: list[str]
    job_category: np.ndarray  # int [n_racks]
    rack_job: list[str]  # per rack: the id of the job holding most of its GPUs, "" when free
    gpus_allocated: np.ndarray  # int [n_racks]
    nodes_out: np.ndarray  # int [n_racks]
    nodes_out_states: list[str]  # per rack: "2 nodes drained, 1 node down" or ""
    nodes_out_details: list[list[str]]  # per rack: a line per node out (the longest out first), at most a few
    job: str | None = None
    job_racks: np.ndarray | None = None  # bool [n_racks]
    job_gpus_count: int = 0

    def rack_note(self, rack: int) -> str:
        """The hover lines of a rack, joined by ``<br>`` and escaped: its team, GPUs allocated and the job
        holding most of them, how many nodes are out of service, then a line per node named."""
        name = self.teams[int(self.team[rack])]
        if name == FREE_LABEL:
            parts = ["free"]
        else:
            gpus = int(self.gpus_allocated[rack])
            held = f"{gpus} GPU{'s' if gpus != 1 else ''} allocated, most to job {escape(self.rack_job[rack])}"
            parts = [f"team {escape(name)} · {held}"]
        if self.nodes_out_states[rack]:
            parts.append(self.nodes_out_states[rack])
        return "<br>".join([" · ".join(parts), *self.nodes_out_details[rack]])


def _node_ids(state: SiteTables, nodes: list[dict]) -> np.ndarray:
    index = _node_index.get_or_make(
        id(state), lambda: (state, {n: i for i, n in enumerate(state.node_name)}), valid=lambda hit: hit[0] is state
    )[1]
    ids = [int(n["node_id"]) if "node_id" in n else index.get(str(n.get("node", "")), -1) for n in nodes]
    return np.asarray(ids, dtype=np.int64)


def _node_details(racks: np.ndarray, nodes: list[dict], now_s: float, n_racks: int) -> list[list[str]]:
    """Per rack a line per node out of service, the longest out first, at most
    :data:`NODES_DETAILED` (then how many more): "node drained for 5.2 h: reason", escaped for a hover."""
    by_rack: dict[int, list[dict]] = {}
    for rack, node in zip(racks.tolist(), nodes):
        by_rack.setdefault(rack, []).append(node)
    out: list[list[str]] = [[] for _ in range(n_racks)]
    for rack, listed in by_rack.items():
        listed.sort(key=lambda n: (_since(n), str(n.get("node", ""))))
        for node in listed[:NODES_DETAILED]:
            reason = escape(str(node.get("reason") or "").strip()[:REASON_CHARS])
            line = f"{escape(str(node.get('node', '')))} {node['state']} for {fmt_node_age(now_s - _since(node))}"
            out[rack].append(f"{line}: {reason}" if reason else line)
        if len(listed) > NODES_DETAILED:
            out[rack].append(f"and {len(listed) - NODES_DETAILED} more")
    return out


def _since(node: dict) -> float:
    """When ``node`` left service [s of the frame's clock]; +inf when not known (listed last)."""
    since = node.get("since_s")
    return float(since) if since is not None and np.isfinite(since) else math.inf


def _rack_jobs(racks: np.ndarray, gpu_job: np.ndarray, n_racks: int) -> np.ndarray:
    """Per rack the row of the job holding most of its GPUs (ties: the lower row), −1 without any.

    ``racks`` and ``gpu_job`` are per allocated GPU: its rack and its job's row.
    """
    out = np.full(n_racks, -1, np.int64)
    if gpu_job.size == 0:
        return out
    n_rows = int(gpu_job.max()) + 1
    keys, counts = np.unique(racks.astype(np.int64) * n_rows + gpu_job, return_counts=True)
    key_rack, key_row = np.divmod(keys, n_rows)
    order = np.lexsort((key_row, -counts, key_rack))  # per rack: most GPUs first, then the lower row
    ranked = key_rack[order]
    first = order[np.r_[True, ranked[1:] != ranked[:-1]]]
    out[key_rack[first]] = key_row[first]
    return out


def _job_categories(rack_row: np.ndarray, job_ids: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The :data:`JOBS_COLOURED` jobs holding the most racks (ties: the lower row), then the other
    jobs and free: their names and each rack's index into them."""
    held = rack_row >= 0
    racks_per_row = np.bincount(rack_row[held], minlength=job_ids.size)
    rows = np.flatnonzero(racks_per_row)
    top = rows[np.lexsort((rows, -racks_per_row[rows]))][:JOBS_COLOURED]
    category = np.full(rack_row.size, top.size + 1, np.int64)  # free
    rank = np.full(job_ids.size, top.size, np.int64)  # other jobs
    rank[top] = np.arange(top.size)
    category[held] = rank[rack_row[held]]
    return [str(j) for j in job_ids[top]] + [OTHER_JOBS_LABEL, FREE_LABEL], category


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
    job_ids = np.asarray(frame.jobs["job_id"], dtype=object)
    rack_row = _rack_jobs(racks[busy], gpu_job[busy], state.n_racks)
    jobs, job_category = _job_categories(rack_row, job_ids)
    rack_job = [str(job_ids[r]) if r >= 0 else "" for r in rack_row.tolist()]
    node_ids = _node_ids(state, frame.nodes)
    known = node_ids >= 0
    out_racks = state.node_rack[node_ids[known]]
    nodes_out = np.bincount(out_racks, minlength=state.n_racks)
    states: dict[int, dict[str, int]] = {}  # only the racks with nodes out: a few of 1,568
    placed = [n for n, k in zip(frame.nodes, known.tolist()) if k]  # the nodes out that the site has
    for rack, node in zip(out_racks.tolist(), placed):
        counted = states.setdefault(rack, {})
        counted[node["state"]] = counted.get(node["state"], 0) + 1
    notes = [""] * state.n_racks
    for rack, d in states.items():
        notes[rack] = ", ".join(
            f"{k} node{'s' if k > 1 else ''} {s}" for s, k in sorted(d.items(), key=lambda i: (-i[1], i[0]))
        )
    details = _node_details(out_racks, placed, frame.ts_s, state.n_racks)
    job_racks, job_gpus = None, 0
    if job:
        rows = np.flatnonzero(frame.jobs["job_id"] == job)
        mine = np.isin(gpu_job, rows) if rows.size else np.zeros(gpu_job.size, dtype=bool)
        job_racks = np.bincount(racks[mine], minlength=state.n_racks) > 0
        job_gpus = int(mine.sum())
    return FleetFloor(
        teams + [FREE_LABEL],
        team,
        jobs,
        job_category,
        rack_job,
        allocated,
        nodes_out,
        notes,
        details,
        job,
        job_racks,
        job_gpus,
    )
