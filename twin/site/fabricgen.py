"""Generate a rail-optimised three-tier Clos fabric from a few parameters.

Layout (what NVIDIA calls rail-optimised; the xAI topology itself is unpublished,
[Colossus-Unpublished]): GPU *k* of every node is on rail *k*.  An *array* of racks has one
leaf per rail; the leaf's downlinks are the NICs of that rail in the array.  A *pod*
of ``pod_arrays`` arrays has ``leaf_uplinks / leaf_spine_parallel`` spines, each
leaf connecting ``leaf_spine_parallel`` links to every spine of its pod.  Spine *j*
of every pod (plane *j*) connects its uplinks round-robin to the cores of group *j*.
With radix 128 at 1:1 this is the folded Clos of [Est-Clos-Sizing] (k³/4 host limit).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from twin.arrays import IntArray
from twin.site import limits
from twin.site.tables import TIER_CORE, TIER_LEAF, TIER_SPINE


class FabricDesignError(ValueError):
    """The fabric parameters do not fit the switch radix."""


@dataclass
class Fabric:
    """Switches and switch-to-switch links of a generated fabric."""

    switch_name: list[str]
    switch_tier: np.ndarray
    switch_pod: np.ndarray
    switch_plane: np.ndarray
    switch_ports: np.ndarray
    link_a: np.ndarray
    link_b: np.ndarray
    link_gbps: np.ndarray
    gpu_leaf: np.ndarray
    pod_gpus: int
    leaf_down_ports: int = 0  # NIC ports of one leaf switch


@dataclass(frozen=True)
class _Sizing:
    """Switch and link counts of a three-tier fabric (see :func:`generate_fabric`)."""

    n_arrays: int
    n_pods: int
    leaf_down: int  # NIC ports used on the fullest leaf
    down_ports_leaf: int
    spines_per_pod: int
    spine_up: int
    cores_per_plane: int
    rails: int
    leaf_spine_parallel: int

    @property
    def n_leaves(self) -> int:
        return self.n_arrays * self.rails

    @property
    def n_spines(self) -> int:
        return self.n_pods * self.spines_per_pod

    @property
    def n_cores(self) -> int:
        return self.spines_per_pod * self.cores_per_plane


def _size(
    leaf_of_gpu: np.ndarray,
    n_arrays: int,
    radix: int,
    rails: int,
    pod_arrays: int,
    leaf_oversubscription: float,
    spine_oversubscription: float,
    leaf_spine_parallel: int,
    allow_leaf_overflow: bool,
) -> _Sizing:
    """Ports and counts per tier; :class:`FabricDesignError` when ports do not suffice or limits are exceeded."""
    n_pods = math.ceil(n_arrays / pod_arrays)
    leaf_down = int(np.bincount(leaf_of_gpu, minlength=n_arrays * rails).max())
    down_ports_leaf = math.floor(radix * leaf_oversubscription / (1 + leaf_oversubscription))
    if leaf_down > down_ports_leaf and allow_leaf_overflow:
        leaf_down = down_ports_leaf
    if leaf_down > down_ports_leaf:
        raise FabricDesignError(
            f"racks_per_array: a leaf needs {leaf_down} NIC ports but has {down_ports_leaf} "
            f"downlinks at radix {radix} and {leaf_oversubscription}:1"
        )
    leaf_up = math.ceil(down_ports_leaf / leaf_oversubscription)
    if leaf_up % leaf_spine_parallel:
        raise FabricDesignError(
            f"leaf_spine_parallel: {leaf_up} leaf uplinks are not divisible by {leaf_spine_parallel}"
        )
    spines_per_pod = leaf_up // leaf_spine_parallel
    spine_down = pod_arrays * rails * leaf_spine_parallel
    down_ports_spine = math.floor(radix * spine_oversubscription / (1 + spine_oversubscription))
    if spine_down > down_ports_spine:
        raise FabricDesignError(
            f"pod_arrays: a spine needs {spine_down} downlinks but has {down_ports_spine} "
            f"at radix {radix} and {spine_oversubscription}:1"
        )
    spine_up = math.ceil(spine_down / spine_oversubscription)
    size = _Sizing(
        n_arrays,
        n_pods,
        leaf_down,
        down_ports_leaf,
        spines_per_pod,
        spine_up,
        math.ceil(n_pods * spine_up / radix),
        rails,
        leaf_spine_parallel,
    )
    n_switches = size.n_leaves + size.n_spines + size.n_cores
    n_links = size.n_leaves * spines_per_pod * leaf_spine_parallel + size.n_spines * spine_up
    if n_switches > limits.MAX_SWITCHES:
        raise FabricDesignError(
            f"switches: the design needs {n_switches:,} switches, more than the limit of "
            f"{limits.MAX_SWITCHES:,} (fewer, fuller arrays: racks_per_array, pod_arrays)"
        )
    if n_links > limits.MAX_SWITCH_LINKS:
        raise FabricDesignError(
            f"links: the design needs {n_links:,} switch-to-switch links, more than the "
            f"limit of {limits.MAX_SWITCH_LINKS:,}"
        )
    return size


def generate_fabric(
    gpu_array: np.ndarray,
    gpu_rail: np.ndarray,
    *,
    radix: int,
    rails: int,
    pod_arrays: int,
    link_gbps: float,
    leaf_oversubscription: float,
    spine_oversubscription: float,
    leaf_spine_parallel: int,
    allow_leaf_overflow: bool = False,
) -> Fabric:
    """Build the fabric for GPUs placed in arrays (``gpu_array``) on rails (``gpu_rail``).

    Raises :class:`FabricDesignError` naming the parameter when ports do not suffice or the
    fabric would exceed the switch and link limits of :mod:`twin.site.limits`.  With
    ``allow_leaf_overflow`` (a what-if that reports the overflow as a design finding) a leaf
    may take more NICs than it has ports; the rest of the design is sized by the ports.
    """
    n_arrays = int(gpu_array.max()) + 1
    leaf_of_gpu = gpu_array.astype(np.int64) * rails + gpu_rail
    z = _size(
        leaf_of_gpu,
        n_arrays,
        radix,
        rails,
        pod_arrays,
        leaf_oversubscription,
        spine_oversubscription,
        leaf_spine_parallel,
        allow_leaf_overflow,
    )
    n_leaves, n_spines, n_cores, spines_per_pod = z.n_leaves, z.n_spines, z.n_cores, z.spines_per_pod
    leaf_ids = np.arange(n_leaves)
    leaf_array = leaf_ids // rails
    leaf_pod = leaf_array // pod_arrays
    spine_pod = np.repeat(np.arange(z.n_pods), spines_per_pod)
    spine_plane = np.tile(np.arange(spines_per_pod), z.n_pods)
    core_plane = np.repeat(np.arange(spines_per_pod), z.cores_per_plane)
    core_index = np.tile(np.arange(z.cores_per_plane), spines_per_pod)

    names = [f"leaf-p{p:02d}-a{a:03d}-r{r}" for p, a, r in zip(leaf_pod, leaf_array, leaf_ids % rails)]
    names += [f"spine-p{p:02d}-s{j:02d}" for p, j in zip(spine_pod, spine_plane)]
    names += [f"core-g{j:02d}-c{c:02d}" for j, c in zip(core_plane, core_index)]
    link_a, link_b = _links(z, leaf_pod, spine_pod, spine_plane)
    return Fabric(
        switch_name=names,
        switch_tier=np.concatenate(
            [np.full(n_leaves, TIER_LEAF), np.full(n_spines, TIER_SPINE), np.full(n_cores, TIER_CORE)]
        ).astype(np.int8),
        switch_pod=np.concatenate([leaf_pod, spine_pod, np.full(n_cores, -1)]).astype(np.int32),
        switch_plane=np.concatenate([np.full(n_leaves, -1), spine_plane, core_plane]).astype(np.int32),
        switch_ports=np.full(n_leaves + n_spines + n_cores, radix, dtype=np.int32),
        link_a=link_a,
        link_b=link_b,
        link_gbps=np.full(link_a.size, float(link_gbps)),
        gpu_leaf=leaf_of_gpu.astype(np.int32),
        pod_gpus=int(pod_arrays * rails * z.leaf_down),
        leaf_down_ports=z.down_ports_leaf,
    )


def _links(z: _Sizing, leaf_pod: IntArray, spine_pod: IntArray, spine_plane: IntArray) -> tuple[IntArray, IntArray]:
    """Switch ids at both ends of every link: leaf → every spine of its pod (``leaf_spine_parallel`` times),
    then spine uplinks → the cores of its plane, round-robin across pods."""
    n_leaves, n_spines, spines_per_pod, spine_up = z.n_leaves, z.n_spines, z.spines_per_pod, z.spine_up
    la = np.repeat(np.arange(n_leaves), spines_per_pod * z.leaf_spine_parallel)
    plane = np.tile(np.repeat(np.arange(spines_per_pod), z.leaf_spine_parallel), n_leaves)
    lb = n_leaves + leaf_pod[la] * spines_per_pod + plane
    sa = np.repeat(np.arange(n_spines), spine_up)
    uplink = np.tile(np.arange(spine_up), n_spines)
    core_slot = (spine_pod[sa] * spine_up + uplink) % z.cores_per_plane
    sb = n_leaves + n_spines + spine_plane[sa] * z.cores_per_plane + core_slot
    return np.concatenate([la, n_leaves + sa]).astype(np.int32), np.concatenate([lb, sb]).astype(np.int32)
