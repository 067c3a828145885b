"""The site as the scheduler sees it: nodes, their GPUs and the fabric domains they sit in.

Domains, from small to large, as Slurm's ``topology/tree`` and ``topology/block`` plugins
describe them ([Slurm-Topology]):

* **node** — the GPUs of one server (its NVLink domain on an HGX node);
* **block** — an NVLink block: the rack of a GB200-NVL72 (72 GPUs on one NVLink switch
  system, [NVIDIA-GB200-NVL72]); on a site without NVLink racks the rack itself, so that
  ``--placement block`` still means "as few racks as possible";
* **leaf** — a leaf group: the nodes whose NICs share the same rail leaves (one *array* of
  racks on a rail-optimised fabric, :mod:`twin.site.fabricgen`), i.e. traffic between them
  stays under one leaf per rail;
* **pod** — the leaves under one set of spines (full bisection inside);
* **site** — everything, through the core.

GPUs of a node must be numbered contiguously (node-major), as the site loader does.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from twin.site.tables import SiteTables

LEVELS = ("node", "block", "leaf", "pod", "site")


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


class TopologyError(ValueError):
    """The site's GPUs are not laid out node-major."""


@dataclass(frozen=True)
class FleetTopology:
    """Static per-node arrays of a site (read-only)."""

    site: SiteTables
    node_gpus: np.ndarray  # int16 [n_nodes], GPUs per node
    node_first_gpu: np.ndarray  # int64 [n_nodes]
    node_gpu_type: np.ndarray  # int16 [n_nodes], index into gpu_type_names
    gpu_type_names: list[str]
    node_block: np.ndarray  # int32 [n_nodes], NVLink block (or rack)
    node_leaf: np.ndarray  # int32 [n_nodes], leaf group
    node_pod: np.ndarray  # int32 [n_nodes]
    block_nvlink: np.ndarray  # bool [n_blocks]: the block is one NVLink domain larger than a node
    n_blocks: int
    n_leaves: int
    n_pods: int
    uniform_nodes: bool = True  # set from node_gpus after construction

    def __post_init__(self) -> None:
        uniform = self.node_gpus.size == 0 or bool((self.node_gpus == self.node_gpus[0]).all())
        object.__setattr__(self, "uniform_nodes", uniform)  # every node has as many GPUs: count shortcuts hold

    @property
    def n_nodes(self) -> int:
        return int(self.node_gpus.size)

    @functools.cached_property
    def max_node_gpus(self) -> int:
        """GPUs of the largest node (0 without nodes)."""
        return int(self.node_gpus.max()) if self.node_gpus.size else 0

    @functools.cached_property
    def n_gpus(self) -> int:
        return int(self.node_gpus.sum())

    @functools.cached_property
    def _type_masks(self) -> dict[int, np.ndarray]:
        return {}

    def type_mask(self, gpu_type: int) -> np.ndarray:
        """Nodes of ``gpu_type`` (mask, kept: callers must not change it in place)."""
        mask = self._type_masks.get(gpu_type)
        if mask is None:
            mask = self._type_masks[gpu_type] = _read_only(self.node_gpu_type == gpu_type)
        return mask

    @functools.cached_property
    def _type_node_gpus(self) -> dict[int, int]:
        return {}

    def type_gpus_per_node(self, gpu_type: int) -> int:
        """GPUs of the first node of ``gpu_type`` (0 when the site has none)."""
        gpn = self._type_node_gpus.get(gpu_type)
        if gpn is None:
            sel = np.flatnonzero(self.type_mask(gpu_type))
            gpn = self._type_node_gpus[gpu_type] = int(self.node_gpus[sel[0]]) if sel.size else 0
        return gpn

    @functools.cached_property
    def _node_ids(self) -> np.ndarray:
        return _read_only(np.arange(self.n_nodes, dtype=np.int32))

    @functools.cached_property
    def _one_site(self) -> np.ndarray:
        return _read_only(np.zeros(self.n_nodes, np.int32))

    def domain(self, level: str) -> np.ndarray:
        """Domain id of every node at ``level`` (``node`` … ``site``; kept: callers must not change it in place)."""
        if level == "node":
            return self._node_ids
        if level == "block":
            return self.node_block
        if level == "leaf":
            return self.node_leaf
        if level == "pod":
            return self.node_pod
        if level == "site":
            return self._one_site
        raise TopologyError(f"unknown level {level!r}; expected one of {', '.join(LEVELS)}")

    @functools.cached_property
    def _domain_starts(self) -> dict[str, np.ndarray | None]:
        return {}

    def domain_starts(self, level: str) -> np.ndarray | None:
        """First node of each domain at ``level`` when every domain is one run of nodes, in domain order
        (ids 0, 1, … with none empty), else None (kept: callers must not change it in place)."""
        if level not in self._domain_starts:
            dom = self.domain(level)
            starts = None
            if dom.size and dom[0] == 0 and np.all(np.diff(dom) >= 0) and np.all(np.diff(dom) <= 1):
                starts = _read_only(np.flatnonzero(np.concatenate(([True], dom[1:] != dom[:-1]))))
            self._domain_starts[level] = starts
        return self._domain_starts[level]

    def node_gpu_ids(self, nodes: np.ndarray) -> np.ndarray:
        """All GPU ids of ``nodes`` (int64, node by node)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        sizes = self.node_gpus[nodes]
        if sizes.size and (self.uniform_nodes or bool((sizes == sizes[0]).all())):  # nodes of one size (a gang's)
            return (self.node_first_gpu[nodes][:, None] + np.arange(int(sizes[0]), dtype=np.int64)).ravel()
        counts = sizes.astype(np.int64)
        starts = np.repeat(self.node_first_gpu[nodes], counts)
        offsets = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        return starts + offsets


def fleet_topology(state: SiteTables) -> FleetTopology:
    """The scheduler's view of ``state`` (raises :class:`TopologyError` if GPUs are not node-major)."""
    node_gpus = np.bincount(state.gpu_node, minlength=state.n_nodes).astype(np.int16)
    first = np.concatenate(([0], np.cumsum(node_gpus[:-1], dtype=np.int64)))
    if state.n_gpus and not np.array_equal(state.gpu_node, np.repeat(np.arange(state.n_nodes), node_gpus)):
        raise TopologyError(f"{state.name}: GPUs are not numbered node by node")
    gpu_type = state.gpu_spec[first].astype(np.int16) if state.n_nodes else np.zeros(0, np.int16)
    leaf = state.gpu_leaf[first] if state.n_nodes else np.zeros(0, np.int32)
    pod = np.maximum(state.switch_pod[leaf], 0).astype(np.int32)
    # a leaf group is the array of racks whose nodes share the rail leaves (rail 0's leaf names it)
    _, leaf_group = np.unique(state.rack_array[state.node_rack], return_inverse=True)
    rack = state.node_rack.astype(np.int32)
    nvlink_rack = np.array([state.gpu_specs[s].name.endswith("NVL72") for s in range(len(state.gpu_specs))])
    rack_type = np.zeros(state.n_racks, np.int16)
    rack_type[rack] = gpu_type
    return FleetTopology(
        site=state,
        node_gpus=node_gpus,
        node_first_gpu=first,
        node_gpu_type=gpu_type,
        gpu_type_names=[s.name for s in state.gpu_specs],
        node_block=rack,
        node_leaf=leaf_group.astype(np.int32),
        node_pod=pod,
        block_nvlink=nvlink_rack[rack_type] if nvlink_rack.size else np.zeros(state.n_racks, bool),
        n_blocks=state.n_racks,
        n_leaves=int(leaf_group.max()) + 1 if leaf_group.size else 0,
        n_pods=int(pod.max()) + 1 if pod.size else 0,
    )
