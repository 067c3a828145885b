"""Static facts about every job of a workload on a site, computed once as arrays.

What the scheduler asks again and again but never changes while a workload runs: the GPU
type a job needs (a code of the site's types, ``-1`` any), the whole nodes it takes (``0``
for a job that shares a node, :func:`twin.fleet.placement.nodes_needed`), whether the
count shortcuts of the pass cover it, whether it may preempt or reclaim, and whether the
site could ever hold it.
"""

from __future__ import annotations

import numpy as np

from twin.fleet.policy import Policy
from twin.fleet.topology import FleetTopology
from twin.fleet.workload import TOPOLOGIES, JobTable

_LARGEST_NODES = -2  # SiteFit key: the nodes of the site's largest size
_SHARING_TOPOLOGIES = np.array([t in ("any", "leaf", "pod") for t in TOPOLOGIES])


def gpu_type_codes(table: JobTable, codes: dict[str, int], unknown: int) -> np.ndarray:
    """Per job, the code of the GPU type it needs (-1 any; ``unknown`` for a type the site lacks)."""
    names = {name: codes.get(name, unknown) for name in set(table.gpu_type)}
    names[""] = -1
    return np.fromiter((names[g] for g in table.gpu_type), dtype=np.int64, count=table.n_jobs)


def gpus_per_node_of(topo: FleetTopology, gpu_type: np.ndarray) -> np.ndarray:
    """GPUs per node a job of each GPU type code gets (the type's first node; the largest node for any type)."""
    largest = int(topo.node_gpus.max()) if topo.n_nodes else 0
    per_type = np.full(len(topo.gpu_type_names) + 1, largest, np.int64)
    for t in range(len(topo.gpu_type_names)):
        sel = np.flatnonzero(topo.node_gpu_type == t)
        if sel.size:
            per_type[t] = int(topo.node_gpus[sel[0]])
    known = (gpu_type >= 0) & (gpu_type < len(topo.gpu_type_names))
    return np.where(known, per_type[np.where(known, gpu_type, -1)], largest)


def whole_nodes(table: JobTable, topo: FleetTopology, gpu_type: np.ndarray) -> np.ndarray:
    """Whole nodes each job takes (0: it shares a node), as :func:`twin.fleet.placement.nodes_needed`."""
    gpn = np.maximum(gpus_per_node_of(topo, gpu_type), 1)
    shares = (table.n_gpus < gpn) & ~table.exclusive & _SHARING_TOPOLOGIES[table.topology]
    return np.where(shares, 0, -(-table.n_gpus // gpn)).astype(np.int64)


def special_jobs(table: JobTable, policy: Policy) -> np.ndarray:
    """Jobs the pass's count shortcuts do not cover: a GPU type, or a user holding a reservation."""
    resv_users = {u for r in policy.reservations if not r.maintenance for u in r.users}
    typed = np.fromiter((bool(g) for g in table.gpu_type), dtype=bool, count=table.n_jobs)
    users = np.array([name in resv_users for name in table.user_names], bool)
    return typed | (users[table.user] if users.size else np.zeros(table.n_jobs, bool))


def may_preempt(table: JobTable, policy: Policy) -> np.ndarray:
    """Jobs whose QoS may preempt, or whose team may reclaim lent quota."""
    preempting = {q.name for q in policy.qos if q.preempt}
    reclaiming = {q.team for q in policy.quotas if q.cohort} if policy.reclaim else set()
    by_qos = np.array([name in preempting for name in table.qos_names], bool)
    by_team = np.array([name in reclaiming for name in table.team_names], bool)
    out = np.zeros(table.n_jobs, bool)
    if by_qos.size:
        out |= by_qos[table.qos]
    if by_team.size:
        out |= by_team[table.team]
    return out


class SiteFit:
    """Whether the site could ever hold a request (by GPU type, topology and size), cached per type and level."""

    def __init__(self, topo: FleetTopology) -> None:
        self.topo = topo
        self._cache: dict[tuple[int, str], tuple[int, int]] = {}

    def _capacity(self, gpu_type: int, level: str) -> tuple[int, int]:
        """(most GPUs on one node, most nodes in one domain of ``level``) of the nodes of ``gpu_type``."""
        key = (gpu_type, level)
        hit = self._cache.get(key)
        if hit is None:
            topo = self.topo
            if gpu_type >= 0:
                mask = topo.node_gpu_type == gpu_type
            elif gpu_type == _LARGEST_NODES:  # a gang of any type stays on nodes of the largest size
                mask = topo.node_gpus == topo.max_node_gpus
            else:
                mask = np.ones(topo.n_nodes, bool)
            if not mask.any():
                hit = (0, 0)
            else:
                dom = {"leaf": topo.node_leaf, "pod": topo.node_pod}.get(level)
                nodes = int(mask.sum()) if dom is None else int(np.bincount(dom[mask]).max())
                hit = (int(topo.node_gpus[mask].max()), nodes)
            self._cache[key] = hit
        return hit

    def fits(self, gpu_type: int, topology: str, n_gpus: int, k: int) -> bool:
        """Whether a job of ``n_gpus`` (``k`` whole nodes, 0 shared) with this requirement fits the empty site."""
        if k and gpu_type < 0 and len(self.topo.gpu_type_names) > 1:
            gpu_type = _LARGEST_NODES  # as the placement: whole nodes of one size, the largest
        most_gpus, most_nodes = self._capacity(gpu_type, topology if topology in ("leaf", "pod") else "site")
        if most_gpus == 0:
            return False
        return most_gpus >= n_gpus if k == 0 else most_nodes >= k
