"""Occupancy of the fabric's domains: how full each leaf group and NVLink block is, and with how many jobs.

The scheduler places gangs by domain (:mod:`twin.fleet.topology`: node, NVLink block, leaf
group, pod), so an operator reads fragmentation off the domains: a leaf group half allocated
by many small jobs cannot take a job that needs the whole group.  :func:`domain_occupancy`
counts, per leaf group (arranged by pod) and per NVLink block (a GB200-NVL72 rack), the GPUs,
the GPUs allocated to jobs, the GPUs on nodes out of service (drained, down, in repair, lemon)
and the distinct jobs there.  Pure numpy over the frame's per-GPU job map.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.fleet.topology import FleetTopology


@dataclass(frozen=True)
class DomainOccupancy:
    """One level's domains (``leaf`` or ``block``), each entry an array over them."""

    level: str
    name: list[str]  # e.g. "H1 racks R01-K01…R01-K08" for a leaf group, the rack name for a block
    pod: np.ndarray  # int [n], the pod a domain is under
    gpus_count: np.ndarray  # int [n]
    allocated_gpus_count: np.ndarray  # int [n]
    out_gpus_count: np.ndarray  # int [n], on nodes out of service
    jobs_count: np.ndarray  # int [n], distinct jobs with a GPU there

    @property
    def free_gpus_count(self) -> np.ndarray:
        return np.maximum(self.gpus_count - self.allocated_gpus_count - self.out_gpus_count, 0)

    @property
    def allocated_frac(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.gpus_count > 0, self.allocated_gpus_count / np.maximum(self.gpus_count, 1), np.nan)


def domain_occupancy(topo: FleetTopology, gpu_job: np.ndarray, nodes_out: np.ndarray, level: str) -> DomainOccupancy:
    """Occupancy of every domain at ``level`` (``leaf``, or ``block`` for the NVLink blocks only).

    ``gpu_job``: per GPU the job running there (-1 free); ``nodes_out``: ids of the nodes out of service.
    """
    state = topo.site
    node_domain = topo.domain(level)
    if level == "block":
        keep = np.flatnonzero(topo.block_nvlink)
    else:
        keep = np.arange(int(node_domain.max()) + 1 if node_domain.size else 0)
    n = int(node_domain.max()) + 1 if node_domain.size else 0
    gpu_domain = node_domain[state.gpu_node]
    gpus = np.bincount(gpu_domain, minlength=n)
    busy = np.asarray(gpu_job) >= 0
    allocated = np.bincount(gpu_domain, weights=busy, minlength=n).astype(np.int64)
    out_node = np.zeros(topo.n_nodes, dtype=bool)
    out_node[np.asarray(nodes_out, dtype=np.int64)] = True
    out = np.bincount(gpu_domain, weights=out_node[state.gpu_node] & ~busy, minlength=n).astype(np.int64)
    span = int(np.max(gpu_job, initial=0)) + 1  # (domain, job) pairs as one integer each
    pairs = np.unique(gpu_domain[busy].astype(np.int64) * span + gpu_job[busy])
    jobs = np.bincount(pairs // span, minlength=n)
    first_node = np.full(n, -1, dtype=np.int64)
    first_node[node_domain[::-1]] = np.arange(topo.n_nodes)[::-1]
    last_node = np.full(n, -1, dtype=np.int64)
    last_node[node_domain] = np.arange(topo.n_nodes)
    names = [_name(state, level, int(first_node[d]), int(last_node[d])) for d in keep.tolist()]
    pod = topo.node_pod[np.maximum(first_node[keep], 0)] if keep.size else np.zeros(0, np.int32)
    return DomainOccupancy(level, names, pod, gpus[keep], allocated[keep], out[keep], jobs[keep])


def nodes_out_ids(state, nodes: list[dict]) -> np.ndarray:
    """Node ids of a fleet frame's nodes out of service (``nodes``: dicts naming each ``node``; names the
    site does not have, e.g. from a Slurm cluster of other hosts, are left out)."""
    index = {name: i for i, name in enumerate(state.node_name)}
    ids = [index.get(str(n["node"]), -1) for n in nodes]
    return np.array([i for i in ids if i >= 0], dtype=np.int64)


def _name(state, level: str, first_node: int, last_node: int) -> str:
    if first_node < 0:
        return "(empty)"
    first, last = int(state.node_rack[first_node]), int(state.node_rack[last_node])
    if level == "block" or first == last:
        return state.rack_name[first]
    return f"{state.rack_name[first]}…{state.rack_name[last]}"
